"""Long texts (issue 17): one colour switch and one token window for every panel of a pass page,
and a heads grid that labels its tokens and lets the student pick heads past its budget.

Every page here runs on a 60-token text (context 128, so the causal passes keep every token);
the picker runs at 256 tokens.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnviz import figures
from attnviz.core.settings import Settings
from attnviz.core.tokens import tokenize
from attnviz.teach import prepare as lesson

from .conftest import chart_title, charts, exceptions, open_app, spec_array, values

RELATIVE = "relative to an even share (log)"
SENTENCE = "The quick brown fox jumps over the lazy dog while the cat sleeps. "


def text_of(tokens: int) -> str:
    text = b"".join(tokenize(SENTENCE * 30, cap=tokens).pieces).decode("utf-8")
    assert len(tokenize(text)) == tokens
    return text


N = 60
TEXT = text_of(N)
LABELS = list(tokenize(TEXT).labels)
QUERY = {"text": TEXT, "ctx": "128", "lab": "true"}  # page 3: p3_values is in the lab

# Per page: the attention-weights panels (non-causal: every row sees all N keys), one panel
# of tokens by tokens that is not weights, and one of tokens by dimensions.
WEIGHTS = {
    "simplified": (["p1_weights"], [], "p1_scores", ("p1_context", 8)),
    "trainable": (["p2_weights"], [], "p2_scores", ("p2_queries", 8)),
    "causal": ([], ["p3_route1", "p3_route2"], "p3_masked", ("p3_values", 8)),
    "multihead": ([], ["p4_weights", "p4_grid"], "p4_scores", ("p4_context", 4)),
}


def specs(at) -> dict[str, dict]:
    """Every chart drawn through a panel, by the panel's key."""
    return {
        c.proto.id.rsplit("-fig_", 1)[1]: json.loads(c.proto.spec)
        for c in charts(at)
        if "-fig_" in c.proto.id
    }


def heat_z(spec: dict) -> list[np.ndarray]:
    return [spec_array(t["z"]).astype(np.float32) for t in spec["data"] if t["type"] == "heatmap"]


def set_view(at, *, relative: bool = False, window: tuple[int, int] | None = None):
    at.radio(key="colour").set_value(RELATIVE if relative else "weights 0 to 1")
    at.slider(key="tokens").set_value(window or (0, N - 1))
    return at.run()


@pytest.fixture(scope="module", params=list(WEIGHTS))
def page(request):
    """A page at the default view, and the charts it drew there."""
    at = open_app(QUERY, page=request.param)
    assert not exceptions(at)
    return request.param, at, specs(at)


def test_the_relative_scale_draws_each_weight_times_the_keys_its_row_sees(page):
    name, at, default = page
    full, causal, other, _ = WEIGHTS[name]
    set_view(at, relative=True)
    assert not exceptions(at)
    now = specs(at)
    seen = np.arange(1, N + 1, dtype=np.float32)[:, None]
    for key in full + causal:
        for before, after in zip(heat_z(default[key]), heat_z(now[key]), strict=True):
            assert before.shape == (N, N)
            assert np.nanmax(before) <= 1.0 + 1e-6  # the panel's own weights, 0 to 1
            if key in full:
                expected = before * N
            else:
                expected = np.where(np.tri(N) > 0, before * seen, np.nan)
            np.testing.assert_allclose(after, expected.astype(np.float32), rtol=1e-6)
        assert "relative to an even share" in chart_title(now[key])
        hover = [t["hovertemplate"] for t in now[key]["data"] if t["type"] == "heatmap"]
        assert all(f"{figures.RATIO_NAME} %{{z:.4f}}" in h for h in hover)
    # scores are not weights: the switch leaves them as they were
    assert now[other] == default[other]
    set_view(at)


def test_a_window_of_tokens_10_to_20_zooms_every_token_axis_and_labels_each_token(page):
    name, at, default = page
    full, causal, tokens_by_tokens, (tokens_by_dims, d) = WEIGHTS[name]
    set_view(at, window=(10, 20))
    assert not exceptions(at)
    now = specs(at)
    shown = figures.axis_labels(LABELS[10:21])
    for key in [*full, *causal, tokens_by_tokens]:
        spec = now[key]
        for z in heat_z(spec):
            assert z.shape == (11, 11)
        for before, after in zip(heat_z(default[key]), heat_z(spec), strict=True):
            np.testing.assert_array_equal(after, before[10:21, 10:21])
        assert spec["layout"]["yaxis"]["ticktext"] == shown
        assert spec["layout"]["xaxis"]["ticktext"] == shown
        assert f"tokens 10–20 of {N}" in chart_title(spec)
    spec = now[tokens_by_dims]
    (z,) = heat_z(spec)
    assert z.shape == (11, d)
    np.testing.assert_array_equal(z, heat_z(default[tokens_by_dims])[0][10:21])
    assert spec["layout"]["yaxis"]["ticktext"] == shown
    # a dimension axis stays whole: every one of its d labels
    assert spec["layout"]["xaxis"]["ticktext"] == spec["data"][0]["x"]
    assert len(spec["data"][0]["x"]) == d
    # the numbers table follows the window
    key = (full + causal)[0]
    at.session_state[f"numbers_{key}"] = True
    at.run()
    (box,) = [e for e in at.expander if e.proto.id.endswith(f"-numbers_{key}")]
    (table,) = box.dataframe
    assert list(table.value.index) == LABELS[10:21]
    assert list(table.value.columns) == LABELS[10:21]
    at.session_state[f"numbers_{key}"] = False
    set_view(at)


def test_the_default_view_draws_every_chart_as_the_page_built_it(page):
    name, at, default = page
    set_view(at, relative=True, window=(5, 30))
    set_view(at)  # back to the defaults: 0 to 1, every token
    assert specs(at) == default
    full, causal, *_ = WEIGHTS[name]
    for key in full + causal:
        title = chart_title(default[key])
        assert "tokens" not in title and "even share" not in title
        assert all(z.shape == (N, N) for z in heat_z(default[key]))


def test_short_texts_get_the_colour_switch_but_no_window():
    at = open_app(page="causal")  # the default text: 6 tokens
    assert at.radio(key="colour").options == ["weights 0 to 1", RELATIVE]
    assert not [s for s in at.slider if s.key == "tokens"]


def test_the_heads_grid_labels_every_token_of_a_short_text():
    at = open_app({"heads": "4"}, page="multihead")
    spec = specs(at)["p4_grid"]
    labels = figures.axis_labels(tokenize("Your journey starts with one step").labels)
    layout = spec["layout"]
    xs = [layout[k] for k in sorted(layout) if k.startswith("xaxis")]
    ys = [layout[k] for k in sorted(layout) if k.startswith("yaxis")]
    assert len(xs) == 4 and all(x["ticktext"] == labels and x["showticklabels"] for x in xs)
    # the rows are written once, at the left of the grid
    assert [y.get("ticktext") == labels for y in ys].count(True) == 1


def test_past_its_budget_the_heads_grid_draws_exactly_the_heads_picked():
    n = 256
    text = text_of(n)
    at = open_app({"text": text, "d_out": "16", "heads": "8", "ctx": "256"}, page="multihead")
    assert not exceptions(at)
    fit = figures.GRID_CELL_BUDGET // (n * n)
    assert fit == 4
    assert (
        f"8 heads × 256×256 = 524,288 cells is past this page's figure budget (262,144), which "
        f"keeps the browser responsive: {fit} of the 8 heads fit at 256 tokens. Pick the heads "
        "to draw in “Heads to show” above the grid, or narrow the token window to fit more."
    ) in values(at.info)
    picker = at.multiselect(key="heads_shown")
    assert picker.value == [0, 1, 2, 3]
    assert len(heat_z(specs(at)["p4_grid"])) == fit
    picker.set_value([1, 5, 7]).run()
    assert not exceptions(at)
    spec = specs(at)["p4_grid"]
    titles = [a["text"] for a in spec["layout"]["annotations"]]
    assert titles == ["head 1", "head 5", "head 7"]
    assert chart_title(spec).startswith("Attention weights of 3 of 8 heads")
    s = Settings(d_out=16, num_heads=8, context_length=256)
    trace = lesson.multihead(lesson.prepare(text, s, False), s)
    weights = trace.weights_dropped[0].numpy()
    for z, h in zip(heat_z(spec), (1, 5, 7), strict=True):
        np.testing.assert_array_equal(z, weights[h].astype(np.float32))
    # a window of 101 tokens fits 25 heads: every head is drawn, each labelled
    at.slider(key="tokens").set_value((100, 200)).run()
    spec = specs(at)["p4_grid"]
    assert [z.shape for z in heat_z(spec)] == [(101, 101)] * 8
    assert spec["layout"]["yaxis"]["ticktext"] == figures.axis_labels(trace.labels[100:201])


def test_each_view_of_a_panel_is_built_once_for_every_session(monkeypatch):
    from ui import cache

    cache.clear_all()
    built: list[str] = []
    real = cache.viewed
    monkeypatch.setattr(
        cache, "viewed", lambda panel, view: built.append(panel.key) or real(panel, view)
    )
    first = open_app(QUERY, page="causal")
    assert built == []  # the default view draws the panels as built
    set_view(first, relative=True, window=(10, 20))
    keys = list(built)
    assert "p3_route2" in keys and len(keys) == len(set(keys))
    first.run()  # a rerun with the same view builds nothing
    second = open_app(QUERY, page="causal")  # another student, the same view
    set_view(second, relative=True, window=(10, 20))
    assert built == keys
    assert specs(second)["p3_route2"] == specs(first)["p3_route2"]
