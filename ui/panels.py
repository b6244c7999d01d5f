"""Building blocks every page uses: matrices with numbers and CSV, badges, code, break-it."""

from __future__ import annotations

import hashlib
import html
import io
import json
import re
import tomllib
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, cast

import numpy as np
import pandas as pd
import streamlit as st
import torch

from attnviz import bugs as B
from attnviz import checks as C
from attnviz import figures as F
from attnviz.panel import Panel

from .text import md_escape

# No Plotly toolbar: its eight buttons per chart were Tab stops (the keyboard reached the first
# page control after 35 of them) and sat over the chart titles on a phone. Zoom by dragging and
# reset by double-click still work; a matrix's exact numbers are in its "Numbers and CSV" box.
PLOT_CONFIG = {"displaylogo": False, "scrollZoom": False, "displayModeBar": False}

_KINDS = {"heatmap": "Heatmap", "bar": "Bar chart", "scatter": "Line chart"}


def _shape_of(fig) -> str:
    """The drawn data's shape, read from the figure: "6 × 6" for one matrix, "3 heads of 6 × 6"
    for a grid, "6 bars" or "2 series of 40 points"."""
    traces = [t for t in fig.data if t.type in _KINDS]
    if not traces:
        return ""
    first = traces[0]
    if first.type == "heatmap":
        rows, cols = np.shape(first.z)[:2]
        size = f"{rows} × {cols}"
        heat = [t for t in traces if t.type == "heatmap"]
        return size if len(heat) == 1 else f"{len(heat)} heads of {size}"
    same = [t for t in traces if t.type == first.type]
    points = len(first.x if first.x is not None else first.y)
    if first.type == "bar":
        return f"{points} bars" if len(same) == 1 else f"{len(same)} series of {points} bars"
    return f"{points} points" if len(same) == 1 else f"{len(same)} series of {points} points"


def chart_label(fig) -> str:
    """A text label for a chart: what it is, its title and its shape, e.g. "Heatmap: Attention
    weights A, 6 × 6 (query by key)". Screen readers announce it (``st.plotly_chart``'s alt)."""
    title = re.sub(r"<[^>]+>", "", fig.layout.title.text or "").strip() or "chart"
    traces = [t for t in fig.data if t.type in _KINDS]
    kind = _KINDS[traces[0].type] if traces else "Chart"
    label = f"{kind}: {title}"
    shape = _shape_of(fig)
    if shape:
        label += f", {shape}"
    rows, cols = fig.layout.yaxis.title.text, fig.layout.xaxis.title.text
    if traces and traces[0].type == "heatmap" and rows and cols:
        label += f" ({rows} by {cols})"
    return label


_PLOT_CONFIG_JSON = json.dumps(PLOT_CONFIG)


# --- charts: each figure serialised once ------------------------------------------------------
def chart(fig, *, key: str | None = None, container=None) -> None:
    """Draw a Plotly figure as ``st.plotly_chart(fig, width="stretch", config=PLOT_CONFIG,
    alt=chart_label(fig))`` does (full width, no toolbar, a text label naming what it shows and
    its shape), but serialise it only once per figure object.

    ``st.plotly_chart`` deep-copies and re-serialises the figure on every run (3.7-8.2 ms a
    page); the figures here come from shared caches and are never changed once built, so their
    JSON is kept on the figure itself and dies with it. ``container``: a column or other
    container to draw in (default: where ``st`` draws now)."""
    cached = getattr(fig, "_attnviz_chart", None)
    if cached is None:
        import plotly.io

        height = fig.layout.height
        cached = (
            plotly.io.to_json(fig, validate=False),
            int(height) if isinstance(height, (int, float)) and height > 0 else 450,
            chart_label(fig),
        )
        fig._attnviz_chart = cached
    spec, height, label = cached
    target = container if container is not None else _current_dg()
    send_plotly_spec(target, spec, _PLOT_CONFIG_JSON, height, key, label)


def _current_dg() -> Any:
    """Where ``st.*`` draws now (the main area, a column, a sidebar block in a ``with``): the
    delta generator that ``st.plotly_chart`` is bound to."""
    return cast(Any, st.plotly_chart).__self__


def send_plotly_spec(
    dg, spec: str, config: str, height: int, key: str | None, alt: str | None = None
) -> None:
    """The one place that uses Streamlit internals (1.67): the element st.plotly_chart sends for
    a figure without selections, ``width="stretch"``, ``height="content"``, the Streamlit
    theme, from JSON made beforehand. tests/app/test_chart_message.py fails loudly when a
    Streamlit upgrade changes what st.plotly_chart sends, so this must be brought up to date."""
    from streamlit.elements.lib.form_utils import current_form_id
    from streamlit.elements.lib.layout_utils import LayoutConfig
    from streamlit.elements.lib.utils import compute_and_register_element_id
    from streamlit.proto.PlotlyChart_pb2 import PlotlyChart

    proto = PlotlyChart()
    proto.theme = "streamlit"
    proto.form_id = current_form_id(dg)
    proto.spec = spec
    proto.config = config
    if alt:
        proto.alt = alt  # the chart's accessible name, on its own field as st.plotly_chart does
    # The same identity st.plotly_chart computes, so the frontend keeps or remounts the chart
    # exactly as it would (and a duplicate key fails the same way).
    proto.id = compute_and_register_element_id(
        "plotly_chart",
        user_key=key,
        key_as_main_identity=False,
        dg=dg,
        plotly_spec=spec,
        plotly_config=config,
        selection_mode=("points", "box", "lasso"),
        is_selection_activated=False,
        theme="streamlit",
        width="stretch",
        height="content",
        alt=alt or None,
    )
    dg._enqueue("plotly_chart", proto, layout_config=LayoutConfig(width="stretch", height=height))


def show_numbers_toggle(default: bool = False) -> bool:
    """One page-level view control: show each matrix's exact numbers under it. Off by default:
    small matrices already carry their values in the cells, and every table costs a rerun time."""
    return st.toggle("Show the exact numbers under each matrix", value=default, key="show_numbers")


def notes(messages) -> None:
    for message in messages:
        st.info(md_escape(message))


def frame(z, rows, cols) -> pd.DataFrame:
    """Exact values with the raw labels (tables are not HTML, so nothing is escaped here).

    A (heads, rows, cols) stack becomes one table with a (head, row) index."""
    array = z.detach().to(torch.float32).numpy() if isinstance(z, torch.Tensor) else np.asarray(z)
    if array.ndim == 3:
        index = pd.MultiIndex.from_product(
            [range(array.shape[0]), list(rows)], names=["head", "query"]
        )
        return pd.DataFrame(array.reshape(-1, array.shape[-1]), index=index, columns=list(cols))
    return pd.DataFrame(array, index=list(rows), columns=list(cols))


def _csv(df: pd.DataFrame) -> bytes:
    """Every value with every digit (``to_csv``'s shortest exact text for each float)."""
    buffer = io.StringIO()
    df.to_csv(buffer)
    return buffer.getvalue().encode("utf-8")


def csv_bytes(z, rows, cols) -> bytes:
    """The whole of ``z`` as CSV, built once per distinct matrix and shared, immutable, by every
    session that opens it.

    The bytes live in the shared ``derived`` cache (``ui/cache.py``), so they count against its
    byte cap like every table and figure (a GPT-2-small weight matrix is about 6 MB of CSV).
    They are keyed by the values themselves (a digest of the float32 numbers the CSV holds, their
    shape and the labels), so a figure rebuilt on every run (the break-it pair) reuses one
    entry, and no caller can pair a figure with the wrong CSV."""
    from . import cache

    array = np.ascontiguousarray(
        z.detach().to(torch.float32).numpy() if isinstance(z, torch.Tensor) else np.asarray(z)
    )
    digest = hashlib.blake2b(array.data, digest_size=16).hexdigest()
    key = ("csv", digest, array.shape, str(array.dtype), tuple(rows), tuple(cols))
    return cache.derived.get(key, lambda: _csv(frame(array, rows, cols)))


# A table sends every cell to the browser: at most what a figure may draw (F.MAX_SIDE per side),
# and for a stack of heads at most this many cells (the heads grid's own budget).
TABLE_MAX_CELLS = 4 * F.MAX_SIDE * F.MAX_SIDE


def table_part(z, rows, cols) -> tuple[np.ndarray, list, list, str]:
    """The part of ``z`` a numbers table shows: what the figure shows (the same crop to
    F.MAX_SIDE rows and columns), for a stack the first heads that fit TABLE_MAX_CELLS; and a
    note saying what was left out, empty when nothing was."""
    array = z.detach().to(torch.float32).numpy() if isinstance(z, torch.Tensor) else np.asarray(z)
    if array.ndim == 3:
        parts = [F.crop(a, list(rows), list(cols)) for a in array]
        _, r, c, note = parts[0]
        per_head = max(1, len(r) * len(c))
        heads = max(1, min(array.shape[0], TABLE_MAX_CELLS // per_head))
        kept = np.stack([p[0] for p in parts[:heads]])
        notes = [note] if note else []
        if heads < array.shape[0]:
            notes.insert(0, f"heads 0–{heads - 1} of {array.shape[0]}")
        return kept, r, c, ", ".join(notes)
    return F.crop(array, list(rows), list(cols))


def numbers_table(z, rows, cols) -> None:
    """The exact numbers of ``z`` as a table, cropped as its figure is (with a note saying so)."""
    part, r, c, cut = table_part(z, rows, cols)
    df = frame(part, r, c)
    # 7 significant digits: what float32 holds; the CSV has every digit.
    formats = {col: st.column_config.NumberColumn(format="%.7g") for col in df.columns}
    st.dataframe(df, height=min(400, 38 + 35 * len(df)), column_config=formats)
    if cut:
        st.caption(f"The table shows only {cut}; the CSV has every value.")


NUMBERS_LABEL = "Numbers and CSV"


def numbers_and_csv(z, rows, cols, *, key: str) -> None:
    """The table of :func:`numbers_table` and a CSV download of the whole of ``z`` under it.

    The button carries its bytes (``data=bytes``, not a callable): Streamlit then ties the file
    to this session's element and keeps it until the session's next run, so the browser's GET
    of its /media/ URL cannot miss it however many other sessions run meanwhile (a file built
    on click belongs to no session, and any two script runs on the server delete it).
    ``on_click="ignore"``: the download itself does not rerun the page."""
    numbers_table(z, rows, cols)
    st.download_button(
        "CSV",
        data=csv_bytes(z, rows, cols),
        file_name=f"{key}.csv",
        mime="text/csv",
        key=f"csv_{key}",
        on_click="ignore",
        icon=":material/download:",
    )


def numbers_box(z, rows, cols, *, key: str, numbers: bool) -> None:
    """What goes under a figure: with ``numbers`` (the page's "show the exact numbers" toggle)
    the table and its CSV button; otherwise one closed "Numbers and CSV" expander that builds
    them only when opened, so a rerun pays for no table, no CSV and no media file nobody asked
    for."""
    if numbers:
        numbers_and_csv(z, rows, cols, key=key)
        return
    with st.expander(NUMBERS_LABEL, key=f"numbers_{key}", on_change="rerun") as box:
        if box.open:
            numbers_and_csv(z, rows, cols, key=key)


def matrix(fig, z, rows, cols, *, key: str, numbers: bool, caption: str | None = None) -> None:
    """A figure and, under it, its exact numbers and CSV (see :func:`numbers_box`).

    ``z`` may be a (heads, rows, cols) stack; the CSV holds all of it, every digit."""
    chart(fig, key=f"fig_{key}")
    if caption:
        st.caption(caption)
    numbers_box(z, rows, cols, key=key, numbers=numbers)


_BADGE_LOOK: dict[str, tuple[Literal["green", "red", "orange", "gray"], str]] = {
    "pass": ("green", ":material/check_circle:"),
    "fail": ("red", ":material/cancel:"),
    "documented": ("orange", ":material/info:"),
    "n/a": ("gray", ":material/remove_circle:"),
}


def badge(result: C.CheckResult) -> None:
    """One live check: a coloured badge and its numbers."""
    look = _BADGE_LOOK[result.status]
    st.badge(f"{result.title}: {result.status}", color=look[0], icon=look[1])
    st.caption(md_escape(result.detail))


def badges(results) -> None:
    st.markdown("**Live checks**")
    columns = st.columns(2)
    for i, result in enumerate(results):
        with columns[i % 2]:
            badge(result)


def source(*functions, title: str = "The engine's code for this") -> None:
    """The engine's own source, so the picture and the code cannot disagree."""
    with st.expander(title, expanded=False):
        for fn in functions:
            st.code(B.source_of(fn), language="python")


def printout(label: str, tensor: torch.Tensor) -> None:
    """A tensor printed the way PyTorch prints it (4 decimals). Long rows wrap rather than
    scroll, so no printed number is ever cut off in a narrow column."""
    st.code(f"{label}\n{tensor.detach()!r}", language="text", wrap_lines=True)


# A printed row longer than this does not fit half the page at 1024 px (about 28 monospace
# characters there): such printouts are stacked, one full-width block above the other.
BESIDE_MAX_CHARS = 28


def book_beside(title: str, ours: torch.Tensor, printed_name: str) -> bool:
    """The app's tensor beside the chapter's printout (or above it, when its rows are too long
    for half the page), with a match badge. No printed number is ever cut off."""
    from attnviz import book

    match, worst = book.matches_printout(ours, printed_name)
    st.markdown(f"**{md_escape(title)}**")
    printed = book.printed(printed_name)
    widest = max(len(line) for t in (ours, printed) for line in repr(t.detach()).splitlines())
    if widest <= BESIDE_MAX_CHARS:
        left, right = st.columns(2)
        with left:
            printout("attnviz computed:", ours)
        with right:
            printout("the chapter printed:", printed)
    else:
        printout("attnviz computed:", ours)
        printout("the chapter printed:", printed)
    if match:
        st.badge("Matches the book", color="green", icon=":material/check_circle:")
    else:
        st.badge("Differs from the book", color="red", icon=":material/cancel:")
    st.caption(f"largest difference {worst:.1e} (the printout has 4 decimals)")
    return match


# --- break it ------------------------------------------------------------------------------
NONE = "(none: the correct code)"


def bug_table(pass_kind: str, hidden: dict[str, str | None]) -> None:
    """The pass's bugs as a Markdown table (the engine's own text, escaped all the same). A bug
    is caught by its check's badge, named by the badge's title; the last column says whether
    these settings hide it (what it does here is said once it is turned on, from its run)."""
    rows = [
        "| bug | caught by | what goes wrong | hidden by these settings? |",
        "|---|---|---|---|",
    ]
    for bug in B.bugs_for(pass_kind):
        cells = (bug.title, C.TITLES[bug.check], bug.symptom, hidden[bug.key] or "no")
        rows.append("| " + " | ".join(md_escape(c) for c in cells) + " |")
    st.markdown("\n".join(rows))


def break_it(
    pass_kind: str,
    x: torch.Tensor,
    spec,
    hidden: dict[str, str | None],
    labels,
    *,
    key: tuple,
    book: bool,
) -> None:
    """List the pass's classic bugs (the registry in attnviz/bugs.py); when one is turned on,
    show its diff, the wrong result beside the right one (or the exact error it raises) and the
    badge that catches it.

    ``x`` and ``spec`` are the inputs and module the bug runs on; ``hidden`` says, per bug, why
    it cannot show at these settings (``Bug.hidden_at``); ``key`` (plain values naming ``x`` and
    ``spec``) caches each bug's outcome for every session.
    """
    from . import cache

    st.subheader("Break it")
    st.write(
        "Each classic bug below is one line away from the engine's code. Turn one on to see what "
        "it does to the numbers, and which live check catches it."
    )
    bug_table(pass_kind, hidden)
    bugs = B.bugs_for(pass_kind)
    titles = {bug.title: bug for bug in bugs}
    choice = st.selectbox("Turn on a bug", [NONE, *titles], key=f"bug_{pass_kind}")
    if choice == NONE:
        return
    bug = titles[choice]
    st.code(bug.diff(), language="diff")
    reason = hidden[bug.key]
    if reason:
        hint = " (turn off book mode first)" if book else ""
        st.warning(md_escape(f"This bug is {reason}{hint}."))
    outcome, right_check = cache.lesson_of(
        ("bug", pass_kind, *key, bug.key), lambda: B.outcome(bug.key, x, spec)
    )
    st.markdown(md_escape(f"At these settings: {outcome.verdict}."))
    if outcome.error or outcome.wrong is None or outcome.check is None:
        st.error("With this bug the pass does not run. PyTorch raises:")
        st.code(f"RuntimeError: {outcome.error}", language="text")
        if outcome.why:
            st.write(md_escape("Why: " + outcome.why + "."))
        return
    # The matrices that show the bug's effect (bugs.Shown: the buggy ones first, then the
    # correct ones), two to a row, each on the colour kind and scale the engine chose.
    keys = {0: f"bug_w_{bug.key}", 1: f"bug_r_{bug.key}"}
    for start in range(0, len(outcome.shown), 2):
        for column, (i, shown) in zip(
            st.columns(2), enumerate(outcome.shown[start : start + 2], start), strict=False
        ):
            with column:
                matrix(
                    F.heatmap(
                        shown.values,
                        labels,
                        labels,
                        title=shown.title,
                        kind=shown.kind,
                        zmax=shown.zmax,
                    ),
                    shown.values,
                    labels,
                    labels,
                    key=keys.get(i, f"bug_{i}_{bug.key}"),
                    numbers=False,
                )
    for sentence in outcome.sentences:
        st.caption(md_escape(sentence))
    left, mid = st.columns(2)
    with left:
        badge(outcome.check)
    with mid:
        badge(right_check)


# --- the top of every pass page --------------------------------------------------------------
def prepared_or_stop(args):
    """The page's tokens and X; with no tokens, say so and stop the page (the sidebar stays)."""
    from . import cache

    prep = cache.prepared(*args)
    notes(prep.messages)
    if prep.empty:
        st.stop()
    return prep


def causal_trace_or_stop(kind: str, cfg, args):
    """The trace of a causal pass ("causal" or "multihead") for this page, or a stop with the
    reason: d_out that the heads do not divide, no text, or (a note) a text past the context."""
    from attnviz import book, lesson

    from . import cache

    if kind == "multihead":
        problem = None if cfg.book else cfg.settings.multihead_problem()
        if problem:
            st.error(
                md_escape(problem)
                + " Change d_out or num_heads in the sidebar; the other pages still work."
            )
            st.stop()
    prep = prepared_or_stop(args)
    context_length = book.CONTEXT_LENGTH if cfg.book else cfg.settings.context_length
    _, context_note = lesson.within_context(prep, context_length)
    if context_note:
        st.warning(md_escape(context_note))
    return cache.trace(kind, *args)


def show(panel: Panel, *, numbers: bool) -> None:
    """One engine-built panel: its figure, exact numbers and CSV (see :func:`matrix`), drawn
    through the page's view (``ui.view``: the colour scale, the token window, and for a stack
    of heads past the grid's budget the heads picked). Each viewed panel is built once per
    panel and view, in the shared cache."""
    from dataclasses import replace

    from attnviz.panel import heads_that_fit

    from . import cache
    from . import view as page_view

    view = page_view.current()
    if panel.values.dim() == 3:
        heads = page_view.heads_picker(panel, view)
        # the panel already draws the first heads that fit at full length
        as_built = tuple(range(heads_that_fit(*panel.values.shape[1:])))
        if heads is not None and (heads != as_built or view.window or view.relative):
            view = replace(view, heads=heads)
    if not view.is_default:
        panel = cache.panel_view(panel, view) or panel
    matrix(
        panel.figure,
        panel.values,
        panel.rows,
        panel.cols,
        key=panel.key,
        numbers=numbers,
        caption=panel.caption or None,
    )


def claims(items) -> None:
    """Sentences about the numbers, computed by the engine (escaped: they name tokens)."""
    for claim in items:
        st.write(md_escape(claim.text))


# --- the top of a page, and panels side by side ----------------------------------------------
def _read_intros() -> MappingProxyType[str, MappingProxyType[str, str]]:
    """ui/intros.toml, read once: each page's title, paragraph and formula, by URL path."""
    with (Path(__file__).parent / "intros.toml").open("rb") as f:
        pages = tomllib.load(f)
    return MappingProxyType(
        {
            name: MappingProxyType(
                {k: "".join(v) if k == "formula" else v for k, v in page.items()}
            )
            for name, page in pages.items()
        }
    )


INTROS = _read_intros()


def page_top(page_file: str, *, present: bool = False) -> None:
    """The title of the page in ``page_file`` (its ``__file__``), then its opening paragraph and
    formula from ui/intros.toml. ``present``: presenter mode, where the stepper tells the same
    story step by step, so only the title is drawn."""
    intro = INTROS[Path(page_file).stem]
    st.title(intro["title"])
    if present:
        return
    st.write(intro["text"])
    if "formula" in intro:
        formula(intro["formula"])


_FORMULA_BREAK = re.compile(r",?\s*\\q?quad\s*")


def formula_lines(tex: str) -> list[str]:
    """The parts of a formula written side by side (``a, \\qquad b, \\quad c``), one a line."""
    return [part.strip().rstrip(",").strip() for part in _FORMULA_BREAK.split(tex) if part.strip()]


def formula(tex: str) -> None:
    """A display formula whose parts stand one under the other, so that no part is wider than
    a phone (390 px) and nothing scrolls: the chapter's formulas are a few short equations
    written side by side, each of which fits on its own line."""
    lines = formula_lines(tex)
    if len(lines) == 1:
        st.latex(lines[0])
    else:
        st.latex(r"\begin{gathered}" + r" \\[4pt] ".join(lines) + r"\end{gathered}")


def beside(*items, numbers: bool = False, below: Callable[[Panel], None] | None = None) -> None:
    """Panels or figures side by side, one equal column each. A Panel is drawn by :func:`show`
    (with ``numbers``), then ``below(panel)`` under it (its claims, say); a ``(key, figure)``
    pair, a bar or line chart, by :func:`plot` (with ``numbers``); a Plotly figure by
    :func:`chart`. A single item is drawn in place, at full width."""
    places: list[AbstractContextManager] = [nullcontext()]
    if len(items) > 1:
        places = list(st.columns(len(items)))
    for place, item in zip(places, items, strict=True):
        with place:
            if isinstance(item, Panel):
                show(item, numbers=numbers)
                if below is not None:
                    below(item)
            elif isinstance(item, tuple):
                plot(item[1], key=item[0], numbers=numbers)
            else:
                chart(item)


def pick_head(num_heads: int, *, key: str) -> int:
    """The head a "Head" select box picks (no box for a single head); a choice left over from
    more heads is brought within ``num_heads``."""
    if num_heads <= 1:
        return 0
    return min(int(st.selectbox("Head", list(range(num_heads)), key=key)), num_heads - 1)


# --- bar and line charts: the numbers they draw ------------------------------------------------
_SERIES = ("bar", "scatter")


def _point(label):
    """A point's label as a table shows it: the raw text (Plotly's copy is HTML-escaped)."""
    return html.unescape(label) if isinstance(label, str) else label


def series_frame(fig) -> pd.DataFrame:
    """The exact values a bar or line chart draws, read from the figure's own traces: one row
    per point (its label on the category axis, its x on a line chart), one column per series
    (the trace's name; a lone unnamed series takes the value axis's title). Horizontal bars
    read the other way round. Series with different points are aligned on their labels."""
    columns: dict[str, pd.Series] = {}
    point_axis = ""
    for trace in (t for t in fig.data if t.type in _SERIES):
        horizontal = trace.type == "bar" and trace.orientation == "h"
        points, values = (trace.y, trace.x) if horizontal else (trace.x, trace.y)
        if values is None:
            continue
        points_axis, values_axis = (
            (fig.layout.yaxis, fig.layout.xaxis)
            if horizontal
            else (fig.layout.xaxis, fig.layout.yaxis)
        )
        point_axis = point_axis or (points_axis.title.text or "")
        labels = range(len(values)) if points is None else [_point(p) for p in points]
        name = trace.name or values_axis.title.text or "value"
        while name in columns:
            name += "'"
        columns[name] = pd.Series(np.asarray(values), index=list(labels))
    frame = pd.DataFrame(columns)
    frame.index.name = point_axis or "point"
    return frame


def series_table(frame: pd.DataFrame, key: str) -> None:
    """A chart's numbers as a table and a CSV of the same values. (Kept apart from
    numbers_table so the matrix renderer and this one can change separately.)"""
    formats = {col: st.column_config.NumberColumn(format="%.7g") for col in frame.columns}
    st.dataframe(frame, height=min(400, 38 + 35 * len(frame)), column_config=formats)
    st.download_button(
        "CSV",
        data=frame.to_csv().encode("utf-8"),
        file_name=f"{key}.csv",
        mime="text/csv",
        key=f"csv_{key}",
        on_click="ignore",
        icon=":material/download:",
    )


def plot(fig, *, key: str, numbers: bool, container=None) -> None:
    """A bar or line chart and, like a matrix, its exact numbers: under the chart when
    ``numbers`` (the page's toggle) is on, else in a "Numbers and CSV" expander that builds the
    table and the CSV only when opened. The values are read from the figure itself
    (:func:`series_frame`), so they are the numbers drawn. ``container``: where to draw (a
    column or a placeholder); default where ``st`` draws now."""
    with container.container() if container is not None else st.container():
        chart(fig, key=f"fig_{key}")
        if numbers:
            series_table(series_frame(fig), key)
            return
        with st.expander("Numbers and CSV", key=f"numbers_{key}", on_change="rerun") as box:
            if box.open:
                series_table(series_frame(fig), key)
