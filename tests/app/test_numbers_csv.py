"""Every matrix's "Numbers and CSV" box: closed, it costs nothing (no table, no CSV, no media
file); opened, it holds the exact table and a CSV download whose bytes are already on the
button (so the file belongs to the session, and a download cannot miss it under load), with the
whole matrix in every digit; the page's "show the exact numbers" toggle puts both under every
matrix. Each CSV is built once per distinct matrix and shared by every session."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from streamlit.runtime.media_file_manager import MediaFileManager

from attnviz import figures
from attnviz.core.settings import Settings
from attnviz.core.tokens import tokenize
from attnviz.teach import bugs
from tests.engine.test_lessons_causal import DEFAULT_TEXT, DEFAULT_TEXT2, page3
from ui import cache, numbers

from .conftest import BOOK_TEXT, chart, exceptions, open_app
from .test_content_late import (
    HTML_TEXT,
    chart_by_key,
    chart_keys,
    numbers_box,
    open_numbers,
    same_cells,
    table_in,
    z_of,
)


@pytest.fixture
def media(monkeypatch):
    """What the page stored for download (its URL -> file name, MIME type and bytes), and the
    shape of every CSV built."""
    files: dict[str, tuple[str | None, str, bytes]] = {}
    built: list[tuple[int, ...]] = []
    add = MediaFileManager.add
    to_csv = numbers._csv

    def spy(self, data, mimetype, coordinates, file_name=None, is_for_static_download=False):
        url = add(self, data, mimetype, coordinates, file_name, is_for_static_download)
        files[url] = (file_name, mimetype, data)
        return url

    def counting(df):
        built.append(df.shape)
        return to_csv(df)

    monkeypatch.setattr(MediaFileManager, "add", spy)
    monkeypatch.setattr(numbers, "_csv", counting)
    return files, built


def heatmap_keys(at) -> list[str]:
    return [
        k
        for k in chart_keys(at)
        if any(t["type"] == "heatmap" for t in chart_by_key(at, k)["data"])
    ]


def csv_button(at, key: str, files: dict, *, inside_box: bool = True) -> bytes:
    """The bytes of the matrix's CSV button (in its opened box, or under it when the toggle is
    on), checked to be a CSV named after the matrix."""
    where = numbers_box(at, key) if inside_box else at
    found = [b for b in where.get("download_button") if b.key == f"csv_{key}"]
    assert len(found) == 1, f"{len(found)} CSV buttons for {key}"
    button = found[0]
    assert button.label == "CSV"
    assert not button.proto.deferred_file_id  # the bytes are on the button, not made on click
    name, mimetype, data = files[button.proto.url]
    assert (name, mimetype) == (f"{key}.csv", "text/csv")
    assert isinstance(data, bytes)
    return data


def parse(data: bytes, index_cols: int = 1) -> pd.DataFrame:
    return pd.read_csv(io.BytesIO(data), index_col=list(range(index_cols)))


def same_as_panel(csv: pd.DataFrame, panel) -> None:
    """Shape, labels and every value of the panel's tensor (−∞ stays −∞)."""
    assert csv.shape == panel.shape
    assert list(csv.index) == list(panel.rows) and list(csv.columns) == list(panel.cols)
    np.testing.assert_array_equal(
        csv.to_numpy(dtype=np.float64).astype(np.float32), panel.values.numpy()
    )


# --- closed: nothing built -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("page", "query"),
    [
        ("trainable", {}),
        ("causal", {"dropout": "0.5", "lab": "true", "batch": "true"}),
        ("multihead", {}),
    ],
)
def test_a_closed_box_costs_no_table_no_csv_and_no_file(page, query, media):
    files, built = media
    at = open_app(query, page=page)
    if page == "causal":
        at.toggle(key="placement").set_value(True).run()
    heatmaps = heatmap_keys(at)
    assert len(heatmaps) >= 7, heatmaps
    for key in heatmaps:
        box = numbers_box(at, key)
        assert box.label == "Numbers and CSV"
        assert len(box.dataframe) == 0 and len(box.get("download_button")) == 0
    assert at.get("download_button") == []
    assert files == {} and built == []
    assert not exceptions(at)


# --- opened: the exact table and the whole matrix as CSV -------------------------------------
def test_an_opened_box_has_the_table_and_a_csv_of_the_panels_tensor(media):
    files, built = media
    at = open_app({"text": HTML_TEXT}, page="causal")
    open_numbers(at, "p3_route2", "p3_masked")
    lesson = page3(HTML_TEXT, DEFAULT_TEXT2, Settings(), False)
    labels = list(tokenize(HTML_TEXT).labels)
    for key, title in (("p3_route2", "Route 2"), ("p3_masked", "Masked scores")):
        panel = lesson.panels[key]
        assert list(panel.rows) == labels
        csv = parse(csv_button(at, key, files))
        same_as_panel(csv, panel)
        same_cells(table_in(at, key).to_numpy(), z_of(chart(at, title)))
    # raw labels in the CSV, escaped ones in the figure
    assert "4: </" in parse(csv_button(at, "p3_route2", files)).index
    assert chart(at, "Route 2")["data"][0]["y"][4] == "4: &lt;/"
    # the masked scores keep −∞ where the figure leaves the cell blank
    masked = parse(csv_button(at, "p3_masked", files)).to_numpy()
    assert np.isneginf(masked[0, 1:]).all()
    # exactly the two opened boxes built a CSV and stored a file; the others stay empty
    assert sorted(built) == [(len(labels), len(labels))] * 2
    assert sorted(name for name, _, _ in files.values()) == ["p3_masked.csv", "p3_route2.csv"]
    assert len(numbers_box(at, "p3_route1").get("download_button")) == 0
    assert not exceptions(at)


def test_each_csv_is_built_once_shared_by_every_session_and_counted_in_the_cache(media):
    files, built = media
    # Empty caches: an earlier test in this process may have filled the shared cache to its
    # cap, and evicting older entries would hide the CSV's bytes in the total.
    cache.clear_all()
    first = open_app({"text": "Once upon a time"}, page="causal")
    held = cache.derived.nbytes
    open_numbers(first, "p3_route1")
    data = csv_button(first, "p3_route1", files)
    assert len(built) == 1
    # the bytes are kept in the shared, byte-capped cache, and counted there
    assert cache.derived.nbytes - held >= len(data) > 0
    first.run()  # a rerun with the box still open
    second = open_app({"text": "Once upon a time"}, page="causal")  # another student
    open_numbers(second, "p3_route1")
    assert csv_button(second, "p3_route1", files) == data
    assert len(built) == 1


def test_the_toggle_puts_a_table_and_a_csv_under_every_matrix(media):
    files, _ = media
    at = open_app(page="causal")
    at.toggle(key="numbers").set_value(True).run()
    heatmaps = heatmap_keys(at)
    lesson = page3(DEFAULT_TEXT, DEFAULT_TEXT2, Settings(), False)
    assert set(chart_keys(at)) - set(heatmaps) == {"lines_p3"}  # and the line view's numbers
    assert len(at.dataframe) == 1 + len(heatmaps)  # one per matrix
    assert len(at.get("download_button")) == 1 + len(heatmaps)
    checked = 0
    for key in heatmaps:
        csv = parse(csv_button(at, key, files, inside_box=False))
        if key in lesson.panels:
            same_as_panel(csv, lesson.panels[key])
            checked += 1
    assert checked >= 5, heatmaps
    assert at.expander and not [e for e in at.expander if e.label == "Numbers and CSV"]
    assert not exceptions(at)


def test_a_matrix_wider_than_a_figure_is_cropped_in_its_table_and_whole_in_its_csv(media):
    files, _ = media
    at = open_app({"d_in": "300"}, page="trainable")
    spec = chart_by_key(at, "p2_W_query")
    assert z_of(spec).shape == (figures.MAX_SIDE, 8)
    open_numbers(at, "p2_W_query")
    table = table_in(at, "p2_W_query")
    assert table.shape == (figures.MAX_SIDE, 8)
    np.testing.assert_array_equal(table.to_numpy(dtype=np.float32), z_of(spec))
    notes = [c.value for c in numbers_box(at, "p2_W_query").caption if "table" in c.value]
    assert notes == [
        f"The table shows only rows 0–{figures.MAX_SIDE - 1} of 300; the CSV has every value."
    ]
    whole = parse(csv_button(at, "p2_W_query", files))
    assert whole.shape == (300, 8)
    np.testing.assert_array_equal(
        whole.to_numpy().astype(np.float32)[: figures.MAX_SIDE], z_of(spec)
    )


def test_the_heads_grid_has_one_table_and_csv_by_head_and_query(media):
    files, _ = media
    at = open_app({"d_out": "12", "heads": "3"}, page="multihead")
    spec = chart_by_key(at, "p4_grid")
    assert [t["type"] for t in spec["data"]] == ["heatmap"] * 3
    labels = list(tokenize(BOOK_TEXT).labels)
    open_numbers(at, "p4_grid")
    csv = parse(csv_button(at, "p4_grid", files), index_cols=2)
    assert list(csv.index.names) == ["head", "query"]
    assert len(csv) == 3 * len(labels) and list(csv.columns) == labels
    table = table_in(at, "p4_grid")
    for h in range(3):
        z = z_of(spec, h)
        np.testing.assert_array_equal(csv.loc[h].to_numpy().astype(np.float32), z)
        np.testing.assert_array_equal(table.to_numpy(dtype=np.float32)[h * 6 : h * 6 + 6], z)


def test_break_it_figures_have_their_numbers_and_csv(media):
    files, built = media
    cache.clear_all()  # the correct weights may have been built as another page's CSV
    at = open_app(page="causal")
    title = next(b.title for b in bugs.bugs_for("causal") if b.key == "mask_with_zero")
    at.selectbox(key="bug_causal").set_value(title).run()
    assert [b for b in at.get("download_button")] == []  # closed boxes
    open_numbers(at, "bug_w_mask_with_zero", "bug_r_mask_with_zero")
    # its figures are drawn anew on every run; their CSVs are still built once, and kept once
    entries = len(cache.derived)
    at.run()
    at.run()
    assert len(cache.derived) == entries
    wrong, right = chart(at, "With the bug"), chart(at, "Correct: weights")
    for key, spec in (("bug_w_mask_with_zero", wrong), ("bug_r_mask_with_zero", right)):
        csv = parse(csv_button(at, key, files)).to_numpy().astype(np.float32)
        np.testing.assert_array_equal(csv, z_of(spec))
        same_cells(table_in(at, key).to_numpy(), z_of(spec))
    assert len(built) == 2
    # the bug puts weight on future keys; the correct weights do not
    assert z_of(wrong)[0, 1:].sum() > 0 and z_of(right)[0, 1:].sum() == 0
