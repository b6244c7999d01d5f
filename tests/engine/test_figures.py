"""Figures: escaped category labels, 4-decimal hover, float32 data, cropping. Every spec here
also passes Plotly's own validation (``as_figure``)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import torch
from hypothesis import given
from hypothesis import strategies as st

from attnviz import figures
from attnviz.core.tokens import tokenize
from tests.support.specs import as_figure, subtitle_of


def _heatmap_trace(spec) -> go.Heatmap:
    return as_figure(spec).data[0]


def test_heatmap_labels_are_escaped_categories_with_one_row_per_position():
    toks = tokenize("<b>1</b> 1 <b>")
    z = torch.eye(len(toks))
    fig = as_figure(figures.heatmap(z, toks.labels, toks.labels, title="weights"))
    trace = fig.data[0]
    assert len(trace.y) == len(toks) == len(set(trace.y))
    assert all("<" not in label for label in trace.x)
    assert any("&lt;" in label for label in trace.x)
    assert fig.layout.xaxis.type == "category" and fig.layout.yaxis.type == "category"
    assert "%{z:.4f}" in trace.hovertemplate
    assert "%{y}" in trace.hovertemplate and "%{x}" in trace.hovertemplate


def test_heatmap_data_is_float32_and_minus_infinity_is_blank():
    z = torch.tensor([[0.5, -torch.inf], [0.25, 0.75]])
    trace = _heatmap_trace(
        figures.heatmap(z, ["0: a", "1: b"], ["0: a", "1: b"], title="s", kind="signed")
    )
    data = np.asarray(trace.z)
    assert data.dtype == np.float32
    assert np.isnan(data[0, 1])
    assert data[1, 1] == np.float32(0.75)
    assert trace.zmid == 0.0 and trace.zmin == -trace.zmax


def test_weights_use_a_fixed_zero_to_one_scale():
    trace = _heatmap_trace(
        figures.heatmap(torch.full((2, 2), 0.1), ["a", "b"], ["a", "b"], title="w")
    )
    assert (trace.zmin, trace.zmax) == (0.0, 1.0)
    after_dropout = figures.heatmap(torch.ones(2, 2), ["a", "b"], ["a", "b"], title="w", zmax=2.0)
    assert _heatmap_trace(after_dropout).zmax == 2.0


def test_large_matrices_are_cropped_and_the_subtitle_says_so():
    n = figures.MAX_SIDE + 4
    labels = [f"{i}: t" for i in range(n)]
    spec = figures.heatmap(torch.zeros(n, 3), labels, ["a", "b", "c"], title="big", kind="signed")
    assert np.asarray(_heatmap_trace(spec).z).shape == (figures.MAX_SIDE, 3)
    assert subtitle_of(spec) == f"rows 0–{figures.MAX_SIDE - 1} of {n}"
    assert figures.title_of(spec) == "big"
    noted = figures.heatmap(torch.zeros(n, 3), labels, list("abc"), title="big", note="a note")
    assert subtitle_of(noted) == f"a note, rows 0–{figures.MAX_SIDE - 1} of {n}"


def test_escape_label_shortens_long_tokens():
    label = figures.escape_label("12: " + "x" * 40)
    assert len(label) == figures.LABEL_CHARS
    assert label.endswith("…") and label.startswith("12: ")


@given(st.text(max_size=200))
def test_escaped_token_labels_stay_unique(text):
    labels = figures.axis_labels(tokenize(text, cap=256).labels)
    assert len(labels) == len(set(labels))
    assert all("<" not in label and ">" not in label for label in labels)


def test_heads_grid_draws_one_panel_per_head_on_a_shared_scale():
    w = torch.softmax(torch.randn(3, 4, 4, generator=torch.Generator().manual_seed(0)), -1)
    fig = as_figure(figures.heads_grid(w, ["a", "b", "c", "d"], title="heads"))
    assert len(fig.data) == 3
    assert [a.text for a in fig.layout.annotations] == ["head 0", "head 1", "head 2"]
    assert all(t.coloraxis == "coloraxis" for t in fig.data)
    # one subplot per head, side by side, none overlapping another
    domains = [fig.layout[f"xaxis{i or ''}"].domain for i in (0, 2, 3)]
    assert all(a[1] < b[0] for a, b in zip(domains, domains[1:], strict=False))
    assert [t.xaxis for t in fig.data] == ["x", "x2", "x3"]
    np.testing.assert_array_equal(np.asarray(fig.data[2].z), w[2].numpy())


def _relative_to_uniform(weights, labels) -> figures.Spec:
    """Causal weights as the "relative to an even share" view draws them (attnviz.teach.panel):
    the ratio to an even share, on the log2 colour scale."""
    ratio = figures.ratio_to_uniform(weights, causal=True)
    return figures.heatmap(
        ratio, labels, labels, title="r", kind="relative", value_name=figures.RATIO_NAME
    )


def test_relative_to_uniform_is_one_for_uniform_causal_weights():
    n = 4
    w = torch.tril(torch.ones(n, n))
    w = w / w.sum(-1, keepdim=True)
    z = np.asarray(_heatmap_trace(_relative_to_uniform(w, list("abcd"))).z)
    visible = np.tril(np.ones((n, n), dtype=bool))
    assert np.allclose(z[visible], 1.0, atol=1e-6)
    assert np.isnan(z[~visible]).all()


def test_relative_to_uniform_hovers_the_ratio_from_z_without_per_cell_strings():
    w = torch.tensor([[1.0, 0.0, 0.0], [0.8, 0.2, 0.0], [0.5, 0.25, 0.25]])
    fig = as_figure(_relative_to_uniform(w, ["0: <b>", "1: a", "2: b"]))
    trace = fig.data[0]
    # row 2 sees 3 keys: 0.5 * 3 = 1.5 times an even share; row 1: 0.8 * 2 = 1.6
    assert np.asarray(trace.z)[2, 0] == np.float32(1.5)
    assert np.asarray(trace.z)[1, 0] == np.float32(1.6)
    assert trace.text is None and trace.customdata is None
    assert "%{z:.4f}" in trace.hovertemplate and "%{y}" in trace.hovertemplate
    assert trace.y[0] == "0: &lt;b&gt;"
    # colour on log2: a ratio r and 1/r sit at the same distance from the white middle
    stops = [p for p, _ in trace.colorscale]
    colours = [c for _, c in trace.colorscale]
    middle = len(stops) // 2
    assert np.isclose(stops[middle] * (trace.zmax - trace.zmin) + trace.zmin, 1.0)
    assert colours[middle - 8] != colours[middle] != colours[middle + 8]
    bar = fig.data[1].marker.colorbar
    assert list(bar.ticktext) == ["1/16×", "1/4×", "even share", "4×", "16×"]
    assert fig.data[1].hoverinfo == "skip"


def test_outlined_rows_get_one_rectangle_each():
    spec = figures.heatmap(
        torch.zeros(4, 4), list("abcd"), list("abcd"), title="w", outline_rows=[0, 2]
    )
    rects = [(s.y0, s.y1) for s in as_figure(spec).layout.shapes]
    assert rects == [(-0.5, 0.5), (1.5, 2.5)]
    plain = figures.heatmap(torch.zeros(2, 2), list("ab"), list("ab"), title="w")
    assert as_figure(plain).layout.shapes == ()


def test_bars_highlight_one_token():
    chart = figures.bars(
        torch.tensor([0.1, 0.7, 0.2]), ["0: a", "1: b", "2: c"], title="q", highlight=1
    )
    colours = list(as_figure(chart).data[0].marker.color)
    assert colours[1] != colours[0] == colours[2]


def test_figure_bytes_grows_with_the_matrix():
    small = figures.figure_bytes(
        figures.heatmap(torch.zeros(4, 4), list("abcd"), list("abcd"), title="s")
    )
    labels = [str(i) for i in range(64)]
    large = figures.figure_bytes(figures.heatmap(torch.zeros(64, 64), labels, labels, title="s"))
    assert 0 < small < large


def test_the_projector_look_draws_larger_text_and_a_taller_figure():
    labels = [f"{i}: t" for i in range(6)]
    z = torch.rand(6, 6, generator=torch.Generator().manual_seed(1))
    normal = as_figure(figures.heatmap(z, labels, labels, title="w"))
    big = as_figure(figures.heatmap(z, labels, labels, title="w", look=figures.PROJECTOR))
    # The cell numbers are sized by plotly.js to fit their cells, at most the layout's font size.
    assert big.data[0].textfont.size is None and normal.data[0].textfont.size is None
    assert big.layout.font.size == figures.PROJECTOR.cells >= 28 > normal.layout.font.size
    assert big.layout.xaxis.tickfont.size == figures.PROJECTOR.ticks >= 22
    assert big.layout.yaxis.tickfont.size >= 22 and big.layout.title.font.size > 24
    assert big.layout.height >= 540 > normal.layout.height
    np.testing.assert_array_equal(np.asarray(big.data[0].z), np.asarray(normal.data[0].z))


def test_numbers_travel_as_float32_base64_and_come_back_exactly():
    z = torch.tensor([[0.1234567, -2.5], [float("nan"), 3.0]])
    packed = figures.packed(z)
    assert packed["dtype"] == "f4" and packed["shape"] == "2, 2"
    back = figures.unpacked(packed)
    np.testing.assert_array_equal(back, z.numpy())  # NaN compares equal here
    small = figures.packed(np.array([[1, -2]], dtype=np.int8))
    assert small["dtype"] == "i1" and figures.unpacked(small).tolist() == [[1, -2]]
