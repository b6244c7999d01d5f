"""Pass 1 as data: what the simplified self-attention page shows, computed once from its trace.

:func:`simplified_lesson` gives the whole-text view (scores, weights, context, checks, claims,
the book's printouts, the break-it table); :func:`query_view` the one-query walk, which depends
on the query the student picked and the stretch and shift of its scores. Nothing here imports
Streamlit; the page only lays these values out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from attnviz import figures
from attnviz.core import trace as tracing
from attnviz.models import speed
from attnviz.server import gate
from attnviz.teach import bugs
from attnviz.teach import checks as live_checks
from attnviz.teach.lessons.common import scores_panel, vectors_panel, weights_panel
from attnviz.teach.panel import (
    HOLDS_SCORES,
    HOLDS_WEIGHTS,
    PROPERTIES,
    Claim,
    Declared,
    Panel,
    in_steps,
)

# Page 1's panels, and the parts of it that draw their numbers (attnviz.teach.panel.Declared).
_PAGE = "simplified"
_CELL = ("", 0, 0)
DECLARED = (
    Declared("p1_scores", _PAGE, "attn_scores", holds=(HOLDS_SCORES,), cell=_CELL, step=1),
    Declared(
        "p1_weights",
        _PAGE,
        "attn_weights",
        holds=(HOLDS_WEIGHTS,),
        same=("p1_context_walk",),
        cell=_CELL,
        step=2,
    ),
    Declared("p1_context", _PAGE, "context", step=3),
    Declared("p1_context_walk", _PAGE),  # the chosen query's weighted inputs and their sum
    # the one-query walk draws row q of the scores and its softmax (bars, caption)
    Declared("p1_query_walk", _PAGE, shows=("p1_scores", "p1_weights")),
    Declared("p1_query_book", _PAGE, shows=("p1_scores", "p1_weights")),
    Declared("p1_book", _PAGE, shows=("p1_scores", "p1_weights")),
    Declared("p1_breakit", _PAGE, shows=("p1_weights",)),
)

# A row is "mostly one token" above this weight (issue 14's bar for pass 1 at the defaults),
# and "spread" when it puts at least MIX_FLOOR on two or more tokens.
ONE_TOKEN = 0.8
MIX_FLOOR = 0.1

TRAINING_NOTE = (
    "Training mode is on, but this pass has no dropout: the weights on this page are exactly "
    "the ones the context used. Dropout arrives in pass 3."
)

# (title, tensor, the chapter's printout name): one "computed / the chapter printed" block.
BookBlock = tuple[str, torch.Tensor, str]

_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def book_name(symbol: str, row: int) -> str:
    """The book's 1-based name of 0-based row ``row``: ``book_name("x", 1)`` is "x⁽²⁾"."""
    return f"{symbol}⁽{str(row + 1).translate(_SUPERSCRIPT)}⁾"


@dataclass(frozen=True)
class SimplifiedLesson:
    labels: tuple[str, ...]
    d_in: int
    panels: dict[str, Panel]  # "scores", "weights", "context"
    claims: tuple[Claim, ...]
    checks: tuple[live_checks.CheckResult, ...]
    book_blocks: tuple[BookBlock, ...]  # book mode: the whole-matrix printouts
    hidden: dict[str, str | None]  # bug key -> why it cannot show here (None: it shows)
    loop_tokens: int  # the nested loop runs on this many tokens

    @property
    def num_tokens(self) -> int:
        return len(self.labels)

    def claims_on(self, panel: str) -> tuple[Claim, ...]:
        return tuple(c for c in self.claims if c.panel == panel)

    @property
    def steps(self) -> tuple[Panel, ...]:
        """Presenter mode, in the book's order: scores X Xᵀ, softmax, context."""
        return in_steps(DECLARED, {p.key: p for p in self.panels.values()})


@dataclass(frozen=True)
class QueryView:
    """One query's walk: its scores, three ways to normalize them, and its context vector."""

    query: int
    scores_figure: figures.Chart
    walk_figure: figures.Chart
    walk_check: live_checks.CheckResult
    walk_caption: str  # the scores the walk used and the sums it gives, computed
    context_walk: Panel  # rows: alpha_qj * x_j for each token j, then their sum z
    book_blocks: tuple[BookBlock, ...]  # book mode, query 1: the chapter's x⁽²⁾ walkthrough


def _panels(tr: tracing.SimplifiedTrace) -> dict[str, Panel]:
    lab, dims = tr.labels, tuple(figures.dim_labels(tr.inputs.shape[1]))
    scores = scores_panel("p1_scores", tr.attn_scores, lab)
    weights = weights_panel("p1_weights", tr.attn_weights, lab, causal=False)
    context = vectors_panel(
        "p1_context", tr.context, lab, dims, row_name="query", col_name="dimension"
    )
    return {"scores": scores, "weights": weights, "context": context}


def _claims(p: dict[str, Panel]) -> tuple[Claim, ...]:
    claims = [
        Claim(
            "Symmetric: x⁽ⁱ⁾·x⁽ʲ⁾ = x⁽ʲ⁾·x⁽ⁱ⁾. The weights below are not, since each row is "
            "normalized on its own.",
            "scores",
            "is_symmetric",
        )
    ]
    if PROPERTIES["has_negative"](p["scores"].values, None):
        claims.append(
            Claim(
                "Some scores are negative (two vectors pointing apart), so dividing a row by "
                "its sum would not give weights; the softmax does.",
                "scores",
                "has_negative",
            )
        )
    else:
        claims.append(
            Claim(
                "Every score here is 0 or more, so dividing a row by its sum would also give "
                "weights; the softmax is used because it works whatever the signs.",
                "scores",
                "all_nonnegative",
            )
        )
    weights = p["weights"].values
    claims.append(Claim("Every row of A sums to 1.", "weights", "rows_sum_to_one"))
    top = float(weights.max()) if weights.numel() else 0.0
    if weights.shape[0] > 1 and top <= ONE_TOKEN:
        claims.append(
            Claim(
                f"No row puts more than {ONE_TOKEN} of its weight on one token: each z mixes "
                "several input vectors.",
                "weights",
                "max_at_most",
                ONE_TOKEN,
            )
        )
    elif weights.shape[0] > 1:
        claims.append(
            Claim(
                f"Some row puts {ONE_TOKEN} or more of its weight on one token: that row's z is "
                "mostly one input vector.",
                "weights",
                "max_at_least",
                ONE_TOKEN,
            )
        )
    if weights.shape[0] > 1 and PROPERTIES["every_row_mixes"](weights, MIX_FLOOR):
        claims.append(
            Claim(
                f"Every row puts at least {MIX_FLOOR} on two or more tokens.",
                "weights",
                "every_row_mixes",
                MIX_FLOOR,
            )
        )
    top = round(float(weights.max()), 3) if weights.numel() else 0.0
    claims.append(Claim(f"The largest weight in any row is {top:.3f}.", "weights", "max_near", top))
    return tuple(claims)


def _checks(tr: tracing.SimplifiedTrace) -> tuple[live_checks.CheckResult, ...]:
    if tr.loop_scores is not None:
        loop_inputs, loop_scores = tr.inputs, tr.loop_scores
    else:
        loop_inputs = tr.inputs[: tracing.LOOP_TOKEN_CAP]
        loop_scores = tracing.loop_scores(loop_inputs)
    return (
        live_checks.rows_sum_to_one(tr.attn_weights),
        live_checks.weights_are_softmax(tr.attn_scores, tr.attn_weights),
        live_checks.naive_softmax_matches(tr.attn_scores),
        live_checks.loops_equal_matmul(loop_inputs, loop_scores),
    )


def simplified_lesson(tr: tracing.SimplifiedTrace, book: bool) -> SimplifiedLesson:
    """Everything page 1 shows about the whole text, from its trace."""
    panels = _panels(tr)
    blocks: tuple[BookBlock, ...] = ()
    if book:
        blocks = (
            ("Ω = inputs @ inputs.T", tr.attn_scores, "simple_scores"),
            ("softmax(Ω, dim=-1)", tr.attn_weights, "simple_weights"),
            ("all_context_vecs = attn_weights @ inputs", tr.context, "simple_context"),
        )
    return SimplifiedLesson(
        labels=tr.labels,
        d_in=tr.inputs.shape[1],
        panels=panels,
        claims=_claims(panels),
        checks=_checks(tr),
        book_blocks=blocks,
        hidden={bug.key: bug.hidden_at(tr.inputs) for bug in bugs.bugs_for("simplified")},
        loop_tokens=min(tr.num_tokens, tracing.LOOP_TOKEN_CAP),
    )


def query_view(tr: tracing.SimplifiedTrace, query: int, stretch: float, shift: float, book: bool):
    """Query ``query``'s scores (inputs multiplied by ``stretch``, scores shifted by ``shift``),
    their three normalisations, and its context vector as the sum of weighted inputs."""
    lab, x = tr.labels, tr.inputs
    with torch.inference_mode():
        row = tr.attn_scores[query] * float(stretch) ** 2 + float(shift)
        series = {
            "divide by sum": tracing.sum_normalize(row),
            "naive softmax": tracing.naive_softmax(row),
            "torch.softmax": torch.softmax(row, dim=-1),
        }
        terms = tr.attn_weights[query].unsqueeze(1) * x  # row j: alpha_qj * x_j
        stacked = torch.cat([terms, tr.context[query].unsqueeze(0)])
    rows = (*lab, f"z (query {query})")
    dims = tuple(figures.dim_labels(x.shape[1]))
    caption = (
        f"Scores used: max {float(row.max()):.4g}, min {float(row.min()):.4g}. "
        f"Sums: divide-by-sum {float(series['divide by sum'].sum()):.4f}, "
        f"torch.softmax {float(series['torch.softmax'].sum()):.4f}."
    )
    context_walk = vectors_panel(
        "p1_context_walk",
        stacked,
        rows,
        dims,
        row_name="term",
        col_name="dimension",
        fill={"query": query},
    )
    blocks: tuple[BookBlock, ...] = ()
    if book and query == 1:
        blocks = (
            ("Scores for query 1", tr.attn_scores[1], "simple_scores_2"),
            ("Divide by the sum", tr.sum_weights[1], "simple_sum_weights_2"),
            ("Softmax weights", tr.attn_weights[1], "simple_weights_2"),
            ("Context vector z⁽²⁾ (context[1])", tr.context[1], "simple_context_2"),
        )
    return QueryView(
        query=query,
        scores_figure=figures.bars(
            tr.attn_scores[query], lab, title=f"Scores ω for query {query}", highlight=query
        ),
        walk_figure=figures.grouped_bars(series, lab, title=f"Weights for query {query}"),
        # named for its one row: the page's live checks hold the same check on every row
        walk_check=replace(
            live_checks.naive_softmax_matches(row.unsqueeze(0)),
            title=f"{live_checks.NAIVE_TITLE} (query {query}'s row)",
        ),
        walk_caption=caption,
        context_walk=context_walk,
        book_blocks=blocks,
    )


@dataclass(frozen=True)
class LoopTiming:
    """The nested loops against ``X @ X.T`` on the same inputs, best of 5 each."""

    tokens: int
    loop_seconds: float
    matmul_seconds: float

    @property
    def text(self) -> str:
        ratio = self.loop_seconds / max(self.matmul_seconds, 1e-9)
        return (
            f"On {self.tokens} tokens: the loop took {self.loop_seconds * 1e3:.3f} ms, the matrix "
            f"product {self.matmul_seconds * 1e3:.3f} ms, **{ratio:.0f}×** faster (best of 5 on "
            "this server; the loop pays Python's overhead for each of the k² dot products)."
        )


def time_loop(tr: tracing.SimplifiedTrace, repeat: int = 5) -> LoopTiming:
    """The nested loops and ``X @ X.T`` timed (each the best of ``repeat``, one call a sample,
    by the app's one harness :func:`attnviz.models.speed.race`) on at most
    :data:`attnviz.core.trace.LOOP_TOKEN_CAP` tokens."""
    gate.give_up()  # a timing: the other sessions' page runs go meanwhile
    x = tr.inputs[: tracing.LOOP_TOKEN_CAP]
    calls = {"loop": tracing.loop_scores, "matmul": lambda x: x @ x.T}
    with torch.inference_mode():
        # exactly ``repeat`` rounds: no time budget ends them early
        samples, _, _ = speed.race(calls, x, math.inf, repeat, repeat, number=1)
    return LoopTiming(x.shape[0], min(samples["loop"]), min(samples["matmul"]))
