"""A question is asked below what it relies on (issue 37): for every kind a pass page asks, the
panels the kind relies on (``Question.relies_on``: the scores for "which key wins", the queries
and keys for a raw score, the weights and the dropout mask for a row sum after dropout ...) are
drawn on the same page, unhidden (their chart is sent, with its numbers), above the question.

Each case opens the page (AppTest) at a link and question seed where the page asks that kind,
and reads the order of everything the run drew."""

from __future__ import annotations

import pytest

from attnviz.teach import questions as Q
from tests.app.conftest import exceptions, unescape

from .answer import open_predict, prompts
from .pages import Setting, question

TRAIN = {"train": "true", "dropout": "0.5"}
SHARP = {"d_in": "2", "d_out": "32", "heads": "2", "text": "the cat sat on the mat and the cat"}
LINKS = ({}, SHARP, TRAIN | {"heads": "4"})
BOOK = {"book": "true"}
FAST = {  # one case per page in the fast loop; the rest in the full run
    ("simplified", Q.ARGMAX_KEY),
    ("trainable", Q.SCORE),
    ("causal", Q.DROPOUT_ROW_SUM),
    ("multihead", Q.WEIGHT_RATIO),
}


def _cases():
    """(page, kind, link, seed): the first link and seed where the page asks each kind."""
    found = {}
    for page in Q.PAGES:
        for link in LINKS:
            s = Setting.of(page, link)
            for seed in range(24):
                q = question(s, seed)
                if q is not None and (page, q.kind) not in found:
                    found[(page, q.kind)] = (page, q.kind, link, seed)
    out = []
    for (page, kind), case in sorted(found.items()):
        marks = () if (page, kind) in FAST else (pytest.mark.slow,)
        out.append(pytest.param(*case, marks=marks, id=f"{page}-{kind}"))
    for page in ("simplified", "trainable", "causal"):  # book mode asks fewer: each once
        s, kinds = Setting.of(page, BOOK), set()
        for seed in range(24):
            q = question(s, seed)
            if q is not None and q.kind not in kinds:
                kinds.add(q.kind)
                case = (page, q.kind, BOOK, seed)
                out.append(pytest.param(*case, marks=pytest.mark.slow, id=f"{page}-{q.kind}-book"))
    return out


CASES = _cases()


def test_every_page_asks_four_kinds_among_these_links():
    for page in Q.PAGES:
        assert len([c for c in CASES if c.values[0] == page and c.values[2] != BOOK]) >= 4, page


def _drawn(at) -> list[tuple[tuple[int, ...], object]]:
    """Every element of the run, with its place (the path of indices) in reading order."""
    out = []

    def walk(node, path: tuple[int, ...]) -> None:
        out.append((path, node))
        children = getattr(node, "children", None) or {}
        for i in sorted(children):
            walk(children[i], (*path, i))

    walk(at.main, ())
    return out


@pytest.mark.parametrize(("page", "kind", "link", "seed"), CASES)
def test_what_a_question_relies_on_is_drawn_unhidden_above_it(page, kind, link, seed):
    s = Setting.of(page, link)
    q = question(s, seed)
    assert q is not None and q.kind == kind
    relied = q.relies_on
    assert not set(relied) & set(q.conceals)  # nothing it relies on is hidden with it
    at = open_predict(page, link, seed)
    assert not exceptions(at)
    assert prompts(at) == [f"**Predict first.** {q.prompt}"]
    drawn = _drawn(at)
    asked = next(
        path
        for path, node in drawn
        if getattr(node, "type", "") == "markdown"
        and unescape(str(node.value)).startswith("**Predict first.**")
    )
    for key in relied:
        charts = [
            path
            for path, node in drawn
            if getattr(node, "type", "") == "plotly_chart"
            and str(node.proto.id).endswith(f"-fig_{key}")
        ]
        assert charts, f"{key} is not drawn on {page} while {kind} waits"
        assert min(charts) < asked, f"{key} is drawn below the {kind} question"
