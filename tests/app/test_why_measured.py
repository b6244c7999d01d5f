"""The home page's "Why attention, measured" (issue 38), as a student sees it: the recorded runs'
charts and sentences, a picked or typed sentence through both models, and a clear message for
words the toy language does not have."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnviz.models.bottleneck import bottleneck_run as R
from attnviz.models.bottleneck import toy_language as L
from attnviz.teach.lessons import home as H

from .conftest import chart, exceptions, open_app, spec_array, unescape, values

WHY_CHARTS = (
    "Token accuracy against sentence length",
    "One vector (no attention): token accuracy during training",
    "With attention: token accuracy during training",
    "Alignment: attention weights",
)


def texts(at) -> list[str]:
    return values(at.markdown)


def test_the_recorded_runs_as_the_page_shows_them():
    at = open_app()
    assert not exceptions(at)
    rec = R.recorded()
    b, a = rec.bottleneck.accuracy, rec.attention.accuracy
    shown = texts(at)
    sentence = (
        f"At 30 words the one-vector decoder gets {100 * b[30]:.0f} % of the words right; "
        f"with attention, {100 * a[30]:.0f} %."
    )
    assert any(t.startswith(sentence) for t in shown), shown
    spec = chart(at, "Token accuracy against sentence length")
    by_name = {t["name"]: spec_array(t["y"]) for t in spec["data"]}
    assert np.allclose(by_name[H.NAMES["bottleneck"]], [b[n] for n in range(5, 41)])
    assert np.allclose(by_name[H.NAMES["attention"]], [a[n] for n in range(5, 41)])
    for title in WHY_CHARTS:
        chart(at, title)  # exactly one each
    assert any(t.startswith("Looked up word by word, ") for t in shown)
    assert any(t.startswith("This is cross-attention: the query is the decoder") for t in shown)
    hits = rec.attention.alignment_hits
    assert hits is not None
    assert any(f"{100 * hits:.0f} % of the words it writes" in t for t in shown)


def test_the_picked_sentence_through_both_models():
    at = open_app()
    at.slider(key="why_words").set_value(40).run()
    assert not exceptions(at)
    words = L.seeded_sentence(0, 40)
    lesson = H.align_lesson(words, R.recorded())
    shown = texts(at)
    assert "English: " + " ".join(words) in shown
    assert lesson.outcome in shown
    spec = chart(at, "Alignment: attention weights")
    (trace,) = spec["data"]
    z = spec_array(trace["z"])
    assert z.shape == (40, 40)
    assert np.allclose(z, lesson.panels["why_align"].values.numpy(), atol=1e-6)
    assert trace["x"][0].endswith(words[0])
    # no separate row box: the cells are explained by "Explain a cell" (below)
    assert not at.selectbox
    assert [e.label for e in at.expander if e.label.startswith("Explain a row")] == []


def test_a_typed_sentence_replaces_the_picked_one():
    at = open_app()
    at.text_input(key="why_text").set_value("Big red fox sees small cat").run()
    assert not exceptions(at)
    words = ("big", "red", "fox", "sees", "small", "cat")
    lesson = H.align_lesson(words, R.recorded())
    assert lesson.outcome in texts(at)
    assert chart(at, "Alignment: attention weights")["data"][0]["x"] == [
        f"{j + 1}: {w}" for j, w in enumerate(words)
    ]


def test_unknown_words_get_a_clear_message_and_no_alignment():
    at = open_app()
    at.text_input(key="why_text").set_value("the cat sees a dog").run()
    assert not exceptions(at)
    assert [unescape(w) for w in values(at.warning)] == [
        "The toy language has no word “the”, “a”. Its words: " + ", ".join(L.SOURCE_WORDS) + "."
    ]
    titles = [c for c in WHY_CHARTS[:3]]
    for title in titles:
        chart(at, title)
    assert not [
        t for t in texts(at) if t.startswith("With attention, ")
    ]  # no outcome for a sentence it cannot read


# --- the toy sentence in the URL ----------------------------------------------------------------
def aligned(at) -> tuple[list[str], list[str], np.ndarray]:
    """The alignment figure's rows, columns and weights, as the page sends them."""
    (trace,) = chart(at, "Alignment: attention weights")["data"]
    return list(trace["y"]), list(trace["x"]), spec_array(trace["z"])


def assert_aligns(at, words: tuple[str, ...]) -> None:
    lesson = H.align_lesson(words, R.recorded())
    panel = lesson.panels["why_align"]
    rows, cols, z = aligned(at)
    assert cols == [f"{j + 1}: {w}" for j, w in enumerate(words)]
    assert rows == list(panel.rows)
    assert np.allclose(z, panel.values.numpy(), atol=1e-6)
    assert "English: " + " ".join(words) in texts(at)


def test_a_link_opens_the_picked_sentence_it_names():
    at = open_app({"why_words": "7", "why_seed": "42"})
    assert not exceptions(at)
    assert not [w for w in values(at.warning) if "link" in w]
    assert at.slider(key="why_words").value == 7
    assert at.number_input(key="why_seed").value == 42
    assert_aligns(at, L.seeded_sentence(42, 7))
    copy = [c for c in at.get("bidi_component") if c.proto.component_name == "attnviz_copy_link"]
    assert len(copy) == 1  # "Copy link to this view": the address holds the sentence


def test_a_link_opens_the_typed_sentence_it_names():
    at = open_app({"why_text": "Small cat finds big dog", "why_words": "30"})
    assert not exceptions(at)
    assert at.text_input(key="why_text").value == "Small cat finds big dog"
    assert_aligns(at, ("small", "cat", "finds", "big", "dog"))


HOSTILE = [
    ({"why_text": "the cat sees a dog"}, "why_text (no toy word “the” and 1 more)"),
    ({"why_text": "cat " * 41}, "why_text (41 words, more than 40)"),
    ({"why_text": "<b>fox</b> 🦊"}, "why_text (no toy word “b”)"),
    ({"why_text": "🦊 🐱"}, "why_text (no word of the toy's English)"),
    ({"why_text": "fox " * 400}, "why_text (longer than 600 characters)"),
    ({"why_seed": "-1"}, "why_seed (outside 0–2147483647)"),
    ({"why_seed": "12.5"}, "why_seed (not a whole number)"),
    ({"why_seed": "<script>"}, "why_seed (not a whole number)"),
    ({"why_words": "41"}, "why_words (outside 1–40)"),
    ({"why_words": "0"}, "why_words (outside 1–40)"),
]


@pytest.mark.parametrize(
    ("query", "named"), HOSTILE, ids=[f"{n.split()[0]}-{i}" for i, (_, n) in enumerate(HOSTILE)]
)
def test_nonsense_in_the_link_is_named_and_the_default_sentence_shown(query, named):
    at = open_app(query)
    assert not exceptions(at)
    said = [unescape(w) for w in values(at.warning)]
    assert said == [
        f"Some values in the link were not understood and the defaults are used instead: {named}."
    ], said
    assert at.text_input(key="why_text").value == ""
    assert at.slider(key="why_words").value == 20
    assert at.number_input(key="why_seed").value == 0
    assert_aligns(at, L.seeded_sentence(0, 20))


def test_moved_controls_change_the_figure():
    """(AppTest does not write a bound widget's value into the URL: the browser test does,
    tests/browser/test_why_in_chromium.py.)"""
    at = open_app()
    at.number_input(key="why_seed").set_value(9).run()
    at.slider(key="why_words").set_value(5).run()
    assert not exceptions(at)
    assert_aligns(at, L.seeded_sentence(9, 5))


# --- "Explain a cell" on the alignment ----------------------------------------------------------
def derivation_texts(at) -> list[str]:
    return [unescape(str(m.value)) for m in at.markdown]


@pytest.mark.parametrize(
    ("words", "seed", "t", "j"), [(40, 0, 3, 38), (6, 2, 1, 1), (12, 7, 12, 5)]
)
def test_a_cell_link_opens_its_derivation_with_the_matrix_s_numbers(words, seed, t, j):
    """cell=q{t}k{j} (counted from 1, as the page counts the words) opens Mirror word t
    against English word j: the derivation's weight is the figure's cell."""
    at = open_app({"why_words": str(words), "why_seed": str(seed), "cell": f"q{t}k{j}"})
    assert not exceptions(at)
    sentence = L.seeded_sentence(seed, words)
    lesson = H.align_lesson(sentence, R.recorded())
    rows, cols, z = aligned(at)
    shown = float(z[t - 1, j - 1])
    cell = lesson.cell(t - 1, j - 1)
    assert cell.weight == pytest.approx(shown, abs=1e-6)
    heading = [str(x.value) for x in at.text if str(x.value).startswith("Mirror word ")]
    assert heading == [
        f"Mirror word {rows[t - 1]} → English word {cols[j - 1]}: weight {shown:.4f}"
    ]
    said = derivation_texts(at)
    softmax = next(x for x in said if x.startswith("**The row's softmax.**"))
    assert softmax.endswith(f"= {shown:.4f}.")
    score = next(x for x in said if x.startswith("**The score.**"))
    assert score.endswith(f"adding up to {cell.score:.4f}.")
    last = next(x for x in said if x.startswith("**The cell.**"))
    assert f"({rows[t - 1]}, {cols[j - 1]}) holds {shown:.4f}" in last
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    bars = next(c for c in charts if c["layout"]["title"]["text"].startswith("Softmax of row"))
    assert np.allclose(spec_array(bars["data"][0]["y"]), z[t - 1], atol=1e-6)


@pytest.mark.parametrize(
    ("cell", "problem"),
    [
        ("q0k1", "there is no Mirror word 0: the sentence has 20 words (1–20)"),
        ("q3k21", "there is no English word 21: the sentence has 20 words (1–20)"),
        ("h1q1k1", "the alignment is one matrix: its cells read as q3k5"),
        ("lab.q1k1", "the alignment is one matrix: its cells read as q3k5"),
        ("<b>🦊</b>", "not a cell such as q2k1 (query 2, key 1) or h1q2k1 (head 1)"),
    ],
)
def test_a_cell_that_is_not_on_the_alignment_is_named_and_none_opened(cell, problem):
    at = open_app({"cell": cell})
    assert not exceptions(at)
    said = [unescape(w) for w in values(at.warning)]
    assert said == [f"The link's cell “{cell}” is not on this page ({problem}), so none is open."]
    assert not [x for x in at.text if str(x.value).startswith("Mirror word ")]
    assert_aligns(at, L.seeded_sentence(0, 20))
