"""Bar and line charts carry their exact numbers: ``panels.plot`` draws the chart and a table
(and CSV) of the values read from the figure's own traces."""

from __future__ import annotations

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from attnviz import figures
from ui import numbers

from .conftest import OPEN_PARTS, chart_specs, chart_title, open_app, spec_array

LABELS = ["0: <b>", "1: ␣cat", "2: 1"]


def test_bars_give_one_row_per_token_with_the_raw_label_and_the_exact_value():
    values = np.array([0.125, 1 / 3, 2.5], dtype=np.float32)
    frame = numbers.series_frame(figures.bars(values, LABELS, title="Scores", value_name="score"))
    assert list(frame.index) == LABELS  # the raw text, not Plotly's escaped "&lt;b&gt;"
    assert list(frame.columns) == ["score"]
    assert frame["score"].dtype == np.float32
    np.testing.assert_array_equal(frame["score"].to_numpy(), values)


def test_grouped_bars_and_lines_give_one_column_per_series():
    series = {"divide by sum": [0.2, 0.3, 0.5], "softmax": [0.1, 0.2, 0.7]}
    frame = numbers.series_frame(figures.grouped_bars(series, LABELS, title="t"))
    assert list(frame.columns) == list(series) and list(frame.index) == LABELS
    np.testing.assert_allclose(frame.to_numpy().T, np.float32(list(series.values())))
    curve = figures.lines(
        [1, 4, 16],
        {"scaled": [1.5, 1.5, 1.5], "raw": [1.0, 0.5, 0.1]},
        title="t",
        x_name="d_k",
        y_name="entropy",
    )
    frame = numbers.series_frame(curve)
    assert frame.index.name == "d_k" and list(frame.index) == [1, 4, 16]
    np.testing.assert_array_equal(frame["raw"].to_numpy(), np.float32([1.0, 0.5, 0.1]))


def test_horizontal_timing_bars_read_the_times_against_the_names():
    fig = figures.timing_bars(["fused <SDPA>", "ours"], [0.5, 1.25], [1.0, 2.5], title="t")
    frame = numbers.series_frame(fig)
    assert list(frame.index) == ["fused <SDPA>", "ours"]
    assert list(frame.columns) == ["median time per forward pass (ms)"]
    np.testing.assert_array_equal(frame.iloc[:, 0].to_numpy(), np.float32([0.5, 1.25]))


def test_histograms_give_the_counts_at_each_bin_centre():
    fig = figures.histograms({"v1": np.arange(8.0), "v2": np.zeros(8)}, title="t", bins=4)
    frame = numbers.series_frame(fig)
    assert list(frame.columns) == ["v1", "v2"] and len(frame) == 4
    assert frame["v1"].sum() == 8 and frame["v2"].sum() == 8


def _script() -> None:
    import numpy as np

    from attnviz import figures
    from ui import render as panels

    fig = figures.bars(
        np.float32([0.25, 0.75]), ["0: a", "1: <i>"], title="Weights", value_name="w"
    )
    panels.plot(fig, key="demo", numbers=True)
    panels.plot(fig, key="demo_closed", numbers=False)


def test_plot_draws_the_chart_its_table_and_a_csv_of_the_same_numbers():
    at = AppTest.from_function(_script).run()
    assert not at.exception
    assert [chart_title(s) for s in chart_specs(at)] == ["Weights", "Weights"]
    (table,) = at.dataframe  # the closed expander builds nothing
    shown: pd.DataFrame = table.value
    assert list(shown.index) == ["0: a", "1: <i>"]
    np.testing.assert_array_equal(shown["w"].to_numpy(), np.float32([0.25, 0.75]))
    drawn = spec_array(chart_specs(at)[0]["data"][0]["y"])
    np.testing.assert_array_equal(shown["w"].to_numpy(), drawn)
    (expander,) = [e for e in at.expander if e.label == "Numbers and CSV"]
    assert not expander.proto.expanded


def test_the_trainable_page_shows_each_curve_s_numbers_under_it():
    at = open_app(OPEN_PARTS, page="trainable")
    at.toggle(key="numbers").set_value(True).run()
    assert not at.exception
    entropy = next(s for s in chart_specs(at) if chart_title(s).startswith("Row entropy"))
    tables = [t.value for t in at.dataframe if t.value.index.name == "d_k"]
    assert len(tables) == 2  # entropy and gradient, one table each
    first = tables[0]
    for trace in entropy["data"]:
        np.testing.assert_array_equal(first[trace["name"]].to_numpy(), spec_array(trace["y"]))
