"""Plotly figures for every view. Pages never build a trace by hand; they call these.

Rules every figure follows:

- token axes are categories with one label per 0-based position (``"3: ␣the"``), so repeated,
  number-like and HTML-like tokens each keep their own row; labels are HTML-escaped here, at the
  Plotly boundary only (tables and CSV get the raw text);
- hover comes from a ``hovertemplate`` over the axis labels (no per-cell strings): the query
  token, the key token and the value to 4 decimals;
- data is float32 (sent as base64); at most :data:`MAX_SIDE` x :data:`MAX_SIDE` cells per heatmap,
  larger matrices are cropped and the title says so;
- weights use a sequential colour-blind-safe scale fixed to [0, 1] (or [0, 1/(1-p)] after dropout);
  signed scores use a diverging scale centred at 0.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

MAX_SIDE = 256
LABEL_CHARS = 18
SEQUENTIAL = "Viridis"  # perceptually uniform and colour-blind safe
DIVERGING = "RdBu_r"  # ColorBrewer RdBu, colour-blind safe, blue below 0 and red above
MASK_SCALE = [[0.0, "#f0f0f0"], [1.0, "#3b3b3b"]]
OUTLINE = "#ff2b2b"  # row outlines: bright red stands out on every Viridis shade
ANNOTATE_MAX = 12
# No Plotly template: Streamlit's theme styles the charts, and the default template would add
# ~6 kB to every figure and most of the cost of sending it.
TEMPLATE = "none"
# Text colours, set on every figure so that Streamlit's theme (12 px grey ticks, about 3.7:1 on
# white) does not apply: both stay above the 4.5:1 that small text needs on a white page.
TEXT_COLOUR = "#31333f"  # Streamlit's own body text: 12.5:1 on white
AXIS_COLOUR = "#4a4d59"  # tick labels and colour-bar numbers: 8.4:1 on white
TICK_SIZE = 12


TITLE_SIZE = 15
# A title longer than this many characters wraps onto more lines: about what a phone's chart
# (358 px at 390 px wide) holds of 15 px text, less the title's left pad.
TITLE_CHARS = 40
TITLE_LINE = 20  # px: what each extra line of a 15 px title adds to the top margin
TITLE_TOP = 50  # px: the top margin of a one-line title
TITLE_PAD = 10  # px from the top of the figure to the top of the title
COLOURBAR_THICKNESS = 12  # px, not Plotly's 30: on a phone the plot keeps the width
# Several series: their legend sits in one row between the title and the plot, where it cannot
# meet the x axis's tick labels (however many lines those take); the top margin holds it.
LEGEND_ABOVE = dict(orientation="h", x=0.0, xanchor="left", y=1.0, yanchor="bottom")
LEGEND_ROW = 24  # px
_TAG = re.compile(r"<[^>]*>")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


def base_layout(
    title: str, *, height: int, right: int = 10, top: int = TITLE_TOP, **layout: Any
) -> dict[str, Any]:
    """What every chart's layout starts from: no template, the title at ``TITLE_SIZE`` px,
    ``height`` px tall, 10 px margins (``right`` on the right, ``top`` at the top) that
    :func:`readable` grows to fit a wrapped title and the axes' labels. ``layout``: the rest
    (axes, legend, annotations)."""
    return dict(
        template=TEMPLATE,
        title=dict(text=title, font=dict(size=TITLE_SIZE)),
        height=height,
        margin=dict(l=10, r=right, t=top, b=10),
        **layout,
    )


def _chart(data: list[dict], title: str, *, height: int, **layout: Any) -> go.Figure:
    """A figure of ``data`` on :func:`base_layout`, made readable; with several series, their
    legend above the plot (``LEGEND_ABOVE``)."""
    if len(data) > 1:
        layout = dict(legend=LEGEND_ABOVE, top=TITLE_TOP + LEGEND_ROW, **layout)
    return readable(go.Figure(dict(data=data, layout=base_layout(title, height=height, **layout))))


def _shown_length(piece: str) -> int:
    """How many characters Plotly draws for ``piece``: tags take none, an entity one."""
    return len(html.unescape(_TAG.sub("", piece)))


def _words(line: str) -> list[str]:
    """``line`` split at the spaces outside its tags (``<span style='...'>`` stays whole)."""
    words, current, in_tag = [], "", False
    for ch in line:
        in_tag = (in_tag or ch == "<") and ch != ">"
        if ch == " " and not in_tag:
            words.append(current)
            current = ""
        else:
            current += ch
    return [w for w in [*words, current] if w]


def wrap_title(text: str, width: int = TITLE_CHARS) -> str:
    """``text`` with ``<br>`` between words wherever a line would pass ``width`` characters (as
    drawn: tags and entities counted as Plotly shows them). A word longer than ``width`` keeps a
    line of its own; breaks already in ``text`` stay. Wrapping a wrapped title changes nothing."""
    lines = []
    for given in _BREAK.split(text):
        line = ""
        for word in _words(given):
            if line and _shown_length(line) + 1 + _shown_length(word) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    return "<br>".join(lines)


def title_of(fig: go.Figure) -> str:
    """The figure's title on one line: the breaks :func:`wrap_title` put in read as the spaces
    they replaced."""
    return _BREAK.sub(" ", fig.layout.title.text or "")


def place_title(fig: go.Figure) -> go.Figure:
    """Pin the title to the figure's top left, ``TITLE_PAD`` px from the top whatever its size
    and number of lines: call it again after changing the title's font size. Returns ``fig``.

    Plotly lowers a one-line title anchored at its top by 0.7 em, but sets the first line of a
    wrapped one on its baseline at the pad (its top was 3 px above the figure): that line gets
    the 0.7 em in its pad. Left-aligned: a title too long for a narrow screen loses its end,
    not both."""
    size = fig.layout.title.font.size or TITLE_SIZE
    lines = len(_BREAK.findall(fig.layout.title.text or "")) + 1
    fig.update_layout(
        title=dict(
            x=0.0,
            xanchor="left",
            xref="container",
            y=1.0,
            yanchor="top",
            yref="container",
            pad=dict(l=8, t=TITLE_PAD + (round(0.7 * size) if lines > 1 else 0)),
        )
    )
    return fig


def readable(fig: go.Figure) -> go.Figure:
    """Make a figure read well at every width, on every figure builder's way out. Returns ``fig``.

    - dark, explicit text colours (an explicit value wins over Streamlit's template);
    - a long title wraps at word boundaries (:func:`wrap_title`), pinned to the top left, and
      the top margin grows by a line for each line it gained, so nothing of it is cut on a phone
      and it never runs into the plot; calling this twice changes nothing more;
    - the axes push the margins out to fit their tick labels and titles (``automargin``), so
      neither is clipped at the figure's edge;
    - colour bars are thin, so a narrow plot keeps most of its width.
    """
    ticks = dict(color=AXIS_COLOUR, size=TICK_SIZE)
    fig.update_layout(font=dict(color=TEXT_COLOUR))
    fig.update_xaxes(tickfont=ticks, title_font_color=TEXT_COLOUR, automargin=True)
    fig.update_yaxes(tickfont=ticks, title_font_color=TEXT_COLOUR, automargin=True)
    title = fig.layout.title.text
    if title:
        wrapped = wrap_title(title)
        gained = len(_BREAK.findall(wrapped)) - len(_BREAK.findall(title))
        top = fig.layout.margin.t if fig.layout.margin.t is not None else TITLE_TOP
        fig.update_layout(
            title=dict(text=wrapped, font_color=TEXT_COLOUR), margin_t=top + TITLE_LINE * gained
        )
        place_title(fig)
    bar = dict(tickfont=ticks, thickness=COLOURBAR_THICKNESS)
    if "coloraxis" in fig.layout and fig.layout.coloraxis.colorscale:
        fig.update_layout(coloraxis_colorbar=bar)
    for trace in fig.data:
        if trace.type == "heatmap" and trace.showscale is not False and trace.coloraxis is None:
            trace.update(colorbar=bar)
        elif trace.type == "scatter" and trace.marker.showscale:
            trace.update(marker_colorbar=bar)
    fig.update_annotations(font_color=TEXT_COLOUR)
    return fig


def escape_label(label: str) -> str:
    """Escape a raw label for Plotly, which interprets a few HTML tags in text; shorten it."""
    if len(label) > LABEL_CHARS:
        label = label[: LABEL_CHARS - 1] + "…"
    return html.escape(label, quote=False)


def axis_labels(labels) -> list[str]:
    return [escape_label(str(lab)) for lab in labels]


def dim_labels(n: int, prefix: str = "dim") -> list[str]:
    return [f"{prefix} {i}" for i in range(n)]


def _array(z) -> np.ndarray:
    if isinstance(z, torch.Tensor):
        z = z.detach().to(torch.float32).cpu().numpy()
    return np.asarray(z, dtype=np.float32)


def crop(z: np.ndarray, rows: list, cols: list, max_side: int = MAX_SIDE):
    """Keep at most ``max_side`` rows and columns; say what was cut."""
    note = []
    if z.shape[0] > max_side:
        note.append(f"rows 0–{max_side - 1} of {z.shape[0]}")
    if z.shape[1] > max_side:
        note.append(f"columns 0–{max_side - 1} of {z.shape[1]}")
    return z[:max_side, :max_side], rows[:max_side], cols[:max_side], ", ".join(note)


def _colour(kind: str, z: np.ndarray, zmax: float | None):
    if kind == "weights":
        return dict(colorscale=SEQUENTIAL, zmin=0.0, zmax=zmax or 1.0)
    if kind == "mask":
        return dict(colorscale=MASK_SCALE, zmin=0.0, zmax=1.0, showscale=False)
    finite = z[np.isfinite(z)]
    bound = float(np.abs(finite).max()) if finite.size else 1.0
    bound = zmax or (bound if bound > 0 else 1.0)
    return dict(colorscale=DIVERGING, zmin=-bound, zmax=bound, zmid=0.0)


def heatmap(
    z,
    rows,
    cols,
    *,
    title: str,
    kind: str = "weights",
    zmax: float | None = None,
    row_name: str = "query",
    col_name: str = "key",
    value_name: str = "weight",
    height: int | None = None,
    annotate: bool = True,
    outline_rows=(),
) -> go.Figure:
    """One matrix as a heatmap. ``rows``/``cols`` are raw labels (escaped here).

    ``kind``: "weights" (sequential, [0, zmax or 1]), "signed" (diverging around 0), "mask"
    (two shades). Non-finite cells (−∞ masked scores) are left blank. Small matrices get their
    values written in the cells unless ``annotate`` is False (for figures in narrow columns).
    ``outline_rows``: row positions drawn with a red outline (e.g. rows dropout zeroed).
    """
    z = _array(z)
    z, rows, cols, cut = crop(z, list(rows), list(cols))
    shown = np.where(np.isfinite(z), z, np.nan).astype(np.float32)
    n_rows, n_cols = shown.shape
    trace = dict(
        z=shown,
        x=axis_labels(cols),
        y=axis_labels(rows),
        hovertemplate=(
            f"{row_name} %{{y}}<br>{col_name} %{{x}}<br>{value_name} %{{z:.4f}}<extra></extra>"
        ),
        xgap=1 if max(n_rows, n_cols) <= 32 else 0,
        ygap=1 if max(n_rows, n_cols) <= 32 else 0,
        **_colour(kind, z, zmax),
    )
    if annotate and n_rows <= ANNOTATE_MAX and n_cols <= ANNOTATE_MAX and kind != "mask":
        trace.update(texttemplate="%{z:.2f}", textfont=dict(size=11))
    full_title = f"{title} <span style='font-size:12px'>({cut})</span>" if cut else title
    side = height or int(min(640, max(260, 120 + 22 * n_rows)))
    return readable(
        go.Figure(
            dict(
                data=[dict(type="heatmap", **trace)],
                layout=dict(
                    template=TEMPLATE,
                    title=dict(text=full_title, font=dict(size=15)),
                    height=side,
                    margin=dict(l=10, r=10, t=50, b=10),
                    xaxis=dict(type="category", tickangle=-45, title=dict(text=col_name)),
                    yaxis=dict(type="category", autorange="reversed", title=dict(text=row_name)),
                    shapes=[_row_outline(i) for i in outline_rows if 0 <= i < n_rows],
                ),
            )
        )
    )


def _row_outline(i: int) -> dict:
    """A rectangle around row ``i`` (a category axis puts row i at i, from i-0.5 to i+0.5)."""
    return dict(
        type="rect",
        name=f"outlined row {i}",
        xref="x domain",
        x0=0,
        x1=1,
        yref="y",
        y0=i - 0.5,
        y1=i + 0.5,
        line=dict(color=OUTLINE, width=3),
        fillcolor="rgba(0,0,0,0)",
    )


def bars(
    values,
    labels,
    *,
    title: str,
    value_name: str = "score",
    ymax: float | None = None,
    highlight: int | None = None,
) -> go.Figure:
    """One value per token, as bars (e.g. one query's scores or weights)."""
    v = _array(values).reshape(-1)
    colours = ["#fde725" if i == highlight else "#3b528b" for i in range(len(v))]
    yaxis: dict[str, Any] = dict(title=dict(text=value_name))
    if ymax is not None:
        yaxis["range"] = [0, ymax]
    bar = dict(
        type="bar",
        x=axis_labels(labels),
        y=v,
        marker=dict(color=colours),
        hovertemplate=f"key %{{x}}<br>{value_name} %{{y:.4f}}<extra></extra>",
    )
    return _chart([bar], title, height=300, xaxis=dict(type="category", tickangle=-45), yaxis=yaxis)


def grouped_bars(
    series: Mapping[str, Any], labels, *, title: str, value_name: str = "weight"
) -> go.Figure:
    """Several values per token side by side (e.g. divide-by-sum, naive and stable softmax)."""
    x = axis_labels(labels)
    data = [
        dict(
            type="bar",
            name=name,
            x=x,
            y=_array(values).reshape(-1),
            hovertemplate=f"{name}<br>key %{{x}}<br>{value_name} %{{y:.4f}}<extra></extra>",
        )
        for name, values in series.items()
    ]
    return _chart(
        data,
        title,
        height=320,
        barmode="group",
        xaxis=dict(type="category", tickangle=-45),
        yaxis=dict(title=dict(text=value_name)),
    )


GRID_CELL_BUDGET = 4 * 256 * 256  # cells in one heads grid; more would slow the browser down
# A heatmap grows 22 px a row up to 640 px (see heatmap): past (640 - 120) // 22 = 23 tokens its
# rows shrink and Plotly starts skipping token labels, so longer texts get a token window and a
# heads grid labels every token up to this many per head.
LABEL_EVERY_TOKEN_UP_TO = 24
GRID_TICK_SIZE = 10


def heads_grid(
    weights,
    labels,
    *,
    title: str,
    zmax: float = 1.0,
    cols: int = 4,
    kind: str = "weights",
    col_labels=None,
    heads=None,
    labelled: bool | None = None,
    names: tuple[str, str, str] = ("query", "key", "weight"),
) -> go.Figure:
    """Every head's matrix on one shared colour scale. ``weights``: (H, rows, cols).

    ``kind``: "weights" (sequential, 0 to ``zmax``), "signed" (diverging around 0, blank
    = −∞) or "relative" (weight × visible keys on a log2 scale, as :func:`relative_to_uniform`).
    ``labels`` name the rows (and the columns unless ``col_labels`` does); ``heads`` are the
    head numbers the subplot titles give (default 0 to H−1). ``labelled``: write every token
    on the axes (default: when a head has at most LABEL_EVERY_TOKEN_UP_TO rows and columns);
    labelled grids get fewer heads per row and taller cells so that every label has room.
    ``names``: the row, column and value names the hover gives.
    """
    w = _array(weights)
    w = np.where(np.isfinite(w), w, np.nan).astype(np.float32)
    H, n_rows, n_cols = w.shape
    numbers = list(heads) if heads is not None else list(range(H))
    ys = axis_labels(labels)
    xs = axis_labels(col_labels if col_labels is not None else labels)
    if labelled is None:
        labelled = max(n_rows, n_cols) <= LABEL_EVERY_TOKEN_UP_TO
    per_row = min(cols, H)
    if labelled:  # about 16 px per (upright) column label across a 900 px wide page
        per_row = max(1, min(per_row, 56 // max(n_cols, 1)))
    rows = math.ceil(H / per_row)
    cell = max(170, 14 * n_rows) if labelled else 170
    gap = 120 if labelled else 40  # room for the column labels and the next subplot's title
    area = rows * cell + (rows - 1) * gap
    fig = make_subplots(
        rows=rows,
        cols=per_row,
        subplot_titles=[f"head {h}" for h in numbers],
        horizontal_spacing=0.03 if not labelled else 0.08,
        vertical_spacing=min(gap / area, 0.3) if rows > 1 else 0.0,
    )
    row_name, col_name, value_name = names
    for i, h in enumerate(numbers):
        fig.add_trace(
            go.Heatmap(
                z=w[i],
                x=xs,
                y=ys,
                coloraxis="coloraxis",
                hovertemplate=(
                    f"head {h}<br>{row_name} %{{y}}<br>{col_name} %{{x}}<br>"
                    f"{value_name} %{{z:.4f}}<extra></extra>"
                ),
            ),
            row=i // per_row + 1,
            col=i % per_row + 1,
        )
    fig.update_xaxes(type="category", showticklabels=False)
    fig.update_yaxes(type="category", autorange="reversed", showticklabels=False)
    if labelled:  # every token written: the columns on every head, the rows at the left
        small = dict(size=GRID_TICK_SIZE, color=AXIS_COLOUR)
        fig.update_xaxes(
            showticklabels=True,
            tickmode="array",
            tickvals=xs,
            ticktext=xs,
            tickfont=small,
            tickangle=-90,
        )
        fig.update_yaxes(
            showticklabels=True, tickmode="array", tickvals=ys, ticktext=ys, tickfont=small, col=1
        )
    if kind == "signed":
        finite = w[np.isfinite(w)]
        top = float(np.abs(finite).max()) if finite.size else 1.0
        top = top if top > 0 else 1.0
        colours = dict(colorscale=DIVERGING, cmin=-top, cmax=top)
    elif kind == "relative":
        low, high = 2.0**-RATIO_RANGE, 2.0**RATIO_RANGE
        colours = dict(colorscale=_log_colourscale(low, high), cmin=low, cmax=high, showscale=False)
    else:
        colours = dict(colorscale=SEQUENTIAL, cmin=0.0, cmax=zmax)
    fig.update_layout(
        template=TEMPLATE,
        title=dict(text=title, font=dict(size=15)),
        coloraxis=colours,
        height=min(1200, 80 + 230 * rows) if not labelled else 90 + area + 110,
        margin=dict(l=10, r=10, t=70, b=110 if labelled else 10),
    )
    if kind == "relative":
        fig.add_trace(_log_colour_bar(xs[:1], ys[:1]), row=1, col=1)
    return readable(fig)


def lines(
    x,
    series: Mapping[str, Any],
    *,
    title: str,
    x_name: str,
    y_name: str,
    log_x: bool = False,
    markers: bool = True,
    y_range: tuple[float, float] | None = None,
) -> go.Figure:
    """A few curves against one x axis (e.g. entropy against d_k, loss against steps).

    ``markers=False`` for long curves (one point per training step); ``y_range`` fixes the
    y axis (e.g. [0, 1] for an accuracy)."""
    data = [
        dict(
            type="scatter",
            x=np.asarray(x),
            y=_array(y),
            mode="lines+markers" if markers else "lines",
            name=name,
            hovertemplate=f"{name}<br>{x_name} %{{x}}<br>{y_name} %{{y:.4f}}<extra></extra>",
        )
        for name, y in series.items()
    ]
    return _chart(
        data,
        title,
        height=320,
        xaxis=dict(title=dict(text=x_name), type="log" if log_x else "linear"),
        yaxis=dict(title=dict(text=y_name), **({"range": list(y_range)} if y_range else {})),
    )


def ratio_to_uniform(weights, *, causal: bool = True) -> np.ndarray:
    """Each weight times the number of keys its row can see: 1 is an even share, 2 twice an
    even share. Causal weights (the default): row i sees keys 0 to i, future keys (hidden by
    the mask) are NaN. Otherwise every row sees all T keys. ``weights``: (..., T, T)."""
    w = _array(weights)
    n = w.shape[-1]
    if not causal:
        return (w * n).astype(np.float32)
    visible = np.tril(np.ones((n, n), dtype=np.float32))
    keys_seen = visible.sum(axis=-1, keepdims=True)
    return np.where(visible > 0, w * keys_seen, np.nan).astype(np.float32)


RATIO_RANGE = 4  # the colour saturates at 2**-4 = 1/16 and 2**4 = 16 times an even share
RATIO_NAME = "weight × visible keys"
COLOUR_BAR = "colour bar"  # the name of the invisible marker that draws a log2 colour bar


def _log_colourscale(low: float, high: float, steps: int = 33) -> list:
    """The diverging scale laid out so that colour follows log2 of the value on [low, high]:
    Plotly interpolates colours linearly in z, so dense stops at log-spaced values make
    twice and half an even share equally far from white."""
    logs = np.linspace(math.log2(low), math.log2(high), steps)
    positions = (2.0**logs - low) / (high - low)
    positions[0], positions[-1] = 0.0, 1.0
    colours = sample_colorscale(DIVERGING, list(np.linspace(0.0, 1.0, steps)))
    return [[float(p), c] for p, c in zip(positions, colours, strict=True)]


def _log_colour_bar(x, y) -> go.Scatter:
    """Plotly's colour bar is linear in z: this invisible marker (at one existing cell, ``x``
    and ``y``) draws the bar on the log2 scale instead, with evenly spaced ticks."""
    ticks = list(range(-RATIO_RANGE, RATIO_RANGE + 1, 2))
    return go.Scatter(
        x=x,
        y=y,
        name=COLOUR_BAR,
        mode="markers",
        hoverinfo="skip",
        showlegend=False,
        marker=dict(
            size=0,
            opacity=0,
            color=[0.0],
            colorscale=DIVERGING,
            cmin=-RATIO_RANGE,
            cmax=RATIO_RANGE,
            showscale=True,
            colorbar=dict(
                tickvals=ticks,
                ticktext=[
                    "even share" if t == 0 else f"{2**t}×" if t > 0 else f"1/{2**-t}×"
                    for t in ticks
                ],
            ),
        ),
    )


def _relative_colours(fig: go.Figure) -> None:
    """Colour the figure's heatmap by log2 of its z (a ratio to an even share), hover that
    ratio by name, and add the log2 colour bar."""
    heat = next(t for t in fig.data if t.type == "heatmap")
    low, high = 2.0**-RATIO_RANGE, 2.0**RATIO_RANGE
    front = (heat.hovertemplate or "").rsplit("<br>", 1)[0]
    heat.update(
        colorscale=_log_colourscale(low, high),
        zmin=low,
        zmax=high,
        zmid=None,
        showscale=False,
        hovertemplate=f"{front}<br>{RATIO_NAME} %{{z:.4f}}<extra></extra>",
    )
    first_x = list(heat.x[:1]) if heat.x is not None else []
    first_y = list(heat.y[:1]) if heat.y is not None else []
    fig.add_trace(_log_colour_bar(first_x or [""], first_y or [""]))


def relative_to_uniform(weights, labels, *, title: str, causal: bool = True) -> go.Figure:
    """Weight x (number of visible keys), coloured on a log2 scale: white = an even share.

    The cells hold the ratio itself, so the hover and the cell text read it from z like every
    other heatmap (no per-cell strings); the colour scale is laid out on log2 of it, and an
    invisible marker draws the colour bar on that scale (:func:`_log_colour_bar`).
    """
    ratio = ratio_to_uniform(weights, causal=causal)
    fig = heatmap(ratio, labels, labels, title=title, kind="signed", value_name=RATIO_NAME)
    _relative_colours(fig)
    return readable(fig)


def _base_title(text: str) -> str:
    """A heatmap's title without the small note in brackets that :func:`heatmap` adds."""
    return re.sub(r"\s*<span style='font-size:12px'>.*</span>$", "", text or "")


def viewed_heatmap(
    fig: go.Figure,
    z,
    rows,
    cols,
    *,
    note: str = "",
    label_rows: bool = False,
    label_cols: bool = False,
    relative: bool = False,
    first_row: int = 0,
) -> go.Figure:
    """A copy of a :func:`heatmap` figure showing ``z`` (e.g. a token window of its matrix, or
    its weights relative to an even share) over ``rows`` x ``cols``; ``fig`` is not changed.

    ``label_rows`` / ``label_cols``: write every label on that axis (explicit ticks, no
    thinning), with room for each row. ``relative``: colour on the log2 scale of
    :func:`relative_to_uniform`. ``note`` joins the title's note in brackets (with any crop to
    MAX_SIDE). ``first_row``: the first row shown, so row outlines move with the window.
    """
    new = go.Figure(fig)
    z = _array(z)
    z, rows, cols, cut = crop(z, list(rows), list(cols))
    shown = np.where(np.isfinite(z), z, np.nan).astype(np.float32)
    n_rows, n_cols = shown.shape
    ys, xs = axis_labels(rows), axis_labels(cols)
    new.data = [t for t in new.data if t.name != COLOUR_BAR]
    heat = next(t for t in new.data if t.type == "heatmap")
    gap = 1 if max(n_rows, n_cols) <= 32 else 0
    heat.update(z=shown, x=xs, y=ys, xgap=gap, ygap=gap)
    if label_cols:  # upright labels take one line height each: about twice as many fit
        new.update_xaxes(tickmode="array", tickvals=xs, ticktext=xs)
        if n_cols > 12:
            new.update_xaxes(tickangle=-90, tickfont_size=GRID_TICK_SIZE if n_cols > 20 else None)
    if label_rows:
        new.update_yaxes(tickmode="array", tickvals=ys, ticktext=ys)
        new.update_layout(height=int(min(1600, max(260, 120 + 18 * n_rows))))
    outlines = []
    for shape in new.layout.shapes:
        found = re.fullmatch(r"outlined row (\d+)", shape.name or "")
        if found is None:
            outlines.append(shape)
        elif 0 <= int(found[1]) - first_row < n_rows:
            i = int(found[1]) - first_row
            outlines.append(_row_outline(i) | dict(name=shape.name))
    new.layout.shapes = outlines
    if relative:
        _relative_colours(new)
    elif any(t.type == "scatter" for t in fig.data if t.name == COLOUR_BAR):
        new.add_trace(_log_colour_bar(xs[:1], ys[:1]))  # a ratio figure keeps its colour bar
    notes = ", ".join(filter(None, [note, cut]))
    title = _base_title(new.layout.title.text)
    new.update_layout(
        title_text=f"{title} <span style='font-size:12px'>({notes})</span>" if notes else title
    )
    return readable(new)


def figure_bytes(fig: go.Figure) -> int:
    """What the figure costs to send: the size of its JSON."""
    return len(fig.to_json())


def histograms(
    series: Mapping[str, Any], *, title: str, x_name: str = "value", bins: int = 40
) -> go.Figure:
    """Overlaid histograms (e.g. the initial weights of SelfAttention_v1 against v2).

    Binned here, on shared bin edges, so a figure of millions of values sends only the counts.
    """
    arrays = {name: _array(values).reshape(-1) for name, values in series.items()}
    finite = np.concatenate([a[np.isfinite(a)] for a in arrays.values()])
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    edges = np.linspace(low, high if high > low else low + 1.0, bins + 1)
    centres = ((edges[:-1] + edges[1:]) / 2).astype(np.float32)
    data = []
    for name, values in arrays.items():
        counts, _ = np.histogram(values[np.isfinite(values)], bins=edges)
        data.append(
            dict(
                type="bar",
                x=centres,
                y=counts.astype(np.float32),
                width=float(edges[1] - edges[0]),
                name=name,
                opacity=0.6,
                hovertemplate=f"{name}<br>{x_name} ≈ %{{x:.4f}}<br>count %{{y}}<extra></extra>",
            )
        )
    return _chart(
        data,
        title,
        height=320,
        barmode="overlay",
        xaxis=dict(title=dict(text=x_name)),
        yaxis=dict(title=dict(text="count")),
    )


def timing_bars(
    labels,
    median_ms,
    ratios,
    *,
    title: str,
    low_ms=None,
    high_ms=None,
    highlight: set[int] | None = None,
) -> go.Figure:
    """Horizontal bars of median times, in the order given (put the fastest first), each with its
    ratio to the fastest ("×1.00", "×2.31") in a column at the right, clear of the whiskers that
    run from ``low_ms`` to ``high_ms`` (e.g. the quartiles) when given. Bars whose index is in
    ``highlight`` stand out."""
    ms = _array(median_ms).reshape(-1)
    ratio = _array(ratios).reshape(-1)
    names = [html.escape(str(label), quote=False) for label in labels]  # full names, not cut
    colours = ["#fde725" if i in (highlight or set()) else "#3b528b" for i in range(len(ms))]
    bar = dict(
        type="bar",
        orientation="h",
        x=ms,
        y=names,
        customdata=ratio,
        marker=dict(color=colours),
        hovertemplate="%{y}<br>median %{x:.4g} ms<br>×%{customdata:.2f} the fastest<extra></extra>",
    )
    if low_ms is not None and high_ms is not None:
        low, high = _array(low_ms).reshape(-1), _array(high_ms).reshape(-1)
        bar["error_x"] = dict(
            type="data",
            symmetric=False,
            array=np.maximum(high - ms, 0).astype(np.float32),
            arrayminus=np.maximum(ms - low, 0).astype(np.float32),
            color="#555555",
            thickness=1,
            width=3,
        )
    top = float(ms.max()) if ms.size else 1.0
    if high_ms is not None:
        top = max(top, float(_array(high_ms).max(initial=0.0)))
    ratio_labels = [
        dict(
            x=1.0,
            xref="paper",
            xanchor="left",
            y=name,
            yref="y",
            text=f"×{r:.2f}",
            showarrow=False,
            font=dict(size=13),
        )
        for name, r in zip(names, ratio, strict=True)
    ]
    return _chart(
        [bar],
        title,
        height=int(110 + 42 * max(len(ms), 1)),
        right=70,
        annotations=ratio_labels,
        xaxis=dict(title=dict(text="median time per forward pass (ms)"), range=[0, top * 1.05]),
        yaxis=dict(type="category", autorange="reversed"),
        showlegend=False,
    )
