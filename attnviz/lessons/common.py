"""How every lesson draws a matrix: one :class:`Panel` whose heatmap and exact numbers share
their rows and columns, for the three kinds of matrix every pass has (token by token scores,
token by token weights, one vector per token)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .. import figures as F
from ..panel import Claim, Panel


def matrix_panel(
    key: str,
    values: torch.Tensor,
    rows: Sequence[str],
    cols: Sequence[str],
    title: str,
    *,
    formula: str = "",
    sentence: str = "",
    caption: str = "",
    **heatmap,
) -> Panel:
    """``values`` (rows, cols) drawn by :func:`attnviz.figures.heatmap` (its options in
    ``heatmap``), beside the same numbers and labels."""
    figure = F.heatmap(values, rows, cols, title=title, **heatmap)
    return Panel(key, figure, values, tuple(rows), tuple(cols), caption, formula, sentence)


def weights_panel(
    key: str, weights: torch.Tensor, labels: Sequence[str], title: str, **kw
) -> Panel:
    """Attention weights (T, T): a query per row, a key per column, on a 0-to-1 scale (or
    ``zmax``, after dropout's scaling)."""
    return matrix_panel(key, weights, labels, labels, title, **kw)


def scores_panel(
    key: str,
    scores: torch.Tensor,
    labels: Sequence[str],
    title: str,
    *,
    value_name: str = "score",
    **kw,
) -> Panel:
    """Attention scores (T, T), signed; a masked score (−∞) is left blank."""
    return matrix_panel(
        key, scores, labels, labels, title, kind="signed", value_name=value_name, **kw
    )


def vectors_panel(
    key: str,
    vectors: torch.Tensor,
    labels: Sequence[str],
    cols: Sequence[str],
    title: str,
    *,
    col_name: str,
    row_name: str = "token",
    **kw,
) -> Panel:
    """One vector per token (T, width), signed: X, Q, K, V, a context, an output."""
    return matrix_panel(
        key,
        vectors,
        labels,
        cols,
        title,
        kind="signed",
        row_name=row_name,
        col_name=col_name,
        value_name="value",
        **kw,
    )


def claims_on(claims: Sequence[Claim], panel: str) -> tuple[Claim, ...]:
    """The claims about one panel, by its key."""
    return tuple(c for c in claims if c.panel == panel)
