"""Pass 4, multi-head attention, as data: everything page 4 shows, computed once per input.

:func:`build` takes the weight-split module's trace (and, in book mode, the wrapper's) and
returns a :class:`MultiHeadLesson`: the presets, the heads grid, the reshape walk, the two
constructor calls, the arithmetic, the live checks and the break-it settings. :func:`head_view`
builds one head in detail (the head is a view control, so it has its own small cached value),
:func:`speed_report` turns a timing into sentences chosen by what was measured.

In training mode every weights panel whose context is shown holds the weights after dropout,
the ones that context used, so Z = A·V holds for what is drawn (:func:`head_view` checks it).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd
import torch

from attnviz import figures
from attnviz.core import book
from attnviz.core import trace as tracing
from attnviz.core.settings import (
    GPT2_SMALL,
    GPT2_XL,
    Settings,
    attention_flops,
    mha_parameter_count,
)
from attnviz.models import implementations as impl
from attnviz.teach import bugs
from attnviz.teach import checks as live_checks
from attnviz.teach.lessons import zeros as Z
from attnviz.teach.lessons.common import scores_panel, vectors_panel, weights_panel
from attnviz.teach.lessons.heads import name_claims, pattern_claim, spread_claims
from attnviz.teach.panel import (
    CAUSAL_WEIGHTS,
    HOLDS_DROPPED,
    HOLDS_SCORES,
    HOLDS_SPLIT,
    HOLDS_WEIGHTS,
    PICKED_HEAD,
    Claim,
    Declared,
    Panel,
    Style,
    heads_that_fit,
    in_steps,
)

GRID_CELL_BUDGET = figures.GRID_CELL_BUDGET  # cells in one figure; more would slow the browser down
FASTER = 1.05  # a ratio of medians closer to 1 than this is "no real difference"

# Page 4's panels, and the parts of it that draw their numbers (attnviz.teach.panel.Declared).
_PAGE = "multihead"
_HEAD = ("", PICKED_HEAD, 0)  # "One head in detail": the head the page's "Head" box picked
DECLARED = (
    Declared("p4_step_split", _PAGE, "queries", holds=(HOLDS_SPLIT,), step=1),
    Declared("p4_step_scores", _PAGE, "scaled_scores", per_head=True, story=(), step=2),
    Declared(
        "p4_grid", _PAGE, "weights_dropped", per_head=True, story=(), cell=("", None, 0), step=3
    ),
    Declared("p4_step_context_heads", _PAGE, "context_heads", per_head=True, story=(), step=4),
    Declared("p4_step_merged", _PAGE, "context", step=5),
    Declared("p4_step_out_proj", _PAGE, "output", step=6),
    Declared("p4_queries_heads", _PAGE, "queries_heads", story=("p4_head_qkv",)),
    Declared("p4_keys_heads", _PAGE, "keys_heads", story=("p4_head_qkv",)),
    Declared("p4_values_heads", _PAGE, "values_heads", story=("p4_head_qkv",)),
    Declared("p4_scores", _PAGE, "attn_scores", holds=(HOLDS_SCORES,), cell=_HEAD),
    # training mode with dropout: the softmax (only then a panel of its own), then what dropout
    # left of it; otherwise p4_weights is the softmax itself
    Declared(
        "p4_weights_before",
        _PAGE,
        "attn_weights",
        holds=(),
        holds_dropped=(HOLDS_WEIGHTS,),
        same=("p4_weights", "p4_grid"),
        cell=_HEAD,
    ),
    Declared(
        "p4_weights",
        _PAGE,
        "weights_dropped",
        story=("p4_weights", "p4_weights_dropped"),
        holds=(HOLDS_WEIGHTS,),
        holds_dropped=(HOLDS_DROPPED,),
        same=("p4_weights_before", "p4_grid"),
        cell=_HEAD,
    ),
    Declared("p4_context", _PAGE, "context_heads"),
    # the reshape walk's strides table gives the split's shape; break-it draws head 0's weights
    Declared(
        "p4_strides", _PAGE, shows=("p4_step_split",), stands_for="p4_step_split", box="reshape"
    ),
    Declared("p4_breakit", _PAGE, shows=("p4_weights", "p4_weights_before", "p4_grid")),
)


# --- presets ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Preset:
    name: str
    d_in: int
    d_out: int
    heads: int
    ctx: int

    @property
    def sidebar(self) -> dict[str, int]:
        """The sidebar's values (by their URL names) that apply this preset."""
        return {"d_in": self.d_in, "d_out": self.d_out, "heads": self.heads, "ctx": self.ctx}

    def matches(self, s: Settings) -> bool:
        return (s.d_in, s.d_out, s.num_heads, s.context_length) == (
            self.d_in,
            self.d_out,
            self.heads,
            self.ctx,
        )


_DEFAULTS = Settings()
EX_3_2 = book.SPEC_EXERCISE_3_2  # the wrapper with d_out=1 per head: d_out=2 in total
PRESETS = (
    Preset(
        "Defaults",
        _DEFAULTS.d_in,
        _DEFAULTS.d_out,
        _DEFAULTS.num_heads,
        _DEFAULTS.context_length,
    ),
    Preset(
        "Exercise 3.2 (two heads, 2-dim output)",
        EX_3_2.d_in,
        EX_3_2.d_out * EX_3_2.num_heads,
        EX_3_2.num_heads,
        EX_3_2.context_length,
    ),
    Preset(
        "Exercise 3.3 (GPT-2 small)",
        GPT2_SMALL["d_in"],
        GPT2_SMALL["d_out"],
        GPT2_SMALL["num_heads"],
        GPT2_SMALL["context_length"],
    ),
    Preset(
        "GPT-2 XL",
        GPT2_XL["d_in"],
        GPT2_XL["d_out"],
        GPT2_XL["num_heads"],
        GPT2_XL["context_length"],
    ),
)


def presets_table() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "preset": p.name,
                "d_in": p.d_in,
                "d_out": p.d_out,
                "num_heads": p.heads,
                "context_length": p.ctx,
                "head_dim": p.d_out // p.heads,
                "parameters": f"{mha_parameter_count(p.d_in, p.d_out):,}",
            }
            for p in PRESETS
        ]
    )


# GPT-2 small as OpenAI released it: 50,257 tokens, 12 blocks, a feed-forward 4x wide, biases
# everywhere, two LayerNorms per block and one at the end, the output layer tied to the token
# embedding (so it adds no parameters).
GPT2_VOCAB = 50_257
GPT2_LAYERS = 12


def gpt2_parameters(
    d: int = GPT2_SMALL["d_out"],
    context_length: int = GPT2_SMALL["context_length"],
    layers: int = GPT2_LAYERS,
    vocab: int = GPT2_VOCAB,
) -> dict[str, int]:
    """GPT-2's parameters by part, counted from its configuration (GPT-2 small by default)."""
    attention = mha_parameter_count(d, d, qkv_bias=True)  # GPT-2's projections have biases
    feed_forward = (d * 4 * d + 4 * d) + (4 * d * d + d)
    layer_norms = 2 * (2 * d)  # a scale and a shift each
    parts = {
        "token embedding": vocab * d,
        "position embedding": context_length * d,
        "blocks": layers * (attention + feed_forward + layer_norms),
        "attention": layers * attention,
        "final LayerNorm": 2 * d,
    }
    parts["total"] = (
        parts["token embedding"]
        + parts["position embedding"]
        + parts["blocks"]
        + parts["final LayerNorm"]
    )
    return parts


def parameters_caption() -> str:
    """Exercise 3.3's count beside GPT-2 small's total: the chapter's 117M and the 124M the
    released weights hold, both in use, and why."""
    ex = book.EXERCISE_3_3_PARAMETERS
    gpt2 = gpt2_parameters()
    embeddings = gpt2["token embedding"] + gpt2["position embedding"]
    return (
        "Parameters of MultiHeadAttention with qkv_bias=False: 3·d_in·d_out + d_out² + d_out. "
        f"Exercise 3.3: {ex:,} for GPT-2 small, {100 * ex / gpt2['total']:.1f}% of the whole "
        "model: most parameters sit in the feed-forward layers and the embeddings "
        f"({embeddings / 1e6:.1f}M). GPT-2 small's total is quoted two ways: the chapter's 117M "
        "is the figure of the GPT-2 paper, which OpenAI later said was miscounted; counting the "
        f"released weights from the configuration (vocabulary {GPT2_VOCAB:,}, context "
        f"{GPT2_SMALL['context_length']}, width {GPT2_SMALL['d_out']}, {GPT2_LAYERS} blocks, "
        f"output layer tied to the token embedding) gives {gpt2['total']:,} ≈ "
        f"{round(gpt2['total'] / 1e6)}M."
    )


@dataclass(frozen=True)
class Exercise32:
    """Exercise 3.2: the wrapper with two heads and a 2-dimensional output, run on the batch."""

    shape: tuple[int, ...]
    parameters: int
    code: str
    ok: bool

    @property
    def badge(self) -> str:
        return f"Shape {self.shape}: {'as the book says' if self.ok else 'differs from the book'}"

    @property
    def intro(self) -> str:
        ex = EX_3_2
        return (
            "**Exercise 3.2**: two heads and a 2-dimensional output from the wrapper: give each "
            f"head d_out = {ex.d_out}. Its preset takes the book's sizes (d_in={ex.d_in}, "
            f"context_length={ex.context_length}) with d_out = {ex.d_out * ex.num_heads} in "
            "total, so the wrapper further down is built with d_out // num_heads = "
            f"{ex.d_out} per head."
        )

    @property
    def caption(self) -> str:
        ex = EX_3_2
        return (
            f"This wrapper has {self.parameters} parameters: {ex.num_heads} heads × 3 "
            f"projections of {ex.d_in}×{ex.d_out}, and no out_proj."
        )


def exercise_3_2() -> Exercise32:
    module = EX_3_2.build()
    with torch.inference_mode():
        shape = tuple(module(book.book_batch_inputs()).shape)
    code = f"torch.manual_seed(123)\nmha = {EX_3_2.constructor_call()}\nmha(batch).shape  # {shape}"
    parameters = sum(p.numel() for p in module.parameters())
    return Exercise32(shape, parameters, code, shape == book.EXERCISE_3_2_SHAPE)


@dataclass(frozen=True)
class Preface:
    """The top of page 4, which needs no trace (so it works when the heads do not divide
    d_out): the presets, the parameter counts and exercise 3.2."""

    presets: pd.DataFrame
    preset_in_use: str | None  # a caption, when the settings are one of the presets
    parameters_caption: str
    exercise_3_2: Exercise32


def preface(settings: Settings, use_book: bool) -> Preface:
    in_use = next((p for p in PRESETS if not use_book and p.matches(settings)), None)
    caption = None
    if in_use is not None:
        s = settings
        caption = (
            f"Preset in use: {in_use.name}. MultiHeadAttention({s.d_in}, {s.d_out}, "
            f"{s.context_length}, num_heads={s.num_heads}, qkv_bias={s.qkv_bias}) has "
            f"{mha_parameter_count(s.d_in, s.d_out, s.qkv_bias):,} parameters."
        )
    return Preface(presets_table(), caption, parameters_caption(), exercise_3_2())


# --- the lesson ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class MultiHeadLesson:
    """Everything page 4 shows, computed from the traces (no Streamlit, no numbers left to
    compute on the page). ``panels`` holds every panel by key, ``claims`` every sentence about
    their numbers (each :meth:`Claim.holds` on ``panels``)."""

    book: bool
    labels: tuple[str, ...]
    spec: tracing.ModuleSpec  # the weight-split module drawn
    wrapper_spec: tracing.ModuleSpec  # the wrapper beside it
    grid: Panel
    grid_note: str | None  # why only head 0 is drawn, when the grid is past its budget
    weights_note: str  # which weights the figures show: before or after dropout, and why
    scale_note: str
    strides: tuple[dict, ...]  # the reshape walk's rows (a DataFrame only once its box opens)
    wrapper_text: str  # how the wrapper is built to compare with the split
    book_printouts: tuple[tuple[str, torch.Tensor, str], ...]  # (title, ours, printed name)
    equivalence: live_checks.CheckResult
    flops_text: str
    timing_shape: tuple
    checks: tuple[live_checks.CheckResult, ...]
    checks_note: str | None
    hidden: dict[str, str | None]  # bug key -> why the settings hide it (None: it shows)
    panels: dict[str, Panel] = field(default_factory=dict)
    claims: tuple[Claim, ...] = ()
    # What ``weights_note`` counts (the weights dropout zeroed), as claims on the grid: shown
    # once, in the note, not again with the grid's claims.
    note_claims: tuple[Claim, ...] = ()
    # Presenter mode, in the book's order: split into heads, per-head scores (masked, scaled),
    # per-head weights (the grid above), per-head context, merged, out_proj.
    steps: tuple[Panel, ...] = ()

    @property
    def num_heads(self) -> int:
        return self.spec.num_heads

    def claims_for(self, key: str) -> tuple[Claim, ...]:
        return tuple(c for c in self.claims if c.panel == key)


def dropped(trace: tracing.MultiHeadTrace) -> bool:
    """Whether the context used weights after dropout (training mode with p > 0)."""
    return trace.training and trace.spec.dropout > 0


def _factor(p: float) -> str:
    return f"{1 / (1 - p):.4g}"


def weights_note(trace: tracing.MultiHeadTrace, use_book: bool) -> str:
    p = trace.spec.dropout
    if use_book:
        return (
            f"Book mode: the chapter's {trace.spec.constructor_call()}. It runs without "
            "dropout, so these weights are exactly what each head's context used."
        )
    if dropped(trace):
        heads = "the head" if trace.num_heads == 1 else f"all {trace.num_heads} heads"
        return (
            f"Training mode, dropout p = {p}: these are the weights after dropout, the ones each "
            f"head's context used. Over {heads}, dropout {Z.dropped_phrase(_zeros(trace))} and "
            f"multiplied the rest by 1/(1−{p}) = {_factor(p)}."
        )
    if trace.training:
        return "Training mode with dropout 0: nothing is dropped, so these weights are what the context used."
    return (
        f"Eval mode: dropout (p = {p}) is the identity, so these weights are exactly what each "
        "head's context used. Turn on training mode to see dropout act on them."
    )


def _zeros(trace: tracing.MultiHeadTrace, head: int | None = None) -> Z.Zeros:
    """The zeros of the weights after dropout (every head, or one), counted (example 0)."""
    pick = slice(None) if head is None else head
    return Z.count(trace.attn_weights[0, pick], trace.weights_dropped[0, pick])


def _row_claims(key: str, values: torch.Tensor, after_dropout: bool, what: str) -> list[Claim]:
    """The sentences about a weights panel's rows, chosen by its numbers."""
    claims = []
    sums = values.reshape(-1, values.shape[-1]).double().sum(dim=-1)
    off = int(((sums - 1).abs() > 1e-5).sum())
    if off:
        claims.append(
            Claim(
                f"{what}: {off} of {sums.numel()} rows no longer sum to 1 after dropout "
                f"(row sums from {float(sums.min()):.2f} to {float(sums.max()):.2f}).",
                key,
                "some_row_sum_differs",
            )
        )
    else:
        note = " (dropout changed no row sum here)" if after_dropout else ""
        claims.append(Claim(f"{what}: every row sums to 1{note}.", key, "rows_sum_to_one"))
    claims.append(
        Claim(
            f"{what}: every weight above the diagonal is 0, so no token attends to a later one.",
            key,
            "future_is_zero",
        )
    )
    return claims


def _grid(trace: tracing.MultiHeadTrace) -> tuple[Panel, str | None]:
    shown = trace.weights_dropped[0]  # (H, T, T): what each head's context used
    H, n = shown.shape[0], shown.shape[-1]
    p = trace.spec.dropout
    after = dropped(trace)
    zmax = 1 / (1 - p) if after else 1.0
    what = f"after dropout, scale 0 to {_factor(p)}" if after else "one shared scale"
    fit = heads_that_fit(n, n)
    note = None
    if fit < H:
        note = (
            f"{H} heads × {n}×{n} = {shown.numel():,} cells is past this page's figure budget "
            f"({GRID_CELL_BUDGET:,}), which keeps the browser responsive: {fit} of the {H} "
            f"heads fit at {n} tokens. Pick the heads to draw in “Heads to show” above the "
            "grid, or narrow the token window to fit more."
        )
    formula = (
        r"A_h = \mathrm{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_{\text{head}}}} + M\right)"
    )
    panel = Panel(
        "p4_grid",
        shown,
        trace.labels,
        trace.labels,
        title="Attention weights of {heads}",
        note=what,
        formula=rf"\mathrm{{dropout}}({formula})" if after else formula,
        sentence=_grid_sentence(shown),
        kind=CAUSAL_WEIGHTS,
        style=Style(zmax=zmax),
        heads=None if fit >= H else tuple(range(fit)),
    )
    return panel, note


def _grid_sentence(shown: torch.Tensor) -> str:
    """The presenter's sentence under the grid: whether the heads differ, in numbers."""
    claim = pattern_claim("p4_grid", shown)
    if claim is not None:
        return claim.text
    return "One head attends over the tokens." if shown.shape[0] == 1 else ""


def heads_claims(grid: Panel, spec: tracing.ModuleSpec) -> tuple[Claim, ...]:
    """The sentences about the heads drawn in the grid: whether they differ (and "its own
    pattern" only when they do), how far their weights are from an even share, and with trained
    weights what each head is named after (only when its score says so)."""
    out: list[Claim] = []
    pattern = pattern_claim(grid.key, grid.values)
    out += [pattern] if pattern is not None else []
    who = "These trained weights" if spec.trained else "These random weights"
    out += spread_claims(grid.key, grid.values, who)
    if spec.trained is not None:
        layer = spec.trained.layer
        out += name_claims(
            grid.key,
            grid.values,
            grid.rows,
            lambda h: f"Head {h} (layer {layer} of the grown model)",
        )
    return tuple(out)


def _checks(
    checked: tracing.MultiHeadTrace, refs: impl.References
) -> tuple[live_checks.CheckResult, ...]:
    """The chapter's claims about pass 4, in eval mode (dropout off), where they hold: read off
    the eval-mode trace and its references."""
    return (
        live_checks.rows_sum_to_one(checked.attn_weights),
        impl.loop_check(checked, refs),
        impl.sdpa_check(checked, refs),
        impl.torch_mha_check(checked, refs),
        impl.future_check(checked, refs),
    )


def eval_trace(trace: tracing.MultiHeadTrace) -> tracing.MultiHeadTrace:
    """``trace`` itself when it ran without dropout, else the same pass in eval mode (one more
    forward: the app passes its cached eval trace to :func:`build` instead)."""
    if not dropped(trace):
        return trace
    return tracing.trace_multihead(trace.spec, trace.inputs, trace.labels)


def _wrapper_text(spec: tracing.ModuleSpec, use_book: bool) -> str:
    head_dim = spec.d_out // spec.num_heads
    if use_book:
        return (
            "The chapter's own arguments: the wrapper's d_out=2 is per head (output width 4), the "
            "weight-split module's d_out=2 is the total (head_dim 1), so the two are not the same "
            "computation here. The check below compares the weight split with a wrapper built "
            "from its own rows instead (d_out = head_dim = 1 per head), before `out_proj`:"
        )
    return (
        f"The wrapper is built with d_out // num_heads = {head_dim} per head so both give "
        f"{spec.d_out} columns. With the weight split's rows given to the heads (head h takes "
        f"rows h·{head_dim} to (h+1)·{head_dim} of each projection), the concatenated heads equal "
        "the weight-split context before `out_proj`, in eval mode:"
    )


def _flops_text(n: int, spec: tracing.ModuleSpec) -> str:
    flops = attention_flops(n, spec.d_in, spec.d_out)
    H = spec.num_heads
    return (
        f"Arithmetic, one example of {n} tokens, before out_proj: **{flops['total']:,} FLOPs for "
        f"both** ({flops['projections']:,} in the projections, {flops['attention']:,} in the "
        f"scores and context). The wrapper calls {3 * H} projection matmuls (3 per head), the "
        "weight-split module 3."
    )


def build(
    trace: tracing.MultiHeadTrace,
    wrapper: tracing.WrapperTrace | None,
    use_book: bool,
    refs: impl.References | None = None,
    checked: tracing.MultiHeadTrace | None = None,
) -> MultiHeadLesson:
    """Page 4 below its preface, from the weight split's trace; ``wrapper``: the wrapper's
    trace, for book mode's printouts (None outside book mode). The live checks read
    ``checked``, the same pass in eval mode (``trace`` itself unless dropout acted), and its
    :func:`~attnviz.models.implementations.references` ``refs``; given both, building runs no forward
    (the app passes its cached ones), otherwise they are computed here."""
    checked = checked if checked is not None else eval_trace(trace)
    refs = refs if refs is not None else impl.references(checked)
    spec, n = trace.spec, trace.num_tokens
    grid, grid_note = _grid(trace)
    wrapper_spec = book.SPEC_WRAPPER if use_book else spec.as_wrapper()
    printouts: tuple[tuple[str, torch.Tensor, str], ...] = ()
    if use_book and wrapper is not None:
        printouts = (
            (
                "MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2): context_vecs[0]",
                wrapper.output[0],
                "wrapper",
            ),
            (
                "MultiHeadAttention(3, 2, 6, 0.0, num_heads=2): context_vecs[0]",
                trace.output[0],
                "multihead",
            ),
        )
    head_dim = spec.d_out // spec.num_heads
    checks_note = None
    if dropped(trace):
        checks_note = (
            "The live checks test the chapter's claims in eval mode, with dropout off, where they "
            "hold up to float32 rounding; the figures above show training mode."
        )
    x = trace.inputs
    note = weights_note(trace, use_book)
    return MultiHeadLesson(
        book=use_book,
        labels=trace.labels,
        spec=spec,
        wrapper_spec=wrapper_spec,
        grid=grid,
        grid_note=grid_note,
        weights_note=note,
        scale_note=(
            f"Scores are divided by √head_dim = √{head_dim} = {head_dim**0.5:.4f}, not by √d_out."
        ),
        strides=tuple(tracing.strides_table(trace)),
        wrapper_text=_wrapper_text(spec, use_book),
        book_printouts=printouts,
        equivalence=impl.wrapper_check(checked, refs),
        flops_text=_flops_text(n, spec),
        timing_shape=(
            1,
            n,
            spec.d_in,
            spec.d_out,
            spec.num_heads,
            spec.context_length,
            spec.qkv_bias,
        ),
        checks=_checks(checked, refs),
        checks_note=checks_note,
        hidden={bug.key: bug.hidden_at(x, spec) for bug in bugs.bugs_for("multihead")},
        panels={grid.key: grid},
        claims=(
            *_row_claims(grid.key, grid.values, dropped(trace), "All heads"),
            *heads_claims(grid, spec),
        ),
        note_claims=Z.claims(note, grid.key, _zeros(trace)) if dropped(trace) else (),
        steps=_steps(trace, grid),
    )


# --- presenter steps ----------------------------------------------------------------------------
def _per_head(key, values, rows, cols, title, formula, sentence) -> Panel:
    """A (H, rows, cols) panel: every head, or head 0 alone past the grid's budget."""
    style = Style(colour="signed", row_name="row", col_name="column", value_name="value")
    if values.numel() > GRID_CELL_BUDGET:
        title = f"{title}: head 0 of {values.shape[0]} (all heads are past the figure budget)"
        values = values[0]
        style = replace(style, annotate=False)
    else:
        style = replace(style, labelled=True)
    return Panel(
        key,
        values,
        tuple(rows),
        tuple(cols),
        title=title,
        formula=formula,
        sentence=sentence,
        style=style,
    )


def _steps(trace: tracing.MultiHeadTrace, grid: Panel) -> tuple[Panel, ...]:
    labels, H, hd, d_out = trace.labels, trace.num_heads, trace.head_dim, trace.spec.d_out
    split_cols = tuple(f"h{h}·{d}" for h in range(H) for d in range(hd))
    sizes = {"H": H, "hd": hd, "d_out": d_out, "last": hd - 1}
    heads_side_by_side: dict[str, Any] = dict(col_name="head·dim", annotate=False, fill=sizes)
    split = vectors_panel(
        "p4_step_split", trace.queries[0], labels, split_cols, **heads_side_by_side
    )
    scores = _per_head(
        "p4_step_scores",
        trace.scaled_scores[0],
        labels,
        labels,
        f"Scaled masked scores of all {H} heads (blank = −∞)",
        r"\frac{Q_h K_h^\top}{\sqrt{d_{\text{head}}}} + M",
        f"Each head scores with its own {hd}-wide queries and keys, divided by √{hd} = "
        f"{hd**0.5:.4g}; future keys get −∞.",
    )
    dims = tuple(figures.dim_labels(hd, "head dim"))
    context_heads = _per_head(
        "p4_step_context_heads",
        trace.context_heads[0],
        labels,
        dims,
        f"Context of each of the {H} heads {(trace.num_tokens, hd)}",
        r"Z_h = A_h V_h",
        "Each head blends its own values with its own weights.",
    )
    merged = vectors_panel(
        "p4_step_merged", trace.context[0], labels, split_cols, **heads_side_by_side
    )
    out_cols = tuple(figures.dim_labels(d_out, "out"))
    out = vectors_panel(
        "p4_step_out_proj", trace.output[0], labels, out_cols, col_name="output dim", annotate=False
    )
    found = (split, scores, grid, context_heads, merged, out)
    return in_steps(DECLARED, {p.key: p for p in found})


# --- one head in detail -------------------------------------------------------------------------
@dataclass(frozen=True)
class HeadView:
    """One head: its Q, K, V, masked scores, weights (before and, in training mode, after
    dropout) and context, with the sentences about them and the check that the context shown
    is the weights shown times V."""

    head: int
    panels: dict[str, Panel]
    claims: tuple[Claim, ...]
    product: live_checks.CheckResult  # context = shown weights @ V, on the tensors drawn
    # What the weights panel's own sentence counts in training mode (the presenter's words
    # for it), as claims on that panel; the page shows ``claims`` under the panels.
    sentence_claims: tuple[Claim, ...] = ()

    def claims_for(self, key: str) -> tuple[Claim, ...]:
        return tuple(c for c in self.claims if c.panel == key)


def head_view(trace: tracing.MultiHeadTrace, head: int) -> HeadView:
    h = min(max(int(head), 0), trace.num_heads - 1)
    labels, hd = trace.labels, trace.head_dim
    dims = tuple(figures.dim_labels(hd, "head dim"))
    after = dropped(trace)
    p = trace.spec.dropout
    said: dict[str, object] = {"h": h, "hd": hd, "p": p, "factor": _factor(p)}
    found = [
        vectors_panel(
            f"p4_{name}",
            getattr(trace, name)[0, h],
            labels,
            dims,
            col_name="head dim",
            annotate=False,
            story="p4_head_qkv",
            fill=said | {"short": short},
        )
        for name, short in (("queries_heads", "Q"), ("keys_heads", "K"), ("values_heads", "V"))
    ]
    found.append(scores_panel("p4_scores", trace.attn_scores[0, h], labels, fill=said))
    before = trace.attn_weights[0, h]
    shown = trace.weights_dropped[0, h] if after else before
    counted: tuple[Claim, ...] = ()
    if after:  # training mode: the softmax, then what dropout left of it
        found.append(weights_panel("p4_weights_before", before, labels, causal=True, fill=said))
        zeros = _zeros(trace, h)
        said["zeroed"] = Z.dropped_phrase(zeros)
        weights = weights_panel(
            "p4_weights",
            shown,
            labels,
            causal=True,
            zmax=1 / (1 - p),
            story="p4_weights_dropped",
            fill=said,
        )
        counted = Z.claims(weights.sentence, "p4_weights", zeros)
    else:
        weights = weights_panel("p4_weights", shown, labels, causal=True, fill=said)
    context = trace.context_heads[0, h]
    found += [
        weights,
        vectors_panel("p4_context", context, labels, dims, col_name="head dim", fill=said),
    ]
    panels = {panel.key: panel for panel in found}
    claims = _row_claims("p4_weights", shown, after, f"Head {h}")
    if after:
        claims += _row_claims("p4_weights_before", before, False, f"Head {h} before dropout")
    values = trace.values_heads[0, h]
    return HeadView(h, panels, tuple(claims), context_check(shown, values, context), counted)


def context_check(
    weights: torch.Tensor, values: torch.Tensor, context: torch.Tensor
) -> live_checks.CheckResult:
    """Z = A·V for the panels drawn: the context shown is the weights shown times V."""
    with torch.inference_mode():
        product = weights @ values
    return live_checks.compare(
        "context_is_shown_weights_times_v",
        "Context = weights shown @ V",
        product,
        context,
        max(live_checks.max_abs(values), 1.0) * max(live_checks.max_abs(weights), 1.0),
        weights.shape[-1],
        "multiply the weights shown by this head's V and you get the context shown",
        "the context shown is not the weights shown times V",
        ("weights shown @ V", "context shown"),
        "max(largest |value|, 1) × max(largest |weight|, 1)",
    )


# --- timing -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpeedReport:
    wrapper_s: float
    split_s: float
    runs: int
    sentences: tuple[str, ...]

    @property
    def ratio(self) -> float:
        """Wrapper time over weight-split time: above 1, the weight split was faster."""
        return self.wrapper_s / self.split_s


def _ms(seconds: float) -> str:
    """A duration with the digits that matter: 0.070 ms, 41.0 ms, 6.82 s."""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 0.01:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e3:.3f} ms"


def speed_report(result: dict, shape: tuple) -> SpeedReport:
    """Sentences about one timing (``attnviz.models.speed.wrapper_against_split`` at ``shape``),
    each chosen by the numbers measured: which module was faster and, from the timed parts,
    why; then the chapter's claim about the number of matmuls, as a count."""
    b, n, d_in, d_out, H = shape[:5]
    tw, tm = result["median"]["wrapper"], result["median"]["weight split"]
    ratio = tw / tm
    if ratio > FASTER:
        verdict = f"the weight split was {ratio:.2f}× as fast"
    elif ratio < 1 / FASTER:
        verdict = f"the wrapper was {1 / ratio:.2f}× as fast"
    else:
        verdict = "no real difference"
    out = [
        f"Median of {result['runs']} interleaved runs on this server: wrapper {_ms(tw)}, "
        f"weight split {_ms(tm)}: {verdict}."
    ]
    out_proj_flops = attention_flops(n, d_in, d_out, b)["out_proj"]
    if ratio > FASTER:
        out.append(
            "That agrees with the chapter: fewer, larger matmuls win when each small one is too "
            "small to keep the core busy or Python's per-call overhead dominates."
        )
    elif ratio < 1 / FASTER:
        out.append("That is against the chapter's claim that the weight split is more efficient.")
    else:
        out.append(
            "At this size the saving of fewer matmul calls and the weight split's extra out_proj "
            f"({out_proj_flops:,} FLOPs) about cancel out."
        )
    parts = result.get("parts")
    if parts:
        out.extend(_why(parts, tw, tm, H, b * H * n * n * 4 / 1e6))
    elif ratio < 1 / FASTER:
        out.append(
            f"The weight split also runs out_proj, which the wrapper does not have "
            f"({out_proj_flops:,} more FLOPs)."
        )
    out.append(
        "The chapter's point about the number of matmuls holds whatever the clock says: the "
        f"weight split projects with 3 matmuls, the wrapper with {3 * H} (3 per head), for the "
        "same arithmetic."
    )
    return SpeedReport(tw, tm, int(result["runs"]), tuple(out))


def _why(parts: dict, tw: float, tm: float, H: int, scores_mb: float) -> list[str]:
    """What the timed parts say: the projections, the weight split's extras (out_proj and the
    copy that merges the heads), and the attention itself (the rest of each forward)."""
    small, large = parts["wrapper projections"], parts["split projections"]
    out_proj, merge = parts["split out_proj"], parts["split merge"]
    if small > large * FASTER:
        saving = f"fewer calls saved {_ms(small - large)}"
    else:
        saving = "no saving from fewer calls here"
    out = [
        f"Measured here: the wrapper's {3 * H} small projections took {_ms(small)}, the weight "
        f"split's 3 large ones {_ms(large)} ({saving}). The weight split also pays for what the "
        f"wrapper does not do: out_proj ({_ms(out_proj)}) and the .contiguous() copy that merges "
        f"the heads ({_ms(merge)})."
    ]
    attention_split = tm - large - out_proj - merge
    attention_wrapper = tw - small
    if (
        attention_split > 0
        and attention_wrapper > 0
        and attention_split > attention_wrapper * FASTER
    ):
        out.append(
            f"The rest, the attention itself (scores, mask, softmax, weights @ values), took "
            f"{_ms(attention_split)} in the weight split against {_ms(attention_wrapper)} in "
            f"the wrapper: the weight split holds the scores of all {H} heads at once, a "
            f"(b, H, T, T) tensor of {scores_mb:.2f} MB that the mask, the scaling and the "
            f"softmax each pass over, while the wrapper works on one head's "
            f"{scores_mb / H:.2f} MB at a time."
        )
    return out


# --- break it ---------------------------------------------------------------------------------
