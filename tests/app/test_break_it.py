"""Break it: every classic bug on its page shows a one-line diff, then either the exact error
PyTorch raises or its named check failing beside the same check passing on the correct code;
bugs the settings hide say so."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.teach import bugs
from ui.teach.breakit import NONE

from .conftest import (
    BOOK_TEXT,
    PASS_PAGES,
    badges,
    chart,
    chart_specs,
    chart_title,
    exceptions,
    go,
    open_app,
    spec_array,
    values,
)

# The badge title of each named check (checks.py).
CHECK_TITLES = {
    "rows_sum_to_one": "Rows sum to 1",
    "weights_are_softmax": "Weights are softmax(scores)",
    "matches_sdpa": "Matches PyTorch SDPA",
    "heads_equal_loop": "Batched heads = loop over heads",
    "no_future_leak": "No future leak",
    "eval_ignores_dropout": "Eval mode ignores dropout",
    "batch_rows_independent": "Batch = each example alone",
}
# At the default settings these two cannot run at all.
RAISES_AT_DEFAULTS = {"unsliced_mask", "global_transpose"}
ERROR = "With this bug the pass does not run. PyTorch raises:"
ALL_BUGS = [(kind, bug.key) for kind in PASS_PAGES for bug in bugs.bugs_for(kind)]


def effect_of(kind: str, key: str, settings=None) -> tuple:
    """The matrices bugs.outcome shows for this bug on the page's default inputs."""
    from attnviz.core.settings import Settings
    from attnviz.teach import prepare

    s = settings or Settings()
    text, text2 = BOOK_TEXT, "Every effort moves you forward"
    prep = prepare.prepare(text, s, use_book=False)
    trace = {
        "simplified": lambda: prepare.simplified(prep),
        "trainable": lambda: prepare.trainable(prep, s),
        "causal": lambda: prepare.causal_batch(
            prepare.prepare_batch(text, text2, s, False), s, False
        ),
        "multihead": lambda: prepare.multihead(prep, s),
    }[kind]()
    spec = None if kind == "simplified" else trace.spec
    return bugs.outcome(key, trace.inputs, spec)[0].shown


def table_rows(at, kind: str) -> list[list[str]]:
    """The break-it table's body rows, cell by cell (unescaped)."""
    (table,) = [m for m in values(at.markdown) if m.startswith("| bug | caught by |")]
    return [[c.strip() for c in row.strip("|").split("|")] for row in table.splitlines()[2:]]


def turn_on(at, kind: str, title: str):
    at.selectbox(key=f"bug_{kind}").set_value(title).run()
    assert not exceptions(at)
    return at


def diff_body(at) -> list[str]:
    (diff,) = [c.value for c in at.code if c.language == "diff"]
    lines = diff.splitlines()
    assert lines[:2] == ["--- bug", "+++ fix"], lines[:2]
    return [ln for ln in lines[2:] if not ln.startswith("@@")]


def test_every_pass_page_lists_its_bugs_and_starts_with_none():
    assert {kind for kind, _ in ALL_BUGS} == set(PASS_PAGES)
    at = open_app()
    for kind in PASS_PAGES:
        go(at, kind)
        box = at.selectbox(key=f"bug_{kind}")
        assert box.options == [NONE, *(bug.title for bug in bugs.bugs_for(kind))]
        assert box.value == NONE
        assert [c for c in at.code if c.language == "diff"] == []


@pytest.mark.parametrize(("kind", "key"), ALL_BUGS, ids=[key for _, key in ALL_BUGS])
def test_a_bug_shows_a_one_line_diff_and_what_it_breaks(kind, key):
    bug = bugs.BUGS_BY_KEY[key]
    at = turn_on(open_app(page=kind), kind, bug.title)
    body = diff_body(at)
    removed = [ln for ln in body if ln.startswith("-")]
    added = [ln for ln in body if ln.startswith("+")]
    assert len(removed) == 1 and len(added) == 1, body
    assert all(ln.startswith(" ") for ln in body if ln not in removed + added)
    assert removed[0][1:].strip() != added[0][1:].strip()
    assert values(at.warning) == []  # visible at the defaults

    title = CHECK_TITLES[bug.check]
    page_badges = badges(at)
    if key in RAISES_AT_DEFAULTS:
        assert bug.raises
        assert ERROR in values(at.error)
        errors = [c.value for c in at.code if c.language == "text" and "RuntimeError" in c.value]
        assert len(errors) == 1 and errors[0].startswith("RuntimeError: ")
        assert [b for b in page_badges if b[0] == "red"] == []
        titles = [chart_title(spec) for spec in chart_specs(at)]
        assert not any(t.startswith(("With the bug", "Correct:")) for t in titles)
    else:
        assert values(at.error) == []
        red = [text for colour, text in page_badges if colour == "red"]
        assert len(red) == 1 and red[0].startswith(title) and red[0].endswith(": fail"), red
        # The last two badges on the page: the buggy run, then the correct code.
        (wrong_colour, wrong), (right_colour, right) = page_badges[-2:]
        assert (wrong_colour, wrong) == ("red", red[0])
        assert right_colour == "green" and right == red[0].removesuffix("fail") + "pass"
        assert "At these settings: visible: the matrices below differ." in values(at.markdown)
        # Every matrix the engine chose to show the effect is drawn, with its exact numbers.
        shown = effect_of(kind, key)
        drawn = {chart_title(spec): spec for spec in chart_specs(at)}
        for matrix in shown:
            spec = drawn[matrix.title]
            np.testing.assert_allclose(
                spec_array(spec["data"][0]["z"]).astype(float), matrix.values.numpy(), rtol=1e-6
            )
        bugged = chart(at, shown[0].title)
        correct = chart(at, next(m.title for m in shown if m.title.startswith("Correct")))
        assert bugged["data"][0]["x"] == correct["data"][0]["x"]


@pytest.mark.parametrize("kind", PASS_PAGES)
def test_turning_the_bug_off_again_removes_its_diff(kind):
    bug = bugs.bugs_for(kind)[0]
    at = turn_on(open_app(page=kind), kind, bug.title)
    assert len([c for c in at.code if c.language == "diff"]) == 1
    turn_on(at, kind, NONE)
    assert [c for c in at.code if c.language == "diff"] == []
    assert [colour for colour, _ in badges(at) if colour == "red"] == []


def test_dropout_left_on_is_invisible_in_book_mode_where_dropout_is_0():
    bug = bugs.BUGS_BY_KEY["dropout_in_eval"]
    at = turn_on(open_app({"book": "true"}, page="causal"), "causal", bug.title)
    (warning,) = values(at.warning)
    assert warning == (
        "This bug is invisible with dropout=0: raise dropout above 0 (turn off book mode first)."
    )
    assert values(at.error) == []
    assert [text for colour, text in badges(at)[-2:]] == [
        "Eval mode ignores dropout: pass",
        "Eval mode ignores dropout: pass",
    ]


def test_unsliced_mask_is_invisible_when_the_text_fills_the_context():
    # Both batch texts have at least 6 tokens, so the batch has T = 6 = context_length.
    six = "one two three four five six"
    at = open_app({"text": six, "text2": six + " seven", "ctx": "6"}, page="causal")
    bug = bugs.BUGS_BY_KEY["unsliced_mask"]
    turn_on(at, "causal", bug.title)
    (warning,) = values(at.warning)
    assert warning == (
        "This bug is invisible when the text fills the context (T = context_length = 6): "
        "raise context_length above 6."
    )
    assert values(at.error) == []
    assert not any("RuntimeError" in c.value for c in at.code)
    assert [text for colour, text in badges(at)[-2:]] == ["No future leak: pass"] * 2


def test_unsliced_mask_raises_once_the_context_is_longer_than_the_text():
    six = "one two three four five six"
    at = open_app({"text": six, "text2": six, "ctx": "7"}, page="causal")
    turn_on(at, "causal", bugs.BUGS_BY_KEY["unsliced_mask"].title)
    assert ERROR in values(at.error)
    (error,) = [c.value for c in at.code if "RuntimeError" in c.value]
    assert "(6)" in error and "(7)" in error


@pytest.mark.parametrize("kind", PASS_PAGES)
def test_the_table_names_each_bugs_badge_by_the_title_the_page_shows(kind):
    at = open_app(page=kind)
    rows = table_rows(at, kind)
    assert [row[0] for row in rows] == [bug.title for bug in bugs.bugs_for(kind)]
    # issue 37: a bug that makes PyTorch raise is caught by that error, never by a check
    # (no check runs): at the defaults both of page 3's raise
    raising = {"unsliced_mask", "global_transpose"} if kind == "causal" else set()
    assert {b.key for b in bugs.bugs_for(kind) if b.raises} == raising
    for bug, row in zip(bugs.bugs_for(kind), rows, strict=True):
        if bug.key in raising:
            assert row[1].startswith("PyTorch itself: it raises RuntimeError here ("), row
            assert CHECK_TITLES[bug.check] not in row[1]
        else:
            assert row[1] == CHECK_TITLES[bug.check]
    assert not any("_" in row[1] for row in rows)  # no code names
    # At the defaults no setting hides any of them.
    assert [row[3] for row in rows] == ["no"] * len(rows)


def test_dropout_left_on_shows_two_runs_that_differ_beside_the_correct_weights():
    bug = bugs.BUGS_BY_KEY["dropout_in_eval"]
    at = turn_on(open_app(page="causal"), "causal", bug.title)
    run1 = spec_array(chart(at, "With the bug, run 1")["data"][0]["z"]).astype(float)
    run2 = spec_array(chart(at, "With the bug, run 2")["data"][0]["z"]).astype(float)
    correct = spec_array(chart(at, "Correct: weights after dropout")["data"][0]["z"])
    assert run1.shape == run2.shape == correct.shape
    visible = np.tril(np.ones(run1.shape, dtype=bool))
    differ = int((run1[visible] != run2[visible]).sum())
    assert differ > 0
    np.testing.assert_allclose(np.nansum(correct.astype(float), axis=1), 1.0, atol=1e-5)
    said = [c for c in values(at.caption) if c.startswith("With the bug the two runs drop")]
    assert len(said) == 1 and f"{differ} of the {int(visible.sum())} weights" in said[0]
    assert "At these settings: visible: the matrices below differ." in values(at.markdown)


def test_divide_by_sum_draws_its_negative_weights_on_a_diverging_scale():
    bug = bugs.BUGS_BY_KEY["divide_by_sum"]
    at = turn_on(open_app(page="simplified"), "simplified", bug.title)
    trace = chart(at, "With the bug: weights")["data"][0]
    z = spec_array(trace["z"]).astype(float)
    assert np.nanmin(z) < 0
    assert trace["zmid"] == 0 and trace["zmin"] == pytest.approx(-np.nanmax(np.abs(z)), rel=1e-5)
    negative = int((z < 0).sum())
    assert [c for c in values(at.caption) if c.startswith(f"With the bug {negative} of the 36")]


def test_no_scaling_shows_the_d_out_128_case_beside_and_says_what_each_shows():
    bug = bugs.BUGS_BY_KEY["no_scaling"]
    at = turn_on(open_app(page="trainable"), "trainable", bug.title)
    for title in (
        "With the bug: weights",
        "Correct: weights",
        "With the bug at d_out = 128: weights",
        "Correct at d_out = 128: weights",
    ):
        assert chart(at, title)
    here = [c for c in values(at.caption) if c.startswith("At d_k = 8, dropping 1/√d_k")]
    wide = [c for c in values(at.caption) if c.startswith("At d_out = 128 (the second pair)")]
    assert len(here) == 1 and len(wide) == 1
    assert "far from one-hot" in here[0] and "saturates" not in here[0]
