"""The home page's "Why attention, measured" (issue 38), as a student sees it: the recorded runs'
charts and sentences, a picked or typed sentence through both models, and a clear message for
words the toy language does not have."""

from __future__ import annotations

import numpy as np

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
    derivation = "\n".join(f"- {line}" for line in lesson.derive(0))
    assert derivation in [unescape(str(m.value)) for m in at.markdown]
    at.selectbox[0].set_value(39).run()
    derivation = "\n".join(f"- {line}" for line in lesson.derive(39))
    assert derivation in [unescape(str(m.value)) for m in at.markdown]


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
