"""A student alone keeps her concept-check answers in her browser (``ui/classroom/solo_answers.py``):
the record it keeps, read back exactly, telling nothing of the key; and through AppTest, a new
session whose cookie brings the record takes up where she was. The real reload, cookie and
local storage, is in tests/browser/test_concept_check.py."""

from __future__ import annotations

import pytest

from attnviz.teach import concepts as C
from ui.classroom import concept_views as V
from ui.classroom import solo_answers as S

from .test_page import AFTER, BEFORE, K, own_line, send, texts
from .test_page import open_page as open_concepts

WHO = "0123456789abcdef"
ALL_RIGHT = tuple(C.KEY for _ in range(K))


def test_a_record_reads_back_as_the_answers_it_was_made_from():
    for done in ({}, {"before": tuple(BEFORE)}, {"before": tuple(BEFORE), "after": tuple(AFTER)}):
        record = S.encode(WHO, done)
        assert S.decode(record) == (WHO, done)
    assert S.encode(WHO, {}) == f"1.{WHO}.."


def test_a_record_holds_the_positions_she_saw_not_which_option_is_right():
    record = S.encode(WHO, {"before": ALL_RIGHT})
    digits = record.split(".")[2]
    # Every answer right, yet the digits are where each right answer stood on her screen.
    assert digits == "".join(
        str(C.shown_order(item, WHO, "before").index(C.KEY)) for item in C.ITEMS
    )
    assert len(set(digits)) > 1  # not one position for all: the record is no answer key


@pytest.mark.parametrize(
    "record",
    [
        None,
        "",
        "2.0123456789abcdef..",  # another version
        "1.0123456789ABCDEF..",  # not her id
        "1.0123456789abcdef.0123.",  # too few questions
        "1.0123456789abcdef." + "9" * K + ".",  # a position past the options
        "1.0123456789abcdef.." + "0" * K,  # an after without a before
        "1.0123456789abcdef." + "x" * K + ".",
    ],
)
def test_anything_else_is_not_taken_for_a_record(record):
    assert S.decode(record) is None


def reloaded(record: str, monkeypatch):
    """A new session of the same browser: its cookie brings ``record``."""
    monkeypatch.setattr(S, "from_cookie", lambda: S.decode(record))
    return open_concepts()


def kept_record(at) -> str:
    """The record this session offers the browser to keep, as the keeper is given it."""
    done = at.session_state[V.SOLO_KEY]
    return S.encode(at.session_state[V.SOLO_ID_KEY], done)


def test_a_new_session_of_her_browser_takes_up_her_answers(monkeypatch):
    at = open_concepts()
    send(at, "concepts_solo_before", BEFORE)
    record = kept_record(at)
    who = at.session_state[V.SOLO_ID_KEY]
    assert record.startswith(f"1.{who}.") and record.endswith(".")

    again = reloaded(record, monkeypatch)
    assert "Your answers before are saved (14 of 14)" in texts(again)
    assert again.session_state[V.SOLO_ID_KEY] == who  # her options keep their order
    assert "After the lesson" in [s.value for s in again.subheader]
    send(again, "concepts_solo_after", AFTER)
    both = kept_record(again)

    last = reloaded(both, monkeypatch)
    before_right, after_right = K // 2, K - 1
    g = (after_right - before_right) / (K - before_right)
    assert own_line(last) == [
        f"Before: {before_right} of {K} right ({round(100 * before_right / K)}%); after: "
        f"{after_right} of {K} ({round(100 * after_right / K)}%). Your normalized gain "
        f"g = {g:.2f}."
    ]
    last.button(key="concepts_solo_restart").click().run()
    assert kept_record(last).endswith("..")  # "Start again" leaves the browser nothing
    assert "Before the lesson" in [s.value for s in last.subheader]


def test_a_cookie_that_is_not_a_record_starts_the_check_afresh(monkeypatch):
    at = reloaded("1.0123456789abcdef.99.", monkeypatch)
    assert not at.exception
    assert "Before the lesson" in [s.value for s in at.subheader]
    assert at.session_state[V.SOLO_KEY] == {}
