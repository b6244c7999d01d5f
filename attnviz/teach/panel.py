"""What a page shows, as data: panels (a figure and its exact numbers) and claims (sentences
that state a property of those numbers, with the property itself so a test can check it).

The lesson modules (``attnviz.teach.lessons``) build these from a trace, once per input and settings;
pages only pick and arrange them. Nothing here imports Streamlit.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from attnviz import figures
from attnviz.models import detectors as D

# Every panel gets its own number when it is made, never reused in a process: caches of a
# panel's views and drawn specs key on it (a plain value) instead of on the panel or its tensors.
_serials = itertools.count()

# What a panel's numbers are, for the page's colour switch: attention weights where every row
# sees all T keys (passes 1 and 2), causal weights where row i sees keys 0 to i (passes 3, 4).
WEIGHTS = "weights"
CAUSAL_WEIGHTS = "causal weights"


@dataclass(frozen=True)
class Style:
    """How a panel's matrix is drawn: its colour scale (``colour``: "weights", "signed",
    "mask" or "relative", as :func:`attnviz.figures.heatmap` takes them) and its top
    (``zmax``), the names its hover gives the rows, columns and values, whether the cells
    carry their numbers (``annotate``), rows outlined in red, a fixed height, and for a stack
    of heads whether every token is labelled (``labelled``; None: when they fit)."""

    colour: str = "weights"
    zmax: float | None = None
    row_name: str = "query"
    col_name: str = "key"
    value_name: str = "weight"
    annotate: bool = True
    outline_rows: tuple[int, ...] = ()
    height: int | None = None
    labelled: bool | None = None


@dataclass(frozen=True)
class Panel:
    """One matrix as the page draws it, as data: the figure is drawn from it
    (:func:`draw`), never stored.

    ``values`` holds the exact numbers the figure shows: (rows, cols), or (heads, rows, cols)
    for a stack of heads (``heads`` names them; default 0 to H−1). ``key`` is stable across
    reruns: it names the widgets and the CSV. ``title`` heads the figure and ``note`` is its
    subtitle ("tokens 3–9 of 40"). ``formula`` (LaTeX) and ``sentence`` are the one-line
    story the presenter's stepper tells. ``kind`` is WEIGHTS, CAUSAL_WEIGHTS or "" (not
    attention weights): the page's colour switch applies to weights only.
    """

    key: str
    values: torch.Tensor
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    title: str = ""
    caption: str = ""
    formula: str = ""
    sentence: str = ""
    kind: str = ""
    style: Style = Style()
    note: str = ""
    heads: tuple[int, ...] | None = None
    # Label every token on both axes however many there are (a token window does).
    label_all: bool = False
    serial: int = field(default_factory=lambda: next(_serials), init=False, compare=False)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)

    @property
    def weights_kind(self) -> str:
        """WEIGHTS, CAUSAL_WEIGHTS or "" (not attention weights): the panel's ``kind``."""
        return self.kind

    @property
    def figure(self) -> figures.Spec:
        """The panel drawn at the page's size (a new spec each time: pages draw through the
        shared cache instead, ``ui.charts``)."""
        return draw(self)


def token_panel(
    key: str, values: torch.Tensor, labels: Sequence[str], title: str, **fields
) -> Panel:
    """A matrix (or a stack of heads) over one text: its tokens label both the rows (the
    queries) and the columns (the keys)."""
    return Panel(key, values, tuple(labels), tuple(labels), title=title, **fields)


def draw(panel: Panel, look: figures.Look = figures.NORMAL) -> figures.Spec:
    """The plotly.js spec of ``panel``, built from its data in one pass: a heatmap for a
    matrix, a heads grid for a stack of heads."""
    s = panel.style
    if panel.values.dim() == 3:
        heads = panel.heads if panel.heads is not None else tuple(range(panel.values.shape[0]))
        return figures.heads_grid(
            panel.values[list(heads)],
            panel.rows,
            title=title_of(panel),
            note=panel.note,
            zmax=s.zmax or 1.0,
            kind=s.colour,
            col_labels=panel.cols,
            heads=heads,
            labelled=True if panel.label_all else s.labelled,
            names=(s.row_name, s.col_name, s.value_name),
            look=look,
        )
    return figures.heatmap(
        panel.values,
        panel.rows,
        panel.cols,
        title=panel.title,
        note=panel.note,
        kind=s.colour,
        zmax=s.zmax,
        row_name=s.row_name,
        col_name=s.col_name,
        value_name=s.value_name,
        height=s.height,
        annotate=s.annotate,
        outline_rows=s.outline_rows,
        label_all=panel.label_all,
        look=look,
    )


def stage_frame(panel: Panel, look: figures.Look = figures.PRESENTER) -> figures.Frame:
    """Where presenter mode lays ``panel``'s figure out (``draw(panel, look)``, ``look`` a
    presenter's): its width, height and whether the step's words fit beside it."""
    if panel.values.dim() == 3:
        heads = panel.heads if panel.heads is not None else range(panel.values.shape[0])
        return figures.matrix_frame(
            panel.rows,
            panel.cols,
            title=title_of(panel),
            note=panel.note,
            kind=panel.style.colour,
            heads=len(heads),
            look=look,
        )
    return figures.matrix_frame(
        panel.rows,
        panel.cols,
        title=panel.title,
        note=panel.note,
        kind=panel.style.colour,
        look=look,
    )


def stage_numbers(
    panel: Panel, frame: figures.Frame, look: figures.Look = figures.PRESENTER
) -> tuple[int, float] | None:
    """The cell numbers of ``panel``'s presenter figure (as ``draw(panel, look)`` writes them
    on ``frame``): their largest size in px and the widest one's width in em, or None when the
    figure has none."""
    values = panel.values if panel.values.dim() == 3 else panel.values[None]
    if panel.values.dim() == 3 and panel.heads is not None:
        values = values[list(panel.heads)]
    if max(values.shape[-2:]) > figures.ANNOTATE_MAX or panel.style.colour == "mask":
        return None
    found = [
        figures.stage_numbers(
            figures.blank_non_finite(z.to(torch.float32).numpy()), frame.cell, look
        )
        for z in values
    ]
    drawn = [f for f in found if f is not None]
    if not drawn:
        return None
    return max(size for _, size, _ in drawn), max(widest for _, _, widest in drawn)


def title_of(panel: Panel) -> str:
    """The panel's title as drawn: for a stack of heads, "{heads}" in it says which heads are
    drawn ("all 8 heads", "the first 3 heads", "3 of 8 heads")."""
    if panel.values.dim() == 3:
        return panel.title.replace("{heads}", heads_words(panel.heads, panel.values.shape[0]))
    return panel.title


def chart_label(panel: Panel) -> str:
    """A text label for a panel's figure, from its data: what it is, its title and its shape,
    e.g. "Heatmap: Attention weights A, 6 × 6 (query by key)", or "Heatmap: Attention weights
    of all 2 heads, 2 heads of 6 × 6 (query by key)". Screen readers announce it."""
    rows, cols = min(len(panel.rows), figures.MAX_SIDE), min(len(panel.cols), figures.MAX_SIDE)
    size = f"{rows} × {cols}"
    if panel.values.dim() == 3:
        drawn = panel.values.shape[0] if panel.heads is None else len(panel.heads)
        size = f"{drawn} heads of {size}"
    title = re.sub(r"<[^>]+>", "", figures.one_line(title_of(panel))).strip() or "chart"
    label = f"Heatmap: {title}, {size}"
    if panel.values.dim() == 2:
        label += f" ({panel.style.row_name} by {panel.style.col_name})"
    return label


def _rows(values: torch.Tensor) -> torch.Tensor:
    return values.reshape(-1, values.shape[-1]).to(torch.float64)


def _rows_sum_to_one(values: torch.Tensor, _arg: float | None) -> bool:
    sums = _rows(values).sum(dim=-1)
    return bool(torch.allclose(sums, torch.ones_like(sums), atol=1e-5))


def _some_row_sum_differs(values: torch.Tensor, _arg: float | None) -> bool:
    sums = _rows(values).sum(dim=-1)
    return bool(((sums - 1).abs() > 1e-5).any())


def _max_below(values: torch.Tensor, arg: float | None) -> bool:
    return bool(_rows(values).max() <= (arg if arg is not None else 1.0))


def _max_at_least(values: torch.Tensor, arg: float | None) -> bool:
    return bool(_rows(values).max() >= (arg if arg is not None else 0.0))


def _future_is_zero(values: torch.Tensor, _arg: float | None) -> bool:
    n = values.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    return bool((values[..., future] == 0).all())


def _all_nonnegative(values: torch.Tensor, _arg: float | None) -> bool:
    return bool((_rows(values) >= 0).all())


def _has_negative(values: torch.Tensor, _arg: float | None) -> bool:
    return bool((_rows(values) < 0).any())


def _every_row_mixes(values: torch.Tensor, arg: float | None) -> bool:
    """Every row puts at least ``arg`` (default 0.1) on two or more entries."""
    floor = arg if arg is not None else 0.1
    return bool(((_rows(values) >= floor).sum(dim=-1) >= 2).all())


def _causal_near_even(values: torch.Tensor, arg: float | None) -> bool:
    """Causal weights: every weight a query gives a key it can see (key <= query) is within
    ``arg`` (default 0.1) of an even share, 1 / (query + 1)."""
    n = values.shape[-1]
    seen = torch.tril(torch.ones(n, n, dtype=torch.bool))
    even = (1.0 / torch.arange(1, n + 1, dtype=torch.float64))[:, None].expand(n, n)
    gap = (values.to(torch.float64) - even).abs()[..., seen]
    return bool((gap <= (arg if arg is not None else 0.1) + 1e-6).all())  # float32 noise


def _future_is_minus_inf(values: torch.Tensor, _arg: float | None) -> bool:
    """Every entry above the diagonal (a future key) is −∞: masked scores."""
    n = values.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    return bool(torch.isneginf(values[..., future]).all())


# Printed numbers are rounded to 3 decimals: a claim that names one holds within half a unit.
_PRINTED = 5e-4 + 1e-6


def _is_symmetric(values: torch.Tensor, _arg: float | None) -> bool:
    v = values.to(torch.float64)
    return bool(torch.allclose(v, v.transpose(-2, -1), rtol=1e-5, atol=1e-6))


def _max_near(values: torch.Tensor, arg: float | None) -> bool:
    """The largest entry, printed to 3 decimals, is ``arg``."""
    return arg is not None and abs(float(_rows(values).max()) - arg) <= _PRINTED


def _largest_change_near(values: torch.Tensor, arg: float | None) -> bool:
    """The largest absolute entry (of a difference), printed to 3 decimals, is ``arg``."""
    return arg is not None and abs(float(_rows(values).abs().max()) - arg) <= _PRINTED


def _num_rows(values: torch.Tensor, arg: float | None) -> bool:
    return arg is not None and values.shape[-2] == int(arg)


def _zeros_where(values: torch.Tensor, future: bool) -> int:
    """How many entries are exactly 0 above the diagonal (``future``), or on and below it,
    over every matrix of a stack."""
    n = values.shape[-1]
    above = torch.triu(torch.ones(values.shape[-2], n, dtype=torch.bool), diagonal=1)
    where = above if future else ~above
    return int((values[..., where] == 0).sum())


def _future_zeros(values: torch.Tensor, arg: float | None) -> bool:
    """Exactly ``arg`` entries above the diagonal (the future keys) are 0."""
    return arg is not None and _zeros_where(values, True) == int(arg)


def _visible_zeros(values: torch.Tensor, arg: float | None) -> bool:
    """Exactly ``arg`` entries on or below the diagonal (the keys a query sees) are 0."""
    return arg is not None and _zeros_where(values, False) == int(arg)


# name -> test(values, arg): the properties a sentence on a page may state about a panel.
PROPERTIES: dict[str, Callable[[torch.Tensor, float | None], bool]] = {
    "rows_sum_to_one": _rows_sum_to_one,
    "some_row_sum_differs": _some_row_sum_differs,
    "max_at_most": _max_below,
    "max_at_least": _max_at_least,
    "future_is_zero": _future_is_zero,
    "all_nonnegative": _all_nonnegative,
    "has_negative": _has_negative,
    "every_row_mixes": _every_row_mixes,
    "causal_near_even": _causal_near_even,
    "future_is_minus_inf": _future_is_minus_inf,
    "is_symmetric": _is_symmetric,
    "max_near": _max_near,
    "largest_change_near": _largest_change_near,
    "num_rows": _num_rows,
    "future_zeros": _future_zeros,
    "visible_zeros": _visible_zeros,
}


# --- what a head does: the detectors' scores (attnviz/models/detectors.py) --------------------------
def _heads(values: torch.Tensor) -> torch.Tensor:
    """(T, T) or (H, T, T) weights as (H, T, T)."""
    return values if values.dim() == 3 else values[None]


def _distances(values: torch.Tensor) -> np.ndarray:
    """Mean total-variation distance between every two heads' rows 1 … T−1 (row 0 is the same
    for every causal head: all its weight on token 0)."""
    return D.head_distances(_heads(values)[:, 1:])


def _largest_head_distance_near(values: torch.Tensor, arg: float | None) -> bool:
    """The largest distance between two heads' rows (:func:`_distances`), printed to 2
    decimals, is ``arg``."""
    if arg is None or _heads(values).shape[0] < 2 or values.shape[-1] < 2:
        return False
    return abs(float(_distances(values).max()) - arg) <= _PRINTED_2


def _largest_gap_to_even_near(values: torch.Tensor, arg: float | None) -> bool:
    """Causal weights: the largest distance of a visible weight from an even share of its row,
    |w_ij − 1/(i + 1)| for j ≤ i, printed to 2 decimals, is ``arg``."""
    n = values.shape[-1]
    seen = torch.tril(torch.ones(n, n, dtype=torch.bool))
    even = (1.0 / torch.arange(1, n + 1, dtype=torch.float64))[:, None].expand(n, n)
    gap = (values.to(torch.float64) - even).abs()[..., seen]
    return arg is not None and gap.numel() > 0 and abs(float(gap.max()) - arg) <= _PRINTED_2


_PRINTED_2 = 5e-3 + 1e-6  # a number printed to 2 decimals holds within half a unit


def _score(values: torch.Tensor, keys: tuple[int, ...]) -> float:
    return float(D.expected_key_score(values, torch.tensor(keys, dtype=torch.long))[()])


def _named_by_score(values: torch.Tensor, arg: float | None, keys) -> bool:
    """A head named after a detector: its score on the expected keys ``keys[0]`` reaches
    :data:`attnviz.models.detectors.NAMED_AT`, and printed to 2 decimals it is ``arg``."""
    score = _score(values, keys[0])
    return arg is not None and score >= D.NAMED_AT and abs(score - arg) <= _PRINTED_2


def _named_by_none(values: torch.Tensor, arg: float | None, keys) -> bool:
    """A head left unnamed: no detector's score (one set of expected keys each) reaches
    :data:`attnviz.models.detectors.NAMED_AT`, and the highest, printed to 2 decimals, is ``arg``."""
    scores = [_score(values, k) for k in keys]
    finite = [x for x in scores if np.isfinite(x)]
    if arg is None or not finite:
        return False
    return max(finite) < D.NAMED_AT and abs(max(finite) - arg) <= _PRINTED_2


def _own_pattern_heads(values: torch.Tensor, arg: float | None, keys) -> bool:
    """A stack of heads: exactly the heads ``keys[0]`` are at least ``arg`` (mean total-variation
    distance over rows 1 … T−1) from every other head."""
    heads = _heads(values)
    if arg is None or heads.shape[0] < 2:
        return False
    d = _distances(values)
    np.fill_diagonal(d, np.inf)
    own = tuple(h for h in range(d.shape[0]) if float(d[h].min()) >= arg)
    return own == tuple(keys[0])


def _head_gaps(values: torch.Tensor, heads) -> list[float]:
    """Causal weights, per head of ``heads``: the largest |w_ij − 1/(i + 1)| over j <= i."""
    stack = _heads(values).to(torch.float64)
    n = stack.shape[-1]
    seen = torch.tril(torch.ones(n, n, dtype=torch.bool))
    even = (1.0 / torch.arange(1, n + 1, dtype=torch.float64))[:, None].expand(n, n)
    return [float((stack[h] - even).abs()[seen].max()) for h in heads]


def _heads_near_even(values: torch.Tensor, arg: float | None, keys) -> bool:
    """Every visible weight of each head ``keys[0]`` is within ``arg`` of an even share."""
    return arg is not None and all(g <= arg + 1e-6 for g in _head_gaps(values, keys[0]))


def _heads_far_from_even(values: torch.Tensor, arg: float | None, keys) -> bool:
    """Each head ``keys[0]`` has a visible weight at least ``arg`` from an even share."""
    return arg is not None and all(g >= arg for g in _head_gaps(values, keys[0]))


# name -> test(values, arg, keys): properties of one head's weights measured on expected keys
# (one tuple of key positions per query, NO_KEY for none, for each detector the claim names).
KEYED_PROPERTIES: dict[str, Callable[[torch.Tensor, float | None, tuple], bool]] = {
    "named_by_score": _named_by_score,
    "named_by_none": _named_by_none,
    "own_pattern_heads": _own_pattern_heads,
    "heads_near_even": _heads_near_even,
    "heads_far_from_even": _heads_far_from_even,
}
PROPERTIES["largest_head_distance_near"] = _largest_head_distance_near
PROPERTIES["largest_gap_to_even_near"] = _largest_gap_to_even_near


@dataclass(frozen=True)
class Claim:
    """A sentence about a panel's numbers, with the property it states.

    ``PROPERTIES[prop](panel.values, arg)`` must hold for the panel named ``panel``; the
    consistency tests check every claim of every page, in every mode, against the tensors drawn.
    For a stack of heads, ``head`` narrows the claim to one head's (T, T) weights. A claim about
    what a head does (``KEYED_PROPERTIES``) carries the expected keys it measures, ``keys``: one
    tuple of key positions per detector (see :mod:`attnviz.models.detectors`).
    """

    text: str
    panel: str
    prop: str
    arg: float | None = None
    head: int | None = None
    keys: tuple[tuple[int, ...], ...] = ()

    def holds(self, panels: dict[str, Panel]) -> bool:
        values = panels[self.panel].values
        if self.head is not None:
            values = values[self.head]
        if self.prop in KEYED_PROPERTIES:
            return KEYED_PROPERTIES[self.prop](values, self.arg, self.keys)
        return PROPERTIES[self.prop](values, self.arg)


# --- how a page shows a panel: its view -----------------------------------------------------
_POSITION = re.compile(r"(\d+)[: ]")


def is_token_axis(labels) -> bool:
    """Whether labels name token positions: each starts with its own 0-based position
    (``"3: ␣the"``, or ``"7 (unused)"`` for a mask row past the text)."""
    if not labels:
        return False
    for k, label in enumerate(labels):
        found = _POSITION.match(str(label))
        if found is None or int(found[1]) != k:
            return False
    return True


@dataclass(frozen=True)
class View:
    """How the page shows every panel: plain values, so a cache can key on them.

    ``relative``: attention weights as weight × the number of keys their row sees (1 = an
    even share) on a log scale, instead of 0 to 1. ``window``: the first and last token shown
    (inclusive) on every token axis; None shows them all. ``heads``: for a stack of heads, the
    heads drawn (None: the panel's own choice)."""

    relative: bool = False
    window: tuple[int, int] | None = None
    heads: tuple[int, ...] | None = None

    @property
    def is_default(self) -> bool:
        return not self.relative and self.window is None and self.heads is None


def _span(window: tuple[int, int] | None, length: int) -> tuple[int, int] | None:
    """The window on an axis of ``length`` labels, or None when it shows the whole axis (no
    window, or a window that starts past this axis's end)."""
    if window is None or window[0] >= length:
        return None
    first, last = window[0], min(window[1], length - 1)
    return None if (first, last) == (0, length - 1) else (first, last)


def viewed(panel: Panel, view: View) -> Panel | None:
    """The panel as ``view`` shows it, or None when the view changes nothing in it.

    The window crops every token axis (dimension axes stay whole) and labels every token
    shown; the relative scale applies to attention weights only (``Panel.kind``) and is
    computed on the whole matrix before the window, so row i still counts its i + 1 visible
    keys; for a stack of heads, ``view.heads`` picks the heads drawn. The new panel's values
    are what its figure shows, so its numbers table and CSV follow the view. Nothing is read
    back from a drawn figure: the view transforms the data, and the figure is drawn anew."""
    relative = view.relative and panel.kind in (WEIGHTS, CAUSAL_WEIGHTS)
    rows_span = _span(view.window, len(panel.rows)) if is_token_axis(panel.rows) else None
    cols_span = _span(view.window, len(panel.cols)) if is_token_axis(panel.cols) else None
    stack = panel.values.dim() == 3
    heads = view.heads if stack else None
    if not relative and rows_span is None and cols_span is None and heads is None:
        return None
    values = panel.values
    style = panel.style
    if relative:
        values = torch.from_numpy(
            figures.ratio_to_uniform(values, causal=panel.kind == CAUSAL_WEIGHTS)
        )
        style = replace(style, colour="relative", zmax=None, value_name=figures.RATIO_NAME)
    r0, r1 = rows_span or (0, len(panel.rows) - 1)
    c0, c1 = cols_span or (0, len(panel.cols) - 1)
    values = values[..., r0 : r1 + 1, c0 : c1 + 1].contiguous().clone()
    rows, cols = panel.rows[r0 : r1 + 1], panel.cols[c0 : c1 + 1]
    notes = []
    span = rows_span or cols_span
    if span is not None:
        total = len(panel.rows) if rows_span else len(panel.cols)
        notes.append(f"tokens {span[0]}–{span[1]} of {total}")
    if relative:
        notes.append("relative to an even share")
    # A window moves the outlined rows with it; rows it leaves out lose their outline.
    outlines = tuple(i - r0 for i in style.outline_rows if r0 <= i <= r1)
    style = replace(style, outline_rows=outlines)
    return replace(
        panel,
        values=values,
        rows=rows,
        cols=cols,
        style=style,
        note=", ".join(([panel.note] if panel.note and not relative else []) + notes),
        heads=heads if heads is not None else panel.heads,
        label_all=panel.label_all or span is not None,
    )


def heads_words(heads: tuple[int, ...] | None, total: int) -> str:
    """Which heads a grid draws, in words: "all 8 heads", "the first 3 heads", "3 of 8 heads"."""
    if heads is None or tuple(heads) == tuple(range(total)):
        return f"all {total} heads"
    if tuple(heads) == tuple(range(len(heads))):
        return f"the first {len(heads)} heads"
    return f"{len(heads)} of {total} heads"


def heads_that_fit(rows: int, cols: int) -> int:
    """How many (rows, cols) heads one heads grid may draw (F.GRID_CELL_BUDGET), at least 1."""
    return max(1, figures.GRID_CELL_BUDGET // max(1, rows * cols))


# --- a panel's declaration: what every feature needs to know about it -------------------------
# The numbers a panel draws, named as the questions read them: the one a question asks about
# (``attnviz.teach.questions.READS``: the panel it hides) and the ones it relies on
# (``attnviz.teach.questions.RELIES_ON``: panels drawn, unhidden, above the question).
HOLDS_SCORES = "scores"  # the raw scores (X Xᵀ on pass 1, Q Kᵀ after), masked on a causal pass
HOLDS_SCALED = "scaled"  # the scores divided by √d_k
HOLDS_WEIGHTS = "weights"  # the softmax, before dropout
HOLDS_DROPPED = "dropped"  # the weights after dropout, what the context used
HOLDS_SPLIT = "split"  # the queries split into heads (a question asks their shape)
HOLDS_CHANGE = "change"  # softmax(scores) minus softmax(scores / √d_k)
HOLDS_QUERIES = "queries"  # the query vectors, one row per token
HOLDS_KEYS = "keys"  # the key vectors, one row per token
HOLDS_MASK = "mask"  # the causal mask
HOLDS_DROP_MASK = "drop mask"  # which weights dropout zeroes, and the scale of the rest
HOLDS = (
    HOLDS_SCORES,
    HOLDS_SCALED,
    HOLDS_WEIGHTS,
    HOLDS_DROPPED,
    HOLDS_SPLIT,
    HOLDS_CHANGE,
    HOLDS_QUERIES,
    HOLDS_KEYS,
    HOLDS_MASK,
    HOLDS_DROP_MASK,
)

# A cell source's head that is the one the page's "Head" box picked (page 4's one head).
PICKED_HEAD = -1


@dataclass(frozen=True)
class Declared:
    """One panel of a pass page, declared once: everything the features around the panel look
    up (the lesson that builds it, "Predict first", "Explain a cell", "Reproduce", the class
    poll, presenter mode). A section of a page that is not a panel but draws a panel's numbers
    (a printout, a bar chart, a table) is declared the same way, with ``shows``.

    ``key`` names the panel (its widgets, its CSV, its words in ``lessons/story.toml``);
    ``page`` is the pass ("simplified", "trainable", "causal", "multihead"), or "home" (the home
    page's alignment).

    - ``field``: the matrix of the pass it draws, a kind of ``attnviz.teach.reproduce.MATRICES``
      (its "Reproduce" snippet prints it); "" when no snippet prints it. ``lab``: drawn from page
      3's dropout lab (the pass in training mode); ``per_head``: a stack of every head.
    - ``story``: its entries in ``story.toml`` (None: the one named by its key, or none for a
      section; () none).
    - ``holds``: the numbers a question reads that it draws (HOLDS_*); ``holds_dropped``: what it
      draws instead when dropout acts (None: the same). A question hides the panel that holds
      what it asks about, and is asked below the panels that hold what it relies on.
    - ``same``: the other panels that draw the same numbers (or numbers that give them away):
      a question that hides this panel hides them too.
    - ``shows``: for a section, the panels whose numbers it draws (hidden while a question
      hides one of them); ``stands_for``: the panel whose place the section takes when the page
      does not draw that panel itself (the question is asked there).
    - ``cell``: "Explain a cell" opens a cell clicked on it: (its trace, "" for the page's own,
      "lab" or "batch"; its head, None for a grid of every head, or PICKED_HEAD; its example in
      the batch). None: not clickable.
    - ``step``: its place among the presenter's steps (1 first; 0: not a step).
    - ``box``: the closed part of the page it is drawn in (``ui/sections.py``'s URL name), ""
      for the page itself: a question asked in it opens the part.
    """

    key: str
    page: str
    field: str = ""
    lab: bool = False
    per_head: bool = False
    story: tuple[str, ...] | None = None
    holds: tuple[str, ...] = ()
    holds_dropped: tuple[str, ...] | None = None
    same: tuple[str, ...] = ()
    shows: tuple[str, ...] = ()
    stands_for: str = ""
    cell: tuple[str, int | None, int] | None = None
    step: int = 0
    box: str = ""

    @property
    def stories(self) -> tuple[str, ...]:
        """The entries of ``story.toml`` it is told with (a section's words are its page's)."""
        if self.story is not None:
            return self.story
        return () if self.is_section else (self.key,)

    @property
    def is_section(self) -> bool:
        return bool(self.shows)

    def held(self, dropped: bool) -> tuple[str, ...]:
        """What it holds (HOLDS_*), with dropout acting (``dropped``) or not."""
        if dropped and self.holds_dropped is not None:
            return self.holds_dropped
        return self.holds


def in_steps(declared, panels: dict[str, Panel]) -> tuple[Panel, ...]:
    """The presenter's steps among ``panels`` (by key), in the order ``declared`` gives them."""
    steps = sorted((d for d in declared if d.step), key=lambda d: d.step)
    return tuple(panels[d.key] for d in steps)
