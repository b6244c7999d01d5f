"""What the home page and passes 1-2 show a student: the history text, the map of the passes,
the token table and X, the softmax walk's overflow and underflow, the nearly one-hot note, the
loop timing, the why-scale curves and the v1/v2 starting weights, with their real numbers."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attnviz.core.settings import Settings
from attnviz.teach import prepare as engine
from attnviz.teach.lessons import home, simplified, trainable
from attnviz.teach.scaling import scaling_study

from .conftest import (
    OPEN_PARTS,
    PASS_PAGES,
    TITLES,
    badges,
    chart,
    check_badges,
    exceptions,
    open_app,
    spec_array,
    values,
)

DEFAULT_IDS = [7120, 7002, 4940, 351, 530, 2239]
DEFAULT_PIECES = ["Your", "␣journey", "␣starts", "␣with", "␣one", "␣step"]
# 20 GPT-2 tokens: more than the nested loop's cap of 16.
LONG_TEXT = (
    "The quick brown fox jumps over the lazy dog while the small cat watches it "
    "from the old wooden fence"
)
NAIVE = "Naive softmax = stable softmax"
WALK = f"{NAIVE} (query 1's row)"  # the walk's own check, on the one row it shows
EX31 = "SelfAttention_v1 = v2 (exercise 3.1)"
TIMING = re.compile(
    r"^On (?P<k>\d+) tokens: the loop took (?P<loop>[\d.]+) ms, the matrix product "
    r"(?P<mat>[\d.]+) ms, \*\*(?P<ratio>\d+)×\*\* faster"
)
ONE_HOT = re.compile(r"^The rows are nearly one-hot \(the average largest weight is ([\d.]+)\)")


def markdown_with(at, fragment: str) -> list[str]:
    return [m for m in values(at.markdown) if fragment in m]


def caption_starting(at, prefix: str) -> str:
    found = [c for c in values(at.caption) if c.startswith(prefix)]
    assert len(found) == 1, (prefix, values(at.caption))
    return found[0]


def words_starting(at, prefix: str) -> str:
    """What the one badge whose sentence starts with ``prefix`` says holds."""
    found = [w for _, _, w, _ in check_badges(at) if w.startswith(prefix)]
    assert len(found) == 1, (prefix, check_badges(at))
    return found[0]


def timings(at) -> list[re.Match]:
    return [m for m in (TIMING.match(t) for t in values(at.markdown)) if m]


def scores_used(at) -> tuple[float, float]:
    """The (max, min) of the query row the softmax walk used, from its caption."""
    text = caption_starting(at, "Scores used: ")
    found = re.match(r"Scores used: max (\S+), min (\S+)\.", text)
    return float(found[1]), float(found[2])


def within_tolerance(numbers: str) -> bool:
    """Whether a badge's folded numbers put its largest difference within its tolerance."""
    found = re.match(r"largest \|difference\| (\S+); tolerance (\S+) ", numbers)
    assert found, numbers
    return float(found[1]) <= float(found[2])


# --- home -------------------------------------------------------------------------------------
def test_home_tells_why_attention_from_word_order_to_the_transformer():
    at = open_app()
    assert not exceptions(at)
    assert at.title[0].value == TITLES["home"]
    history = values(at.markdown)[0]
    for fragment in (
        "languages order words differently",
        "German puts the verb at the end",
        "an encoder RNN read the whole input and squeezed it into one hidden state",
        "a decoder RNN generated the output from that single vector",
        "Bahdanau attention (2014)",
        "The transformer (2017) kept only the attention and dropped the recurrence",
    ):
        assert fragment in history, fragment
    # The same two pictures twice: side by side for a wide screen, stacked for a phone
    # (ui/style.py shows one of them), each with every box and both titles.
    diagrams = at.get("graphviz_chart")
    assert len(diagrams) == 2
    assert ["rankdir=LR" in d.proto.spec for d in diagrams] == [True, False]
    assert "rankdir=TB" in diagrams[1].proto.spec
    for diagram in diagrams:
        spec = diagram.proto.spec
        assert 'label="RNN encoder–decoder: one bottleneck"' in spec
        assert 'label="hidden state"' in spec
        assert 'label="Attention: every output sees every input"' in spec
        for x in ("x1", "x2", "x3"):
            assert spec.count(f'[label="{x}"]') == 2, x  # once in each picture
    [contrast] = markdown_with(at, "**Self-attention**")
    assert "relates the positions of one sequence to each other" in contrast
    assert "Classic attention related two sequences instead" in contrast
    assert "causal mask" in contrast


def test_home_maps_the_four_passes_to_the_pages():
    at = open_app()
    assert "The four passes" in [s.value for s in at.subheader]
    passes = at.dataframe[-2].value  # after the why-attention tables
    assert list(passes.columns) == ["pass", "adds", "module"]
    names = list(passes["pass"])
    assert names == [
        "1. Simplified self-attention",
        "2. Trainable self-attention",
        "3. Causal attention",
        "4. Multi-head attention",
    ]
    # Each pass is named as the sidebar names its page.
    for name, page in zip(names, PASS_PAGES, strict=True):
        assert TITLES[page].startswith(name), (name, TITLES[page])
    assert list(passes["module"]) == [
        "none",
        "SelfAttention_v1, _v2",
        "CausalAttention",
        "MultiHeadAttentionWrapper, MultiHeadAttention",
    ]
    assert "QKᵀ/√d_k" in passes["adds"][1] and "out_proj" in passes["adds"][3]
    [link] = at.get("page_link")
    assert (link.proto.label, link.proto.page) == ("Start with pass 1", "simplified-attention")


def test_home_token_table_lists_position_id_and_piece_of_the_default_text():
    at = open_app()
    assert markdown_with(at, "GPT-2's tokenizer splits it into 6 tokens.")
    table = at.dataframe[-1].value
    assert list(table.columns)[:3] == ["position", "id", "piece"]
    assert list(table["position"]) == list(range(6))
    assert list(table["id"]) == DEFAULT_IDS
    assert list(table["piece"]) == DEFAULT_PIECES
    assert list(table["bytes"])[1] == "20 6A 6F 75 72 6E 65 79"  # " journey" in UTF-8


@pytest.mark.parametrize(("query", "shape"), [({}, (6, 8)), ({"d_in": "4"}, (6, 4))])
def test_home_x_heatmap_states_its_shape_and_holds_that_many_values(query, shape):
    at = open_app(query)
    assert not exceptions(at) and values(at.warning) == []
    assert markdown_with(at, f"Each token becomes a row of X, shape {shape} (tokens × d_in)")
    spec = chart(at, "X ")
    assert spec["layout"]["title"]["text"] == f"X {shape}"
    trace = spec["data"][0]
    z = spec_array(trace["z"])
    assert z.shape == shape
    assert np.isfinite(z).all() and np.abs(z).max() > 0
    assert trace["y"] == [f"{i}: {p}" for i, p in enumerate(DEFAULT_PIECES)]
    assert trace["x"] == [f"dim {j}" for j in range(shape[1])]


def test_home_in_book_mode_shows_the_six_words_and_a_6_by_3_x():
    at = open_app({"book": "true"})
    words = at.dataframe[-1].value
    assert list(words.columns) == ["position", "word"]
    assert list(words["word"]) == ["Your", "journey", "starts", "with", "one", "step"]
    assert spec_array(chart(at, "X (6, 3)")["data"][0]["z"]).shape == (6, 3)


# --- page 1 -----------------------------------------------------------------------------------
def test_page_1_softmax_walk_passes_at_the_defaults():
    at = open_app(page="simplified")
    assert at.select_slider(key="stretch").value == 1
    assert at.select_slider(key="shift").value == 0
    assert badges(at)[0] == ("green", f"{WALK}: pass")
    # The walk's badge is the page's first; what holds under it, its numbers in the fold.
    _, _, words, numbers = check_badges(at)[0]
    assert words.startswith("With no overflow the two formulas agree")
    assert within_tolerance(numbers)
    assert scores_used(at)[0] < 88.7


def test_page_1_stretching_the_inputs_by_50_documents_the_naive_overflow():
    at = open_app(page="simplified")
    top, _ = scores_used(at)
    at.select_slider(key="stretch").set_value(50).run()
    assert not exceptions(at)
    assert badges(at)[0] == ("orange", f"{WALK}: documented")
    why = words_starting(at, "Naive overflowed: ")
    found = re.match(r"Naive overflowed: max score (\S+) > 88\.7, so exp\(\) is inf", why)
    assert found, why
    stretched = float(found[1])
    assert stretched == pytest.approx(2500 * top, rel=1e-3)  # scores grow by a² = 2500
    assert stretched == scores_used(at)[0]
    assert "(1 row affected" in why  # the walk shows one query row
    # Only the walk's stretched row overflows: the page's own check on X Xᵀ still passes.
    assert ("green", f"{NAIVE}: pass") in badges(at)[1:]
    walk = {
        t["name"]: spec_array(t["y"]).astype(float)
        for t in chart(at, "Weights for query 1")["data"]
    }
    assert not np.isfinite(walk["naive softmax"]).all()
    assert walk["torch.softmax"].sum() == pytest.approx(1.0, abs=1e-5)


def test_page_1_shifting_the_scores_by_minus_300_documents_the_naive_underflow():
    at = open_app(page="simplified")
    top, low = scores_used(at)
    at.select_slider(key="shift").set_value(-300).run()
    assert badges(at)[0] == ("orange", f"{WALK}: documented")
    why = words_starting(at, "Naive underflowed: ")
    found = re.match(r"Naive underflowed: max score (\S+) < -103\.3, so every exp\(\) is 0", why)
    assert found, why
    assert float(found[1]) == pytest.approx(top - 300, abs=0.1)
    assert scores_used(at) == pytest.approx((top - 300, low - 300), abs=0.1)
    at.select_slider(key="shift").set_value(0).run()
    assert badges(at)[0] == ("green", f"{WALK}: pass")


def test_page_1_rows_mix_at_the_default_and_a_wide_d_in_with_no_one_hot_note():
    # Typed rows have |x|² near 1 at every d_in (issue 14), so softmax(X Xᵀ) spreads each
    # row over several tokens instead of collapsing onto the token itself.
    at = open_app(page="simplified")
    for d_in in (8, 64):
        if d_in != 8:
            at.sidebar.number_input(key="d_in").set_value(d_in).run()
        weights = spec_array(chart(at, "Weights A")["data"][0]["z"]).astype(float)
        assert weights.shape == (6, 6)
        assert weights.max() <= 0.8, d_in
        assert ((weights >= 0.1).sum(axis=1) >= 2).all(), d_in
        assert not [t for t in values(at.info) if ONE_HOT.match(t)]


def test_page_1_book_mode_rows_are_not_one_hot_and_get_no_such_note():
    at = open_app({"book": "true"}, page="simplified")
    weights = spec_array(chart(at, "Weights A")["data"][0]["z"]).astype(float)
    assert weights.shape == (6, 6)
    assert weights.max(axis=1).mean() < 0.5  # d_in = 3: the book's weights are spread out
    assert not any("one-hot" in t for t in values(at.info) + values(at.markdown))


def test_page_1_times_the_loop_only_on_its_button_and_on_at_most_16_tokens():
    at = open_app(page="simplified")
    assert at.button(key="p1_time").label == "Time the loop and the matrix product on 6 tokens"
    assert timings(at) == []
    at.run()
    assert timings(at) == []
    at.button(key="p1_time").click().run()
    [timing] = timings(at)
    assert int(timing["k"]) == 6
    assert float(timing["loop"]) > 0 and float(timing["mat"]) > 0

    # A longer text: the earlier timing (of 6 tokens) is not shown for it.
    at.sidebar.text_area(key="text").set_value(LONG_TEXT).run()
    assert not exceptions(at)
    assert at.button(key="p1_time").label == "Time the loop and the matrix product on 16 tokens"
    assert timings(at) == []
    at.button(key="p1_time").click().run()
    [timing] = timings(at)
    assert int(timing["k"]) == 16
    loops = [
        n for _, _, w, n in check_badges(at) if "16x16 dot products equal the matrix product" in w
    ]
    assert len(loops) == 1 and within_tolerance(loops[0])


@pytest.mark.parametrize(("query", "x_name", "z_name"), [(1, "x⁽²⁾", "z⁽²⁾"), (3, "x⁽⁴⁾", "z⁽⁴⁾")])
def test_page_1_query_code_uses_the_0_based_index_of_the_chosen_label(query, x_name, z_name):
    at = open_app(page="simplified")
    box = at.selectbox(key="query")
    assert box.value == 1  # the default query is "journey", as in the chapter
    if query != 1:
        box.set_value(query).run()
    label = f"{query}: {DEFAULT_PIECES[query]}"
    assert at.selectbox(key="query").options[query] == label
    # 0-based rows, with the book's 1-based name beside them.
    assert markdown_with(at, f"The query is `inputs[{query}]`, the book's {x_name} (rows count")
    assert markdown_with(at, f"z for query {query} (`context[{query}]`, the book's {z_name})")
    bars = chart(at, f"Scores ω for query {query}")["data"][0]
    highlighted = [
        x for x, c in zip(bars["x"], bars["marker"]["color"], strict=True) if c == "#fde725"
    ]
    assert highlighted == [label]
    rows = chart(at, f"α_{query}j · x_j, and their sum z")["data"][0]["y"]
    assert rows[-1] == f"z (query {query})"


# --- page 2 -----------------------------------------------------------------------------------
def test_page_2_explains_query_key_value_and_the_two_kinds_of_weight():
    at = open_app(page="trainable")
    intro = values(at.markdown)[0]
    assert "a **query** (what this token is looking for)" in intro
    assert "a **key** (what it offers to be found by)" in intro
    assert "a **value** (what it passes on)" in intro
    assert "like a search: the query is matched against every key" in intro
    assert "Two different things are called “weights” here" in intro
    assert "the trainable weight matrices W_q, W_k, W_v, fixed after training" in intro
    assert "the attention weights α, recomputed for every input" in intro


def test_page_2_why_scale_charts_plot_the_engines_study():
    at = open_app(OPEN_PARTS, page="trainable")
    study = scaling_study()
    entropy = chart(at, "Row entropy (bits)")
    grad = chart(at, "Softmax gradient norm |∂α/∂ω|")
    for spec, y_name in ((entropy, "bits"), (grad, "norm")):
        assert spec["layout"]["xaxis"]["title"]["text"] == "d_k"
        assert spec["layout"]["xaxis"]["type"] == "log"
        assert spec["layout"]["yaxis"]["title"]["text"] == y_name
        for t in spec["data"]:
            assert list(spec_array(t["x"])) == list(study.d_ks), t["name"]
    lines = {t["name"]: spec_array(t["y"]) for t in entropy["data"]}
    # The legend says "scaled by 1/√d_k" in words: a small "÷√d_k" read as "+√d_k" (issue 36).
    assert list(lines) == ["scaled by 1/√d_k", "unscaled", "uniform"]
    assert not any("÷" in name or "+" in name for name in lines)
    np.testing.assert_allclose(lines["scaled by 1/√d_k"], study.entropy_scaled, rtol=1e-6)
    np.testing.assert_allclose(lines["unscaled"], study.entropy_unscaled, rtol=1e-6)
    np.testing.assert_allclose(lines["uniform"], 4.0)
    assert lines["unscaled"][0] > 3 and lines["unscaled"][-1] < 0.5
    lines = {t["name"]: spec_array(t["y"]) for t in grad["data"]}
    assert list(lines) == ["scaled by 1/√d_k", "unscaled"]
    np.testing.assert_allclose(lines["unscaled"], study.grad_norm_unscaled, rtol=1e-6)
    assert lines["unscaled"][-1] < 0.25 * lines["scaled by 1/√d_k"][-1]
    assert caption_starting(at, "At d_k=1024: ") == (
        f"At d_k=1024: largest weight {study.max_weight_unscaled[-1]:.3f} unscaled against "
        f"{study.max_weight_scaled[-1]:.3f} scaled."
    )


@pytest.mark.parametrize("d_in", [16, 64])
def test_page_2_starting_weights_v1_in_0_1_and_v2_within_one_over_sqrt_d_in(d_in):
    at = open_app({"d_in": str(d_in), **OPEN_PARTS}, page="trainable")
    assert not exceptions(at)
    d_out = at.sidebar.number_input(key="d_out").value
    bound = 1 / np.sqrt(d_in)
    spec = chart(at, "Initial weights")
    assert spec["layout"]["xaxis"]["title"]["text"] == "weight"
    # Both series share the bins; a filled bin [low, high) holds at least one weight.
    width = spec["data"][0]["width"]
    eps = 1e-6  # the bin centres are float32
    filled = {}
    for t in spec["data"]:
        centres = spec_array(t["x"]).astype(float)
        counts = spec_array(t["y"]).astype(float)
        assert counts.sum() == 3 * d_in * d_out, t["name"]  # every entry of W_q, W_k, W_v
        filled[t["name"]] = (centres[counts > 0] - width / 2, centres[counts > 0] + width / 2)
    assert list(filled) == ["v1: U[0, 1)", "v2: U(±1/√d_in)"]
    # v1: every filled bin reaches into [0, 1), the last edge (its largest weight) is below 1,
    # and the weights spread far beyond v2's bound, up to above 0.9.
    low, high = filled["v1: U[0, 1)"]
    assert (high > 0).all() and low.min() > -width
    assert 0.9 < high.max() < 1 + eps
    # v2: the first edge (its smallest weight) is above −1/√d_in, every filled bin starts below
    # 1/√d_in, and there are weights on both sides of 0.
    low, high = filled["v2: U(±1/√d_in)"]
    assert low.min() > -bound - eps and (low < bound).all()
    assert low.min() < -bound / 2 and high.max() > bound / 2


def test_page_2_exercise_3_1_badge_passes_and_is_not_applicable_with_a_bias():
    at = open_app(OPEN_PARTS, page="trainable")
    # Once, beside the code that does the transfer (issue 14: it used to appear twice).
    assert badges(at).count(("green", f"{EX31}: pass")) == 1
    agree = [n for _, _, w, n in check_badges(at) if "with W = weight.T the two agree" in w]
    assert len(agree) == 1 and within_tolerance(agree[0])
    at.sidebar.toggle(key="bias").set_value(True).run()
    assert badges(at).count(("gray", f"{EX31}: n/a")) == 1
    assert "v1 has no bias, so it cannot copy a v2 built with qkv_bias=True." in [
        w for _, _, w, _ in check_badges(at)
    ]


# --- the lesson's sentences are on the page (issue 14) ----------------------------------------
MODES = {
    "default": ({}, Settings()),
    "training": ({"train": "true", "dropout": "0.5"}, Settings(training=True, dropout=0.5)),
    "book": ({"book": "true"}, Settings()),
}


def lesson_claims(page: str, mode: str) -> list[str]:
    """The engine's claims for this page and mode, built without the app."""
    settings, book = MODES[mode][1], mode == "book"
    prep = engine.prepare("Your journey starts with one step", settings, book)
    if page == "home":
        return [c.text for c in home.home_lesson(prep).claims]
    if page == "simplified":
        les = simplified.simplified_lesson(engine.simplified(prep), book)
        return [c.text for c in les.claims]
    version, other = ("v1", "v2") if book else ("v2", "v1")
    wide_s = trainable.wide_settings(settings, book)
    les = trainable.trainable_lesson(
        engine.trainable(prep, settings, version),
        engine.trainable(prep, settings, other),
        engine.trainable(prep, wide_s, version) if wide_s else None,
        book,
    )
    return [c.text for c in les.claims]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("page", ["home", "simplified", "trainable"])
def test_every_sentence_the_lesson_states_is_on_the_page(page, mode):
    at = open_app({**MODES[mode][0], **OPEN_PARTS}, page=page)
    assert not exceptions(at)
    shown = values(at.markdown) + values(at.caption)
    claims = lesson_claims(page, mode)
    assert len(claims) >= 2
    for text in claims:
        assert text in shown, (page, mode, text)
    # The old, uncomputed sentences are gone (issue 14).
    assert not [t for t in shown + values(at.info) if "stay near 0" in t or "one-hot (" in t]


def test_page_2_names_the_one_click_that_makes_scaling_matter():
    at = open_app(OPEN_PARTS, page="trainable")
    [here] = [c for c in values(at.caption) if c.startswith("Here (d_k = 8), dropping the 1/√d_k")]
    [wide] = [
        c for c in values(at.caption) if c.startswith("At d_out = 128 (the map on the right)")
    ]
    moved = float(re.search(r"by up to (\d+\.\d+)", here)[1])
    moved_wide = float(re.search(r"by up to (\d+\.\d+)", wide)[1])
    assert moved_wide >= 0.1 > moved
    # The two maps hold those numbers: the largest change in each, to 3 decimals.
    for prefix, number in (
        ("softmax(Q Kᵀ) − softmax(Q Kᵀ/√8)", moved),
        ("softmax(Q Kᵀ) − softmax(Q Kᵀ/√128)", moved_wide),
    ):
        z = spec_array(chart(at, prefix)["data"][0]["z"]).astype(float)
        assert np.abs(z).max() == pytest.approx(number, abs=5e-4)
    # The one click: a button sets d_out to 128 in the sidebar (and so in the link); the page
    # then needs no second map and says the width is enough.
    assert at.button(key="p2_wide").label == "Set d_out to 128 in the sidebar"
    at.button(key="p2_wide").click().run()
    assert not exceptions(at)
    assert at.sidebar.number_input(key="d_out").value == 128
    assert not [b for b in at.button if b.key == "p2_wide"]
    assert [c for c in values(at.caption) if c.startswith("Here (d_k = 128)")]
    assert "d_out = 128 is already 128 or wider." in values(at.caption)


@pytest.mark.parametrize("page", ["simplified", "trainable"])
def test_passes_1_and_2_in_training_mode_say_their_weights_are_the_ones_used(page):
    at = open_app({"train": "true", "dropout": "0.5"}, page=page)
    [note] = [t for t in values(at.info) if t.startswith("Training mode is on")]
    assert "no dropout" in note
    # ... and the weights drawn are a softmax's (no dropout scaled or zeroed any).
    weights = spec_array(chart(at, "Weights A")["data"][0]["z"]).astype(float)
    np.testing.assert_allclose(weights.sum(axis=1), 1, atol=1e-5)
    # Eval mode says nothing of the kind.
    at = open_app(page=page)
    assert not [t for t in values(at.info) if t.startswith("Training mode")]
