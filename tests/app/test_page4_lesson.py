"""Page 4 shows what its lesson object says, true to the numbers drawn: every claim's text is on
the page; in training mode the weights drawn are the ones the context used (Z = A·V holds on
the figures' own data); no check is "n/a" at the defaults; the speed verdict follows the
measurement; GPT-2 small's two totals are both given."""

from __future__ import annotations

import json

import numpy as np
import pytest
import streamlit as st

from attnviz.core import book
from attnviz.core.settings import Settings
from attnviz.models import speed
from attnviz.teach import prepare as lesson
from attnviz.teach.lessons import multihead as ML

from .conftest import (
    BOOK_TEXT,
    OPEN_PARTS,
    badges,
    chart_title,
    charts,
    exceptions,
    open_app,
    spec_array,
    values,
)

QUERIES = {
    "default": ({}, Settings(), False),
    "training": ({"train": "true", "dropout": "0.5"}, Settings(training=True, dropout=0.5), False),
    "book": ({"book": "true"}, Settings(), True),
}


def chart_by_key(at, key: str) -> dict:
    found = [c for c in charts(at) if c.proto.id.endswith(f"-fig_{key}")]
    assert len(found) == 1, f"{len(found)} charts with key fig_{key}"
    return json.loads(found[0].proto.spec)


def z_of(spec: dict, trace: int = 0) -> np.ndarray:
    return spec_array(spec["data"][trace]["z"]).astype(np.float64)


def expected(mode: str):
    """The lesson object and head 0, built in the engine from the same settings."""
    _, s, use_book = QUERIES[mode]
    prep = lesson.prepare("" if use_book else BOOK_TEXT, s, use_book)
    trace = lesson.multihead(prep, s)
    wrapper = lesson.wrapper(prep, s) if use_book else None
    return ML.build(trace, wrapper, use_book), ML.head_view(trace, 0)


def page_text(at) -> list[str]:
    main = at.main
    return values(main.markdown) + values(main.caption) + values(main.info)


@pytest.mark.parametrize("mode", list(QUERIES))
def test_every_claim_of_the_lesson_is_on_the_page(mode):
    at = open_app(QUERIES[mode][0], page="multihead")
    assert not exceptions(at)
    view, head = expected(mode)
    shown = values(at.markdown)
    claims = [*view.claims, *head.claims]
    assert len(claims) >= 4
    for claim in claims:
        assert claim.text in shown, claim.text
    assert view.weights_note in shown
    assert ("green", "Context = weights shown @ V: pass") in badges(at)


def test_training_mode_draws_the_weights_the_context_used_and_z_equals_av_on_screen():
    at = open_app(QUERIES["training"][0], page="multihead")
    weights = chart_by_key(at, "p4_weights")
    assert chart_title(weights) == "Weights of head 0 after dropout (what the context used)"
    w = z_of(weights)
    v = z_of(chart_by_key(at, "p4_values_heads"))
    context = z_of(chart_by_key(at, "p4_context"))
    np.testing.assert_allclose(w @ v, context, atol=1e-5)
    # dropout struck: survivors doubled, some rows no longer sum to 1
    assert w.max() > 1.0 and (np.abs(w.sum(axis=1) - 1) > 1e-3).any()
    before = z_of(chart_by_key(at, "p4_weights_before"))
    np.testing.assert_allclose(before.sum(axis=1), 1.0, atol=1e-5)
    assert not np.allclose(before @ v, context, atol=1e-3)
    grid = chart_by_key(at, "p4_grid")
    assert chart_title(grid) == "Attention weights of all 2 heads (after dropout, scale 0 to 2)"
    np.testing.assert_array_equal(z_of(grid, 0), w)
    assert grid["layout"]["coloraxis"]["cmax"] == 2.0
    text = page_text(at)
    assert any(t.startswith("Training mode, dropout p = 0.5: these are the weights") for t in text)
    assert any(t.startswith("The live checks test the chapter's claims in eval mode") for t in text)


def test_eval_mode_says_dropout_is_the_identity_and_draws_weights_that_sum_to_one():
    at = open_app({"dropout": "0.5"}, page="multihead")
    w = z_of(chart_by_key(at, "p4_weights"))
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-5)
    assert any(t.startswith("Eval mode: dropout (p = 0.5) is the identity") for t in page_text(at))
    assert "p4_weights_before" not in " ".join(c.proto.id for c in charts(at))


def test_no_check_reads_not_applicable_at_the_defaults():
    at = open_app(page="multihead")
    found = badges(at)
    assert ("green", "Matches torch.nn.MultiheadAttention: pass") in found
    assert not [text for colour, text in found if colour == "gray" or text.endswith("n/a")]


def test_book_mode_names_the_chapters_call_and_never_the_sidebar():
    at = open_app({"book": "true", "train": "true", "dropout": "0.5"}, page="multihead")
    text = page_text(at)
    assert any(t.startswith("Book mode: the chapter's MultiHeadAttention(d_in=3, ") for t in text)
    assert not [t for t in text if "sidebar" in t.lower()]
    assert "p4_weights_before" not in " ".join(c.proto.id for c in charts(at))


def test_gpt2_small_is_given_as_117m_and_124m_beside_exercise_3_3():
    at = open_app(page="multihead")
    at.session_state["presets"] = True  # the closed box builds its contents once opened
    at.run()
    (caption,) = [c for c in values(at.caption) if c.startswith("Parameters of MultiHead")]
    assert f"Exercise 3.3: {book.EXERCISE_3_3_PARAMETERS:,} for GPT-2 small" in caption
    assert "117M is the figure of the GPT-2 paper" in caption
    assert "gives 124,439,808 ≈ 124M." in caption


@pytest.fixture
def wrapper_faster(monkeypatch):
    """A measurement where the wrapper won, with its parts, from an empty cache."""

    def fake(*shape):
        return {
            "median": {"wrapper": 0.0002, "weight split": 0.0003},
            "runs": 11,
            "parts": {
                "wrapper projections": 0.00008,
                "split projections": 0.00008,
                "split out_proj": 0.00002,
                "split merge": 0.00001,
            },
        }

    monkeypatch.setattr(speed, "wrapper_against_split", fake)
    st.cache_resource.clear()
    yield
    st.cache_resource.clear()


def test_a_measured_faster_wrapper_is_said_to_contradict_the_chapter_and_why(wrapper_faster):
    at = open_app(OPEN_PARTS, page="multihead")
    at.button(key="p4_time").click().run()
    (text,) = [v for v in values(at.markdown) if v.startswith("Median of 11")]
    assert "the wrapper was 1.50× as fast" in text
    assert "That is against the chapter's claim that the weight split is more efficient." in text
    assert "out_proj (0.020 ms)" in text
    # the attention itself: 0.3 - 0.08 - 0.02 - 0.01 = 0.19 ms against 0.2 - 0.08 = 0.12 ms
    assert "took 0.190 ms in the weight split against 0.120 ms in the wrapper" in text
    assert "the weight split projects with 3 matmuls, the wrapper with 6 (3 per head)" in text
