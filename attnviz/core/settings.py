"""One frozen settings object, validated in one place.

Bounds are wide enough for the GPT-2 presets the pages offer (up to GPT-2 XL: 1,600 wide,
25 heads, context 1024) and no wider: every request's cost is bounded by them, see
:func:`request_bytes`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

# (lowest, highest) for each number, with the reason for the bound.
BOUNDS: dict[str, tuple[float, float]] = {
    "d_in": (1, 1600),  # GPT-2 XL's width is the widest preset
    "d_out": (1, 1600),
    "num_heads": (1, 32),  # GPT-2 XL has 25 heads
    "context_length": (1, 1024),  # GPT-2's context
    "dropout": (0.0, 0.9),  # in [0, 1); above 0.9 survivors are scaled by more than 10x
    "seed_embed": (0, 2**31 - 1),
    "seed_weights": (0, 2**31 - 1),
    "seed_dropout": (0, 2**31 - 1),
    "max_tokens": (1, 1024),  # the app uses 256; attention is O(tokens^2) per head
}

# Dropout above this is for illustration only, as the chapter says (GPT models use 0.1-0.2).
DROPOUT_ILLUSTRATIVE = 0.2

LABELS = {
    "d_in": "d_in",
    "d_out": "d_out",
    "num_heads": "num_heads",
    "context_length": "context_length",
    "dropout": "dropout",
    "seed_embed": "embedding seed",
    "seed_weights": "weight seed",
    "seed_dropout": "dropout seed",
    "max_tokens": "max tokens",
}


class SettingsError(ValueError):
    """Raised with every problem found, each a sentence a student understands."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Settings:
    """Everything that shapes one computation. ``d_out`` is the total output width
    (``MultiHeadAttention``'s ``d_out``); single-head passes use it as the head's width."""

    # d_in = d_out, as in GPT models, so every comparison with nn.MultiheadAttention applies;
    # narrow enough to read every number (bench/defaults_search.py has how these were picked).
    d_in: int = 8
    d_out: int = 8
    num_heads: int = 2
    context_length: int = 32  # longer than the default text, so the mask slicing shows
    dropout: float = 0.1
    seed_embed: int = 123
    seed_weights: int = 123
    seed_dropout: int = 123
    qkv_bias: bool = False
    training: bool = False  # eval mode by default: dropout is then the identity
    max_tokens: int = 256
    # "random": the chapter's seeded random weights; "trained": passes 2-4 run the chapter's
    # modules holding the grown induction model's weights, at that model's sizes (TRAINED).
    weights: str = "random"

    def __post_init__(self) -> None:
        problems = validate(self)
        if problems:
            raise SettingsError(problems)

    @property
    def head_dim(self) -> int:
        return self.d_out // self.num_heads

    def multihead_problem(self) -> str | None:
        """Why the multi-head pass cannot run at these settings, or ``None``."""
        if self.d_out % self.num_heads:
            return (
                f"d_out={self.d_out} is not divisible by num_heads={self.num_heads}: "
                f"each head needs d_out / num_heads columns."
            )
        return None

    @property
    def dropout_is_illustrative(self) -> bool:
        return self.dropout > DROPOUT_ILLUSTRATIVE

    def with_changes(self, **changes) -> Settings:
        return replace(self, **changes)

    def key(self) -> tuple:
        """A plain, hashable value that identifies these settings (for caches)."""
        return tuple(getattr(self, f.name) for f in fields(self))

    @property
    def trained(self) -> bool:
        return self.weights == "trained"

    def for_pass(self, kind: str) -> Settings:
        """These settings with every field the pass does not read set to its default, so that
        changing, say, the dropout slider recomputes nothing on the pages it cannot affect.

        With trained weights the trained model fixes the sizes, as book mode fixes the
        chapter's: passes 2-4 (and their inputs, ``kind="inputs"``) get :func:`trained_sizes`,
        and the seeds of the embedding and the weights, which then draw nothing, their
        defaults. The dropout rate, its seed and training mode still apply."""
        keep = set(PASS_FIELDS[kind])
        defaults = Settings()
        reduced = replace(
            self, **{f.name: getattr(defaults, f.name) for f in fields(self) if f.name not in keep}
        )
        if not reduced.trained:
            return reduced
        fixed: dict[str, Any] = {k: v for k, v in trained_sizes(kind).items() if k in keep}
        fixed |= {"seed_embed": defaults.seed_embed, "seed_weights": defaults.seed_weights}
        return replace(reduced, **fixed)


# The settings each pass reads (the input X needs d_in, the embedding seed and the token cap).
_INPUT = ("d_in", "seed_embed", "max_tokens")
_WEIGHTS = (*_INPUT, "d_out", "seed_weights", "qkv_bias", "weights")
_CAUSAL = (*_WEIGHTS, "context_length", "dropout", "seed_dropout", "training")
# Pass 1 has no trainable weights: it always reads the random embedding. "inputs" is what the
# inputs of passes 2-4 read (the trained model's own embedding when the weights are trained).
PASS_FIELDS = {
    "inputs": (*_INPUT, "weights"),
    "simplified": _INPUT,
    "trainable": _WEIGHTS,
    "causal": _CAUSAL,
    "multihead": (*_CAUSAL, "num_heads"),
}


def validate(s: Settings) -> list[str]:
    """Every problem with ``s``, as sentences; empty when valid."""
    problems = []
    for name, (low, high) in BOUNDS.items():
        value = getattr(s, name)
        is_float = name == "dropout"
        ok_type = isinstance(value, (int, float)) if is_float else isinstance(value, int)
        if isinstance(value, bool) or not ok_type:
            problems.append(f"{LABELS[name]} must be a {'number' if is_float else 'whole number'}")
            continue
        if is_float and not math.isfinite(value):
            problems.append(f"{LABELS[name]} must be a finite number")
            continue
        if not low <= value <= high:
            problems.append(f"{LABELS[name]}={value} is outside {low}–{high}")
    for name in ("qkv_bias", "training"):
        if not isinstance(getattr(s, name), bool):
            problems.append(f"{name} must be true or false")
    if s.weights not in WEIGHTS:
        problems.append(f"weights must be one of {', '.join(WEIGHTS)}")
    return problems


# --- trained weights ------------------------------------------------------------------------
WEIGHTS = ("random", "trained")
# The grown induction model's sizes (attnviz/models/induction/model.py's ModelConfig, checked by
# tests/engine/test_trained_weights.py): width 64, 4 heads of 16, context 24, no qkv bias.
TRAINED_WIDTH, TRAINED_HEADS, TRAINED_CONTEXT = 64, 4, 24


def trained_sizes(kind: str) -> dict[str, int | bool]:
    """The sizes pass ``kind`` runs at with trained weights: one head of the trained layer for
    passes 2 and 3 (``d_out`` = 16, the head's width), the whole layer for pass 4."""
    one_head = kind in ("trainable", "causal")
    return {
        "d_in": TRAINED_WIDTH,
        "d_out": TRAINED_WIDTH // TRAINED_HEADS if one_head else TRAINED_WIDTH,
        "num_heads": TRAINED_HEADS,
        "context_length": TRAINED_CONTEXT,
        "qkv_bias": False,
    }


# --- presets ------------------------------------------------------------------------------
# The chapter's arguments (book mode): attnviz/core/book.py makes them its one Settings.
BOOK = dict(d_in=3, d_out=2, num_heads=2, context_length=6, dropout=0.0)
GPT2_SMALL = dict(d_in=768, d_out=768, num_heads=12, context_length=1024)
GPT2_XL = dict(d_in=1600, d_out=1600, num_heads=25, context_length=1024)


def mha_parameter_count(d_in: int, d_out: int, qkv_bias: bool = False) -> int:
    """Trainable parameters of the chapter's ``MultiHeadAttention``: three projections
    (d_in x d_out, plus a bias each when ``qkv_bias``) and ``out_proj`` (d_out x d_out + bias)."""
    qkv = 3 * (d_in * d_out + (d_out if qkv_bias else 0))
    return qkv + d_out * d_out + d_out


# --- cost ---------------------------------------------------------------------------------
FLOAT_BYTES = 4
# T x T matrices one traced pass keeps per head: masked scores, scaled scores, weights, weights
# after dropout, and the dropout mask; plus two computed on demand (unmasked scores, route 1).
TT_PER_HEAD = 7


def request_bytes(s: Settings, tokens: int, batch: int = 2) -> dict[str, int]:
    """Worst-case bytes one request holds at these settings, by component and in total.

    Counts the embeddings (token, position and their sum), the weights of every module a page
    builds (single head, wrapper, weight-split), their Q/K/V and contexts, every stored T x T
    matrix per head, and the mask buffers (``context_length``² each: one per single-head module,
    one per wrapper head, one for the weight-split module).

    The wrapper with a mask per head is the chapter's ``MultiHeadAttentionWrapper`` that page 4's
    timing button builds (``speed.wrapper_against_split``); the wrapper behind the checks'
    references holds views of the traced weights and one shared mask, and costs none of it.
    """
    T, b, H = tokens, batch, s.num_heads
    head = max(1, s.d_out // H)
    params = mha_parameter_count(s.d_in, s.d_out, s.qkv_bias)
    parts = {
        "embeddings": 3 * b * T * s.d_in * FLOAT_BYTES,
        "weights": (3 * params + 3 * s.d_in * s.d_out) * FLOAT_BYTES,
        "projections": 3 * (3 * b * T * s.d_out + b * T * s.d_out) * FLOAT_BYTES,
        "attention_maps": TT_PER_HEAD * b * T * T * (H + 2) * FLOAT_BYTES,
        "masks": (2 + H + 1) * s.context_length**2 * FLOAT_BYTES,
        "heads": 4 * b * H * T * head * FLOAT_BYTES,
    }
    parts["total"] = sum(parts.values())
    return parts


def attention_flops(tokens: int, d_in: int, d_out: int, batch: int = 1) -> dict[str, int]:
    """Multiply-adds x 2 of one forward, before ``out_proj``. The wrapper (H heads of width
    d_out/H) and the weight-split module do exactly the same arithmetic: only how it is
    grouped into matmul calls differs (3H small projections against 3 large ones)."""
    b, T = batch, tokens
    projections = 3 * 2 * b * T * d_in * d_out
    attention = 2 * (2 * b * T * T * d_out)  # Q K^T and A V, summed over heads
    return {
        "projections": projections,
        "attention": attention,
        "total": projections + attention,
        "out_proj": 2 * b * T * d_out * d_out,
    }
