"""The "Trained heads" page's calls into the engine, cached and shared by every session.

GPT-2 is loaded once per process (:func:`attnviz.models.gpt2.load`); what one text gives (every
head's weights, the thumbnails, the measures) is cached per (folder, token ids) in a memo capped
in bytes, like the app's other caches.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np
import torch

from attnviz.core.settings import GPT2_SMALL, Settings
from attnviz.core.tokens import Tokens, get_tokenizer, tokenize
from attnviz.models import detectors as D
from attnviz.models import gpt2
from attnviz.server import budget, gate
from attnviz.teach.panel import CAUSAL_WEIGHTS, Panel, Style, token_panel
from ui import cache
from ui.memo import Memo

# The caps and the number of forwards at once live in the engine, which counts them in the
# server's memory bound (attnviz.server.budget.server_bound).
ATTENTION_BYTES = gpt2.ATTENTION_CACHE_BYTES
_attention = Memo(256, ATTENTION_BYTES, "gpt2 attention", long_work=True)
_figures = Memo(256, gpt2.FIGURE_CACHE_BYTES, "gpt2 figures")
# A class typing at once queues here instead of holding 50 forwards in memory.
FORWARD_SLOTS = gpt2.FORWARD_SLOTS
_forwards = threading.BoundedSemaphore(FORWARD_SLOTS)

# What a student reads on a server without the weights: what the page shows once they are there.
NOT_YET = (
    "This page needs GPT-2's trained weights, which this server does not have yet: once your "
    "instructor adds them, it draws every head of every layer of GPT-2 on your text, beside a "
    "random head of the same width, and sorts the heads by what they attend to."
)
ILLUSTRATION = Path(__file__).with_name("trained-heads-illustration.svg")
ILLUSTRATION_CAPTION = (
    "An illustration, not GPT-2's numbers: the kinds of head the page finds in GPT-2 (drawn "
    "from each kind's definition by scripts/draw_trained_heads_illustration.py), beside an "
    "untrained head's blur."
)
INSTRUCTOR_TITLE = "For the instructor: how to add GPT-2's weights"


@functools.cache
def illustration() -> str:
    """The picture of the page with weights (an SVG string, read once)."""
    return ILLUSTRATION.read_text(encoding="utf-8")


HOW_TO_GET = (
    "Run `scripts/fetch-gpt2 FOLDER` on a machine with internet (it downloads GPT-2 small, about "
    "550 MB, and checks its hashes), then start the app with `ATTNVIZ_GPT2_DIR=FOLDER`; the "
    "Docker image bakes the weights in with `--build-arg GPT2_DIR=FOLDER`."
)


def weights_problem() -> tuple[str | None, str | None]:
    """(folder, None) when ``ATTNVIZ_GPT2_DIR`` names a complete folder, else (folder, why)."""
    folder = gpt2.weights_folder()
    if folder is None:
        return None, f"`{gpt2.ENV}` is not set, so this server has no GPT-2 weights."
    missing = gpt2.missing_files(folder)
    if missing:
        return folder, f"The folder `{gpt2.ENV}` names lacks {' and '.join(missing)}."
    return folder, None


def tokens_for(text: str, cap: int) -> Tokens:
    return cache.derived.get(("gpt2 tokens", text, cap), tokenize, (text, cap))


def real_vocabulary() -> bool:
    """GPT-2's ids need GPT-2's own vocabulary (not the fallback tokenizer's hashes)."""
    return get_tokenizer().status.is_real


@dataclass(frozen=True)
class TrainedView:
    """What GPT-2 does with one text: every head's weights and what the page reads off them."""

    config: gpt2.GPT2Config
    layout: str
    weights: torch.Tensor  # (layers, heads, T, T)
    thumbs: torch.Tensor  # (layers, heads, s, s)
    measures: dict[str, np.ndarray]  # each (layers, heads)
    types: dict[str, np.ndarray]  # each a boolean (layers, heads)
    seconds: float  # the forward's time when it was computed


@contextmanager
def _forward_slot() -> Iterator[None]:
    """One of GPT-2's forward slots for the block (ServerBusy after budget.WAIT_SECONDS)."""
    gate.give_up()  # GPT-2's forwards have slots of their own (attnviz/server/gate.py)
    if not _forwards.acquire(timeout=budget.WAIT_SECONDS):
        raise budget.ServerBusy(
            f"The server is busy running other texts through GPT-2; waited "
            f"{budget.WAIT_SECONDS:.0f} s. Try again in a moment."
        )
    try:
        yield
    finally:
        _forwards.release()


def _compute(folder: str, ids: tuple[int, ...]) -> TrainedView:
    loaded = gpt2.load(folder)
    with _forward_slot():
        start = time.perf_counter()
        weights = gpt2.attention_weights(folder, ids)
        seconds = time.perf_counter() - start
    measures = gpt2.head_measures(weights)
    return TrainedView(
        loaded.config,
        loaded.layout,
        weights,
        gpt2.pool(weights),
        measures,
        gpt2.head_types(measures),
        seconds,
    )


def view(folder: str, ids: tuple[int, ...]) -> TrainedView:
    return _attention.get(("view", folder, ids), _compute, (folder, ids))


def config_of(folder: str) -> gpt2.GPT2Config:
    return gpt2.load(folder).config


# What the random stand-in keeps of GPT-2 whatever its size: biases, eval mode, no dropout.
_RANDOM_AS_GPT2 = MappingProxyType(
    {"dropout": 0.0, "qkv_bias": True, "training": False, "weights": "random"}
)


def random_settings(cfg: gpt2.GPT2Config | None, sidebar: Settings) -> Settings:
    """The chapter's random MultiHeadAttention at the trained model's width (GPT-2 small's
    without weights), with the sidebar's seeds, eval mode and biases as GPT-2 has them."""
    width = cfg.emb_dim if cfg else GPT2_SMALL["d_out"]
    heads = cfg.n_heads if cfg else GPT2_SMALL["num_heads"]
    context = min(cfg.context_length, 1024) if cfg else GPT2_SMALL["context_length"]
    return sidebar.with_changes(
        d_in=width, d_out=width, num_heads=heads, context_length=context, **_RANDOM_AS_GPT2
    )


def random_head(text: str, settings: Settings, tokens: int) -> torch.Tensor:
    """Every random head's weights (heads, T, T) on the first ``tokens`` tokens of ``text``."""
    capped = settings.with_changes(max_tokens=tokens)
    trace = cache.trace("multihead", text, capped.for_pass("multihead"), False)
    return trace.attn_weights[0]


def grid(folder: str, ids: tuple[int, ...], wanted: tuple[str, ...], selected: tuple[int, int]):
    """The thumbnail grid, heads of the ``wanted`` types shown (all when none is wanted)."""
    return _figures.get(
        ("grid", folder, ids, wanted, selected), _grid, (folder, ids, wanted, selected)
    )


def shown_heads(v: TrainedView, wanted: tuple[str, ...]) -> np.ndarray:
    if not wanted:
        return np.ones(v.weights.shape[:2], dtype=bool)
    return np.logical_or.reduce([v.types[t] for t in wanted])


def _grid(folder, ids, wanted, selected):
    v = view(folder, ids)
    shown = shown_heads(v, wanted)
    L, H = shown.shape
    title = f"All {L * H} heads, layers down, heads across"
    if wanted:
        title = f"{int(shown.sum())} of {L * H} heads: {' or '.join(wanted)}"
    return gpt2.grid_figure(v.thumbs, shown, title=title, selected=selected)


def head_panel(key: str, weights: torch.Tensor, labels, title: str) -> Panel:
    """One head's causal weights as a panel (numbers too many for the cells at GPT-2's width:
    the hover and the "Numbers and CSV" box give them)."""
    return token_panel(
        key, weights, labels, title, kind=CAUSAL_WEIGHTS, style=Style(annotate=False)
    )


def head_table(v: TrainedView, layer: int, head: int, random_weights: torch.Tensor) -> list[dict]:
    """The measured criteria for the open head and for the random head beside it."""
    rand = gpt2.head_measures(random_weights.unsqueeze(0))
    names = {
        "previous": "mean weight on i − 1",
        "first": "mean weight on token 0",
        "current": "mean weight on i",
        "entropy": "entropy / an even share's",
    }
    return [
        {
            "measure (queries 1 … T−1)": label,
            f"GPT-2 layer {layer}, head {head}": float(v.measures[key][layer, head]),
            f"random head {head}": float(rand[key][0, head]),
        }
        for key, label in names.items()
    ]


def types_of(v: TrainedView, layer: int, head: int) -> list[str]:
    return [t for t, mask in v.types.items() if mask[layer, head]]


# --- one set of detectors: the heads named as page 8 names the grown model's ------------------
def _probe(folder: str) -> gpt2.ProbeScores:
    with _forward_slot():
        # the prefix and two copies must fit the model's context (a small test model's too)
        fits = (gpt2.load(folder).config.context_length - 1) // 2
        return gpt2.probe_scores(folder, length=min(gpt2.PROBE_LENGTH, fits))


def probe(folder: str) -> gpt2.ProbeScores:
    """Every head's detector scores on the detectors' probe (random tokens repeated once), once
    per process and folder: the same measurement that names the grown model's heads."""
    return _attention.get(("probe", folder), _probe, (folder,))


def detector_name(scores: gpt2.ProbeScores, layer: int, head: int) -> str | None:
    """What the head's probe scores name it (:func:`attnviz.models.detectors.name_of`), or None."""
    return D.name_of({k: float(v[layer, head]) for k, v in scores.scores.items()})


def probe_rows(scores: gpt2.ProbeScores, layer: int, head: int) -> list[dict]:
    """The open head's four detector scores on the probe, one row each."""
    return [
        {"detector": D.NAMES[k].removesuffix(" head"), "measures": D.DETECTORS[k],
         f"layer {layer}, head {head}": float(scores.scores[k][layer, head])}
        for k in D.DETECTORS
    ]  # fmt: skip
