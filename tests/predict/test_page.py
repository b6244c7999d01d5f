"""Predict first on the pass pages (AppTest): before the answer the page carries none of the
numbers the question hides (no chart, table, CSV, claim or caption with them); the answer
reveals the hidden panel with the answer marked; every named misconception, answered on
purpose, gets its sentence; book-mode keys are the chapter's printed numbers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnviz.core import book as BK
from attnviz.teach import questions as Q
from tests.app.conftest import OPEN_PARTS, exceptions, unescape
from ui.teach.predict import CELL_KINDS

from .answer import give, open_predict, prompts, verdicts
from .pages import Setting, hidden_claims, question, secret
from .seen import chart_arrays, seen

TRAIN = {"train": "true", "dropout": "0.5"}
CASES = [  # (page, link, question seed): the kind each seed asks at these settings
    ("simplified", {}, 3),  # which key: the weights
    ("simplified", {}, 2),  # sketch a row
    ("trainable", {}, 3),  # a raw score, from the queries and keys
    ("trainable", {}, 4),  # a scaled score
    ("trainable", {}, 1),  # how a row changes with the scaling
    ("causal", {}, 0),  # row sum after dropout (the lab)
    ("causal", {}, 1),  # the ratio of two weights
    ("causal", {"book": "true"}, 1),  # a weight dropout kept, book mode
    ("multihead", TRAIN | {"heads": "4"}, 2),  # a weight dropout kept
    ("multihead", {}, 1),  # how many zeros
]


KINDS = {}  # filled below: each case's kind


def _id(case) -> str:
    page, query, seed = case
    return f"{page}-{'-'.join(f'{k}{v}' for k, v in query.items()) or 'default'}-seed{seed}"


KINDS.update(
    zip(
        [_id(c) for c in CASES],
        [
            Q.ARGMAX_KEY,
            Q.SKETCH_ROW,
            Q.SCORE,
            Q.SCALED_SCORE,
            Q.SCALING_ENTROPY,
            Q.DROPOUT_ROW_SUM,
            Q.WEIGHT_RATIO,
            Q.DROPOUT_SURVIVOR,
            Q.DROPOUT_SURVIVOR,
            Q.MASKED_ZEROS,
        ],
        strict=True,
    )
)


@pytest.fixture(scope="module", params=CASES, ids=[_id(c) for c in CASES])
def posed(request):
    page, query, seed = request.param
    s = Setting.of(page, query)
    q = question(s, seed)
    assert q is not None
    assert q.kind == KINDS[_id(request.param)]
    at = open_predict(page, query, seed)
    at.toggle(key="numbers").set_value(True).run()  # every visible matrix's table and CSV
    return s, q, at


def test_the_page_asks_the_question_its_own_numbers_make(posed):
    _s, q, at = posed
    assert not exceptions(at)
    assert prompts(at) == [f"**Predict first.** {q.prompt}"]


def test_before_the_answer_no_chart_table_or_text_carries_a_hidden_number(posed):
    s, q, at = posed
    hidden = secret(s, q)
    assert len(hidden.values) >= 5  # enough left to search for
    assert seen(at).leaks(hidden) == {}
    # With the switch off the same page draws them (its closed parts opened): the search can
    # find them.
    off = open_predict(s.page, s.query, 0, predict="false", **OPEN_PARTS)
    off.toggle(key="numbers").set_value(True).run()
    assert len(seen(off).leaks(hidden)) >= 1


def test_before_the_answer_no_csv_numbers_box_or_claim_of_a_hidden_panel(posed):
    s, q, at = posed
    csv = seen(at).csv_keys
    assert csv, "the numbers of the visible panels are on (numbers)"
    for key in q.conceals:
        assert not [c for c in csv if c.endswith(f"-csv_{key}")], key
    said = {unescape(str(e.value)) for e in (*at.caption, *at.markdown)}
    assert hidden_claims(s, q) & said == set()
    charts = [c.proto.id for c in at.get("plotly_chart")]
    for key in q.conceals:
        assert not [c for c in charts if c.endswith(f"-fig_{key}")], key


def test_the_answer_reveals_the_hidden_panel_with_the_answer_marked(posed):
    s, q, at = posed
    at = give(at, q, q.key)
    assert not exceptions(at)
    assert verdicts(at)[0].startswith("Right")
    hidden = secret(s, q)
    marked = [
        json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id.endswith("_answer")
    ]
    assert len(marked) == 1
    spec = marked[0]
    shapes = spec["layout"].get("shapes", [])
    names = [shape["name"] for shape in shapes]
    if q.query is not None and q.kind not in CELL_KINDS:
        assert f"outlined row {q.query}" in names
    if q.kind == Q.ARGMAX_KEY:
        assert f"marked cell {q.query}, {q.key}" in names
    if q.kind in CELL_KINDS:
        assert f"marked cell {q.query}, {q.other}" in names
    drawn = np.concatenate(chart_arrays(spec))
    matrix = hidden.matrix.numpy().astype(np.float32)
    assert np.isin(matrix[np.isfinite(matrix)], drawn).all()
    # and now the page's own numbers are all there
    assert len(seen(at).leaks(hidden)) >= 1


def _seed_of(s: Setting, kind: str) -> tuple[int, Q.Question]:
    """The first question seed at which the page asks a question of ``kind``."""
    for seed in range(40):
        q = question(s, seed)
        if q is not None and q.kind == kind:
            return seed, q
    raise AssertionError(f"no {kind} question on {s.page}")


def test_a_wrong_token_is_marked_beside_the_key():
    s = Setting.of("simplified", {})
    seed, q = _seed_of(s, Q.ARGMAX_KEY)
    wrong = next(i for i in range(len(q.choices)) if i != q.key)
    at = give(open_predict("simplified", {}, seed), q, wrong)
    assert verdicts(at)[0].startswith("Not quite")
    spec = next(
        json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id.endswith("_answer")
    )
    dashed = [s for s in spec["layout"]["shapes"] if s["line"].get("dash") == "dash"]
    assert [d["name"] for d in dashed] == [f"marked cell {q.query}, {wrong}"]


def test_a_sketched_row_is_drawn_over_the_true_row():
    s = Setting.of("simplified", {})
    seed, q = _seed_of(s, Q.SKETCH_ROW)
    sketch = [round(1 / len(q.choices), 2)] * len(q.choices)  # an even share: graded wrong
    at = give(open_predict("simplified", {}, seed), q, sketch)
    assert verdicts(at)[0].startswith("Not quite")
    bars = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "-sketch_" in c.proto.id]
    assert len(bars) == 1
    series = {t["name"]: chart_arrays({"data": [t]})[-1] for t in bars[0]["data"]}
    assert np.allclose(series["your sketch"], sketch, atol=1e-6)
    assert np.allclose(series["the weights"], q.key, atol=1e-6)
    assert [c for c in at.caption if "Largest gap" in c.value]


# --- book mode ----------------------------------------------------------------------------------
BOOK = {"book": "true"}
PRINTED = 0.5e-4 + 1e-6


def _printed_value(q: Q.Question):
    """The chapter's printout of the number asked about, or None where it printed none."""
    page, r, c = q.page, q.query, q.other
    if page == "simplified":
        if q.kind == Q.SCORE:
            return BK.PRINTED["simple_scores"][r][c]
        if q.kind == Q.WEIGHT_RATIO:  # the ratio of two printed weights of row r
            row = BK.PRINTED["simple_weights"][r]
            b = next(i for i in range(len(row)) if f"than the weight on {i}: " in q.prompt)
            return row[c] / row[b]
        if q.kind in (Q.ARGMAX_KEY, Q.SKETCH_ROW):
            return BK.PRINTED["simple_weights"][r]
    if page == "trainable" and r == 1:  # book mode draws SelfAttention_v1: row 1 is printed
        if q.kind == Q.SCORE:
            return BK.PRINTED["trainable_scores_2"][c]
        if q.kind in (Q.ARGMAX_KEY, Q.SKETCH_ROW):
            return BK.PRINTED["trainable_weights_2"]
    if page == "causal":
        if q.kind == Q.SCORE:
            return BK.PRINTED["masking_masked_scores"][r][c]
        if q.kind in (Q.ARGMAX_KEY, Q.SKETCH_ROW):
            return BK.PRINTED["masking_weights"][r]
        if q.kind == Q.DROPOUT_SURVIVOR:
            return BK.PRINTED["dropout_weights"][r][c]
        if q.kind == Q.DROPOUT_ROW_SUM:
            return sum(BK.PRINTED["dropout_weights"][r])
    return None


def _book_questions():
    found = []
    for page in ("simplified", "trainable", "causal"):
        for seed in range(24):
            q = question(Setting.of(page, BOOK), seed)
            if q is not None and _printed_value(q) is not None:
                found.append((page, seed, q))
    return found


def test_in_book_mode_every_key_a_page_poses_is_the_chapters_printed_number():
    found = _book_questions()
    kinds = {(page, q.kind) for page, _seed, q in found}
    assert len(kinds) >= 5, kinds
    for _page, _seed, q in found:
        value = _printed_value(q)
        if q.kind == Q.ARGMAX_KEY:
            assert q.key == max(range(len(value)), key=value.__getitem__)
        elif q.kind == Q.SKETCH_ROW:
            assert q.key == pytest.approx(value, abs=PRINTED)
        elif q.kind == Q.DROPOUT_ROW_SUM:  # a sum of six printed numbers
            assert q.key == pytest.approx(value, abs=6 * PRINTED)
        elif q.kind == Q.WEIGHT_RATIO:  # a ratio of two printed numbers
            assert q.key == pytest.approx(value, rel=1e-3)
        else:
            assert q.key == pytest.approx(value, abs=PRINTED)


@pytest.mark.parametrize("page", ["simplified", "causal"])
def test_in_book_mode_the_revealed_number_is_the_printed_one(page):
    page_found = [
        (s, q) for p, s, q in _book_questions() if p == page and q.answer_format == Q.NUMBER
    ]
    assert page_found
    seed, q = page_found[0]
    at = give(open_predict(page, BOOK, seed), q, q.key)
    verdict = verdicts(at)[0]
    shown = float(verdict.removeprefix("Right: ").rstrip("."))
    printed = _printed_value(q)
    # a ratio of two weights printed to 4 decimals is known to about 1e-3 of itself
    close = 1e-3 * printed if q.kind == Q.WEIGHT_RATIO else 1e-4 + 1e-6
    assert shown == pytest.approx(printed, abs=close)


def test_a_plan_made_on_one_page_never_hides_another_page_s_panels():
    """The plan of a run is made by its page before its layout and handed to what it draws:
    nothing of it stays in the session, so a page without Predict first draws every panel as
    a fresh session does."""
    from tests.app.conftest import chart_specs, chart_title, go, open_app

    at = open_predict("causal", {})
    assert prompts(at)
    # the session keeps the question's seed, not the run's plan (the old run-wide gate)
    assert "_attnviz_predict_seeds" in at.session_state
    assert "_attnviz_predict_gate" not in at.session_state
    go(at, "pages/against-pytorch.py")
    assert not exceptions(at) and not prompts(at)
    fresh = go(open_app(), "pages/against-pytorch.py")
    assert [chart_title(s) for s in chart_specs(at)] == [chart_title(s) for s in chart_specs(fresh)]
    go(at, "causal")
    assert prompts(at)


@pytest.mark.parametrize("page", ["multihead", "causal"])
def test_next_question_asks_another_question(page):
    """Answered, a question says why its key is right, and "Next question" asks a question
    other than the one before (issue 37: page 4 asked the same again in 53 of 96 draws)."""
    s = Setting.of(page, {})
    at = open_predict(page, {}, 0)
    asked = []
    for seed in range(3):
        q = question(s, seed)
        assert prompts(at) == [f"**Predict first.** {q.prompt}"]
        asked.append(q.prompt)
        at = give(at, q, q.key)
        assert verdicts(at)[0].startswith("Right")
        assert f"Why: {q.reason}" in [unescape(m.value) for m in at.markdown]  # with its numbers
        (button,) = [b for b in at.button if b.label == "Next question"]
        at = button.click().run()
        assert not exceptions(at)
    assert asked[0] != asked[1] != asked[2]
