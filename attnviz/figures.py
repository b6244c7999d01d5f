"""Every figure as a plain plotly.js spec: dicts and lists, built directly from the numbers.

Nothing here builds a Plotly figure object: a spec is the JSON the browser draws, put
together in one pass (no property validation, no ``update_*`` path parsing, which cost ~75% of a
cold page run). Plotly's own validation runs in the tests instead (``go.Figure(spec)`` over every
panel of every page at several settings), so a misspelt property still fails, off the hot path.

Rules every figure follows:

- token axes are categories with one label per 0-based position (``"3: ␣the"``), so repeated,
  number-like and HTML-like tokens each keep their own row; labels are HTML-escaped here, at the
  Plotly boundary only (tables and CSV get the raw text);
- hover comes from a ``hovertemplate`` over the axis labels (no per-cell strings): the query
  token, the key token and the value to 4 decimals;
- numbers travel as float32 base64 (``{"dtype": "f4", "bdata": ..., "shape": "r, c"}``); at most
  :data:`MAX_SIDE` x :data:`MAX_SIDE` cells per heatmap, larger matrices are cropped and the
  subtitle says so;
- weights use a sequential colour-blind-safe scale fixed to [0, 1] (or [0, 1/(1-p)] after
  dropout); signed scores use a diverging scale centred at 0;
- every text is dark on white (above WCAG AA), a long title wraps at a word boundary, a note
  ("tokens 3–9 of 40") is the title's subtitle, and the axes push the margins out to fit their
  labels (``automargin``), so a phone cuts nothing;
- a :class:`Look` sets the sizes: :data:`NORMAL` for a page, :data:`PROJECTOR` for presenter mode.
"""

from __future__ import annotations

import base64
import html
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

Spec = dict[str, Any]

MAX_SIDE = 256
LABEL_CHARS = 18
# Colour scales written out (plotly.js names would do too, but then a test could not read them):
# Viridis, perceptually uniform and colour-blind safe; ColorBrewer RdBu reversed, blue below 0.
SEQUENTIAL: list[list[Any]] = [
    [0.0, "#440154"],
    [0.1111111111111111, "#482878"],
    [0.2222222222222222, "#3e4989"],
    [0.3333333333333333, "#31688e"],
    [0.4444444444444444, "#26828e"],
    [0.5555555555555556, "#1f9e89"],
    [0.6666666666666666, "#35b779"],
    [0.7777777777777778, "#6ece58"],
    [0.8888888888888888, "#b5de2b"],
    [1.0, "#fde725"],
]
DIVERGING: list[list[Any]] = [
    [0.0, "rgb(5,48,97)"],
    [0.1, "rgb(33,102,172)"],
    [0.2, "rgb(67,147,195)"],
    [0.3, "rgb(146,197,222)"],
    [0.4, "rgb(209,229,240)"],
    [0.5, "rgb(247,247,247)"],
    [0.6, "rgb(253,219,199)"],
    [0.7, "rgb(244,165,130)"],
    [0.8, "rgb(214,96,77)"],
    [0.9, "rgb(178,24,43)"],
    [1.0, "rgb(103,0,31)"],
]
MASK_SCALE = [[0.0, "#f0f0f0"], [1.0, "#3b3b3b"]]
OUTLINE = "#ff2b2b"  # row outlines: bright red stands out on every Viridis shade
MARK_TEXT = "#a4161a"  # a marked line's label: a darker red, 7.8:1 on white
ANNOTATE_MAX = 12
# plotly.py's "none" template: no Plotly styling (Streamlit's theme styles the rest), and none of
# the ~6 kB the default template would add to every figure.
TEMPLATE: Mapping[str, Any] = {"data": {"scatter": [{"type": "scatter"}]}}
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
LEGEND_PER_ROW = 4
GRID_CELL_BUDGET = 4 * 256 * 256  # cells in one heads grid; more would slow the browser down
# A heatmap grows 24 px a row up to 760 px (see heatmap): past about (760 - 230) // 24 = 22
# tokens its rows shrink and Plotly would start skipping token labels, so up to this many every
# label is written out (explicit ticks), longer texts get a token window, and a heads grid
# labels every token up to this many per head.
LABEL_EVERY_TOKEN_UP_TO = 24
ROW_PX = 24  # a heatmap row's height, px, up to the cap (see heatmap)
X_LABELS_PX = 135  # a heatmap's x axis: token labels slanted at 45°, and its title
GRID_TICK_SIZE = 11  # the smallest text a chart writes (no text under 11 px on a phone)
RATIO_RANGE = 4  # the colour saturates at 2**-4 = 1/16 and 2**4 = 16 times an even share
RATIO_NAME = "weight × visible keys"
COLOUR_BAR = "colour bar"  # the name of the invisible marker that draws a log2 colour bar

_TAG = re.compile(r"<[^>]*>")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


# Presenter mode's screen as designed: a projector at 1920×1080, whose main area is STAGE_WIDTH
# px wide with STAGE_HEIGHT px left for the step's figure under the header line. Other screens
# get the same layout scaled (:func:`presenter_look`).
SCREEN = (1920, 1080)
STAGE_WIDTH = 1760  # px: 1920 less the main area's padding (5 rem a side)
STAGE_HEIGHT = 944  # px: 1080 less the header line (48 px down, 68 tall) and the gaps


@dataclass(frozen=True)
class Look:
    """The sizes a figure is drawn at (px). ``title_chars``: where a title wraps. Presenter
    mode's (``plot`` > 0) also say the stage its figure fills and the scale of its spacing
    against the 1920×1080 design."""

    name: str
    title: int = TITLE_SIZE
    subtitle: int = 12
    ticks: int = TICK_SIZE
    axis_titles: int = 14
    cells: int = 11
    colour_bar: int = TICK_SIZE
    heads: int = 16  # a heads grid's "head h" labels
    min_height: int = 0
    title_chars: int = TITLE_CHARS
    title_line: int = TITLE_LINE
    top: int = TITLE_TOP
    plot: int = 0  # px: presenter mode's square-celled plot, at most this tall (0: not one)
    stage_width: int = STAGE_WIDTH
    stage_height: int = STAGE_HEIGHT
    scale: float = 1.0  # presenter mode's gaps and margins against the 1920×1080 design

    def px(self, size: float) -> int:
        """``size`` px of the 1920×1080 design at this look's scale."""
        return round(size * self.scale)


NORMAL = Look("normal")
# A projector at 1920×1080 read from the back of a room: cell numbers 28 px, tick labels 22 px,
# and the figure at least half the screen's height.
PROJECTOR = Look(
    "projector",
    title=30,
    subtitle=22,
    ticks=22,
    axis_titles=24,
    cells=28,
    colour_bar=20,
    heads=24,
    min_height=600,
    title_chars=90,
    title_line=38,
    top=70,
)
# Presenter mode's step figure (ui/teach/present.py): the projector's sizes on a screen of its
# own, a matrix with square cells on a plot up to 730 px tall (68 % of 1080), its numbers as
# large as its cells allow (at least PROJECTOR.cells px). See :func:`stage_frame`.
PRESENTER = Look(
    "presenter",
    title=28,
    subtitle=22,
    ticks=22,
    axis_titles=24,
    cells=30,
    colour_bar=20,
    heads=24,
    title_chars=90,
    title_line=36,
    top=52,
    plot=730,
)

# The presenter's layout scales with the screen, by the smaller of its width's and height's
# share of 1920×1080, in steps of SCREEN_STEP and no smaller than SCREEN_MIN (a 1280×720
# projector: 0.65; under 960 px wide the page's header wraps instead, ui/teach/present.py):
# the type, the gaps and the header shrink by that scale; the figure takes the whole stage
# that is left, with square cells.
SCREEN_STEP = 0.05
SCREEN_MIN = 0.5
SCREEN_LEAST = (640, 480)  # px: a smaller window gets this one's layout (and scrolls)


def screen_scale(width: int, height: int) -> float:
    """The presenter's scale on a ``width`` × ``height`` px screen (1 at 1920×1080 or more). A
    portrait screen (a tablet held upright, no projector) keeps 1: its page stacks instead."""
    if height > width:
        return 1.0
    share = min(1.0, width / SCREEN[0], height / SCREEN[1])
    steps = math.floor(share / SCREEN_STEP + 1e-9)
    return round(max(SCREEN_MIN, steps * SCREEN_STEP), 2)


def presenter_look(width: int, height: int) -> Look:
    """:data:`PRESENTER` on a ``width`` × ``height`` px screen: its type and gaps at
    :func:`screen_scale`, its stage the screen less the main area's padding (5 rem a side) and
    the header line above it (136 px), both scaled. PRESENTER itself at 1920×1080 and on a
    portrait screen (whose page narrows the figure, ui/teach/present.py); a window under
    SCREEN_LEAST gets that size's look."""
    width, height = max(width, SCREEN_LEAST[0]), max(height, SCREEN_LEAST[1])
    scale = screen_scale(width, height)
    stage = (round(width - 160 * scale), round(height - 136 * scale))
    if height > width or (scale == 1 and stage == (STAGE_WIDTH, STAGE_HEIGHT)):
        return PRESENTER
    return replace(
        scaled(PRESENTER, scale),
        name=f"presenter {stage[0]}x{stage[1]} at {scale}",
        plot=round(PRESENTER.plot * stage[1] / STAGE_HEIGHT),
        stage_width=stage[0],
        stage_height=stage[1],
    )


def scaled(look: Look, scale: float) -> Look:
    """``look`` with its type, title room and least height at ``scale`` (``look`` itself at 1):
    what a page zoomed by ``scale`` shows around a figure it does not zoom."""
    if scale == 1:
        return look
    sizes = ("title", "subtitle", "ticks", "axis_titles", "cells", "colour_bar", "heads")
    sized = {name: round(getattr(look, name) * scale) for name in sizes}
    return replace(
        look,
        name=f"{look.name} at {scale}",
        min_height=round(look.min_height * scale),
        title_line=round(look.title_line * scale),
        top=round(look.top * scale),
        scale=scale,
        **sized,
    )


# --- text -----------------------------------------------------------------------------------
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


def _units(words: list[str]) -> list[str]:
    """``words`` joined into the pieces a title may not break inside: "d_out = 8" (an "=" keeps
    both its sides) and "step 4,000" (a number keeps the word before it), so that no line
    starts with "= 8" or holds a number alone."""
    units: list[str] = []
    glue = False
    for word in words:
        if units and (glue or word == "=" or word[0].isdigit()):
            units[-1] = f"{units[-1]} {word}"
        else:
            units.append(word)
        glue = word == "="
    return units


def wrap_title(text: str, width: int = TITLE_CHARS) -> str:
    """``text`` with ``<br>`` between words wherever a line would pass ``width`` characters (as
    drawn: tags and entities counted as Plotly shows them). A word longer than ``width`` keeps a
    line of its own; breaks already in ``text`` stay. Wrapping a wrapped title changes nothing."""
    lines = []
    for given in _BREAK.split(text):
        line = ""
        for word in _units(_words(given)):
            if line and _shown_length(line) + 1 + _shown_length(word) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    return "<br>".join(lines)


def one_line(text: str) -> str:
    """A wrapped title on one line: the breaks :func:`wrap_title` put in read as the spaces
    they replaced."""
    return _BREAK.sub(" ", text or "")


def title_of(spec: Mapping) -> str:
    """A spec's title on one line, without its subtitle."""
    return one_line(spec.get("layout", {}).get("title", {}).get("text", ""))


def escape_label(label: str) -> str:
    """Escape a raw label for Plotly, which interprets a few HTML tags in text; shorten it."""
    if len(label) > LABEL_CHARS:
        label = label[: LABEL_CHARS - 1] + "…"
    return html.escape(label, quote=False)


def axis_labels(labels) -> list[str]:
    return [escape_label(str(lab)) for lab in labels]


def dim_labels(n: int, prefix: str = "dim") -> list[str]:
    return [f"{prefix} {i}" for i in range(n)]


# --- numbers --------------------------------------------------------------------------------
def _array(z) -> np.ndarray:
    if isinstance(z, torch.Tensor):
        z = z.detach().to(torch.float32).cpu().numpy()
    return np.asarray(z, dtype=np.float32)


_TYPED = {"int8": "i1", "int16": "i2", "int32": "i4", "uint8": "u1", "uint16": "u2", "uint32": "u4"}


def packed(values) -> dict[str, str]:
    """Numbers as plotly.js reads a typed array: base64, with its shape when not 1-D. Floats go
    as float32; small integer arrays keep their type (``int8`` hover indices stay 1 byte)."""
    a = np.asarray(values) if isinstance(values, np.ndarray) else None
    if a is not None and a.dtype.name in _TYPED:
        code = _TYPED[a.dtype.name]
    else:
        a, code = _array(values), "f4"
    a = np.ascontiguousarray(a)
    out = {"dtype": code, "bdata": base64.b64encode(a.tobytes()).decode("ascii")}
    if a.ndim > 1:
        out["shape"] = ", ".join(str(n) for n in a.shape)
    return out


def unpacked(obj) -> np.ndarray:
    """The numbers of a spec's array (:func:`packed`, or a plain list)."""
    if isinstance(obj, Mapping) and "bdata" in obj:
        a = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=np.dtype(obj["dtype"]))
        if "shape" in obj:
            a = a.reshape([int(n) for n in str(obj["shape"]).split(",")])
        return a
    return np.asarray(obj)


def _cut_words(n_rows: int, n_cols: int, max_side: int = MAX_SIDE) -> str:
    """What :func:`crop` cuts from an ``n_rows`` × ``n_cols`` matrix, in words ("" if nothing)."""
    note = []
    if n_rows > max_side:
        note.append(f"rows 0–{max_side - 1} of {n_rows}")
    if n_cols > max_side:
        note.append(f"columns 0–{max_side - 1} of {n_cols}")
    return ", ".join(note)


def crop(z: np.ndarray, rows: list, cols: list, max_side: int = MAX_SIDE):
    """Keep at most ``max_side`` rows and columns; say what was cut."""
    cut = _cut_words(z.shape[0], z.shape[1], max_side)
    return z[:max_side, :max_side], rows[:max_side], cols[:max_side], cut


def blank_non_finite(z: np.ndarray) -> np.ndarray:
    """−∞ (a masked score) and NaN drawn as blank cells."""
    return np.where(np.isfinite(z), z, np.nan).astype(np.float32)


def ratio_to_uniform(weights, *, causal: bool = True) -> np.ndarray:
    """Each weight times the number of keys its row can see: 1 is an even share, 2 twice an
    even share. Causal weights (the default): row i sees keys 0 to i, future keys (hidden by
    the mask) are NaN. Otherwise every row sees all T keys. ``weights``: (..., T, T)."""
    w = _array(weights)
    n = w.shape[-1]
    if not causal:
        return (w * n).astype(np.float32)
    visible = np.tri(w.shape[-2], n, dtype=np.float32)
    keys_seen = visible.sum(axis=-1, keepdims=True)
    return np.where(visible > 0, w * keys_seen, np.nan).astype(np.float32)


# --- the parts every figure shares ----------------------------------------------------------
def _font(size: int, colour: str = TEXT_COLOUR) -> dict:
    return {"size": size, "color": colour}


def _title(text: str, note: str, look: Look) -> tuple[dict, int]:
    """The title pinned to the figure's top left (a long one wrapped at a word boundary), the
    note as its subtitle, and the top margin that holds both.

    Plotly lowers a one-line title anchored at its top by 0.7 em, but sets the first line of a
    wrapped one on its baseline at the pad (its top was 3 px above the figure): that line gets
    the 0.7 em in its pad. Left-aligned: a title too long for a narrow screen loses its end,
    not both."""
    wrapped = wrap_title(text, look.title_chars)
    lines = len(_BREAK.findall(wrapped)) + 1
    title: dict[str, Any] = {
        "text": wrapped,
        "font": _font(look.title),
        "x": 0.0,
        "xanchor": "left",
        "xref": "container",
        "y": 1.0,
        "yanchor": "top",
        "yref": "container",
        "pad": {"l": 8, "t": TITLE_PAD + (round(0.7 * look.title) if lines > 1 else 0)},
    }
    top = look.top + look.title_line * (lines - 1)
    if note:
        title["subtitle"] = {"text": note, "font": _font(look.subtitle, AXIS_COLOUR)}
        top += round(1.4 * look.subtitle)
    return title, top


def _axis(title: str | None, look: Look, **rest: Any) -> dict:
    """An axis: dark tick labels at the look's size, its title, room made for both."""
    axis: dict[str, Any] = {"tickfont": _font(look.ticks, AXIS_COLOUR), "automargin": True}
    if title is not None:
        axis["title"] = {"text": title, "font": _font(look.axis_titles)}
    axis.update(rest)
    return axis


def _bar_room(look: Look) -> int:
    """px a flat colour bar takes above a matrix's plot: the bar, its numbers, a gap."""
    return COLOURBAR_THICKNESS + round(1.5 * look.colour_bar) + 14


# How much of the plot's width a flat colour bar spans: 0.6 of a full-width figure's, all of a
# narrow one's (three side by side on a laptop leave a plot about 200 px wide, and 0.6 of that
# is too short for the bar's numbers, which Plotly then turns on their side).
BAR_SPAN = 0.6
NARROW_BAR_SPAN = 1.0


def _lay_bar_flat(spec: Spec, look: Look, span: float = BAR_SPAN) -> None:
    """Lay a matrix's colour bar (its trace's, or the log scale's marker's) flat between the
    title and the plot, in room added to the top margin: beside the plot it would take about
    60 px of a phone's 358 px chart from the cells, whose numbers must fit their width. The bar
    is placed in the figure's own pixels (``yref`` container) so that Plotly pushes no margin
    (a pushed margin moves the title up, out of the figure). A matrix without a bar (a mask)
    gets no room: it would be a blank band under the title. ``span``: the bar's length, as a
    fraction of the plot's width."""
    layout = spec["layout"]
    top, height = layout["margin"]["t"], layout["height"]
    bars = [trace["marker"] if trace.get("name") == COLOUR_BAR else trace for trace in spec["data"]]
    bars = [bar for bar in bars if "colorbar" in bar]
    if not bars:
        return
    flat = {
        "orientation": "h",
        "x": 0.0,
        "xanchor": "left",
        "len": span,
        "yref": "container",
        "y": 1.0 - (top + 4) / height,
        "yanchor": "top",
    }
    for bar in bars:
        bar["colorbar"].update(flat)
    layout["margin"]["t"] = top + _bar_room(look)


def _colour_bar(look: Look, **rest: Any) -> dict:
    return {
        "thickness": COLOURBAR_THICKNESS,
        "tickfont": _font(look.colour_bar, AXIS_COLOUR),
        **rest,
    }


def base_layout(
    title: str,
    *,
    height: int,
    note: str = "",
    right: int = 10,
    extra_top: int = 0,
    look: Look = NORMAL,
    **layout: Any,
) -> Spec:
    """What every figure's layout starts from: no template, the title (and note), ``height`` px
    tall, 10 px margins (``right`` on the right; the top holds the title, ``extra_top`` more
    for a legend above the plot). ``layout``: the rest (axes, legend, annotations)."""
    title_part, top = _title(title, note, look)
    return {
        "template": TEMPLATE,
        "font": {"color": TEXT_COLOUR},
        "title": title_part,
        "height": max(height, look.min_height),
        "margin": {"l": 10, "r": right, "t": top + extra_top, "b": 10},
        # a bar's value written on it, shrunk to fit a narrow bar (a phone): not drawn at all
        # below the smallest text a chart writes (hovering or tapping the bar shows it)
        "uniformtext": {"minsize": GRID_TICK_SIZE, "mode": "hide"},
        **layout,
    }


# --- heatmaps -------------------------------------------------------------------------------
def _log_colourscale(low: float, high: float, steps: int = 33) -> list:
    """The diverging scale laid out so that colour follows log2 of the value on [low, high]:
    Plotly interpolates colours linearly in z, so dense stops at log-spaced values make
    twice and half an even share equally far from white."""
    logs = np.linspace(math.log2(low), math.log2(high), steps)
    positions = (2.0**logs - low) / (high - low)
    positions[0], positions[-1] = 0.0, 1.0
    colours = [_diverging_at(float(t)) for t in np.linspace(0.0, 1.0, steps)]
    return [[float(p), c] for p, c in zip(positions, colours, strict=True)]


def _diverging_at(t: float) -> str:
    """The colour of :data:`DIVERGING` at ``t`` in [0, 1], interpolated in RGB."""
    stops = [(pos, tuple(int(v) for v in re.findall(r"\d+", c))) for pos, c in DIVERGING]
    for (p0, c0), (p1, c1) in itertools.pairwise(stops):
        if t <= p1:
            f = 0.0 if p1 == p0 else (t - p0) / (p1 - p0)
            r, g, b = (round(a + (b_ - a) * f) for a, b_ in zip(c0, c1, strict=True))
            return f"rgb({r},{g},{b})"
    return DIVERGING[-1][1]


RELATIVE_SCALE = _log_colourscale(2.0**-RATIO_RANGE, 2.0**RATIO_RANGE)


def _log_colour_bar(x, y, look: Look) -> dict:
    """Plotly's colour bar is linear in z: this invisible marker (at one existing cell, ``x``
    and ``y``) draws the bar on the log2 scale instead, with evenly spaced ticks."""
    ticks = list(range(-RATIO_RANGE, RATIO_RANGE + 1, 2))
    return {
        "type": "scatter",
        "x": list(x),
        "y": list(y),
        "name": COLOUR_BAR,
        "mode": "markers",
        "hoverinfo": "skip",
        "showlegend": False,
        "marker": {
            "size": 0,
            "opacity": 0,
            "color": [0.0],
            "colorscale": DIVERGING,
            "cmin": -RATIO_RANGE,
            "cmax": RATIO_RANGE,
            "showscale": True,
            "colorbar": _colour_bar(
                look,
                tickvals=ticks,
                ticktext=[
                    "even share" if t == 0 else f"{2**t}×" if t > 0 else f"1/{2**-t}×"
                    for t in ticks
                ],
            ),
        },
    }


def _colour(kind: str, z: np.ndarray, zmax: float | None) -> dict:
    """The colour scale of a matrix: "weights" (0 to ``zmax`` or 1), "mask" (two shades, no
    bar), "relative" (log2 of a ratio to an even share, its bar drawn apart) or "signed"
    (diverging around 0, to ``zmax`` or the largest finite |value|)."""
    if kind == "weights":
        return {"colorscale": SEQUENTIAL, "zmin": 0.0, "zmax": zmax or 1.0}
    if kind == "mask":
        return {"colorscale": MASK_SCALE, "zmin": 0.0, "zmax": 1.0, "showscale": False}
    if kind == "relative":
        low, high = 2.0**-RATIO_RANGE, 2.0**RATIO_RANGE
        return {"colorscale": RELATIVE_SCALE, "zmin": low, "zmax": high, "showscale": False}
    finite = z[np.isfinite(z)]
    bound = float(np.abs(finite).max()) if finite.size else 1.0
    bound = zmax or (bound if bound > 0 else 1.0)
    return {"colorscale": DIVERGING, "zmin": -bound, "zmax": bound, "zmid": 0.0}


def row_outline(i: int) -> dict:
    """A rectangle around row ``i`` (a category axis puts row i at i, from i-0.5 to i+0.5)."""
    return {
        "type": "rect",
        "name": f"outlined row {i}",
        "xref": "x domain",
        "x0": 0,
        "x1": 1,
        "yref": "y",
        "y0": i - 0.5,
        "y1": i + 0.5,
        "line": {"color": OUTLINE, "width": 3},
        "fillcolor": "rgba(0,0,0,0)",
    }


def _every_label(labels: list[str]) -> dict:
    """Ticks at every label (explicit, so Plotly never thins them out)."""
    return {"tickmode": "array", "tickvals": labels, "ticktext": labels}


# --- presenter mode's screen ----------------------------------------------------------------
# A projector at 1920×1080: the main area is STAGE_WIDTH px wide, and STAGE_HEIGHT px are left
# for the step's figure under the header line (ui/teach/present.py). A step's matrix gets
# square cells, its colour bar upright at its right, and the step's formula and sentence beside
# it when a column of SIDE_PX is left; otherwise they go above it, in STACK_PX. Its numbers are
# as large as a cell allows, up to CELL_TEXT_MAX px; where two decimals with their leading zero
# would be under look.cells px, they are written short (".42", "-.07", "1.0"): the hover keeps
# four decimals.
SIDE_PX = 440
STACK_PX = 100
CELL_TEXT_MAX = 40
CELL_CLEAR = 13  # px of a cell's width left clear beside its number (6 or 7 a side)
CELL_CLEAR_LEAST = 8  # px: the clearance on a smaller screen, at its scale but not under this
HEAD_GAP = 40  # px between two heads side by side
# Advance widths of Source Sans (Streamlit's font) in em, to size numbers and labels before
# the browser draws them: digits, the point, the minus; other characters are given a generous
# 0.53 em (Source Sans's letters average about 0.5).
_EM = {**dict.fromkeys("0123456789", 0.497), ".": 0.249, "-": 0.31, "−": 0.54, " ": 0.2}


def _em(text: str) -> float:
    return sum(_EM.get(ch, 0.53) for ch in html.unescape(text))


def _stage_slant(n_cols: int, heads: int = 1) -> int:
    """Degrees the presenter's x tick labels are slanted: upright past 12 columns; 35 under a
    grid of heads, whose cells (about 50 px) still part two labels by a line's height, and
    which needs the height; 45 under one matrix."""
    return 90 if n_cols > 12 else 35 if heads > 1 else 45


def short_number(v: float) -> str:
    """A cell's number written short for the projector: two decimals without the leading zero
    under 1 (".42", "-.07"), one decimal from 1 (up to 100), none past it."""
    if not math.isfinite(v):
        return ""
    if v == 0:
        return "0"
    if abs(v) < 0.995:
        return f"{v:.2f}".replace("0.", ".", 1)
    return f"{v:.1f}" if abs(v) < 99.95 else f"{v:.0f}"


def _widest(texts: list[list[str]]) -> float:
    return max((_em(t) for row in texts for t in row), default=1.0) or 1.0


def stage_numbers(z: np.ndarray, cell: float, look: Look = PRESENTER):
    """The numbers presenter mode writes in the cells of one matrix ``z`` (blank where it is
    not finite) at ``cell`` px a side, their size in px and the widest one's width in em; None
    when even the short ones would be under look.cells px (the cells stay bare). Two decimals
    where they fit at look.cells px or more, else short (:func:`short_number`)."""

    def fit(texts: list[list[str]]) -> int:
        largest, clear = look.px(CELL_TEXT_MAX), cell_clear(look)
        return int(min(largest, (cell - clear) / _widest(texts), cell / 1.3))

    full = [[f"{v:.2f}" if math.isfinite(v) else "" for v in row] for row in z.tolist()]
    size = fit(full)
    if size < look.cells:
        full = [[short_number(v) for v in row] for row in z.tolist()]
        size = fit(full)
    return (full, size, _widest(full)) if size >= look.cells else None


def cell_clear(look: Look) -> int:
    """px of a cell's width its number leaves clear at ``look``'s scale."""
    return max(look.px(CELL_CLEAR), min(CELL_CLEAR, CELL_CLEAR_LEAST))


@dataclass(frozen=True)
class Frame:
    """Where a presenter's figure lies, in px: its margins, its cells' side, its plot (the
    heads side by side, ``per_row`` a row) and whether the step's words go beside it."""

    cell: float
    left: int
    right: int
    top: int
    bottom: int
    plot_width: float
    plot_height: float
    per_row: int
    beside: bool

    @property
    def width(self) -> int:
        return math.ceil(self.left + self.plot_width + self.right)

    @property
    def height(self) -> int:
        return math.ceil(self.top + self.plot_height + self.bottom)


def _below_axis(labels: list[str], look: Look, angle: int, titled: bool) -> int:
    """px under a plot for its x tick labels slanted at ``angle`` degrees and (``titled``) its
    title."""
    longest = max((_em(lab) for lab in labels), default=1.0) * look.ticks
    slant = math.radians(abs(angle))
    # the slanted labels' box (a line is 1.2 font sizes high), the ticks and their gap
    below = round(longest * math.sin(slant) + 1.2 * look.ticks * math.cos(slant)) + look.px(12)
    return below + (2 * look.axis_titles if titled else 0)


def _stage_title(title: str, note: str) -> str:
    """The presenter's figure title: its note (a subtitle elsewhere) on the same line, which
    leaves the cells a line more of the screen."""
    return f"{title} · {note}" if note else title


def stage_frame(
    n_rows: int,
    n_cols: int,
    ys: list[str],
    xs: list[str],
    *,
    title: str,
    note: str = "",
    bar: str = "flat",
    heads: int = 1,
    look: Look = PRESENTER,
) -> Frame:
    """The presenter's frame for ``heads`` matrices of ``n_rows`` × ``n_cols`` cells labelled
    ``ys`` and ``xs`` (escaped), under ``title`` (its note on the same line): the largest
    square cells that fit STAGE_WIDTH × STAGE_HEIGHT with the margins (and at most look.plot px
    of plot height), the words beside the figure or above it, whichever leaves the larger
    cells. ``bar``: "flat" (a colour bar with numbers), "relative" (its ticks are words) or ""
    (none). A single matrix has axis titles, a grid of heads their "head h" titles."""
    titled = heads == 1
    left = round(max((_em(y) for y in ys), default=1.0) * look.ticks) + look.px(16)
    left += 2 * look.axis_titles if titled else 0
    angle = _stage_slant(n_cols, heads)
    bottom = _below_axis(xs, look, angle, titled) + look.px(10)
    right = look.px({"": 20, "relative": 160}.get(bar, 130))
    head_titles = 0 if titled else round(1.5 * look.heads)
    top = _title(_stage_title(title, note), "", look)[1] + head_titles
    across = look.stage_width - left - right
    best: Frame | None = None
    for per_row in range(1, heads + 1):
        rows = math.ceil(heads / per_row)
        gap_x, gap_y = (per_row - 1) * look.px(HEAD_GAP), (rows - 1) * (bottom + head_titles)
        for beside in (True, False):
            room = look.stage_height - (0 if beside else look.px(STACK_PX)) - top - bottom
            tall = min(look.plot, room) - gap_y
            wide = across - (look.px(SIDE_PX) if beside else 0) - gap_x
            cell = min(tall / (rows * n_rows), wide / (per_row * n_cols))
            frame = Frame(
                cell,
                left,
                right,
                top,
                bottom,
                per_row * n_cols * cell + gap_x,
                rows * n_rows * cell + gap_y,
                per_row,
                beside,
            )
            if best is None or cell > best.cell + 0.5:
                best = frame
    assert best is not None
    return best


def matrix_frame(
    rows,
    cols,
    *,
    title: str,
    note: str = "",
    kind: str = "weights",
    heads: int = 1,
    look: Look = PRESENTER,
) -> Frame:
    """The presenter's frame of a matrix :func:`heatmap` (``heads`` 1) or :func:`heads_grid`
    draws at :data:`PRESENTER`, from its raw labels, title, note and colour ``kind``; the page
    sizes its columns with it before the figure is drawn."""
    if heads == 1:
        note = ", ".join(filter(None, [note, _cut_words(len(rows), len(cols))]))
        rows, cols = list(rows)[:MAX_SIDE], list(cols)[:MAX_SIDE]
    bar = "" if kind == "mask" else "relative" if kind == "relative" else "flat"
    ys, xs = axis_labels(rows), axis_labels(cols)
    return stage_frame(
        len(ys), len(xs), ys, xs, title=title, note=note, bar=bar, heads=heads, look=look
    )


# The colour bar upright just right of the plot, as tall as it: its numbers stay inside the
# right margin stage_frame keeps (Plotly would push the margin, and the square cells shrink).
def _stage_bar(look: Look) -> dict:
    return {"thickness": look.px(20), "x": 1.0, "xanchor": "left", "xpad": look.px(10), "len": 1.0}


def _stage_axes(xaxis: dict, yaxis: dict, x_id: str = "x") -> None:
    """Square cells (one y unit drawn as long as one x unit), the plot kept at the top left of
    its frame when the page gives it more room than it needs."""
    xaxis.update(constrain="domain", constraintoward="left")
    yaxis.update(scaleanchor=x_id, scaleratio=1, constrain="domain", constraintoward="top")


def _stage_heatmap(spec: Spec, shown: np.ndarray, frame: Frame, look: Look, annotated: bool):
    """Lay out a heatmap ``spec`` on the presenter's ``frame``: its margins and height, square
    cells, the colour bar upright at the plot's right, the numbers sized to the cells."""
    layout, trace = spec["layout"], spec["data"][0]
    layout["height"] = frame.height
    layout["margin"] = {"l": frame.left, "r": frame.right, "t": frame.top, "b": frame.bottom}
    _stage_axes(layout["xaxis"], layout["yaxis"])
    for item in spec["data"]:
        bar = item["marker"] if item.get("name") == COLOUR_BAR else item
        if "colorbar" in bar:
            bar["colorbar"].update(_stage_bar(look))
    if annotated:
        numbers = stage_numbers(shown, frame.cell, look)
        trace.pop("texttemplate", None)
        if numbers is not None:
            text, size, _ = numbers
            trace.update(text=text, texttemplate="%{text}", textfont={"size": size})
            layout["font"] = {**layout["font"], "size": size}


def heatmap(
    z,
    rows,
    cols,
    *,
    title: str,
    note: str = "",
    kind: str = "weights",
    zmax: float | None = None,
    row_name: str = "query",
    col_name: str = "key",
    value_name: str = "weight",
    height: int | None = None,
    annotate: bool = True,
    outline_rows=(),
    label_all: bool = False,
    look: Look = NORMAL,
) -> Spec:
    """One matrix as a heatmap spec. ``rows``/``cols`` are raw labels (escaped here).

    ``kind``: "weights" (sequential, [0, zmax or 1]), "signed" (diverging around 0), "mask"
    (two shades), "relative" (a ratio to an even share, on a log2 scale). Non-finite cells
    (−∞ masked scores) are left blank. Small matrices get their values written in the cells
    unless ``annotate`` is False (for figures in narrow columns). ``outline_rows``: row
    positions drawn with a red outline (e.g. rows dropout zeroed). ``label_all``: a label on
    every row and column however many (a token window); up to LABEL_EVERY_TOKEN_UP_TO rows or
    columns always get one each. ``note``: the subtitle (with any crop to MAX_SIDE).
    """
    z = _array(z)
    z, rows, cols, cut = crop(z, list(rows), list(cols))
    shown = blank_non_finite(z)
    n_rows, n_cols = shown.shape
    xs, ys = axis_labels(cols), axis_labels(rows)
    gap = 1 if max(n_rows, n_cols) <= 32 else 0
    trace: dict[str, Any] = {
        "type": "heatmap",
        "z": packed(shown),
        "x": xs,
        "y": ys,
        "hovertemplate": (
            f"{row_name} %{{y}}<br>{col_name} %{{x}}<br>{value_name} %{{z:.4f}}<extra></extra>"
        ),
        "xgap": gap,
        "ygap": gap,
        **_colour(kind, z, zmax),
    }
    if trace.get("showscale", True):
        trace["colorbar"] = _colour_bar(look)
    annotated = annotate and n_rows <= ANNOTATE_MAX and n_cols <= ANNOTATE_MAX and kind != "mask"
    if annotated:
        # No textfont size: plotly.js then sizes the cell numbers when it draws them, from the
        # cells as drawn (the widest number must fit its cell's width, one line its height),
        # at most the layout's font size, look.cells. One spec serves every screen: 28 px on a
        # projector, 11 px on a laptop, and on a phone as large as fits, never overlapping.
        trace["texttemplate"] = "%{z:.2f}"
    xaxis = _axis(col_name, look, type="category", tickangle=-45)
    yaxis = _axis(row_name, look, type="category", autorange="reversed")
    if label_all or n_cols <= LABEL_EVERY_TOKEN_UP_TO:
        xaxis.update(_every_label(xs))
    if n_cols > 12:  # upright labels take one line height each: twice as many fit side by side
        xaxis["tickangle"] = -90
        if n_cols > 20 and look is NORMAL:
            xaxis["tickfont"] = _font(GRID_TICK_SIZE, AXIS_COLOUR)
    if label_all or n_rows <= LABEL_EVERY_TOKEN_UP_TO:
        yaxis.update(_every_label(ys))
    if height is None:
        # The rows get ROW_PX each (18 past the token window's labels) below the title, its
        # note and the flat colour bar (``top``), above the x axis's slanted labels and title
        # (X_LABELS_PX): a row needs about 1.3 times its cell numbers' size.
        full = ", ".join(filter(None, [note, cut]))
        top = _title(title, full, look)[1] + (_bar_room(look) if kind != "mask" else 0)
        per_row = 18 if label_all else ROW_PX
        cap = 1600 if label_all else 760
        height = int(min(cap, max(300, top + X_LABELS_PX + per_row * n_rows)))
    if look is not NORMAL and not look.plot:
        height = max(height, look.min_height, 160 + 3 * look.cells * n_rows // 2)
    data: list[dict] = [trace]
    if kind == "relative":
        data.append(_log_colour_bar(xs[:1] or [""], ys[:1] or [""], look))
    layout = base_layout(
        title,
        note=", ".join(filter(None, [note, cut])),
        height=height,
        look=look,
        xaxis=xaxis,
        yaxis=yaxis,
        shapes=[row_outline(i) for i in outline_rows if 0 <= i < n_rows],
    )
    if annotated:
        layout["font"] = {**layout["font"], "size": look.cells}  # the cell numbers' largest size
    spec = {"data": data, "layout": layout}
    if look.plot:  # presenter mode: square cells, as large as the screen allows
        bar = "" if kind == "mask" else "relative" if kind == "relative" else "flat"
        note_shown = ", ".join(filter(None, [note, cut]))
        frame = stage_frame(
            n_rows, n_cols, ys, xs, title=title, note=note_shown, bar=bar, look=look
        )
        layout["title"] = _title(_stage_title(title, note_shown), "", look)[0]
        fits = n_rows <= ANNOTATE_MAX and n_cols <= ANNOTATE_MAX and kind != "mask"
        _stage_heatmap(spec, shown, frame, look, fits)
        return spec
    _lay_bar_flat(spec, look, BAR_SPAN if annotate else NARROW_BAR_SPAN)
    return spec


def heads_grid(
    weights,
    labels,
    *,
    title: str,
    note: str = "",
    zmax: float = 1.0,
    cols: int = 4,
    kind: str = "weights",
    col_labels=None,
    heads=None,
    labelled: bool | None = None,
    names: tuple[str, str, str] = ("query", "key", "weight"),
    look: Look = NORMAL,
) -> Spec:
    """Every head's matrix on one shared colour scale. ``weights``: (H, rows, cols).

    ``kind``: "weights" (sequential, 0 to ``zmax``), "signed" (diverging around 0, blank
    = −∞) or "relative" (weight × visible keys on a log2 scale, as :func:`ratio_to_uniform`).
    ``labels`` name the rows (and the columns unless ``col_labels`` does); ``heads`` are the
    head numbers the subplot titles give (default 0 to H−1). ``labelled``: write every token
    on the axes (default: when a head has at most LABEL_EVERY_TOKEN_UP_TO rows and columns);
    labelled grids get fewer heads per row and taller cells so that every label has room.
    ``names``: the row, column and value names the hover gives.
    """
    w = blank_non_finite(_array(weights))
    H, n_rows, n_cols = w.shape
    numbers = list(heads) if heads is not None else list(range(H))
    ys = axis_labels(labels)
    xs = axis_labels(col_labels if col_labels is not None else labels)
    if labelled is None:
        labelled = max(n_rows, n_cols) <= LABEL_EVERY_TOKEN_UP_TO
    stage = None
    if look.plot:  # presenter mode: square cells, the heads as large as the screen allows
        bar_kind = "relative" if kind == "relative" else "flat"
        stage = stage_frame(
            n_rows, n_cols, ys, xs, title=title, note=note, bar=bar_kind, heads=H, look=look
        )
        per_row = stage.per_row
        rows = math.ceil(H / per_row)
        h_space = look.px(HEAD_GAP) / stage.plot_width
        width = n_cols * stage.cell / stage.plot_width
        tall = n_rows * stage.cell / stage.plot_height
        v_space = (stage.plot_height - rows * n_rows * stage.cell) / max(rows - 1, 1)
        v_space /= stage.plot_height
        cell = gap = area = 0
    else:
        per_row = min(cols, H)
        if labelled:  # about 16 px per (upright) column label across a 900 px wide page
            per_row = max(1, min(per_row, 56 // max(n_cols, 1)))
        rows = math.ceil(H / per_row)
        cell = max(170, 14 * n_rows) if labelled else 170
        if look is not NORMAL and labelled:
            # The grid's whole height (90 + cells + gaps + 110 px of labels) is the look's own
            # (a projector's: the step fits one screen below its formula), not more.
            cell = max(cell, (look.min_height - 200 - (rows - 1) * 120) // rows)
        gap = 120 if labelled else 40  # room for the column labels and the next subplot's title
        area = rows * cell + (rows - 1) * gap
        h_space = 0.08 if labelled else 0.03
        v_space = min(gap / area, 0.3) if rows > 1 else 0.0
        width = (1.0 - h_space * (per_row - 1)) / per_row
        tall = (1.0 - v_space * (rows - 1)) / rows
    row_name, col_name, value_name = names
    small = _font(GRID_TICK_SIZE if look is NORMAL else look.ticks, AXIS_COLOUR)
    angle = -90 if stage is None else -_stage_slant(n_cols, H)
    numbered = stage is not None and max(n_rows, n_cols) <= ANNOTATE_MAX
    data: list[dict] = []
    layout_axes: dict[str, Any] = {}
    titles = []
    for i, h in enumerate(numbers):
        r, c = divmod(i, per_row)
        suffix = "" if i == 0 else str(i + 1)
        x0 = c * (width + h_space)
        y1 = 1.0 - r * (tall + v_space)
        data.append(
            {
                "type": "heatmap",
                "z": packed(w[i]),
                "x": xs,
                "y": ys,
                "coloraxis": "coloraxis",
                "xaxis": f"x{suffix}",
                "yaxis": f"y{suffix}",
                "hovertemplate": (
                    f"head {h}<br>{row_name} %{{y}}<br>{col_name} %{{x}}<br>"
                    f"{value_name} %{{z:.4f}}<extra></extra>"
                ),
            }
        )
        xaxis = _axis(
            None, look, anchor=f"y{suffix}", domain=[x0, min(1.0, x0 + width)], type="category"
        )
        yaxis = _axis(
            None,
            look,
            anchor=f"x{suffix}",
            domain=[max(0.0, y1 - tall), y1],
            type="category",
            autorange="reversed",
        )
        xaxis["showticklabels"] = yaxis["showticklabels"] = False
        if labelled:  # every token written: the columns on every head, the rows at the left
            xaxis.update(showticklabels=True, tickangle=angle, tickfont=small, **_every_label(xs))
            if c == 0:
                yaxis.update(showticklabels=True, tickfont=small, **_every_label(ys))
        if stage is not None:
            _stage_axes(xaxis, yaxis, f"x{suffix}")
            if numbered:
                numbers = stage_numbers(w[i], stage.cell, look)
                if numbers is not None:
                    text, size, _ = numbers
                    data[-1].update(text=text, texttemplate="%{text}", textfont={"size": size})
        layout_axes[f"xaxis{suffix}"] = xaxis
        layout_axes[f"yaxis{suffix}"] = yaxis
        titles.append(
            {
                "text": f"head {h}",
                "x": x0 + width / 2,
                "xanchor": "center",
                "xref": "paper",
                "y": y1,
                "yanchor": "bottom",
                "yref": "paper",
                "showarrow": False,
                "font": _font(look.heads),
            }
        )
    if kind == "signed":
        finite = w[np.isfinite(w)]
        top = float(np.abs(finite).max()) if finite.size else 1.0
        top = top if top > 0 else 1.0
        colours: dict[str, Any] = {"colorscale": DIVERGING, "cmin": -top, "cmax": top}
    elif kind == "relative":
        low, high = 2.0**-RATIO_RANGE, 2.0**RATIO_RANGE
        colours = {"colorscale": RELATIVE_SCALE, "cmin": low, "cmax": high, "showscale": False}
    else:
        colours = {"colorscale": SEQUENTIAL, "cmin": 0.0, "cmax": zmax}
    colours["colorbar"] = _colour_bar(look)
    if kind == "relative":
        bar = _log_colour_bar(xs[:1], ys[:1], look)
        bar.update(xaxis="x", yaxis="y")
        data.append(bar)
    height = min(1200, 80 + 230 * rows) if not labelled else 90 + area + 110
    layout = base_layout(
        title,
        note=note,
        height=height,
        look=look,
        extra_top=20,
        coloraxis=colours,
        annotations=titles,
        **layout_axes,
    )
    layout["margin"]["b"] = 110 if labelled else 10
    if stage is not None:
        layout["title"] = _title(_stage_title(title, note), "", look)[0]
        layout["height"] = stage.height
        layout["margin"] = {"l": stage.left, "r": stage.right, "t": stage.top, "b": stage.bottom}
        colours["colorbar"].update(_stage_bar(look))
        if kind == "relative":
            data[-1]["marker"]["colorbar"].update(_stage_bar(look))
    return {"data": data, "layout": layout}


# --- bar and line charts --------------------------------------------------------------------
_chart_serials = itertools.count()


@dataclass(frozen=True)
class Series:
    """One series of a bar or line chart, as its numbers table shows it: its name, the raw
    label (or x value) of each point, and the exact values drawn."""

    name: str
    points: tuple
    values: np.ndarray  # read-only, float32 as drawn


@dataclass(frozen=True)
class Chart:
    """A bar or line chart: its spec (never changed once built), the text label screen readers
    announce, and the numbers it draws (``series``, read by its "Numbers and CSV" box).
    ``serial``: a number of its own, never reused in a process, that caches key on."""

    spec: Spec
    label: str
    series: tuple[Series, ...]
    point_axis: str
    serial: int = field(default_factory=lambda: next(_chart_serials), init=False, compare=False)

    @property
    def title(self) -> str:
        return title_of(self.spec)


def _points(values) -> tuple:
    return tuple(v.item() if hasattr(v, "item") else v for v in values)


def _frozen(values) -> np.ndarray:
    """A read-only float32 copy: a chart's numbers are shared by every session."""
    a = np.array(values, dtype=np.float32)
    a.flags.writeable = False
    return a


def _legend_rows(series: int) -> int:
    """Rows a legend of ``series`` names takes: a row holds about four names on a phone."""
    return math.ceil(series / LEGEND_PER_ROW)


def _chart(
    data: list[dict],
    series: list[Series],
    title: str,
    *,
    kind: str,
    point_axis: str,
    height: int,
    note: str = "",
    legend_rows: int | None = None,
    **layout: Any,
) -> Chart:
    """A chart of ``data`` on :func:`base_layout`; with several series, their legend above the
    plot (``LEGEND_ABOVE``). ``kind`` names it for its label ("Bar chart", "Line chart");
    ``note`` is the title's subtitle; ``legend_rows``: the rows kept for the legend (default:
    :func:`legend_rows` of its series), the same for charts drawn side by side so that their
    plots line up."""
    extra = 0
    if len(data) > 1 and layout.get("showlegend", True) and "legend" not in layout:
        layout = {"legend": LEGEND_ABOVE, **layout}
        extra = LEGEND_ROW * (legend_rows if legend_rows is not None else _legend_rows(len(data)))
    spec = {
        "data": data,
        "layout": base_layout(title, height=height, extra_top=extra, note=note, **layout),
    }
    points = len(series[0].points) if series else 0
    unit = "bars" if kind == "Bar chart" else "points"
    shape = f"{points} {unit}" if len(series) == 1 else f"{len(series)} series of {points} {unit}"
    # a screen reader's text: the title without its tags (<sub>), entities as the characters
    words = html.unescape(_TAG.sub("", one_line(title)))
    label = f"{kind}: {words}" + (f", {shape}" if series else "")
    return Chart(spec, label, tuple(series), point_axis)


def _xy_axes(x_name: str, y_name: str, **x: Any) -> dict[str, Any]:
    return {"xaxis": _axis(x_name, NORMAL, **x), "yaxis": _axis(y_name, NORMAL)}


def _whole_ticks(largest: float) -> dict[str, Any]:
    """A y axis for counts: ticks on whole numbers only (Plotly's own choice for a largest count
    of 1 or 2 is 0, 0.2, 0.4, …: a fifth of an answer), at most about eight of them."""
    steps = (m * 10**k for k in itertools.count() for m in (1, 2, 5))  # 1, 2, 5, 10, 20, …
    step = next(s for s in steps if largest / s <= 8)
    return {"tick0": 0, "dtick": step, "tickformat": "d", "rangemode": "tozero"}


HIGHLIGHT = "#fde725"  # the bar bars() marks (a poll's answer): viridis' yellow


def bars(
    values,
    labels,
    *,
    title: str,
    value_name: str = "score",
    ymax: float | None = None,
    highlight: int | Sequence[int] | None = None,
    counts: bool = False,
) -> Chart:
    """One value per token, as bars (e.g. one query's scores or weights). ``counts``: the values
    are whole numbers (a class's answers, read off a projector): whole-number ticks, no
    decimals in the hover, larger tick labels, turned only when they would overlap.
    ``highlight``: the bar (or bars) drawn in HIGHLIGHT."""
    v = _array(values).reshape(-1)
    marked = {highlight} if isinstance(highlight, int) else set(highlight or ())
    colours = [HIGHLIGHT if i in marked else "#3b528b" for i in range(len(v))]
    if counts:
        axes = _xy_axes("", value_name, type="category", tickfont={"size": 16})
        axes["yaxis"].update(_whole_ticks(float(v.max()) if v.size else 0.0))
        axes["yaxis"]["tickfont"] = {"size": 16}
    else:
        axes = _xy_axes("", value_name, type="category", tickangle=-45)
    del axes["xaxis"]["title"]
    if ymax is not None:
        axes["yaxis"]["range"] = [0, ymax]
    bar = {
        "type": "bar",
        "x": axis_labels(labels),
        "y": packed(v),
        "marker": {"color": colours},
        "hovertemplate": f"key %{{x}}<br>{value_name} %{{y{'' if counts else ':.4f'}}}<extra></extra>",
    }
    series = [Series(value_name, tuple(str(lab) for lab in labels), _frozen(v))]
    height = 340 if counts else 300
    return _chart([bar], series, title, kind="Bar chart", point_axis="point", height=height, **axes)


def grouped_bars(
    series: Mapping[str, Any],
    labels,
    *,
    title: str,
    value_name: str = "weight",
    counts: bool = False,
    point_name: str = "key",
) -> Chart:
    """Several values per token side by side (e.g. divide-by-sum, naive and stable softmax).
    ``counts``: whole numbers, as in :func:`bars`. ``point_name``: what an x value is, on hover."""
    x = axis_labels(labels)
    raw = tuple(str(lab) for lab in labels)
    data, table = [], []
    shown = "%{y}" if counts else "%{y:.4f}"
    largest = 0.0
    for name, values in series.items():
        v = _array(values).reshape(-1)
        largest = max([largest, *map(float, v)])
        data.append(
            {
                "type": "bar",
                "name": name,
                "x": x,
                "y": packed(v),
                "hovertemplate": (
                    f"{name}<br>{point_name} %{{x}}<br>{value_name} {shown}<extra></extra>"
                ),
            }
        )
        table.append(Series(name, raw, _frozen(v)))
    axes = _xy_axes("", value_name, type="category", tickangle=-45)
    del axes["xaxis"]["title"]
    if counts:
        axes["yaxis"].update(_whole_ticks(largest))
    return _chart(
        data,
        table,
        title,
        kind="Bar chart",
        point_axis="point",
        height=320,
        barmode="group",
        **axes,
    )


def _log_ticks(xs: np.ndarray, most: int = 6) -> dict[str, Any]:
    """A log axis labelled at the measured x values themselves (at most ``most`` of them,
    evenly thinned, the first and last kept), not plotly's "1 2 5 10 2 5 100" minor digits,
    which read as a sequence of their own."""
    values = sorted({float(v) for v in np.asarray(xs, dtype=float).reshape(-1) if v > 0})
    if not values:
        return {}
    step = max(1, -(-(len(values) - 1) // (most - 1)))
    picked = values[::step]
    if picked[-1] != values[-1]:
        picked.append(values[-1])
    text = [f"{v:g}" if v < 1e5 else f"{v:.0e}" for v in picked]
    return {"tickvals": picked, "ticktext": text, "tickmode": "array"}


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
    mark_x: float | None = None,
    mark_label: str = "",
    beside: int = 0,
) -> Chart:
    """A few curves against one x axis (e.g. entropy against d_k, loss against steps).

    ``markers=False`` for long curves (one point per training step); ``y_range`` fixes the
    y axis (e.g. [0, 1] for an accuracy); ``mark_x``: a dotted vertical line at that x (the
    step a slider picked), labelled ``mark_label`` at its top; ``beside``: the number of series
    of a chart drawn beside this one, so that both keep room for the longer legend and their
    plots start at the same height."""
    xs = np.asarray(x)
    x_values = _points(xs)
    data, table = [], []
    for name, y in series.items():
        v = _array(y).reshape(-1)
        data.append(
            {
                "type": "scatter",
                "x": packed(xs) if xs.dtype.kind == "f" else list(x_values),
                "y": packed(v),
                "mode": "lines+markers" if markers else "lines",
                "name": name,
                "hovertemplate": f"{name}<br>{x_name} %{{x}}<br>{y_name} %{{y:.4f}}<extra></extra>",
            }
        )
        table.append(Series(name, x_values, _frozen(v)))
    axes = _xy_axes(x_name, y_name, type="log" if log_x else "linear")
    if log_x:
        axes["xaxis"].update(_log_ticks(xs))
    if y_range:
        axes["yaxis"]["range"] = list(y_range)
    marks: dict[str, Any] = {}
    if mark_x is not None:
        marks["shapes"] = [
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": float(mark_x),
                "x1": float(mark_x),
                "y0": 0,
                "y1": 1,
                "line": {"color": OUTLINE, "width": 2, "dash": "dot"},
            }
        ]
        if mark_label:
            marks["annotations"] = [
                {
                    "x": float(mark_x),
                    "xref": "x",
                    "y": 1,
                    "yref": "paper",
                    "yanchor": "top",
                    "xanchor": "left",
                    "xshift": 4,
                    "text": html.escape(mark_label, quote=False),
                    "showarrow": False,
                    "font": _font(12, MARK_TEXT),
                }
            ]
    rows = _legend_rows(max(len(data), beside))
    return _chart(
        data,
        table,
        title,
        kind="Line chart",
        point_axis=x_name,
        height=320,
        legend_rows=rows,
        **axes,
        **marks,
    )


def histograms(
    series: Mapping[str, Any], *, title: str, x_name: str = "value", bins: int = 40
) -> Chart:
    """Overlaid histograms (e.g. the initial weights of SelfAttention_v1 against v2).

    Binned here, on shared bin edges, so a figure of millions of values sends only the counts.
    """
    arrays = {name: _array(values).reshape(-1) for name, values in series.items()}
    finite = np.concatenate([a[np.isfinite(a)] for a in arrays.values()])
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    edges = np.linspace(low, high if high > low else low + 1.0, bins + 1)
    centres = ((edges[:-1] + edges[1:]) / 2).astype(np.float32)
    data, table = [], []
    for name, values in arrays.items():
        counts, _ = np.histogram(values[np.isfinite(values)], bins=edges)
        data.append(
            {
                "type": "bar",
                "x": packed(centres),
                "y": packed(counts),
                "width": float(edges[1] - edges[0]),
                "name": name,
                "opacity": 0.6,
                "hovertemplate": f"{name}<br>{x_name} ≈ %{{x:.4f}}<br>count %{{y}}<extra></extra>",
            }
        )
        table.append(Series(name, _points(centres), _frozen(counts)))
    return _chart(
        data,
        table,
        title,
        kind="Bar chart",
        point_axis=x_name,
        height=320,
        barmode="overlay",
        **_xy_axes(x_name, "count"),
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
) -> Chart:
    """Horizontal bars of median times, in the order given (put the fastest first), each with its
    ratio to the fastest ("×1.00", "×2.31") in a column at the right, clear of the whiskers that
    run from ``low_ms`` to ``high_ms`` (e.g. the quartiles) when given. Bars whose index is in
    ``highlight`` stand out."""
    ms = _array(median_ms).reshape(-1)
    ratio = _array(ratios).reshape(-1)
    names = [html.escape(str(label), quote=False) for label in labels]  # full names, not cut
    colours = ["#fde725" if i in (highlight or set()) else "#3b528b" for i in range(len(ms))]
    bar: dict[str, Any] = {
        "type": "bar",
        "orientation": "h",
        "x": packed(ms),
        "y": names,
        "customdata": packed(ratio),
        "marker": {"color": colours},
        "hovertemplate": "%{y}<br>median %{x:.4g} ms<br>×%{customdata:.2f} the fastest<extra></extra>",
    }
    if low_ms is not None and high_ms is not None:
        low, high = _array(low_ms).reshape(-1), _array(high_ms).reshape(-1)
        bar["error_x"] = {
            "type": "data",
            "symmetric": False,
            "array": packed(np.maximum(high - ms, 0)),
            "arrayminus": packed(np.maximum(ms - low, 0)),
            "color": "#555555",
            "thickness": 1,
            "width": 3,
        }
    top = float(ms.max()) if ms.size else 1.0
    if high_ms is not None:
        top = max(top, float(_array(high_ms).max(initial=0.0)))
    ratio_labels = [
        {
            "x": 1.0,
            "xref": "paper",
            "xanchor": "left",
            "y": name,
            "yref": "y",
            "text": f"×{r:.2f}",
            "showarrow": False,
            "font": _font(13),
        }
        for name, r in zip(names, ratio, strict=True)
    ]
    x_name = "median time per forward pass (ms)"
    series = [Series(x_name, tuple(str(lab) for lab in labels), _frozen(ms))]
    axes = _xy_axes(x_name, "", range=[0, top * 1.05])
    del axes["yaxis"]["title"]
    axes["yaxis"].update(type="category", autorange="reversed")
    return _chart(
        [bar],
        series,
        title,
        kind="Bar chart",
        point_axis="",
        height=int(110 + 42 * max(len(ms), 1)),
        right=70,
        annotations=ratio_labels,
        showlegend=False,
        **axes,
    )


# --- one cell, every number: the derivation's charts, and the line view ---------------------
POSITIVE = "#2166ac"  # ColorBrewer RdBu's blue: a term that raises the score
NEGATIVE = "#b2182b"  # and its red: a term that lowers it
TOTAL = "#31333f"
MARKED = "#fde725"  # the cell explained, as bars() highlights a token (Viridis' top)
PLAIN = "#3b528b"
SIZE = "#35b779"  # a context term's size
MASKED = "#b8b8b8"
TEXT_ON_BARS_UP_TO = 24  # more bars than this and their numbers would overlap: hover instead


def _sub(name: str, index: int | str) -> str:
    return f"{name}<sub>{index}</sub>"


def score_terms(
    q,
    k,
    *,
    query: int,
    key: int,
    score: float,
    names: tuple[str, str] = ("q", "k"),
    title: str = "",
    note: str = "",
) -> Chart:
    """A score q_i · k_j as a waterfall: one bar per dimension d of the head, the term
    q_i[d]·k_j[d] (blue when it raises the score, red when it lowers it), each starting where
    the one before ended, then the sum, the score, as a bar from 0. ``score`` is the score the
    module computed (the total bar is Plotly's running sum of the terms, equal to it within
    float32). ``names``: what q and k are called (pass 1: x and x)."""
    qv, kv = _array(q).reshape(-1), _array(k).reshape(-1)
    terms = qv.astype(np.float64) * kv.astype(np.float64)
    d = len(terms)
    dims = [f"dim {n}" for n in range(d)]
    qn, kn = _sub(names[0], query), _sub(names[1], key)
    custom = np.concatenate([np.stack([qv, kv], axis=1), np.full((1, 2), np.nan)])
    hover = [
        f"{x}<br>{qn}[{n}] × {kn}[{n}]<br>%{{customdata[0]:.4f}} × %{{customdata[1]:.4f}}"
        f" = %{{delta:.4f}}<br>running sum %{{final:.4f}}<extra></extra>"
        for n, x in enumerate(dims)
    ] + [f"{qn} · {kn}: the sum of the {d} terms, %{{final:.4f}}<extra></extra>"]
    trace = {
        "type": "waterfall",
        "x": [*dims, "sum"],
        "y": packed(np.append(terms, score)),
        "measure": ["relative"] * d + ["total"],
        "customdata": packed(custom),
        "hovertemplate": hover,
        "increasing": {"marker": {"color": POSITIVE}},
        "decreasing": {"marker": {"color": NEGATIVE}},
        "totals": {"marker": {"color": TOTAL}},
        "connector": {"line": {"color": "#888888", "width": 1}},
    }
    axes = _xy_axes("", "running sum", type="category", tickangle=-45)
    del axes["xaxis"]["title"]
    title = title or f"{qn} · {kn} = {score:.4f}: the sum of {d} terms {qn}[d] × {kn}[d]"
    points = tuple(dims)
    series = [
        Series(f"{names[0]}_{query}[d]", points, _frozen(qv)),
        Series(f"{names[1]}_{key}[d]", points, _frozen(kv)),
        Series("term", (*points, "sum"), _frozen(np.append(terms, score))),
    ]
    return _chart(
        [trace],
        series,
        title,
        kind="Waterfall chart",
        point_axis="dimension",
        height=320,
        note=note,
        showlegend=False,
        **axes,
    )


def _marked_colours(n: int, marked: int, visible) -> list[str]:
    return [MARKED if j == marked else PLAIN if visible[j] else MASKED for j in range(n)]


def softmax_row(
    scaled,
    exps,
    weights,
    labels,
    *,
    query: int,
    key: int,
    row_sum: float,
    shift: float = 0.0,
    visible=None,
    title: str = "",
    note: str = "",
    score_name: str = "scaled score s",
    symbol: str = "s",
) -> Chart:
    """One row's softmax: a bar per key, its weight exp(s_j) / Σ exp (the cell explained
    marked in yellow, a key the mask hides in grey), with each key's scaled score and exp on
    hover and in the numbers. ``shift``: the exps are exp(s_j − shift) when the row's scores
    are too large for exp (the weights are the same). ``score_name`` and ``symbol``: what the
    scores are called (the home page's alignment: unscaled dot products ω)."""
    w = _array(weights).reshape(-1)
    n = len(w)
    visible = [True] * n if visible is None else [bool(v) for v in visible]
    e = _array(exps).reshape(-1)
    sc = _array(scaled).reshape(-1)
    exp_name = f"exp({symbol} − {shift:.4g})" if shift else f"exp({symbol})"
    bar: dict[str, Any] = {
        "type": "bar",
        "x": axis_labels(labels),
        "y": packed(w),
        "customdata": packed(np.stack([sc, e], axis=1)),
        "marker": {"color": _marked_colours(n, key, visible)},
        "hovertemplate": (
            f"key %{{x}}<br>{score_name} %{{customdata[0]:.4f}}<br>"
            f"{exp_name} %{{customdata[1]:.4f}}<br>weight %{{y:.4f}}<extra></extra>"
        ),
    }
    if n <= TEXT_ON_BARS_UP_TO:
        bar.update(texttemplate="%{y:.2f}", textposition="outside", cliponaxis=False)
    axes = _xy_axes("", "weight", type="category", tickangle=-45)
    del axes["xaxis"]["title"]
    axes["yaxis"]["range"] = [0, max(1.0, float(np.nanmax(w, initial=0.0))) * 1.12]
    title = title or (
        f"Softmax of row {query}: weight = {exp_name} ÷ {row_sum:.4f}, the row's sum of exps"
    )
    raw = tuple(str(lab) for lab in labels)
    series = [
        Series(score_name, raw, _frozen(sc)),
        Series(exp_name, raw, _frozen(e)),
        Series("weight", raw, _frozen(w)),
    ]
    return _chart(
        [bar], series, title, kind="Bar chart", point_axis="key", height=320, note=note, **axes
    )


def context_terms(
    weights, sizes, labels, *, query: int, key: int, value: str = "v", title: str = "", note=""
) -> Chart:
    """The context row Σ_j α_ij v_j, one pair of bars per key j: its weight α_ij and, beside
    it, the size ‖α_ij v_j‖ of its term (the key explained outlined)."""
    w, size = _array(weights).reshape(-1), _array(sizes).reshape(-1)
    n = len(w)
    outline = {"color": TOTAL, "width": [3 if j == key else 0 for j in range(n)]}
    x = axis_labels(labels)
    a, t = f"α<sub>{query},j</sub>", f"‖α<sub>{query},j</sub> {value}<sub>j</sub>‖"
    data = [
        {
            "type": "bar",
            "name": f"weight {a}",
            "x": x,
            "y": packed(w),
            "marker": {"color": PLAIN, "line": outline},
            "hovertemplate": f"key %{{x}}<br>weight {a} %{{y:.4f}}<extra></extra>",
        },
        {
            "type": "bar",
            "name": f"size of its term {t}",
            "x": x,
            "y": packed(size),
            "marker": {"color": SIZE, "line": outline},
            "hovertemplate": f"key %{{x}}<br>size {t} %{{y:.4f}}<extra></extra>",
        },
    ]
    axes = _xy_axes("", "", type="category", tickangle=-45)
    del axes["xaxis"]["title"], axes["yaxis"]["title"]
    title = title or (
        f"Context row {query} = Σ<sub>j</sub> α<sub>{query},j</sub> {value}<sub>j</sub>: "
        "each term's size beside its weight"
    )
    pair = ((f"weight α_{query},j", w), (f"size ‖α_{query},j {value}_j‖", size))
    return _bars_per_key(data, labels, pair, title, height=340, note=note, axes=axes)


def row_change(before, after, labels, *, key: int, title: str, note: str = "") -> Chart:
    """A row's weights before and after a change (the slider on one component of q_i), side by
    side per key; the key explained outlined."""
    b, a = _array(before).reshape(-1), _array(after).reshape(-1)
    n = len(b)
    outline = {"color": TOTAL, "width": [3 if j == key else 0 for j in range(n)]}
    x = axis_labels(labels)
    data = [
        {
            "type": "bar",
            "name": name,
            "x": x,
            "y": packed(v),
            "marker": {"color": colour, "line": outline},
            "hovertemplate": f"key %{{x}}<br>{name} %{{y:.4f}}<extra></extra>",
        }
        for name, v, colour in (("weight now", b, PLAIN), ("after the change", a, MARKED))
    ]
    axes = _xy_axes("", "weight", type="category", tickangle=-45)
    del axes["xaxis"]["title"]
    top = max(1.0, float(np.nanmax(np.concatenate([a, b]), initial=0.0)))
    axes["yaxis"]["range"] = [0, top * 1.05]
    pair = (("weight now", b), ("after the change", a))
    return _bars_per_key(data, labels, pair, title, height=320, note=note, axes=axes)


def _bars_per_key(
    data: list[dict],
    labels,
    pair: tuple[tuple[str, np.ndarray], ...],
    title: str,
    *,
    height: int,
    note: str,
    axes: dict[str, Any],
) -> Chart:
    """Two bars per key (``data``), side by side; ``pair``: each bar's name and values, the
    chart's numbers."""
    raw = tuple(str(lab) for lab in labels)
    series = [Series(name, raw, _frozen(v)) for name, v in pair]
    return _chart(
        data,
        series,
        title,
        kind="Bar chart",
        point_axis="key",
        height=height,
        note=note,
        barmode="group",
        **axes,
    )


LINE_WIDEST = 14.0  # px: the line of the largest weight a line view can hold
LINE_NUMBERS_UP_TO = 16  # keys whose weights are written under them; more would overlap


def attention_lines(
    weights,
    labels,
    query: int,
    *,
    visible=None,
    direction: str = "ltr",
    title: str = "",
    note: str = "",
    value_name: str = "weight",
    top: float | None = None,
) -> Chart:
    """One query's weights as lines to every key: the query above, the keys in a row below in
    the order the text reads (right to left when ``direction`` is "rtl"), each line as thick as
    its weight (``top``, default the larger of 1 and the largest weight, gets the widest line).
    Keys the causal mask hides (``visible`` False) are grey and get no line. The numbers are
    on hover, written under each key when there are few, and in the chart's series."""
    w = _array(weights).reshape(-1)
    n = len(w)
    visible = [True] * n if visible is None else [bool(v) for v in visible]
    if not 0 <= query < n:
        raise ValueError(f"query {query} of {n} keys")
    top = top or max(1.0, float(np.nanmax(w, initial=0.0)))
    names = axis_labels(labels)
    data: list[dict] = []
    for j in range(n):
        if not visible[j] or not w[j] > 0:
            continue
        share = min(1.0, float(w[j]) / top)
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": [query, j],
                "y": [1, 0],
                "line": {"width": round(0.5 + LINE_WIDEST * share, 2), "color": PLAIN},
                "opacity": round(0.35 + 0.65 * share, 3),
                "hoverinfo": "skip",
                "showlegend": False,
            }
        )
    shown = n <= LINE_NUMBERS_UP_TO
    data.append(
        {
            "type": "scatter",
            "mode": "markers+text" if shown else "markers",
            "x": list(range(n)),
            "y": [0] * n,
            "hovertext": names,
            "customdata": packed(w),
            "marker": {
                "size": 10,
                "color": [SIZE if v else MASKED for v in visible],
                "line": {"color": TOTAL, "width": 1},
            },
            "hovertemplate": f"key %{{hovertext}}<br>{value_name} %{{customdata:.4f}}<extra></extra>",
            "showlegend": False,
            **(
                {
                    "text": [
                        f"{v:.2f}" if vis else "masked" for v, vis in zip(w, visible, strict=True)
                    ],
                    "textposition": "top center",
                    "textfont": _font(11, AXIS_COLOUR),
                }
                if shown
                else {}
            ),
        }
    )
    data.append(
        {
            "type": "scatter",
            "mode": "markers",
            "x": [query],
            "y": [1],
            "hovertext": [names[query]],
            "marker": {"size": 16, "color": MARKED, "line": {"color": TOTAL, "width": 2}},
            "hovertemplate": "query %{hovertext}<extra></extra>",
            "showlegend": False,
        }
    )
    xaxis = _axis(
        None,
        NORMAL,
        tickmode="array",
        tickvals=list(range(n)),
        ticktext=names,
        tickangle=-45 if n <= 12 else -90,
        range=[-0.6, n - 0.4] if direction != "rtl" else [n - 0.4, -0.6],
        showgrid=False,
        zeroline=False,
    )
    yaxis = _axis(None, NORMAL, visible=False, range=[-0.35, 1.35], fixedrange=True)
    # Where the query sits across the plot (0 left, 1 right): its label grows inwards from an
    # edge, so a phone does not cut it.
    across = query / (n - 1) if n > 1 else 0.5
    across = 1 - across if direction == "rtl" else across
    query_label = {
        "x": query,
        "y": 1,
        "xref": "x",
        "yref": "y",
        "yshift": 16,
        "yanchor": "bottom",
        "xanchor": "left" if across < 0.25 else "right" if across > 0.75 else "center",
        "text": f"query {names[query]}",
        "showarrow": False,
        "font": _font(13),
    }
    title = title or f"Query {names[query]}: a line to every key, as thick as its {value_name}"
    series = [Series(value_name, tuple(str(lab) for lab in labels), _frozen(w))]
    return _chart(
        data,
        series,
        title,
        kind="Line view",
        point_axis="key",
        height=300,
        note=note,
        showlegend=False,
        hovermode="closest",
        xaxis=xaxis,
        yaxis=yaxis,
        annotations=[query_label],
    )


# --- what a figure costs --------------------------------------------------------------------
def figure_bytes(spec: Mapping) -> int:
    """What the figure costs to send: the size of its JSON."""
    import json

    return len(json.dumps(spec, separators=(",", ":")))
