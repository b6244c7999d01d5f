"""Page 3 states, word for word, every sentence its lesson object computed about the numbers,
in eval, training and book mode (the engine test checks that each one holds)."""

from __future__ import annotations

import pytest

from attnviz.core.settings import Settings
from tests.engine.test_lessons_causal import DEFAULT_TEXT, DEFAULT_TEXT2, page3

from .conftest import exceptions, open_app, values

CASES = {
    "eval": ({}, Settings(), False),
    "training": ({"train": "true", "dropout": "0.5"}, Settings(training=True, dropout=0.5), False),
    "book": ({"book": "true"}, Settings(), True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_claim_of_the_lesson_is_on_the_page(case):
    query, settings, book = CASES[case]
    L = page3("" if book else DEFAULT_TEXT, "" if book else DEFAULT_TEXT2, settings, book)
    assert L.claims
    # The dropout lab and the batch are closed boxes: the claims above them are on the page
    # as it opens, and every claim once they are opened.
    at = open_app(query, page="causal")
    assert not exceptions(at)
    shown = set(values(at.markdown)) | set(values(at.caption))
    for claim in [*L.route_claims, *L.mode_claims]:
        assert claim.text in shown, claim.text
    at = open_app({**query, "lab": "true", "batch": "true"}, page="causal")
    assert not exceptions(at)
    shown = set(values(at.markdown)) | set(values(at.caption))
    for claim in L.claims:
        assert claim.text in shown, claim.text
    if book:
        assert not [text for text in shown if "the sidebar's" in text]


def test_training_mode_says_the_routes_are_before_dropout_and_shows_z_from_a():
    at = open_app({"train": "true", "dropout": "0.5", "lab": "true"}, page="causal")
    shown = values(at.markdown) + values(at.caption)
    assert "Route 2: every row sums to 1 (before dropout)." in shown
    assert not [t for t in shown if "training-mode weights" in t]
    assert any(t.startswith("A: the weights after dropout") for t in shown)
