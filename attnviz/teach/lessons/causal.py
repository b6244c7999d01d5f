"""Pass 3, causal attention with dropout (section 3.5), as data: every panel, check, table and
sentence the page shows, computed once from the traces (no Streamlit).

Traces in: the page's causal trace (eval or training mode, as the sidebar says; in book mode
the chapter's masking walkthrough), the dropout lab's training-mode trace (None in book mode or
at dropout 0) and the batch trace of the two sidebar texts (None when one text is empty).

Training mode is honest here: the masking routes show the weights before dropout and say so;
every panel that feeds a shown context (the lab's A beside V and Z, the batch's weights) shows
the weights after dropout, so Z = A·V holds on screen.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from attnviz import figures
from attnviz.core import book as BK
from attnviz.core import trace as tracing
from attnviz.core.seeding import seeded
from attnviz.core.settings import Settings
from attnviz.teach import bugs
from attnviz.teach import checks as live_checks
from attnviz.teach.checks import CheckResult
from attnviz.teach.lessons import zeros as Z
from attnviz.teach.lessons.common import matrix_panel, scores_panel, vectors_panel, weights_panel
from attnviz.teach.lessons.heads import name_claims, spread_claim
from attnviz.teach.panel import (
    HOLDS_DROP_MASK,
    HOLDS_DROPPED,
    HOLDS_MASK,
    HOLDS_SCORES,
    HOLDS_WEIGHTS,
    Claim,
    Declared,
    Panel,
    Style,
    in_steps,
    token_panel,
)

SUMS_SHOWN = 24  # row sums listed in the lab's caption

# Page 3's panels, and the parts of it that draw their numbers (attnviz.teach.panel.Declared).
_PAGE = "causal"
_CELL = ("", 0, 0)
_LAB, _BATCH = "lab", "batch"  # the closed parts (ui/sections.py)
LAB_SUMS = "p3_lab_sums"  # the lab's row sums after dropout (a caption)
LAB_PRINTOUTS = "p3_lab_printouts"  # book mode: the chapter's dropout example on these weights
DECLARED = (
    Declared("p3_mask", _PAGE, "mask_buffer", holds=(HOLDS_MASK,)),
    Declared("p3_step_scores", _PAGE, "unmasked_scores", step=1),
    Declared(
        "p3_masked",
        _PAGE,
        "attn_scores",
        holds=(HOLDS_SCORES,),
        same=("p3_step_scores", "p3_step_scaled"),
        cell=_CELL,
        step=2,
    ),
    Declared("p3_step_scaled", _PAGE, "scaled_scores", step=3),
    Declared("p3_route1", _PAGE, "renormalized", cell=_CELL),
    Declared(
        "p3_route2",
        _PAGE,
        "attn_weights",
        holds=(HOLDS_WEIGHTS,),
        same=("p3_route1", "p3_uniform", "p3_step_dropout", "p3_batch0"),
        cell=_CELL,
        step=4,
    ),
    Declared("p3_uniform", _PAGE, story=(), cell=_CELL),  # each weight relative to uniform
    Declared(
        "p3_step_dropout",
        _PAGE,
        "weights_dropped",
        story=("p3_step_dropout", "p3_step_dropout_identity"),
        step=5,
    ),
    Declared("p3_step_context", _PAGE, "context", step=6),
    # the dropout lab: the pass in training mode at the sidebar's rate and seed
    Declared("p3_dmask", _PAGE, "dropout_mask", lab=True, holds=(HOLDS_DROP_MASK,), box=_LAB),
    Declared(
        "p3_dropped",
        _PAGE,
        "weights_dropped",
        lab=True,
        holds=(HOLDS_DROPPED,),
        same=("p3_step_dropout", "p3_batch0"),
        cell=("lab", 0, 0),
        box=_LAB,
    ),
    Declared("p3_values", _PAGE, "values", lab=True, box=_LAB),
    Declared("p3_place_w", _PAGE, "context", lab=True, box=_LAB),
    Declared("p3_place_c", _PAGE, box=_LAB),  # dropout on the context instead
    Declared(LAB_SUMS, _PAGE, shows=("p3_dropped",), box=_LAB),
    Declared(LAB_PRINTOUTS, _PAGE, shows=("p3_dropped",), stands_for="p3_dropped", box=_LAB),
    # the batch of the two sidebar texts, one weights panel per example
    Declared("p3_batch0", _PAGE, story=("p3_batch",), cell=("batch", 0, 0), box=_BATCH),
    Declared("p3_batch1", _PAGE, story=("p3_batch",), cell=("batch", 0, 1), box=_BATCH),
    # book mode's masking walkthrough (printouts); break-it's correct weights (the batch's
    # first example)
    Declared("p3_walkthrough", _PAGE, shows=("p3_masked", "p3_route1", "p3_route2")),
    Declared("p3_breakit", _PAGE, shows=("p3_route1", "p3_route2", "p3_batch0")),
)


@dataclass(frozen=True)
class Printout:
    """One of the chapter's printed tensors beside ours (``book.printed(name)``)."""

    title: str
    tensor: torch.Tensor
    name: str


@dataclass(frozen=True)
class DropoutLab:
    """The dropout lab at the sidebar's rate and seed (training mode), or the book's example."""

    p: float
    seed: int
    intro: str  # Markdown (numbers only, no user text)
    illustrative: bool  # p above the chapter's 0.1-0.2
    mask: Panel | None = None  # (T, T) 1 kept, 0 dropped, NaN where the weight was 0
    dropped: Panel | None = None  # (T, T) A = dropout(weights): what the context used
    values: Panel | None = None  # (T, d_out) V
    context: Panel | None = None  # (T, d_out) Z = A·V
    context_dropout: Panel | None = None  # (T, d_out) dropout(weights·V): the other placement
    sums: str = ""  # "Row sums after dropout, row 0 first: ..."
    zero_rows: str | None = None  # plain text naming the rows dropout zeroed (user labels)
    claims: tuple[Claim, ...] = ()
    placement: str = ""  # what the other placement did, counted
    printouts: tuple[Printout, ...] = ()  # book mode: the chapter's two dropout examples


@dataclass(frozen=True)
class Batch:
    """The batch of the two sidebar texts (book mode: two copies of the book's inputs)."""

    shape_sentence: str  # Markdown (numbers only)
    panels: tuple[Panel, ...]  # one (T, T) weights panel per example, what its context used
    claims: tuple[Claim, ...]
    check: CheckResult
    printout: Printout | None
    shape_caption: str
    labels: tuple[str, ...]  # example 0's labels (the break-it figures use them)
    hidden: dict[str, str | None]  # bug key -> why it cannot show at these settings, or None


@dataclass(frozen=True)
class CausalLesson:
    constructor: str  # the two lines that build the module, as a student types them
    book_note: str | None
    mask: Panel  # (k, k): the buffer's first k = min(ctx, T + 4) positions
    mask_sentence: str  # Markdown (numbers only)
    buffers: tuple[tuple[str, tuple[str, ...]], ...]  # (listed by, the names it lists)
    masked_scores: Panel  # (T, T) with −∞ above the diagonal
    route1: Panel  # (T, T) softmax, zero the future, renormalise
    route2: Panel  # (T, T) −∞ then softmax: the module's weights before dropout
    route_claims: tuple[Claim, ...]
    route_checks: tuple[CheckResult, ...]
    uniform: Panel  # (T, T) weight × visible keys, NaN above the diagonal
    walkthrough: tuple[Printout, ...]  # book mode: the chapter's masking printouts
    lab: DropoutLab | None  # None: dropout 0 outside book mode
    mode_claims: tuple[Claim, ...]
    batch: Batch | None
    checks: tuple[CheckResult, ...]
    # Presenter mode, in the book's order: scores, masked, scaled, softmax, dropout, context.
    steps: tuple[Panel, ...] = ()
    step_claims: tuple[Claim, ...] = ()  # what the steps' sentences state about the numbers

    @property
    def panels(self) -> dict[str, Panel]:
        """Every panel the page can show, by key."""
        found: list[Panel | None] = [
            self.mask,
            self.masked_scores,
            self.route1,
            self.route2,
            self.uniform,
        ]
        if self.lab is not None:
            found += [self.lab.mask, self.lab.dropped, self.lab.values, self.lab.context]
            found += [self.lab.context_dropout]
        if self.batch is not None:
            found += list(self.batch.panels)
        found += list(self.steps)
        return {p.key: p for p in found if p is not None}

    @property
    def claims(self) -> tuple[Claim, ...]:
        """Every sentence the page states about the numbers (the presenter's steps state
        theirs: ``step_claims``)."""
        out = [*self.route_claims, *self.mode_claims]
        if self.lab is not None:
            out += list(self.lab.claims)
        if self.batch is not None:
            out += list(self.batch.claims)
        return tuple(out)


# --- helpers ----------------------------------------------------------------------------------
def _holds(prop: str, panel: Panel, arg: float | None = None) -> bool:
    return Claim("", panel.key, prop, arg).holds({panel.key: panel})


def _fmt(p: float) -> str:
    return f"{p:g}"


# --- the mask and the two routes --------------------------------------------------------------
def _mask(tr: tracing.CausalTrace) -> tuple[Panel, str, tuple[tuple[str, tuple[str, ...]], ...]]:
    ctx, n = tr.spec.context_length, tr.num_tokens
    k = min(ctx, n + 4)
    # token labels already start with their position ("2: ␣starts")
    pos = [tr.labels[i] if i < n else f"{i} (unused)" for i in range(k)]
    panel = matrix_panel(
        "p3_mask",
        tr.mask[:k, :k],
        pos,
        pos,
        colour="mask",
        row_name="query position",
        col_name="key position",
        value_name="mask",
        fill={"ctx": ctx, "last": k - 1},
    )
    sentence = (
        f"The mask is built once at `context_length = {ctx}` and sliced to the {n} tokens in "
        "use: `self.mask.bool()[:num_tokens, :num_tokens]`. 1 marks a future key. It is "
        "registered with `register_buffer`, so it is saved in `state_dict()` and moves with "
        "`.to(device)`, but it is not a parameter and the optimizer never touches it:"
    )
    module = tr.spec.build()
    names = (
        ("buffers()", tuple(name for name, _ in module.named_buffers())),
        ("state_dict()", tuple(module.state_dict().keys())),
        ("parameters()", tuple(name for name, _ in module.named_parameters())),
    )
    return panel, sentence, names


def _routes(tr: tracing.CausalTrace, training: bool):
    labels = tr.labels
    after = " (before dropout)" if training else ""
    before = {"before": after}
    masked = scores_panel("p3_masked", tr.attn_scores[0], labels)
    route1 = weights_panel(
        "p3_route1", tracing.renormalized_weights(tr)[0], labels, causal=True, fill=before
    )
    route2 = weights_panel("p3_route2", tr.attn_weights[0], labels, causal=True, fill=before)
    ratio = torch.from_numpy(figures.ratio_to_uniform(tr.attn_weights[0]))
    uniform = token_panel(
        "p3_uniform",
        ratio,
        labels,
        f"Each weight relative to uniform{after}",
        formula=r"a_{ij} \cdot (i + 1)",
        sentence="1 is an even share of the keys a row can see; 2 is twice that.",
        style=Style(colour="relative", value_name=figures.RATIO_NAME),
    )
    claims = [
        Claim(
            "Every future score is −∞ (left blank), so its weight is exactly 0.",
            "p3_masked",
            "future_is_minus_inf",
        ),
        Claim(
            "Route 2: every row sums to 1" + (" (before dropout)." if training else "."),
            "p3_route2",
            "rows_sum_to_one",
        ),
    ]
    if _holds("rows_sum_to_one", route1) and _holds("future_is_zero", route1):
        claims.append(
            Claim(
                "Route 1 gives the same zeros on the future and rows that sum to 1.",
                "p3_route1",
                "rows_sum_to_one",
            )
        )
    checks = (
        live_checks.masking_routes_agree(
            tracing.renormalized_weights(tr), tr.attn_weights, tr.scaled_scores
        ),
        live_checks.no_future_leak(tr.spec.build().eval(), tr.inputs),
    )
    return masked, route1, route2, uniform, tuple(claims), checks


def _steps(
    tr: tracing.CausalTrace, masked: Panel, weights: Panel, training: bool
) -> tuple[tuple[Panel, ...], tuple[Claim, ...]]:
    """The presenter's six steps: the page's masked scores and Route 2 weights, plus the
    scores before the mask, the scaled scores, the dropout step and the context; and the
    claims the dropout step's sentence makes (what its zeros are, counted)."""
    labels, d_k = tr.labels, tr.keys.shape[-1]
    scores = scores_panel("p3_step_scores", tracing.unmasked_scores(tr)[0], labels)
    root = {"d_k": d_k, "root": f"{d_k**0.5:.4g}"}
    scaled = scores_panel(
        "p3_step_scaled", tr.scaled_scores[0], labels, value_name="scaled score", fill=root
    )
    p = tr.spec.dropout
    # training mode with dropout: the survivors' scale and what the zeros are, counted;
    # otherwise why dropout is the identity
    said: dict[str, object] = {
        "why": "training mode with dropout 0" if tr.training else "eval mode"
    }
    claims: tuple[Claim, ...] = ()
    if training:
        zeros = Z.count(tr.attn_weights[0], tr.weights_dropped[0])
        counted = Z.zeros_sentence(zeros)
        said |= {"p": _fmt(p), "scale": f"{1 / (1 - p):.4g}", "zeros": counted}
        claims = Z.claims(counted, "p3_step_dropout", zeros)
    dropped = weights_panel(
        "p3_step_dropout",
        tr.weights_dropped[0],
        labels,
        causal=True,
        zmax=1 / (1 - p) if training else None,
        story="p3_step_dropout" if training else "p3_step_dropout_identity",
        fill=said,
    )
    out_dims = figures.dim_labels(tr.spec.d_out, "out")
    context = vectors_panel(
        "p3_step_context", tr.context[0], labels, out_dims, col_name="output dim"
    )
    found = (scores, masked, scaled, weights, dropped, context)
    return in_steps(DECLARED, {p.key: p for p in found}), claims


# --- the dropout lab --------------------------------------------------------------------------
def _intro(p: float, seed: int, book: bool) -> str:
    where = "the chapter's example" if book else "the sidebar's dropout"
    return (
        f"In training mode `nn.Dropout(p)` zeroes each weight with probability p and multiplies "
        f"the survivors by 1/(1−p) so that the expected value is unchanged. Here p = {_fmt(p)} "
        f"({where}) and the dropout seed is {seed}: survivors are multiplied by "
        f"1/(1−{_fmt(p)}) = **{1 / (1 - p):.4g}**. In eval mode dropout is the identity."
    )


def _book_lab(walk: tracing.CausalTrace) -> DropoutLab:
    p, seed = BK.DROPOUT_EXAMPLE_P, BK.SEED_DROPOUT
    dropout = torch.nn.Dropout(p)  # a fresh module in training mode
    with torch.inference_mode():
        with seeded(seed):
            ones = dropout(torch.ones(6, 6))
        with seeded(seed):
            weights = dropout(walk.attn_weights[0])
    return DropoutLab(
        p,
        seed,
        _intro(p, seed, True),
        False,
        printouts=(
            Printout("dropout(torch.ones(6, 6))", ones, "dropout_ones"),
            Printout("dropout(attn_weights)", weights, "dropout_weights"),
        ),
    )


def _lab(tr: tracing.CausalTrace, illustrative: bool) -> DropoutLab:
    labels, p, seed = tr.labels, tr.spec.dropout, tr.dropout_seed or 0
    scale = 1 / (1 - p)
    after = tr.weights_dropped[0]
    n = len(labels)
    zero_rows = [i for i in range(n) if float(after[i].abs().sum()) == 0.0]
    outlined = " · outlined: rows dropped to zero" if zero_rows else ""
    mask = matrix_panel("p3_dmask", tracing.dropout_mask(tr)[0], labels, labels, value_name="kept")
    dropped = weights_panel(
        "p3_dropped",
        after,
        labels,
        causal=True,
        zmax=scale,
        outline_rows=zero_rows,
        fill={"scale": f"{scale:.3g}", "outlined": outlined},
    )
    dims = figures.dim_labels(tr.spec.d_out, "out")
    values = vectors_panel("p3_values", tr.values[0], labels, dims, col_name="output dim")
    context = vectors_panel("p3_place_w", tr.context[0], labels, dims, col_name="output dim")
    other = tracing.context_dropout(tr, p, seed)[0]
    context_dropout = vectors_panel("p3_place_c", other, labels, dims, col_name="output dim")
    sums = after.sum(dim=-1)
    shown = ", ".join(f"{float(v):.3f}" for v in sums[:SUMS_SHOWN]) + (
        " …" if n > SUMS_SHOWN else ""
    )
    claims: list[Claim] = []
    if _holds("some_row_sum_differs", dropped):
        claims.append(
            Claim(
                "Row sums after dropout are no longer 1: dropout keeps the expected sum at 1, "
                "not each sum.",
                "p3_dropped",
                "some_row_sum_differs",
            )
        )
    else:
        claims.append(
            Claim(
                "At this seed every row still sums to 1, but only by chance: dropout keeps the "
                "*expected* sum at 1, not each sum.",
                "p3_dropped",
                "rows_sum_to_one",
            )
        )
    zeroed = int((other == 0).sum())
    placement = (
        f"Here dropout on the context zeroes {zeroed} of {other.numel()} entries of Z and "
        f"multiplies the rest by {scale:.4g}. Dropout on the weights (the chapter's placement, "
        "above) zeroes weights instead, so each context row still mixes the values its kept "
        "weights point to."
    )
    return DropoutLab(
        p,
        seed,
        _intro(p, seed, False),
        illustrative,
        mask,
        dropped,
        values,
        context,
        context_dropout,
        f"Row sums after dropout, row 0 first: {shown}",
        (
            "Rows that dropped to zero (outlined in red above: every visible weight dropped, so "
            "these tokens' context vectors are all zeros for this step): "
            + ", ".join(labels[i] for i in zero_rows)
        )
        if zero_rows
        else None,
        tuple(claims),
        placement,
    )


def _mode_claims(tr: tracing.CausalTrace, book: bool) -> tuple[Claim, ...]:
    if book:
        text = (
            "Book mode runs the chapter's walkthrough in eval mode with dropout 0.0: the "
            "weights of Route 2 are the ones its context used."
        )
        return (Claim(text, "p3_route2", "rows_sum_to_one"),)
    if tr.training and tr.spec.dropout > 0:
        text = (
            "Training mode: both routes show the weights before dropout (their rows sum to 1). "
            "The module's context used them after dropout: see A beside V and Z = A·V in the "
            "dropout lab below, and the batch's weights."
        )
        return (Claim(text, "p3_route2", "rows_sum_to_one"),)
    if tr.training:
        text = (
            "Training mode with dropout 0: dropout changes nothing, so Route 2's weights are "
            "the ones the context used."
        )
        return (Claim(text, "p3_route2", "rows_sum_to_one"),)
    text = (
        "Eval mode: dropout is the identity, so Route 2's weights are the ones the context "
        "used. The dropout lab below shows what dropout would do to them in training mode."
    )
    return (Claim(text, "p3_route2", "rows_sum_to_one"),)


# --- the batch --------------------------------------------------------------------------------
def batch_hidden(x: torch.Tensor, spec: tracing.ModuleSpec) -> dict[str, str | None]:
    """Why each of pass 3's bugs cannot show on the batch ``x`` through ``spec`` (None: it
    shows), for the page's "Break it", which runs on the batch."""
    return {bug.key: bug.hidden_at(x, spec) for bug in bugs.bugs_for("causal")}


def batch_lesson(bt: tracing.CausalTrace, labels: tuple[tuple[str, ...], ...], book: bool) -> Batch:
    """The batch part of page 3 (its closed box): both texts' weights, claims and check."""
    n = bt.num_tokens
    dropped = bt.training and bt.spec.dropout > 0
    panels, claims = [], []
    for i in range(bt.inputs.shape[0]):
        after = " after dropout (what its context used)" if dropped else ""
        panel = weights_panel(
            f"p3_batch{i}",
            bt.weights_dropped[i],
            labels[i],
            causal=True,
            zmax=1 / (1 - bt.spec.dropout) if dropped else None,
            story="p3_batch",
            fill={"i": i, "after": after},
        )
        panels.append(panel)
        if dropped and _holds("some_row_sum_differs", panel):
            claims.append(
                Claim(
                    f"Example {i}'s row sums after dropout are no longer all 1.",
                    panel.key,
                    "some_row_sum_differs",
                )
            )
        elif not dropped:
            claims.append(Claim(f"Example {i}: every row sums to 1.", panel.key, "rows_sum_to_one"))
    sentence = (
        f"`x.shape = {tuple(bt.inputs.shape)}` (batch, tokens, d_in). The module runs both at "
        "once; every matrix product is batched, and the mask is applied to each example's own "
        f"{n}×{n} scores."
    )
    if dropped:
        sentence += (
            " In training mode the batch's forward draws its own dropout mask, of its own shape, "
            "so its zeros are not the lab's."
        )
    printout = None
    if book:
        printout = Printout(
            "CausalAttention(3, 2, 6, 0.0) after torch.manual_seed(123): context_vecs[0]",
            bt.output[0],
            "causal_attention",
        )
    caption = (
        f"context_vecs.shape: {tuple(bt.output.shape)} (the chapter prints torch.Size([2, 6, 2]))"
        if book
        else ""
    )
    hidden = batch_hidden(bt.inputs, bt.spec)
    return Batch(
        sentence,
        tuple(panels),
        tuple(claims),
        live_checks.batch_rows_independent(bt.spec.build().eval(), bt.inputs),
        printout,
        caption,
        labels[0],
        hidden,
    )


# --- the page's checks ------------------------------------------------------------------------
def _checks(tr: tracing.CausalTrace, book: bool) -> tuple[CheckResult, ...]:
    sp = tr.spec

    def build(p):
        return dataclasses.replace(sp, dropout=p).build()  # the same weights, seeded or trained

    with torch.inference_mode():
        before_dropout = tr.attn_weights @ tr.values
    rows = live_checks.rows_sum_to_one(tr.attn_weights)
    sdpa = live_checks.matches_sdpa(tr.queries, tr.keys, tr.values, before_dropout, causal=True)
    if tr.training and sp.dropout > 0:  # both read the weights before dropout: say so
        rows = dataclasses.replace(rows, title=rows.title + " (before dropout)")
        sdpa = dataclasses.replace(sdpa, title=sdpa.title + " (before dropout)")
    return (
        rows,
        sdpa,
        live_checks.eval_ignores_dropout(
            lambda m, x: m(x), build, tr.inputs, max(sp.dropout, 0.5 if book else sp.dropout)
        ),
    )


def _walkthrough(tr: tracing.CausalTrace, route1: torch.Tensor) -> tuple[Printout, ...]:
    with torch.inference_mode():
        full = torch.softmax(tracing.unmasked_scores(tr) / tr.keys.shape[-1] ** 0.5, dim=-1)[0]
    return (
        Printout("attn_weights before masking (sa_v2, seed 789)", full, "masking_weights_unmasked"),
        Printout(
            "attn_scores.masked_fill(mask.bool(), -torch.inf)",
            tr.attn_scores[0],
            "masking_masked_scores",
        ),
        Printout("softmax(masked / keys.shape[-1]**0.5)", tr.attn_weights[0], "masking_weights"),
        Printout("the renormalized route gives the same", route1, "masking_weights"),
    )


def _head_claims(weights: Panel, spec: tracing.ModuleSpec) -> tuple[Claim, ...]:
    """How far the module's weights (before dropout) are from an even share; with trained
    weights, what the head is named after on this text (only when its score says so)."""
    who = "These trained weights" if spec.trained else "These random weights"
    spread = spread_claim(weights.key, weights.values, causal=True, who=who)
    out: tuple[Claim, ...] = (spread,) if spread is not None else ()
    if spec.trained is not None:
        t = spec.trained
        head = f"This head (layer {t.layer}, head {t.head} of the grown model)"
        out += name_claims(weights.key, weights.values, weights.rows, lambda _h: head)
    return out


def dropout_lab(
    trace: tracing.CausalTrace,
    lab_trace: tracing.CausalTrace | None,
    *,
    settings: Settings,
    book: bool,
) -> DropoutLab | None:
    """Page 3's dropout lab: the chapter's two examples in book mode (on ``trace``), else the
    causal pass in training mode at the sidebar's rate and seed (``lab_trace``); None at
    dropout 0."""
    if book:
        return _book_lab(trace)
    if lab_trace is not None and lab_trace.spec.dropout > 0:
        return _lab(lab_trace, settings.dropout_is_illustrative)
    return None


def causal_lesson(
    trace: tracing.CausalTrace,
    lab_trace: tracing.CausalTrace | None,
    batch_trace: tracing.CausalTrace | None,
    batch_labels: tuple[tuple[str, ...], ...],
    *,
    settings: Settings,
    book: bool,
    with_lab: bool = True,
) -> CausalLesson:
    """Everything page 3 shows. ``lab_trace``: the causal pass in training mode at the
    sidebar's rate and seed (ignored in book mode; None at dropout 0). ``with_lab=False``:
    leave the dropout lab out (``lab`` None); the page builds it with :func:`dropout_lab` only
    when its closed box is opened."""
    spec = trace.spec
    training = trace.training and spec.dropout > 0
    mask, mask_sentence, buffers = _mask(trace)
    masked, route1, route2, uniform, route_claims, route_checks = _routes(trace, training)
    route_claims += _head_claims(route2, spec)
    steps, step_claims = _steps(trace, masked, route2, training)
    lab = dropout_lab(trace, lab_trace, settings=settings, book=book) if with_lab else None
    book_note = (
        "Book mode: the walkthrough reuses SelfAttention_v2's weights from seed 789 "
        "(CausalAttention creates its layers in the same order, so seed 789 gives the same "
        "matrices)."
        if book
        else None
    )
    return CausalLesson(
        constructor=spec.build_lines("ca"),
        book_note=book_note,
        mask=mask,
        mask_sentence=mask_sentence,
        buffers=buffers,
        masked_scores=masked,
        route1=route1,
        route2=route2,
        route_claims=route_claims,
        route_checks=route_checks,
        uniform=uniform,
        walkthrough=_walkthrough(trace, route1.values) if book else (),
        lab=lab,
        mode_claims=_mode_claims(trace, book),
        batch=batch_lesson(batch_trace, batch_labels, book) if batch_trace is not None else None,
        checks=_checks(trace, book),
        steps=steps,
        step_claims=step_claims,
    )
