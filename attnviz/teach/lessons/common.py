"""How every lesson makes a matrix: one :class:`Panel`, the data its heatmap is drawn from, whose
figure and exact numbers share their rows and columns, for the three kinds of matrix every pass has (token by token scores,
token by token weights, one vector per token). What a panel says (its title, formula,
sentence and caption) is in ``story.toml`` beside this file, by panel key."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from string import Template
from types import MappingProxyType

import torch

from attnviz.teach.panel import CAUSAL_WEIGHTS, WEIGHTS, Panel, Style

PARTS = ("title", "formula", "sentence", "caption")

# story name -> part -> template; read once, read-only.
STORY: Mapping[str, Mapping[str, str]] = MappingProxyType(
    tomllib.loads(Path(__file__).with_name("story.toml").read_text(encoding="utf-8"))
)


def told(story: str, /, **fields: object) -> dict[str, str]:
    """The four parts of story ``story`` with its ``$fields`` filled in ("" for a part it does
    not have); a field it names and is not given raises ``KeyError``."""
    entry = STORY[story]
    if set(entry) - set(PARTS):
        raise ValueError(f"story {story!r} has parts other than {PARTS}: {sorted(entry)}")
    return {part: Template(entry.get(part, "")).substitute(fields) for part in PARTS}


def matrix_panel(
    key: str,
    values: torch.Tensor,
    rows: Sequence[str],
    cols: Sequence[str],
    *,
    story: str | None = None,
    fill: Mapping[str, object] | None = None,
    kind: str = "",
    note: str = "",
    colour: str = "weights",
    **style,
) -> Panel:
    """``values`` (rows, cols) as a panel: the same numbers and labels its heatmap will show,
    drawn on the ``colour`` scale with the rest of its :class:`attnviz.teach.panel.Style` in
    ``style``. The words are story ``story`` (default: the panel's key) with the fields in
    ``fill`` and ``$shape``, the shape of ``values``. ``kind``: WEIGHTS or CAUSAL_WEIGHTS for
    attention weights (the page's colour switch applies to them), else ""."""
    text = told(story or key, shape=tuple(values.shape), **(fill or {}))
    if "outline_rows" in style:
        style["outline_rows"] = tuple(style["outline_rows"])
    return Panel(
        key,
        values,
        tuple(rows),
        tuple(cols),
        title=text["title"],
        caption=text["caption"],
        formula=text["formula"],
        sentence=text["sentence"],
        kind=kind,
        style=Style(colour=colour, **style),
        note=note,
    )


def weights_panel(
    key: str, weights: torch.Tensor, labels: Sequence[str], *, causal: bool, **kw
) -> Panel:
    """Attention weights (T, T): a query per row, a key per column, on a 0-to-1 scale (or
    ``zmax``, after dropout's scaling). ``causal``: row i sees keys 0 to i (passes 3 and 4)."""
    kind = CAUSAL_WEIGHTS if causal else WEIGHTS
    return matrix_panel(key, weights, labels, labels, kind=kind, **kw)


def scores_panel(
    key: str,
    scores: torch.Tensor,
    labels: Sequence[str],
    *,
    value_name: str = "score",
    **kw,
) -> Panel:
    """Attention scores (T, T), signed; a masked score (−∞) is left blank."""
    return matrix_panel(key, scores, labels, labels, colour="signed", value_name=value_name, **kw)


def vectors_panel(
    key: str,
    vectors: torch.Tensor,
    labels: Sequence[str],
    cols: Sequence[str],
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
        colour="signed",
        row_name=row_name,
        col_name=col_name,
        value_name="value",
        **kw,
    )
