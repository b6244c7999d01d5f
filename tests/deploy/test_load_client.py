"""bench/loadtest.py's download checks, without a server: what counts as a right CSV for a
figure (a matrix, a stack of heads), where in a plan boxes are opened, and how ``--url`` reads."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from attnviz import figures
from bench import loadtest
from ui import numbers

LABELS = ["0: One", "1: ␣two", "2: ␣three"]


def spec_of(fig) -> str:
    """The JSON the page sends for a figure (a spec, or a chart's spec)."""
    return json.dumps(fig.spec if isinstance(fig, figures.Chart) else fig)


def csv_of(z: torch.Tensor, rows, cols) -> bytes:
    return numbers._csv(numbers.frame(z, rows, cols))


def test_a_matrix_csv_has_the_shape_of_its_figure():
    z = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    shape = loadtest.heatmap_shape(spec_of(figures.heatmap(z, LABELS, LABELS, title="A")))
    assert shape == (1, 3, 3)
    assert loadtest.csv_problem(csv_of(z, LABELS, LABELS), shape) == ""
    # blank cells (NaN above the diagonal) and −∞ are numbers a matrix may hold
    masked = torch.tensor([[1.0, float("-inf")], [float("nan"), 2.0]])
    assert loadtest.csv_problem(csv_of(masked, LABELS[:2], LABELS[:2]), (1, 2, 2)) == ""


def test_a_csv_of_another_shape_or_with_words_in_it_is_a_failed_download():
    z = torch.rand(3, 3)
    body = csv_of(z, LABELS, LABELS)
    assert loadtest.csv_problem(body, (1, 4, 3)) == "3 rows, not 1 × 4"
    assert loadtest.csv_problem(body, (1, 3, 2)) == "header of 4 fields, not 1 + 2"
    wordy = body.replace(b"\n0: One,", b"\n0: One,oops", 1)
    assert loadtest.csv_problem(wordy, (1, 3, 3)).startswith("not a number: 'oops")
    assert loadtest.csv_problem(b"<html>404</html>", (1, 3, 3)).startswith("header of 1")
    assert loadtest.csv_problem(b"", (1, 3, 3)) == "header of 0 fields, not 1 + 3"


def test_a_stack_of_heads_is_one_csv_indexed_by_head_and_query():
    z = torch.rand(2, 3, 3)
    fig = figures.heads_grid(z, LABELS, title="heads")
    shape = loadtest.heatmap_shape(spec_of(fig))
    assert shape == (2, 3, 3)
    assert loadtest.csv_problem(csv_of(z, LABELS, LABELS), shape) == ""
    assert loadtest.csv_problem(csv_of(z[0], LABELS, LABELS), shape) != ""


def test_a_bar_or_line_chart_csv_is_one_row_a_point_and_one_column_a_series():
    one = figures.bars(torch.tensor([0.1, 0.7, 0.2]), LABELS, title="bars")
    two = figures.grouped_bars({"a": np.ones(3), "b": np.zeros(3)}, LABELS, title="two")
    for fig, series in ((one, 1), (two, 2)):
        shape = loadtest.heatmap_shape(spec_of(fig))
        assert shape == (1, 3, series)
        body = numbers.series_frame(fig).to_csv().encode("utf-8")  # what numbers.plot offers
        assert loadtest.csv_problem(body, shape) == ""
        assert loadtest.csv_problem(body, (1, 3, series + 1)) != ""


@pytest.mark.parametrize("visible", [None, [True, True, False]])
def test_a_line_view_csv_is_one_row_a_key_and_one_column_of_weights(visible):
    weights = torch.tensor([0.25, 0.75, 0.0])
    fig = figures.attention_lines(weights, LABELS, 1, visible=visible, title="lines")
    shape = loadtest.heatmap_shape(spec_of(fig))
    assert shape == (1, 3, 1)
    body = numbers.series_frame(fig).to_csv().encode("utf-8")  # what numbers.plot offers
    assert loadtest.csv_problem(body, shape) == ""
    assert loadtest.csv_problem(body, (1, 3, 2)) != ""


@pytest.mark.parametrize(
    ("length", "downloads", "points"),
    [(16, 3, [2, 8, 13]), (16, 0, []), (0, 3, []), (2, 3, [0, 1])],
)
def test_boxes_are_opened_at_points_spread_over_the_plan(length, downloads, points):
    assert loadtest.download_points(length, downloads) == points


def test_a_url_may_carry_a_label():
    assert loadtest.url_target("HAProxy=http://127.0.0.1:8080") == (
        "HAProxy",
        "http://127.0.0.1:8080",
    )
    assert loadtest.url_target("http://127.0.0.1:8501/?a=b") == (
        "http://127.0.0.1:8501/?a=b",
        "http://127.0.0.1:8501/?a=b",
    )
    with pytest.raises(SystemExit):
        loadtest.parse_args(["--url", "127.0.0.1:8080"])  # no scheme
    with pytest.raises(SystemExit):
        loadtest.parse_args(["--url", "http://127.0.0.1:1", "--reference-app"])
