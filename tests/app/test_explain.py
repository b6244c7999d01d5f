""" "Explain a cell" and the line view on pages 1–4, read as a student sees them.

A cell is opened from the URL (``cell=q2k1``; the browser tests open cells with the keyboard and
the mouse), and every number of its derivation is read from the page itself: the waterfall's
terms sum to the score it ends on, the softmax's exps over their sum are its bars and the row
the page's own weights heatmap draws, dropout's factor gives the weight the context used, and
the context terms in the table add up to the module's context row. At the defaults, in book mode
(the chapter's printed numbers), in training mode with dropout, and with 4 and 16 heads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from attnviz import figures

from .conftest import exceptions, open_app, spec_array, values
from .test_content_late import chart_by_key, chart_keys, z_of

ROOT = Path(__file__).resolve().parents[2]

TRAIN = {"train": "true", "dropout": "0.5", "dseed": "7"}


def derivation_charts(at, cell: str) -> dict[str, dict]:
    tag = cell.replace(".", "_")
    return {
        step: chart_by_key(at, f"explain_{step}_{tag}") for step in ("score", "softmax", "context")
    }


def terms_table(at, cell: str):
    """The context terms table: a row per key's term, then their sum, then the module's row.
    It waits in a closed box, built only once opened."""

    def found():
        return [
            d.value
            for d in at.dataframe
            if len(d.value.index) and str(d.value.index[-1]).startswith("context row")
        ]

    assert not found()
    at.session_state[f"explain_terms_{cell.replace('.', '_')}"] = True
    at.run()
    (frame,) = found()
    return frame


def grid_data(at) -> dict:
    """The data the "Explain a cell" grid component was given."""
    found = [
        json.loads(c.proto.json)
        for c in at.get("bidi_component")
        if c.proto.component_name == "attnviz_cell_grid"
    ]
    assert len(found) == 1
    return found[0]


def check_adds_up(at, cell: str, heatmap: str, head: int | None = None) -> dict:
    """Assert the derivation's parts add up, as the page shows them; return what was read."""
    assert not exceptions(at)
    charts = derivation_charts(at, cell)
    waterfall = charts["score"]["data"][0]
    terms = spec_array(waterfall["y"]).astype(np.float64)
    assert waterfall["measure"][-1] == "total"
    assert terms[:-1].sum() == pytest.approx(terms[-1], abs=2e-6)  # Σ q[d]·k[d] = the score
    bars = charts["softmax"]["data"][0]
    weights = spec_array(bars["y"]).astype(np.float64)
    exps = spec_array(bars["customdata"])[:, 1].astype(np.float64)
    np.testing.assert_allclose(exps / exps.sum(), weights, atol=2e-7)  # softmax of the row
    query = int(cell.split("q")[1].split("k")[0])
    key = int(cell.split("k")[1])
    drawn = chart_by_key(at, heatmap)
    z = z_of(drawn, head if head is not None else 0)
    row = np.nan_to_num(z[query], nan=0.0)
    np.testing.assert_allclose(weights, row, atol=1e-6)  # the heatmap's own row
    assert bars["marker"]["color"][key] == figures.MARKED
    table = terms_table(at, cell).to_numpy(dtype=np.float64)
    np.testing.assert_allclose(table[:-2].sum(axis=0), table[-2], atol=1e-9)
    np.testing.assert_allclose(table[-2], table[-1], atol=2e-6)  # Σ α v = the context row
    return {"terms": terms, "weights": weights, "table": table, "charts": charts}


CASES = [
    ("simplified", {}, "q2k4", "p1_weights", None),
    ("trainable", {}, "q1k3", "p2_weights", None),
    ("causal", {}, "q4k2", "p3_route2", None),
    ("multihead", {}, "h1q5k3", "p4_grid", 1),
    ("multihead", {"d_out": "16", "heads": "4"}, "h3q5k2", "p4_grid", 3),
    ("multihead", {"d_out": "32", "heads": "16"}, "h15q4k4", "p4_grid", 15),
    ("causal", {"weights": "trained"}, "q4k2", "p3_route2", None),  # page 8's grown weights
    ("multihead", {"weights": "trained"}, "h1q5k3", "p4_grid", 1),
]


@pytest.mark.parametrize("page, query, cell, heatmap, head", CASES)
def test_the_derivation_adds_up_to_the_cell_the_page_draws(page, query, cell, heatmap, head):
    at = open_app({**query, "cell": cell}, page)
    read = check_adds_up(at, cell, heatmap, head)
    # the sentences state the same numbers the charts draw
    (score,) = [m for m in values(at.markdown) if m.startswith("**Query times key.** ")]
    assert f"is {read['terms'][-1]:.4f}".replace("-", "−") in score
    (softmax,) = [m for m in values(at.markdown) if m.startswith("**Softmax over the row.** ")]
    key = int(cell.split("k")[1])
    assert f"= {read['weights'][key]:.4f}".replace("-", "−") in softmax
    (heading,) = [t for t in values(at.text) if t.startswith("Query ")]
    if head is not None:
        assert f", head {head}: weight" in heading


def test_book_mode_derives_the_chapters_printed_numbers():
    at = open_app({"book": "true", "cell": "q1k2"}, "simplified")
    read = check_adds_up(at, "q1k2", "p1_weights")
    # section 3.3: attn_scores_2[2] = 1.4754, attn_weights_2 = [0.1385, 0.2379, 0.2333, ...]
    assert read["terms"][-1] == pytest.approx(1.4754, abs=5e-5)
    np.testing.assert_allclose(
        read["weights"], [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581], atol=5e-5
    )
    # and z⁽²⁾ = [0.4419, 0.6515, 0.5683], the context row
    np.testing.assert_allclose(read["table"][-1], [0.4419, 0.6515, 0.5683], atol=5e-5)
    texts = values(at.text)
    assert "Query 1: journey → key 2: starts: weight 0.2333" in texts
    codes = [c.value for c in at.code if c.value.startswith("# attnviz/core/modules.py, ")]
    head, text = codes[0].splitlines()
    assert head.startswith("# attnviz/core/modules.py, simplified_attention, line ")
    assert text.startswith("attn_scores = inputs @ inputs.T")
    number = int(head.rsplit(" ", 1)[1])  # the line named is the line shown
    named = ROOT / head.split(",")[0].removeprefix("# ")  # the file the page names
    assert named.read_text(encoding="utf-8").splitlines()[number - 1].strip() == text


def test_training_mode_shows_dropouts_factor_and_the_weights_the_context_used():
    at = open_app({**TRAIN, "cell": "q5k1", "lab": "true"}, "causal")
    read = check_adds_up(at, "q5k1", "p3_route2")
    used = spec_array(read["charts"]["context"]["data"][0]["y"]).astype(np.float64)
    dropped = np.nan_to_num(z_of(chart_by_key(at, "p3_dropped"))[5], nan=0.0)
    np.testing.assert_allclose(used, dropped, atol=1e-6)  # the lab's dropped row, same seed
    kept = used != 0
    np.testing.assert_allclose(used[kept], read["weights"][kept] * 2, rtol=1e-5)  # 1/(1-0.5)
    sentence = [t for t in values(at.markdown) if t.startswith("**Dropout.** ")]
    assert sentence and ("multiplied it by 1/(1−0.5) = 2" in sentence[0] or "zeroed" in sentence[0])


def test_a_cell_of_the_dropout_lab_and_of_the_batch_opens_their_own_trace():
    at = open_app({**TRAIN, "cell": "batch.b1q3k2"}, "causal")
    assert not exceptions(at)
    bars = derivation_charts(at, "batch.b1q3k2")["softmax"]["data"][0]
    drawn = z_of(chart_by_key(at, "p3_batch1"))[3]  # example 1's weights after dropout
    used = spec_array(derivation_charts(at, "batch.b1q3k2")["context"]["data"][0]["y"])
    np.testing.assert_allclose(used, np.nan_to_num(drawn, nan=0.0), atol=1e-6)
    assert spec_array(bars["y"]).sum() == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize(
    "page, query, cell, said",
    [
        ("simplified", {}, "q9k1", "there is no query 9: the text has 6 tokens (0–5)"),
        ("causal", {}, "q2k1k", "not a cell such as q2k1"),
        ("multihead", {}, "h2q1k1", "there is no head 2 (heads 0–1)"),
        ("trainable", {}, "lab.q1k1", "this page has no “lab” weights"),
    ],
)
def test_a_cell_that_is_not_on_the_page_is_named_and_nothing_opens(page, query, cell, said):
    at = open_app({**query, "cell": cell}, page)
    assert not exceptions(at)
    (warning,) = [w for w in values(at.warning) if "The link's cell" in w]
    assert said in warning
    assert not [k for k in chart_keys(at) if k.startswith("explain_")]


def test_the_grid_holds_the_pages_weights_and_marks_the_open_cell():
    at = open_app({"cell": "q3k1"}, "causal")
    data = grid_data(at)
    grid = data["grid"]
    z = z_of(chart_by_key(at, "p3_route2"))
    assert grid["rows"] == grid["cols"] == list(chart_by_key(at, "p3_route2")["data"][0]["y"])
    for i, row in enumerate(grid["values"]):
        for j, v in enumerate(row):
            if j > i:
                assert v is None  # a key the mask hides
            else:
                assert v == pytest.approx(float(z[i, j]), abs=5e-5)
    assert data["selected"] == {"source": "", "head": 0, "batch": 0, "query": 3, "key": 1}
    charts = {p["chart"] for p in data["panels"]}
    assert {"fig_p3_masked", "fig_p3_route2"} <= charts
    assert not {"fig_p3_batch0", "fig_p3_batch1"} & charts  # the batch's box is closed
    opened = grid_data(open_app({"cell": "q3k1", "batch": "true"}, "causal"))
    charts = {p["chart"] for p in opened["panels"]}
    assert {"fig_p3_masked", "fig_p3_route2", "fig_p3_batch0", "fig_p3_batch1"} <= charts


def test_the_slider_recomputes_the_whole_row_inside_its_fragment():
    at = open_app({"cell": "q4k2"}, "causal")
    (slider,) = [s for s in at.slider if s.key.startswith("explain_value_q4k2_0")]
    before = spec_array(chart_by_key(at, "explain_slider_q4k2")["data"][0]["y"])
    after = spec_array(chart_by_key(at, "explain_slider_q4k2")["data"][1]["y"])
    np.testing.assert_allclose(after, before, atol=2e-3)  # the slider starts at q_4[0]
    slider.set_value(slider.max).run()
    assert not exceptions(at)
    moved = spec_array(chart_by_key(at, "explain_slider_q4k2")["data"][1]["y"])
    assert moved.sum() == pytest.approx(1.0, abs=1e-5)
    assert np.abs(moved - before).max() > 1e-3
    assert not moved[5:].any()  # keys after query 4 stay masked
    (sentence,) = [t for t in values(at.text) if t.startswith("With q_4[0] = ")]
    assert f"{slider.max:.3f}" in sentence and "still sums to 1.0000" in sentence


@pytest.mark.parametrize(
    "page, query, heatmap, head",
    [("causal", {}, "p3_route2", None), ("multihead", {"d_out": "16", "heads": "4"}, "p4_grid", 0)],
)
def test_the_line_view_draws_the_last_tokens_weights_in_reading_order(page, query, heatmap, head):
    at = open_app(query, page)
    key = "lines_p3" if page == "causal" else "lines_p4"
    spec = chart_by_key(at, key)
    drawn = np.nan_to_num(z_of(chart_by_key(at, heatmap), head or 0)[-1], nan=0.0)
    markers = [t for t in spec["data"] if t.get("mode", "").startswith("markers+")]
    np.testing.assert_allclose(spec_array(markers[0]["customdata"]), drawn, atol=1e-6)
    lines = [t for t in spec["data"] if t.get("mode") == "lines"]
    assert len(lines) == int((drawn > 0).sum())
    widths = [t["line"]["width"] for t in lines]
    order = np.argsort(drawn[drawn > 0])
    assert [widths[i] for i in order] == sorted(widths)
    assert spec["layout"]["xaxis"]["range"][0] < spec["layout"]["xaxis"]["range"][1]  # ltr


def test_the_line_view_follows_the_query_chosen():
    at = open_app(page="simplified")
    at.select_slider(key="lines_query_p1_6").set_value(3).run()
    assert not exceptions(at)
    spec = chart_by_key(at, "lines_p1")
    markers = [t for t in spec["data"] if t.get("mode", "").startswith("markers+")]
    row = z_of(chart_by_key(at, "p1_weights"))[3]
    np.testing.assert_allclose(spec_array(markers[0]["customdata"]), row, atol=1e-6)
    assert spec["layout"]["annotations"][0]["text"] == "query 3: ␣with"
    assert len([t for t in spec["data"] if t.get("mode") == "lines"]) == 6  # every key visible


def test_the_line_views_token_options_are_never_live_markdown():
    at = open_app({"text": "<b>x</b> *y* [z](http://a.b)"}, "simplified")
    (slider,) = [s for s in at.select_slider if s.key.startswith("lines_query_p1_")]
    options = [str(o) for o in slider.options]
    assert len(options) == 19  # "<", "b", ">", ... one token each
    raw = re.compile(r"(?<!\\)[<>*\[\]()]")  # Markdown syntax without its backslash
    assert not [o for o in options if raw.search(o)], options
    assert "0\\: \\<" in options  # "0: <", shown literally


@pytest.mark.parametrize("page", ["simplified", "causal"])
def test_while_a_prediction_waits_the_cell_and_the_lines_wait_too(page):
    at = open_app({"predict": "true", "cell": "q3k1"}, page)
    assert not exceptions(at)
    assert (
        values(at.caption).count("Its numbers wait until you answer the prediction question above.")
        == 2
    )
    assert not [k for k in chart_keys(at) if k.startswith(("explain_", "lines_"))]
    names = {c.proto.component_name for c in at.get("bidi_component")}
    assert "attnviz_cell_grid" not in names
