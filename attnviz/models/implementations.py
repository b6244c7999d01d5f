"""The chapter's multi-head attention computed seven ways, and a fair race between them.

Every implementation is built *from* one engine :class:`~attnviz.core.modules.MultiHeadAttention`
and holds its weights (copied, or, for the wrapper and ``nn.MultiheadAttention``'s output
projection, shared), so all of them compute the same function. :func:`verify` checks that on
real numbers, within the engine's tolerance, before anything is timed:

    wrapper            the chapter's MultiHeadAttentionWrapper (one CausalAttention per head, its
                       rows of W_query/W_key/W_value), then the MHA's out_proj: the wrapper has
                       no output projection, so adding the same one compares like with like
    weight split       the engine's MultiHeadAttention itself
    combined QKV       one Linear(d_in, 3*d_out) holding the three projections stacked
    einsum             projections, scores and context written with torch.einsum
    SDPA               combined QKV + F.scaled_dot_product_attention(is_causal=True)
    nn.MHA, weights    torch.nn.MultiheadAttention, need_weights=True (PyTorch's default)
    nn.MHA, no weights the same, need_weights=False

The last two need d_in == d_out (``nn.MultiheadAttention`` projects queries from embed_dim);
otherwise they are reported "n/a" with the reason. Batch 1, eval mode, ``torch.inference_mode()``.
Nothing here imports Streamlit: the page caches :func:`benchmark` per shape (``ui/models/comparison.py``).
"""

from __future__ import annotations

import copy
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from attnviz.core import modules as M
from attnviz.core.seeding import seeded
from attnviz.core.settings import BOUNDS
from attnviz.core.skeleton import masked_shell
from attnviz.core.trace import ModuleSpec, MultiHeadTrace, causal_mask, trace_multihead_module
from attnviz.models.speed import race
from attnviz.server import gate
from attnviz.teach import checks as live_checks

# (batch, tokens, d_in, d_out, num_heads, qkv_bias): a plain, hashable key for the caches.
Shape = tuple[int, int, int, int, int, bool]

# The book's bonus notebook (mha-implementations.ipynb) times 1024 tokens, 768 wide, 12 heads
# (GPT-2 small) at batch 8; this app uses batch 1 everywhere.
BOOK_BENCH_SHAPE: Shape = (1, 1024, 768, 768, 12, False)

LABELS = {
    "wrapper": "Wrapper of CausalAttention heads + out_proj",
    "weight_split": "MultiHeadAttention (weight split, ch. 3)",
    "combined_qkv": "Combined QKV (one Linear)",
    "einsum": "Einsum",
    "sdpa": "F.scaled_dot_product_attention (fused)",
    "torch_mha": "nn.MultiheadAttention, need_weights=True",
    "torch_mha_no_weights": "nn.MultiheadAttention, need_weights=False",
}
KEYS = tuple(LABELS)

# Within this margin two medians count as "no clear difference": the server is shared.
SAME_MARGIN = 0.10

# One benchmark at a time in this process: two running at once would slow each other down.
_RUN_LOCK = threading.Lock()


# --- the implementations ----------------------------------------------------------------------
def _future_mask(context_length: int) -> torch.Tensor:
    """(T, T) booleans, True above the diagonal: the keys each query may not see."""
    return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)


class WrapperThenOutProj(nn.Module):
    """The chapter's ``MultiHeadAttentionWrapper``, head h holding rows h*head_dim:(h+1)*head_dim
    of the MHA's projections, followed by a copy of the MHA's ``out_proj``."""

    def __init__(self, mha: M.MultiHeadAttention):
        super().__init__()
        self.wrapper = live_checks.wrapper_from_mha(mha)  # its heads hold views of the MHA's rows
        self.out_proj = copy.deepcopy(mha.out_proj)  # a copy draws nothing from the RNG

    def forward(self, x):
        return self.out_proj(self.wrapper(x))  # (b, T, d_out)


class CombinedQKV(nn.Module):
    """One ``Linear(d_in, 3*d_out)`` whose weight is [W_query; W_key; W_value] stacked by rows:
    one large matmul instead of three, then the chapter's attention, written out."""

    future: torch.Tensor  # (context_length, context_length) booleans, a buffer

    def __init__(self, mha: M.MultiHeadAttention):
        super().__init__()
        d_in, d_out = mha.W_query.in_features, mha.d_out
        self.d_out, self.num_heads, self.head_dim = d_out, mha.num_heads, mha.head_dim
        bias = mha.W_query.bias is not None
        with seeded(None):  # its random initial weights are overwritten below
            self.qkv = nn.Linear(d_in, 3 * d_out, bias=bias)
        with torch.no_grad():
            self.qkv.weight.copy_(
                torch.cat([mha.W_query.weight, mha.W_key.weight, mha.W_value.weight])
            )
            if bias:
                self.qkv.bias.copy_(torch.cat([mha.W_query.bias, mha.W_key.bias, mha.W_value.bias]))
        self.out_proj = copy.deepcopy(mha.out_proj)
        self.register_buffer("future", _future_mask(mha.mask.shape[0]))

    def split_qkv(self, x):
        b, num_tokens, _ = x.shape
        qkv = self.qkv(x)  # (b, T, 3*d_out)
        qkv = qkv.view(b, num_tokens, 3, self.num_heads, self.head_dim)  # (b, T, 3, H, hd)
        qkv = qkv.permute(2, 0, 3, 1, 4)  # (3, b, H, T, hd)
        return qkv.unbind(0)  # queries, keys, values: (b, H, T, hd) each

    def attend(self, queries, keys, values):
        num_tokens = queries.shape[-2]
        attn_scores = queries @ keys.transpose(-2, -1)  # (b, H, T, T)
        attn_scores = attn_scores.masked_fill(self.future[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)
        return attn_weights @ values  # (b, H, T, hd)

    def forward(self, x):
        b, num_tokens, _ = x.shape
        context_vec = self.attend(*self.split_qkv(x))  # (b, H, T, hd)
        context_vec = context_vec.transpose(1, 2).reshape(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)  # (b, T, d_out)


class SDPA(CombinedQKV):
    """Combined QKV, with the attention handed to PyTorch's fused kernel. It returns only the
    context vectors: the (T, T) weights are never materialised, so there is nothing to draw."""

    def attend(self, queries, keys, values):
        return F.scaled_dot_product_attention(queries, keys, values, is_causal=True)


class Einsum(nn.Module):
    """Projections, scores and context as ``torch.einsum``. The weights are stored (d_in, d_out)
    as in ``SelfAttention_v1`` (``x @ W``), so each is the transpose of the Linear's weight."""

    future: torch.Tensor  # (context_length, context_length) booleans, a buffer

    def __init__(self, mha: M.MultiHeadAttention):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = mha.d_out, mha.num_heads, mha.head_dim
        for role in ("query", "key", "value"):
            linear = getattr(mha, f"W_{role}")
            setattr(self, f"W_{role}", nn.Parameter(linear.weight.detach().T.clone()))
            bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().clone())
            setattr(self, f"b_{role}", bias)
        self.out_proj = copy.deepcopy(mha.out_proj)
        self.register_buffer("future", _future_mask(mha.mask.shape[0]))

    def project(self, x, weight, bias):
        b, num_tokens, _ = x.shape
        out = torch.einsum("bti,io->bto", x, weight)  # (b, T, d_out)
        if bias is not None:
            out = out + bias
        return out.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, num_tokens, _ = x.shape
        queries = self.project(x, self.W_query, self.b_query)  # (b, H, T, hd)
        keys = self.project(x, self.W_key, self.b_key)
        values = self.project(x, self.W_value, self.b_value)
        attn_scores = torch.einsum("bhqd,bhkd->bhqk", queries, keys)  # (b, H, T, T)
        attn_scores = attn_scores.masked_fill(self.future[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)
        context_vec = torch.einsum("bhqk,bhkd->bhqd", attn_weights, values)  # (b, H, T, hd)
        context_vec = context_vec.transpose(1, 2).reshape(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)


class TorchMHA(nn.Module):
    """``torch.nn.MultiheadAttention`` holding the MHA's weights (``checks.torch_mha_from``),
    causal through a boolean ``attn_mask`` (True = may not attend)."""

    future: torch.Tensor  # (context_length, context_length) booleans, a buffer

    def __init__(self, mha: M.MultiHeadAttention, need_weights: bool):
        super().__init__()
        ref = live_checks.torch_mha_from(mha)
        if ref is None:
            raise ValueError(live_checks.torch_mha_na(mha))
        self.mha, self.need_weights = ref, need_weights
        self.register_buffer("future", _future_mask(mha.mask.shape[0]))

    def forward(self, x):
        num_tokens = x.shape[1]
        output, _ = self.mha(
            x,
            x,
            x,
            attn_mask=self.future[:num_tokens, :num_tokens],
            need_weights=self.need_weights,
        )
        return output  # (b, T, d_out)


@dataclass(frozen=True)
class Variant:
    """One implementation: its module, or None with the reason it cannot run here."""

    key: str
    label: str
    module: nn.Module | None
    reason: str | None = None


def build_variants(mha: M.MultiHeadAttention) -> tuple[Variant, ...]:
    """Every implementation, built from ``mha``'s weights, in eval mode."""
    mha = mha.eval()
    na = live_checks.torch_mha_na(mha)
    modules = {
        "wrapper": WrapperThenOutProj(mha),
        "weight_split": mha,
        "combined_qkv": CombinedQKV(mha),
        "einsum": Einsum(mha),
        "sdpa": SDPA(mha),
        "torch_mha": None if na else TorchMHA(mha, need_weights=True),
        "torch_mha_no_weights": None if na else TorchMHA(mha, need_weights=False),
    }
    return tuple(
        Variant(key, LABELS[key], None if m is None else m.eval(), na if m is None else None)
        for key, m in modules.items()
    )


def verify(
    variant: Callable[[torch.Tensor], torch.Tensor],
    mha: M.MultiHeadAttention,
    x: torch.Tensor,
    title: str = "Same output as our MultiHeadAttention",
    reference: tuple[torch.Tensor, float] | None = None,
) -> live_checks.CheckResult:
    """``variant(x)`` against the engine's ``MultiHeadAttention`` on ``x`` (eval mode), within
    the engine's tolerance (:func:`attnviz.teach.checks.same_output_as_mha`). ``reference``:
    ``checks.mha_reference(mha, x)``, computed once when many variants are verified."""
    with torch.inference_mode():
        actual = variant(x)
    return live_checks.same_output_as_mha(mha, x, actual, title, reference)


# --- references: the independent computations the checks compare a trace with -------------
@dataclass(frozen=True)
class References:
    """What the multi-head checks compare an eval-mode trace with, each computed once per setting
    by :func:`references` (and cached like the trace by the app), so that building page 4's and
    page 6's lessons runs no forward: every check then reads the trace and these.

    Each is independent of the traced forward: PyTorch's own attention on the trace's q, k, v,
    other implementations holding the trace's weights, and our module on a changed input."""

    spec: ModuleSpec  # the traced module's
    sdpa_context: torch.Tensor  # (b, H, T, head_dim): F.scaled_dot_product_attention, causal
    heads_looped: torch.Tensor  # (b, T, d_out): SDPA head by head over column slices
    sdpa_output: torch.Tensor  # (b, T, d_out): the SDPA implementation on the inputs
    wrapper_context: torch.Tensor  # (b, T, d_out): the wrapper holding the split's rows
    future_changed: torch.Tensor | None  # (b, T, d_out): ours on checks.changed_future(x); T >= 2
    torch_output: torch.Tensor | None  # (b, T, d_out): nn.MultiheadAttention with our weights
    torch_weights: torch.Tensor | None  # (b, H, T, T): its per-head weights
    torch_na: str | None  # why nn.MultiheadAttention cannot hold the weights (None: it can)


def module_of(trace: MultiHeadTrace) -> M.MultiHeadAttention:
    """A ``MultiHeadAttention`` holding exactly the weights ``trace`` recorded, in eval mode.

    Built on the meta device (no memory, no random draws), then given the trace's own tensors:
    its parameters are ``trace.params`` and its mask is ``trace.mask``, not copies of them (the
    trace is immutable; the module is frozen, ``requires_grad=False``, and only runs forwards)."""
    s = trace.spec
    module = masked_shell(
        M.MultiHeadAttention, s.d_in, s.d_out, s.context_length, s.dropout, s.num_heads, s.qkv_bias
    )
    for name, _ in list(module.named_parameters()):
        owner, _, attr = name.rpartition(".")
        setattr(module.get_submodule(owner), attr, live_checks.shared(trace.params[name]))
    module.mask = trace.mask
    return module.eval()


def references(trace: MultiHeadTrace) -> References:
    """Run every independent computation the multi-head checks need, once, on an eval-mode trace
    (training mode with dropout draws its own masks, and the chapter's claims hold in eval)."""
    if trace.training and trace.spec.dropout > 0:
        raise ValueError("references compare eval-mode numbers: pass the trace in eval mode")
    mha = module_of(trace)
    x = trace.inputs
    with torch.inference_mode():
        sdpa_context = live_checks.sdpa_reference(
            trace.queries_heads, trace.keys_heads, trace.values_heads, causal=True
        )
        looped = live_checks.heads_looped(
            trace.queries, trace.keys, trace.values, trace.num_heads, causal_mask(trace).bool()
        )
        sdpa_output = SDPA(mha).eval()(x)
        wrapper_context = live_checks.wrapper_from_mha(mha)(x)
        future = mha(live_checks.changed_future(x)[0]) if trace.num_tokens >= 2 else None
    theirs = live_checks.torch_mha_forward(mha, x)
    return References(
        spec=trace.spec,
        sdpa_context=sdpa_context,
        heads_looped=looped,
        sdpa_output=sdpa_output,
        wrapper_context=wrapper_context,
        future_changed=future,
        torch_output=None if theirs is None else theirs[0],
        torch_weights=None if theirs is None else theirs[1],
        torch_na=live_checks.torch_mha_na(mha),
    )


def _belong(trace: MultiHeadTrace, refs: References) -> None:
    if refs.spec != trace.spec or refs.wrapper_context.shape != trace.context.shape:
        raise ValueError("these references were computed for another trace")
    if trace.training and trace.spec.dropout > 0:
        raise ValueError("the checks read the eval-mode trace")


def _not_applicable(name: str, refs: References) -> live_checks.CheckResult:
    title = live_checks.TITLES[name]
    return live_checks.CheckResult(name, title, "n/a", None, None, None, refs.torch_na or "")


def torch_mha_check(trace: MultiHeadTrace, refs: References) -> live_checks.CheckResult:
    """Our output against nn.MultiheadAttention's, from an eval-mode trace and its references."""
    _belong(trace, refs)
    if refs.torch_output is None:
        return _not_applicable("matches_torch_mha", refs)
    return live_checks.output_matches_torch_mha(
        trace.output, refs.torch_output, output_scale(trace), trace.spec.d_out
    )


def output_scale(trace: MultiHeadTrace) -> float:
    """:func:`attnviz.teach.checks.mha_output_scale` of a traced forward."""
    return live_checks.mha_output_scale(
        trace.scaled_scores, trace.values, trace.params["out_proj.weight"]
    )


def torch_weights_check(trace: MultiHeadTrace, refs: References) -> live_checks.CheckResult:
    """Our per-head weights against nn.MultiheadAttention's (n/a when it cannot hold ours)."""
    _belong(trace, refs)
    if refs.torch_weights is None:
        return _not_applicable("torch_mha_weights_match", refs)
    return live_checks.weights_match_torch_mha(
        trace.attn_weights, refs.torch_weights, trace.scaled_scores, trace.head_dim
    )


def _qkv(trace: MultiHeadTrace, split: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The trace's queries, keys and values: split into heads (b, H, T, hd) or side by side."""
    if split:
        return trace.queries_heads, trace.keys_heads, trace.values_heads
    return trace.queries, trace.keys, trace.values


def sdpa_check(trace: MultiHeadTrace, refs: References) -> live_checks.CheckResult:
    """Our per-head context against PyTorch's SDPA on the same q, k, v (causal)."""
    _belong(trace, refs)
    return live_checks.matches_sdpa(
        *_qkv(trace, split=True),
        trace.context_heads,  # (b, H, T, hd), before the heads are merged
        causal=True,
        reference=refs.sdpa_context,
    )


def future_check(trace: MultiHeadTrace, refs: References) -> live_checks.CheckResult:
    """No future leak: our outputs on the input and on the input with its later half changed."""
    _belong(trace, refs)
    if refs.future_changed is None:
        return live_checks.ONE_TOKEN_NO_FUTURE
    return live_checks.future_unmoved(trace.output, refs.future_changed)


def loop_check(trace: MultiHeadTrace, refs: References) -> live_checks.CheckResult:
    """The batched heads against head-by-head attention on the same columns."""
    _belong(trace, refs)
    return live_checks.heads_equal_loop(
        *_qkv(trace, split=False),
        trace.context,  # the heads merged, before out_proj
        trace.num_heads,
        causal_mask(trace).bool(),
        looped=refs.heads_looped,
    )


def wrapper_check(trace: MultiHeadTrace, refs: References) -> live_checks.CheckResult:
    """The wrapper built from the split's rows against the split's merged context."""
    _belong(trace, refs)
    return live_checks.wrapper_matches_split(
        refs.wrapper_context, trace.context, trace.scaled_scores, trace.values, trace.num_heads
    )


# --- outputs and weights side by side (the page's first two sections) -------------------------
@dataclass(frozen=True)
class SideBySide:
    """Ours, SDPA's and ``nn.MultiheadAttention``'s results on one input, eval mode."""

    ours: torch.Tensor  # (b, T, d_out)
    sdpa: torch.Tensor  # (b, T, d_out): the SDPA implementation above
    torch_mha: torch.Tensor | None  # (b, T, d_out), None when not applicable
    ours_weights: torch.Tensor  # (b, H, T, T)
    torch_weights: torch.Tensor | None  # (b, H, T, T): average_attn_weights=False
    not_applicable: str | None  # why nn.MultiheadAttention cannot hold these weights
    checks: tuple[
        live_checks.CheckResult, ...
    ]  # split-head SDPA, SDPA module, nn.MultiheadAttention
    weights_check: live_checks.CheckResult


def side_from(trace: MultiHeadTrace, refs: References) -> SideBySide:
    """Ours (an eval-mode trace), the SDPA implementation and nn.MultiheadAttention (its
    :func:`references`) side by side, with the checks that compare them. Runs no forward."""
    _belong(trace, refs)
    return SideBySide(
        ours=trace.output,
        sdpa=refs.sdpa_output,
        torch_mha=refs.torch_output,
        ours_weights=trace.attn_weights,
        torch_weights=refs.torch_weights,
        not_applicable=refs.torch_na,
        checks=(
            sdpa_check(trace, refs),
            live_checks.same_output(
                refs.sdpa_output,
                trace.output,
                output_scale(trace),
                trace.spec.d_out,
                "SDPA implementation = ours (after out_proj)",
            ),
            torch_mha_check(trace, refs),
        ),
        weights_check=torch_weights_check(trace, refs),
    )


def side_by_side(mha: M.MultiHeadAttention, x: torch.Tensor) -> SideBySide:
    """:func:`side_from` for a module someone built and an input: traces ``mha`` in eval mode
    and computes the references (the app reads both from its caches instead). ``mha`` must be
    private to the caller: it is switched to eval mode."""
    trace = trace_multihead_module(mha, x)
    return side_from(trace, references(trace))


# --- the race -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Timing:
    """One implementation's result: status "verified" (timed), "failed" (its output differed,
    so it was not timed) or "n/a" (it cannot run at this shape; ``reason`` says why)."""

    key: str
    label: str
    status: str
    median_s: float | None = None
    low_s: float | None = None  # first and third quartiles of the samples
    high_s: float | None = None
    ratio: float | None = None  # median / the fastest median
    samples: int = 0
    check: live_checks.CheckResult | None = None
    reason: str = ""

    @property
    def timed(self) -> bool:
        return self.median_s is not None

    @property
    def ms(self) -> float | None:
        return None if self.median_s is None else self.median_s * 1e3

    def spread(self) -> tuple[float, float, float]:
        """(median, first quartile, third quartile) in seconds; ValueError if not timed."""
        if self.median_s is None or self.low_s is None or self.high_s is None:
            raise ValueError(f"{self.label} was not timed ({self.status})")
        return self.median_s, self.low_s, self.high_s


def fmt_ms(seconds: float) -> str:
    """Milliseconds with three significant digits: 183 ms, 12.4 ms, 0.214 ms."""
    ms = seconds * 1e3
    return f"{ms:.0f} ms" if ms >= 100 else f"{ms:.3g} ms"


@dataclass(frozen=True)
class BenchResult:
    shape: Shape
    timings: tuple[Timing, ...]
    rounds: int
    calls_per_sample: int
    threads: int
    torch_version: str
    seconds: float  # wall time of the whole benchmark, building and verifying included

    def timing(self, key: str) -> Timing:
        return next(t for t in self.timings if t.key == key)

    @property
    def fastest(self) -> Timing | None:
        timed = [t for t in self.timings if t.timed]
        return min(timed, key=lambda t: t.spread()[0]) if timed else None

    def verdict(self) -> str:
        """What the numbers show, in words: the fused kernel against the chapter's module, and
        nn.MultiheadAttention with and without weights. Never more than they show."""
        sentences = []
        fastest = self.fastest
        if fastest is not None:
            sentences.append(f"Fastest here: {fastest.label} ({fmt_ms(fastest.spread()[0])}).")
        for verdict in _VERDICTS:
            a, b = self.timing(verdict.key), self.timing(verdict.against)
            if a.timed and b.timed:
                a_s, b_s = a.spread()[0], b.spread()[0]
                said = getattr(verdict, compare(a, b))  # faster, slower or same
                both = f"{fmt_ms(a_s)} against {fmt_ms(b_s)}"
                sentences.append(said.format(ratio=b_s / a_s, both=both, why=why_unclear(a, b)))
        return " ".join(sentences)


class _Verdict(NamedTuple):
    """One comparison the verdict makes: ``key``'s timing against ``against``'s, and what it
    says when ``key`` was faster, slower or not clearly either (``str.format`` fields: ``ratio``
    how many times as fast, ``both`` the two medians, ``why`` why no difference is clear)."""

    key: str
    against: str
    faster: str
    slower: str
    same: str


_VERDICTS = (
    _Verdict(
        "sdpa",
        "weight_split",
        "The fused SDPA kernel was {ratio:.2f}× as fast as the chapter's MultiHeadAttention "
        "({both}).",
        "The fused SDPA kernel was slower than the chapter's MultiHeadAttention here ({both}): "
        "at this shape it did not pay off.",
        "This measurement shows no clear difference between the fused SDPA kernel and the "
        "chapter's MultiHeadAttention ({both}; {why}).",
    ),
    _Verdict(
        "torch_mha_no_weights",
        "torch_mha",
        "nn.MultiheadAttention was {ratio:.2f}× as fast when it did not have to return the "
        "weights ({both}).",
        "nn.MultiheadAttention was slower without the weights here ({both}).",
        "This measurement shows no clear difference for nn.MultiheadAttention with and without "
        "the weights ({both}; {why}).",
    ),
)


def why_unclear(a: Timing, b: Timing) -> str:
    """Why :func:`compare` found no clear difference between ``a`` and ``b``."""
    low, high = sorted((a.spread()[0], b.spread()[0]))
    if high < low * (1 + SAME_MARGIN):
        return f"the medians are less than {SAME_MARGIN:.0%} apart"
    return (
        "the medians differ, but the samples spread so widely that the middle halves of the two "
        "overlap: the server was busy"
    )


def compare(a: Timing, b: Timing) -> str:
    """ "faster", "slower" or "same": ``a`` against ``b``. A difference counts only when the
    medians are more than :data:`SAME_MARGIN` apart and the quartile ranges do not overlap."""
    a_median, a_low, a_high = a.spread()
    b_median, b_low, b_high = b.spread()
    if a_median * (1 + SAME_MARGIN) <= b_median and a_high < b_low:
        return "faster"
    if b_median * (1 + SAME_MARGIN) <= a_median and b_high < a_low:
        return "slower"
    return "same"


def check_shape(shape: Shape) -> Shape:
    """A plain, validated shape tuple (the cache key), or ValueError."""
    batch, tokens, d_in, d_out, num_heads, qkv_bias = shape
    values = {"batch": batch, "tokens": tokens, "d_in": d_in, "d_out": d_out}
    values["num_heads"] = num_heads
    limits = {
        "batch": (1, 8),
        "tokens": (1, int(BOUNDS["context_length"][1])),
        "d_in": BOUNDS["d_in"],
        "d_out": BOUNDS["d_out"],
        "num_heads": BOUNDS["num_heads"],
    }
    for name, value in values.items():
        low, high = limits[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"{name}={value!r} is outside {low}–{high}")
    if d_out % num_heads:
        raise ValueError(f"d_out={d_out} is not divisible by num_heads={num_heads}")
    return (batch, tokens, d_in, d_out, num_heads, bool(qkv_bias))


def _quartiles(samples: list[float]) -> tuple[float, float]:
    if len(samples) < 2:
        return samples[0], samples[0]
    q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return q1, q3


def seconds_per_impl_for(shape: Shape) -> float:
    """The timing budget per implementation: a few seconds where one forward takes tens to
    hundreds of milliseconds (the book's shape), one second where it takes far less."""
    batch, tokens, d_in, d_out, _, _ = shape
    work = batch * tokens * (3 * d_in * d_out + d_out * d_out + 2 * tokens * d_out)
    return 2.0 if work >= 1e9 else 1.0


def benchmark(
    shape: Shape,
    seconds_per_impl: float | None = None,
    min_rounds: int = 3,
    max_rounds: int = 500,
    seed: int = 0,
) -> BenchResult:
    """Build every implementation from one seeded ``MultiHeadAttention`` at ``shape``, verify each
    against it on random inputs, then time the verified ones interleaved and return the medians.

    Timing takes about ``seconds_per_impl`` per implementation (default
    :func:`seconds_per_impl_for`), at least ``min_rounds`` rounds and at most twice the
    budget. One benchmark runs at a time in a process.
    """
    shape = check_shape(shape)
    batch, tokens, d_in, d_out, num_heads, qkv_bias = shape
    if seconds_per_impl is None:
        seconds_per_impl = seconds_per_impl_for(shape)
    gate.give_up()  # seconds of timing: the other sessions' page runs go meanwhile
    with _RUN_LOCK:
        started = time.perf_counter()
        # The mask buffer covers exactly the benchmark's tokens; a longer context_length would
        # only change which slice of it is read.
        spec = ModuleSpec("mha", d_in, d_out, tokens, 0.0, num_heads, qkv_bias, seed)
        mha = spec.build().eval()  # built inside seeded(seed)
        assert isinstance(mha, M.MultiHeadAttention)
        x = torch.randn(batch, tokens, d_in, generator=torch.Generator().manual_seed(seed))
        variants = build_variants(mha)
        reference = live_checks.mha_reference(mha, x)
        results: dict[str, Timing] = {}
        forwards: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {}
        for v in variants:
            if v.module is None:
                results[v.key] = Timing(v.key, v.label, "n/a", reason=v.reason or "")
                continue
            check = verify(v.module, mha, x, f"{v.label} = our MultiHeadAttention", reference)
            if not check.passed:
                results[v.key] = Timing(v.key, v.label, "failed", check=check, reason=check.detail)
                continue
            results[v.key] = Timing(v.key, v.label, "verified", check=check, reason=check.detail)
            forwards[v.key] = v.module
        rounds = number = 0
        if forwards:
            with torch.inference_mode():
                samples, rounds, number = race(
                    forwards, x, seconds_per_impl * len(forwards), min_rounds, max_rounds
                )
            medians = {key: statistics.median(s) for key, s in samples.items()}
            best = min(medians.values())
            for key, s in samples.items():
                low, high = _quartiles(s)
                old = results[key]
                results[key] = Timing(
                    key,
                    old.label,
                    "verified",
                    median_s=medians[key],
                    low_s=low,
                    high_s=high,
                    ratio=medians[key] / best,
                    samples=len(s),
                    check=old.check,
                    reason=old.reason,
                )
        return BenchResult(
            shape=shape,
            timings=tuple(results[v.key] for v in variants),
            rounds=rounds,
            calls_per_sample=number,
            threads=torch.get_num_threads(),
            torch_version=torch.__version__,
            seconds=time.perf_counter() - started,
        )
