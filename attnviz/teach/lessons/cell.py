"""One cell, every number: what the "Explain a cell" block and the line view show, as data.

:func:`cell_lesson` reads one attention weight of a trace through :func:`attnviz.teach.derive.derivation`
(the numbers, and a sentence for each step naming its line of ``modules.py``) and draws its three
charts: the score as the sum of its terms, the row's softmax with the cell marked, the context
row's terms beside their weights; the context terms are also a table that ends with their sum
and the module's own context row. :func:`slider_lesson` is the slider (one component of q_i
changed, the whole row again), and :func:`line_chart` one query's weights as lines. Every
sentence here is computed from the numbers it states. Nothing here imports Streamlit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from attnviz import figures
from attnviz.core import trace as tracing
from attnviz.teach import derive

# The context table shows at most this many keys and dimensions (a 256-token row of 1,600
# dimensions would be 400,000 cells); the chart and the sums above it use every one.
TABLE_MAX = 64
# Past this many keys a line view draws a window of them around the query (with a note).
LINE_KEYS = 48


def _f(v: float) -> str:
    if math.isinf(v):
        return "−∞" if v < 0 else "∞"
    return f"{v:.4f}".replace("-", "−")


@dataclass(frozen=True)
class CellLesson:
    """Everything the page shows for one cell. ``heading`` and the steps' sentences hold token
    labels (the student's text): show them as plain text."""

    derivation: derive.Derivation
    heading: str
    score_chart: figures.Chart
    softmax_chart: figures.Chart
    context_chart: figures.Chart
    context_table: pd.DataFrame  # a row per key's term α_ij v_j, then their sum, then the module's
    table_note: str  # what the table leaves out, or ""
    sums: dict[str, str]  # step name -> a sentence checking that the parts add up

    @property
    def steps(self) -> tuple[derive.Step, ...]:
        return self.derivation.steps


def cell_lesson(
    trace: tracing.Trace, query: int, key: int, head: int = 0, batch: int = 0
) -> CellLesson:
    """The derivation of ``attn_weights[batch, head, query, key]`` of ``trace``, with its charts
    (raises :class:`attnviz.teach.derive.DerivationError` for a cell that does not exist)."""
    d = derive.derivation(trace, query, key, head, batch)
    names = ("x", "x") if d.shared_input else ("q", "k")
    value = "x" if d.shared_input else "v"
    visible = ~d.future
    score_chart = figures.score_terms(
        d.q, d.k, query=d.query, key=d.key, score=d.score, names=names
    )
    softmax_chart = figures.softmax_row(
        d.row_scaled,
        d.row_exp,
        d.row_weights,
        d.labels,
        query=d.query,
        key=d.key,
        row_sum=d.row_sum,
        shift=d.shift,
        visible=visible.tolist(),
    )
    after = " after dropout" if d.factors is not None else ""
    context_chart = figures.context_terms(
        d.used_weights,
        d.term_norms,
        d.labels,
        query=d.query,
        key=d.key,
        value=value,
        note=f"weights{after}, as the context used them" if after else "",
    )
    table, note = _context_table(d, value)
    where = f", {d.unit.split(', ', 1)[1]}" if ", " in d.unit else ""
    heading = f"Query {d.query_label} → key {d.key_label}{where}: weight {_f(d.weight)}" + (
        f" ({_f(d.used_weight)} after dropout)" if d.used_weight != d.weight else ""
    )
    return CellLesson(
        d, heading, score_chart, softmax_chart, context_chart, table, note, _sums(d, value)
    )


def _context_table(d: derive.Derivation, value: str) -> tuple[pd.DataFrame, str]:
    terms = d.terms
    keys = [j for j in range(d.num_tokens) if not bool(d.future[j])]
    cut = []
    if len(keys) > TABLE_MAX:
        cut.append(f"the first {TABLE_MAX} of the {len(keys)} terms")
        keys = keys[:TABLE_MAX]
    dims = min(terms.shape[1], TABLE_MAX)
    if dims < terms.shape[1]:
        cut.append(f"dimensions 0–{dims - 1} of {terms.shape[1]}")
    rows = {f"α_{d.query},{j} {value}_{j}  ({d.labels[j]})": terms[j, :dims] for j in keys}
    rows["Σ_j (added up here)"] = d.context_sum[:dims]
    rows[f"context row {d.query} (the module's)"] = d.context[:dims].to(torch.float64)
    frame = pd.DataFrame(
        np.stack([r.numpy() for r in rows.values()]),
        index=list(rows),
        columns=[f"dim {c}" for c in range(dims)],
    )
    note = f"The table shows {' and '.join(cut)}; the sums use every one." if cut else ""
    return frame, note


def _sums(d: derive.Derivation, value: str) -> dict[str, str]:
    """One sentence a step: its parts, added up here, against the number the module computed."""
    total = float(d.products.sum())
    out = {
        "score": (
            f"Adds up: the {d.d_k} terms sum to {_f(total)}; the module's score is "
            f"{_f(d.score)} (float32; difference {abs(total - d.score):.1e})."
        )
    }
    ours = d.exp / d.row_sum if d.row_sum > 0 else float("nan")
    out["softmax"] = (
        f"Adds up: {_f(d.exp)} / {_f(d.row_sum)} = {_f(ours)}; the module's weight is "
        f"{_f(d.weight)} (difference {abs(ours - d.weight):.1e})."
    )
    gap = (
        float((d.context_sum - d.context.to(torch.float64)).abs().max())
        if d.context.numel()
        else 0.0
    )
    out["context"] = (
        f"Adds up: Σ_j α_{d.query},j {value}_j, added up here, and the module's context row "
        f"{d.query} differ by at most {gap:.1e} in any of their {d.context.numel()} dimensions."
    )
    return out


@dataclass(frozen=True)
class SliderLesson:
    """The row again after one component of q_i changed: its chart and a sentence."""

    change: derive.RowChange
    chart: figures.Chart
    sentence: str


def slider_lesson(d: derive.Derivation, dim: int, value: float) -> SliderLesson:
    """``q_i[dim] = value`` and the whole row recomputed (:func:`attnviz.teach.derive.recompute_row`).

    The slider starts at the component rounded to its 3 decimals: that value is the
    component itself (nothing moved), and the sentence says so instead of "goes from 0.1606 to
    0.1606"; a move too small to change any weight at 4 decimals is said to change none."""
    now = float(d.q[dim]) if 0 <= dim < d.d_k else math.nan
    untouched = value == round(now, 3)
    change = derive.recompute_row(d, dim, now if untouched else value)
    q = "x" if d.shared_input else "q"
    chart = figures.row_change(
        d.row_weights,
        change.weights,
        d.labels,
        key=d.key,
        title=f"Row {d.query} with {q}<sub>{d.query}</sub>[{dim}] = {value:.3f}",
        note=f"was {now:.3f}",
    )
    new = float(change.weights[d.key])
    moved = int(torch.argmax((change.weights - d.row_weights).abs()))
    total = f"The row still sums to {float(change.weights.sum()):.4f}."
    same = all(
        _f(float(a)) == _f(float(b)) for a, b in zip(d.row_weights, change.weights, strict=True)
    )
    if untouched:
        sentence = (
            f"{q}_{d.query}[{dim}] is at its own value ({_f(now)}): nothing has changed yet, "
            f"and the weight on key {d.key_label} is {_f(d.weight)}. Move the slider to "
            f"recompute row {d.query}."
        )
    elif same:
        sentence = (
            f"With {q}_{d.query}[{dim}] = {value:.3f} (it was {_f(now)}), no weight of row "
            f"{d.query} changes at 4 decimals: the weight on key {d.key_label} stays "
            f"{_f(d.weight)}. {total}"
        )
    else:
        sentence = (
            f"With {q}_{d.query}[{dim}] = {value:.3f} (it was {_f(now)}), the weight "
            f"on key {d.key_label} goes from {_f(d.weight)} to {_f(new)}; the largest change in "
            f"the row is on key {d.labels[moved]} "
            f"({_f(float(d.row_weights[moved]))} → {_f(float(change.weights[moved]))}). {total}"
        )
    return SliderLesson(change, chart, sentence)


def line_window(n: int, query: int, window: tuple[int, int] | None) -> tuple[int, int]:
    """The keys a line view draws (first, last inclusive): the page's token window when it
    holds the query, else every key up to LINE_KEYS, else LINE_KEYS keys around the query."""
    if window is not None and window[0] <= query <= window[1]:
        return window[0], min(window[1], n - 1)
    if n <= LINE_KEYS:
        return 0, n - 1
    first = max(0, min(query - LINE_KEYS // 2, n - LINE_KEYS))
    return first, first + LINE_KEYS - 1


def line_chart(
    trace: tracing.Trace,
    query: int,
    head: int = 0,
    batch: int = 0,
    window: tuple[int, int] | None = None,
) -> tuple[figures.Chart, str]:
    """One query's weights (what the context used) as lines to every key, in the reading
    direction of the text, and the sentence that says where the largest weight went."""
    view = derive.line_view_of(trace, query, head, batch, after_dropout=True)
    n = len(view.labels)
    first, last = line_window(n, query, window)
    keep = slice(first, last + 1)
    note = f"keys {first}–{last} of {n}" if (first, last) != (0, n - 1) else ""
    whose = f" (head {view.head})" if view.head is not None else ""
    chart = figures.attention_lines(
        view.weights[keep],
        view.labels[keep],
        query - first,
        visible=view.visible[keep],
        direction=view.direction,
        note=note,
        title=(
            f"Query {figures.escape_label(view.query_label)}{whose}: a line to every key, "
            "as thick as its weight"
        ),
    )
    return chart, view.sentence
