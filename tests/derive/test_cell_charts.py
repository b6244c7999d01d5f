"""The charts of one cell's derivation and the line view, as plain specs validated by Plotly
(``go.Figure``), and the cell lesson's parts adding up to the weight the trace holds.

The line view: a line per visible key whose width grows with its weight, no line to a key the
mask hides, keys in the text's reading order (right to left for Hebrew), the numbers in its
series and hover, and labels escaped. The derivation's charts: the waterfall's terms and total,
the softmax bars with the cell marked, the context terms beside their weights.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz import figures
from attnviz.core.settings import Settings
from attnviz.teach import derive, prepare
from attnviz.teach.lessons import cell as cell_lesson
from tests.support.specs import as_figure, subtitle_of

TEXT = "Your journey starts with one step"
LABELS = ("0: Your", "1: ␣journey", "2: <b>x</b>", "3: ␣with")


def _line_widths(chart: figures.Chart) -> dict[int, float]:
    """Key position -> the width of the line drawn to it."""
    return {
        int(t["x"][1]): t["line"]["width"] for t in chart.spec["data"] if t.get("mode") == "lines"
    }


def test_line_view_draws_one_line_per_visible_key_as_thick_as_its_weight():
    weights = torch.tensor([0.1, 0.6, 0.3, 0.0])
    chart = figures.attention_lines(weights, LABELS, 2, visible=[True, True, True, False])
    as_figure(chart)  # a valid Plotly figure
    widths = _line_widths(chart)
    assert set(widths) == {0, 1, 2}  # none to the masked key
    assert widths[1] > widths[2] > widths[0]
    assert widths[1] == pytest.approx(0.5 + figures.LINE_WIDEST * 0.6)
    (series,) = chart.series
    np.testing.assert_array_equal(series.values, weights.numpy())
    assert series.points == LABELS
    keys = next(t for t in chart.spec["data"] if t.get("mode", "").startswith("markers+"))
    assert keys["text"] == ["0.10", "0.60", "0.30", "masked"]
    assert "&lt;b&gt;x&lt;/b&gt;" in keys["hovertext"][2]  # a token is never HTML
    assert chart.spec["layout"]["annotations"][0]["text"] == "query 2: &lt;b&gt;x&lt;/b&gt;"


def test_line_view_reads_right_to_left_for_a_right_to_left_text():
    weights = torch.full((3,), 1 / 3)
    ltr = figures.attention_lines(weights, ("0: a", "1: b", "2: c"), 1)
    rtl = figures.attention_lines(weights, ("0: ש", "1: ל", "2: ום"), 1, direction="rtl")
    low, high = ltr.spec["layout"]["xaxis"]["range"]
    assert low < high
    assert rtl.spec["layout"]["xaxis"]["range"] == [high, low]  # key 0 at the right
    # the query's label grows inwards from the edge it is near, so a phone does not cut it
    first = figures.attention_lines(weights, ("0: a", "1: b", "2: c"), 0).spec["layout"]
    assert first["annotations"][0]["xanchor"] == "left"
    first_rtl = figures.attention_lines(weights, ("0: a", "1: b", "2: c"), 0, direction="rtl")
    assert first_rtl.spec["layout"]["annotations"][0]["xanchor"] == "right"


def test_line_view_scales_weights_after_dropout_to_the_widest_line():
    chart = figures.attention_lines(torch.tensor([0.0, 2.0, 0.5]), ("0: a", "1: b", "2: c"), 2)
    widths = _line_widths(chart)
    assert widths[1] == pytest.approx(0.5 + figures.LINE_WIDEST)  # 2.0 is the top, not clipped at 1
    assert 0 not in widths  # a dropped weight draws no line


def test_score_terms_is_a_waterfall_of_the_products_ending_at_the_score():
    q, k = torch.tensor([0.5, -1.0, 2.0]), torch.tensor([2.0, 0.5, 0.25])
    chart = figures.score_terms(q, k, query=2, key=1, score=1.0)
    fig = as_figure(chart)
    (trace,) = fig.data
    assert trace.type == "waterfall"
    assert list(trace.measure) == ["relative"] * 3 + ["total"]
    np.testing.assert_allclose(np.asarray(trace.y), [1.0, -0.5, 0.5, 1.0])
    assert list(trace.x) == ["dim 0", "dim 1", "dim 2", "sum"]
    assert chart.series[2].points[-1] == "sum"
    assert "= 1.0000" in figures.title_of(chart.spec)


def test_softmax_row_marks_the_cell_and_carries_each_exp():
    exps = torch.tensor([1.0, 3.0, 0.0])
    chart = figures.softmax_row(
        torch.tensor([0.0, 1.0986, -np.inf]),
        exps,
        exps / 4,
        ("0: a", "1: b", "2: c"),
        query=1,
        key=1,
        row_sum=4.0,
        visible=[True, True, False],
    )
    fig = as_figure(chart)
    colours = list(fig.data[0].marker.color)
    assert colours == [figures.PLAIN, figures.MARKED, figures.MASKED]
    custom = figures.unpacked(chart.spec["data"][0]["customdata"])
    np.testing.assert_array_equal(custom[:, 1], exps.numpy())
    assert "4.0000" in figures.title_of(chart.spec)


def test_context_terms_and_row_change_are_valid_grouped_bars():
    labels = ("0: a", "1: b")
    terms = figures.context_terms(torch.tensor([0.25, 0.75]), torch.tensor([0.1, 0.9]), labels,
                            query=1, key=0)  # fmt: skip
    change = figures.row_change(torch.tensor([0.5, 0.5]), torch.tensor([0.2, 0.8]), labels, key=1,
                          title="Row 1")  # fmt: skip
    for chart in (terms, change):
        fig = as_figure(chart)
        assert fig.layout.barmode == "group"
        assert len(fig.data) == 2
    np.testing.assert_array_equal(change.series[1].values, np.float32([0.2, 0.8]))
    assert "<sub>" not in terms.label and "Context row 1" in terms.label


@pytest.mark.parametrize(
    "kind, settings, cell",
    [
        ("simplified", Settings(), (2, 4, 0)),
        ("causal", Settings(), (4, 1, 0)),
        ("causal", Settings(training=True, dropout=0.5, seed_dropout=3), (5, 2, 0)),
        ("multihead", Settings(d_out=16, num_heads=4), (3, 3, 2)),
    ],
)
def test_cell_lesson_parts_add_up_to_the_weight(kind, settings, cell):
    prep = prepare.prepare(TEXT, settings, False)
    trace = (
        prepare.simplified(prep) if kind == "simplified" else getattr(prepare, kind)(prep, settings)
    )
    query, key, head = cell
    lesson = cell_lesson.cell_lesson(trace, query, key, head)
    d = lesson.derivation
    waterfall = figures.unpacked(lesson.score_chart.spec["data"][0]["y"])
    assert float(waterfall[:-1].astype(np.float64).sum()) == pytest.approx(d.score, abs=1e-5)
    bars = figures.unpacked(lesson.softmax_chart.spec["data"][0]["y"])
    exps = figures.unpacked(lesson.softmax_chart.spec["data"][0]["customdata"])[:, 1]
    np.testing.assert_allclose(exps / exps.sum(), bars, atol=1e-6)
    weights, _ = derive.weights_of(trace, head)
    np.testing.assert_allclose(bars, weights[query].numpy(), atol=1e-6)
    table = lesson.context_table
    added, module = table.iloc[-2].to_numpy(), table.iloc[-1].to_numpy()
    np.testing.assert_allclose(table.iloc[:-2].to_numpy().sum(axis=0), added, atol=1e-9)
    np.testing.assert_allclose(added, module, atol=1e-5)
    assert lesson.sums.keys() == {"score", "softmax", "context"}
    assert d.query_label in lesson.heading and f"{d.weight:.4f}" in lesson.heading


def test_line_chart_of_a_long_text_draws_a_window_around_the_query():
    s = Settings(context_length=256)
    prep = prepare.prepare(" ".join(f"w{i}" for i in range(70)), s, False)
    trace = prepare.causal(prep, s)
    n = len(trace.labels)
    chart, sentence = cell_lesson.line_chart(trace, n - 1)
    (series,) = chart.series
    assert len(series.points) == cell_lesson.LINE_KEYS
    assert series.points[-1] == trace.labels[-1]
    assert f"keys {n - cell_lesson.LINE_KEYS}–{n - 1} of {n}" == subtitle_of(chart.spec)
    weights, _ = derive.weights_of(trace, after_dropout=True)
    np.testing.assert_array_equal(series.values, weights[n - 1, -cell_lesson.LINE_KEYS :].numpy())
    assert trace.labels[-1] in sentence
