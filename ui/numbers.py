"""Every figure's exact numbers, one click away: a table and a CSV of the values drawn.

Under each matrix or chart sits one closed "Numbers and CSV" expander (:func:`numbers_box`,
:func:`plot`) that builds nothing until it is opened; opened, it holds the table and a CSV
button carrying its bytes, built once per distinct matrix and shared by every session.
"""

from __future__ import annotations

import functools
import hashlib
import io
from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st
import torch

from attnviz import figures
from ui.charts import chart


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
    from ui import cache

    array = np.ascontiguousarray(
        z.detach().to(torch.float32).numpy() if isinstance(z, torch.Tensor) else np.asarray(z)
    )
    digest = hashlib.blake2b(array.data, digest_size=16).hexdigest()
    key = ("csv", digest, array.shape, str(array.dtype), tuple(rows), tuple(cols))
    return cache.derived.get(key, lambda: _csv(frame(array, rows, cols)))


# A table sends every cell to the browser: at most what a figure may draw (F.MAX_SIDE per side),
# and for a stack of heads at most this many cells (the heads grid's own budget).
TABLE_MAX_CELLS = 4 * figures.MAX_SIDE * figures.MAX_SIDE


def table_part(z, rows, cols) -> tuple[np.ndarray, list, list, str]:
    """The part of ``z`` a numbers table shows: what the figure shows (the same crop to
    F.MAX_SIDE rows and columns), for a stack the first heads that fit TABLE_MAX_CELLS; and a
    note saying what was left out, empty when nothing was."""
    array = z.detach().to(torch.float32).numpy() if isinstance(z, torch.Tensor) else np.asarray(z)
    if array.ndim == 3:
        parts = [figures.crop(a, list(rows), list(cols)) for a in array]
        _, r, c, note = parts[0]
        per_head = max(1, len(r) * len(c))
        heads = max(1, min(array.shape[0], TABLE_MAX_CELLS // per_head))
        kept = np.stack([p[0] for p in parts[:heads]])
        notes = [note] if note else []
        if heads < array.shape[0]:
            notes.insert(0, f"heads 0–{heads - 1} of {array.shape[0]}")
        return kept, r, c, ", ".join(notes)
    return figures.crop(array, list(rows), list(cols))


# How a numbers table writes a value: 4 decimals (as the book prints them, and as the hover
# reads), every column as wide as its longest text, so that no number is cut in a half-width
# box or on a phone; the CSV keeps every digit. A masked score reads "−∞", as the page writes
# it everywhere: a table with a value that is not finite is sent as text (the grid would write
# "-Infinity"), right-aligned like numbers.
DECIMALS = 4
NUMBER_FORMAT = f"%.{DECIMALS}f"
NOT_FINITE = {np.inf: "+∞", -np.inf: "−∞"}  # and NaN reads "NaN"
# Column widths, px: a generous width per character of the grid's 14 px type, plus the cell's
# padding (the grid draws 8 px on each side) and room for the header's sort arrow.
CHAR_PX = 8.5
CELL_PAD_PX = 26


def column_width(texts, header: str) -> int:
    """px that show the longest of ``texts`` and the header whole."""
    longest = max([len(str(header)), *(len(t) for t in texts)], default=1)
    return int(CELL_PAD_PX + CHAR_PX * longest)


def shown_texts(values) -> list[str]:
    """The text a numbers table draws for each of ``values``: ``NUMBER_FORMAT``, and for a
    value that is not finite "−∞" (a masked score), "+∞" or "NaN"."""
    return [
        NOT_FINITE.get(v, "NaN") if not np.isfinite(v) else NUMBER_FORMAT % v
        for v in np.asarray(values, dtype=np.float64).ravel().tolist()
    ]


def numbers_table(z, rows, cols) -> None:
    """The numbers of ``z`` as a table, cropped as its figure is (with a note saying so): each
    value to 4 decimals, right-aligned, in a column wide enough for its longest text; a table
    wider than its box scrolls inside itself. A table holding −∞ (masked scores) is sent as
    text, so that it reads "−∞" (:func:`shown_texts`)."""
    part, r, c, cut = table_part(z, rows, cols)
    df = frame(part, r, c)
    texts = {col: shown_texts(df.iloc[:, i]) for i, col in enumerate(df.columns)}
    formats: dict
    if not np.isinf(part).any():  # (a NaN, a key the row cannot see, is left blank)
        formats = {
            col: st.column_config.NumberColumn(
                format=NUMBER_FORMAT, width=column_width(texts[col], col)
            )
            for col in df.columns
        }
    else:
        df = pd.DataFrame(texts, index=df.index)
        formats = {
            col: st.column_config.TextColumn(width=column_width(texts[col], col), alignment="right")
            for col in df.columns
        }
    st.dataframe(df, height=min(400, 38 + 35 * len(df)), column_config=formats)
    if cut:
        st.caption(f"The table shows only {cut}; the CSV has every value.")
    else:
        st.caption(f"Values to {DECIMALS} decimals; the CSV has every digit.")


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


SLIDES_LABEL = "For slides: SVG, PNG, LaTeX, Reproduce"


def numbers_box(
    z, rows, cols, *, key: str, numbers: bool, extras: Callable[[], None] | None = None
) -> None:
    """What goes under a figure: with ``numbers`` (the page's "show the exact numbers" toggle)
    the table and its CSV button; otherwise one closed "Numbers and CSV" expander that builds
    them only when opened, so a rerun pays for no table, no CSV and no media file nobody asked
    for. ``extras`` (the figure's downloads for slides, its LaTeX, its snippet: ``ui/teach/slides.py``)
    is drawn in the opened box after the CSV, or, with the toggle on, in a closed box of its own:
    either way only when opened."""
    if numbers:
        numbers_and_csv(z, rows, cols, key=key)
        _slides_box(key, extras)
        return
    with st.expander(NUMBERS_LABEL, key=f"numbers_{key}", on_change="rerun") as box:
        if box.open:
            numbers_and_csv(z, rows, cols, key=key)
            if extras is not None:
                extras()


def _slides_box(key: str, extras: Callable[[], None] | None) -> None:
    if extras is None:
        return
    with st.expander(SLIDES_LABEL, key=f"slides_{key}", on_change="rerun") as box:
        if box.open:
            extras()


# --- bar and line charts: the numbers they draw ------------------------------------------------
def series_frame(item: figures.Chart) -> pd.DataFrame:
    """The exact values a bar or line chart draws (``Chart.series``): one row per point (its
    raw label on the category axis, its x on a line chart), one column per series. Series
    with different points are aligned on their labels."""
    columns: dict[str, pd.Series] = {}
    for s in item.series:
        name = s.name or "value"
        while name in columns:
            name += "'"
        columns[name] = pd.Series(s.values.copy(), index=list(s.points))
    frame = pd.DataFrame(columns)
    frame.index.name = item.point_axis or "point"
    return frame


def series_table(frame: pd.DataFrame, key: str) -> None:
    """A chart's numbers as a table and a CSV of the same values. (Kept apart from
    numbers_table so the matrix renderer and this one can change separately.)"""
    shown = frame
    formats: dict = {
        col: st.column_config.NumberColumn(
            format="%.7g",
            width=column_width([f"{v:.7g}" for v in frame.iloc[:, i]], col),
        )
        for i, col in enumerate(frame.columns)
    }
    if np.isinf(frame.to_numpy(dtype=np.float64)).any():  # −∞ (a masked score): as text
        texts = {
            col: [
                NOT_FINITE.get(v, "NaN") if not np.isfinite(v) else f"{v:.7g}"
                for v in frame[col].to_numpy(dtype=np.float64).tolist()
            ]
            for col in frame.columns
        }
        shown = pd.DataFrame(texts, index=frame.index)
        formats = {
            col: st.column_config.TextColumn(width=column_width(t, col), alignment="right")
            for col, t in texts.items()
        }
    st.dataframe(shown, height=min(400, 38 + 35 * len(frame)), column_config=formats)
    st.download_button(
        "CSV",
        data=frame.to_csv().encode("utf-8"),
        file_name=f"{key}.csv",
        mime="text/csv",
        key=f"csv_{key}",
        on_click="ignore",
        icon=":material/download:",
    )


def plot(item: figures.Chart, *, key: str, numbers: bool, container=None) -> None:
    from ui.teach import slides

    """A bar or line chart and, like a matrix, its exact numbers: under the chart when
    ``numbers`` (the page's toggle) is on, else in a "Numbers and CSV" expander that builds the
    table and the CSV only when opened. The values are the chart's own (``Chart.series``), so
    they are the numbers drawn. ``container``: where to draw (a column or a placeholder);
    default where ``st`` draws now."""
    with container.container() if container is not None else st.container():
        chart(item, key=f"fig_{key}")
        save = functools.partial(slides.downloads, f"fig_{key}", key)
        if numbers:
            series_table(series_frame(item), key)
            _slides_box(key, save)
            return
        with st.expander(NUMBERS_LABEL, key=f"numbers_{key}", on_change="rerun") as box:
            if box.open:
                series_table(series_frame(item), key)
                save()
