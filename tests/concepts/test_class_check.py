"""A class of 50 takes the concept check before and after the lesson, each phone a session of
its own, through the real store (in process, and a real redis-server on 127.0.0.1): the
counts, shares and normalized gains per question and overall are exact, the CSV says the
same, the key stays sealed until the results, and no session id is written."""

from __future__ import annotations

import csv
import io
from fractions import Fraction

import pytest

from attnviz.classroom import concept_polls as CP
from attnviz.classroom.polls import (
    NOT_ALLOWED,
    Answered,
    Created,
    Picks,
    PollState,
    PresenterView,
    Refused,
)
from attnviz.teach import concepts as C
from tests.polls.test_privacy import everything_in_redis

K = len(C.ITEMS)
CLASS = 50
# How many of the 50 get each question right, before and after: a question nobody knew, one
# everybody knew before (no gain to have), one that fell, one unchanged, and the rest rising.
RIGHT_BEFORE = (10, 20, 25, 50, 0, 5, 12, 30, 40, 45, 15, 18, 22, 35)[:K]
RIGHT_AFTER = (40, 30, 25, 50, 50, 5, 30, 45, 40, 20, 35, 38, 40, 49)[:K]


def answers(student: int, right: tuple[int, ...]) -> list[int]:
    """Student ``student`` is right on question i when she is among its first right[i];
    otherwise she picks one of its wrong options (all three in turn across the class)."""
    return [C.KEY if student < right[i] else 1 + (student + i) % 3 for i in range(K)]


def session(student: int) -> str:
    return f"phone-{student:02d}-streamlit-session"


@pytest.fixture(params=["memory", "redis"])
def backend(request) -> str:
    return request.param


def class_check(store) -> Created:
    made = store.create(CP.poll_question())
    assert isinstance(made, Created), made
    return made


def take(store, code: str, round_: int, right: tuple[int, ...], students=range(CLASS)) -> None:
    for s in students:
        result = store.answer(code, session(s), round_, answers(s, right))
        assert isinstance(result, Answered), result


def test_fifty_phones_before_and_after_give_exact_shares_and_gains(concept_store, backend):
    store = concept_store(backend)
    poll = class_check(store)
    take(store, poll.code, CP.BEFORE, RIGHT_BEFORE)
    assert store.reask(poll.code, "not-the-secret") == NOT_ALLOWED
    assert store.reask(poll.code, poll.secret) == PollState("open", CP.AFTER, False)
    # Too late for "before": the after round has begun.
    late = store.answer(poll.code, session(0), CP.BEFORE, answers(0, RIGHT_AFTER))
    assert isinstance(late, Refused) and late.reason == "wrong_round"
    take(store, poll.code, CP.AFTER, RIGHT_AFTER)
    store.reveal(poll.code, poll.secret)
    view = store.presenter_view(poll.code, poll.secret)
    assert isinstance(view, PresenterView)
    assert [t.answered for t in view.rounds] == [CLASS, CLASS]
    result = CP.report(view)
    assert len(result.before) == len(result.after) == CLASS
    for i, g in enumerate(result.per):
        assert g.item is C.ITEMS[i]
        assert g.before == C.Score(RIGHT_BEFORE[i], CLASS)
        assert g.after == C.Score(RIGHT_AFTER[i], CLASS)
        pre, post = Fraction(RIGHT_BEFORE[i], CLASS), Fraction(RIGHT_AFTER[i], CLASS)
        assert g.gain == (None if pre == 1 else (post - pre) / (1 - pre))
    assert result.per[0].gain == Fraction(3, 4)  # 20% -> 80%: 60 of the 80 points left
    assert result.per[3].gain is None  # everyone right before
    assert result.per[4].gain == 1  # nobody -> everybody
    assert result.per[9].gain == -5  # 90% -> 40%: fell by five times what was left
    total_before, total_after = sum(RIGHT_BEFORE), sum(RIGHT_AFTER)
    assert result.overall.before == C.Score(total_before, CLASS * K)
    assert result.overall.after == C.Score(total_after, CLASS * K)
    pre, post = Fraction(total_before, CLASS * K), Fraction(total_after, CLASS * K)
    assert result.overall.gain == (post - pre) / (1 - pre)
    assert CP.summary_line(result) == (
        f"Right before: {total_before} of {CLASS * K} ({round(100 * pre)}%); after: "
        f"{total_after} of {CLASS * K} ({round(100 * post)}%) (50 before, 50 after). "
        f"Normalized gain ⟨g⟩ = {float((post - pre) / (1 - pre)):.2f}."
    )


def test_the_csv_has_a_row_per_question_and_one_for_all(concept_store, backend):
    store = concept_store(backend)
    poll = class_check(store)
    take(store, poll.code, CP.BEFORE, RIGHT_BEFORE)
    store.reask(poll.code, poll.secret)
    take(store, poll.code, CP.AFTER, RIGHT_AFTER, students=range(40))  # ten did not stay
    store.reveal(poll.code, poll.secret)
    view = store.presenter_view(poll.code, poll.secret)
    assert isinstance(view, PresenterView)
    rows = list(csv.DictReader(io.StringIO(CP.report_csv(CP.report(view)))))
    assert [r["question"] for r in rows] == [str(i + 1) for i in range(K)] + ["all"]
    assert [r["id"] for r in rows[:-1]] == [item.id for item in C.ITEMS]
    first = rows[0]
    assert (first["right_before"], first["answered_before"], first["share_before"]) == (
        "10",
        "50",
        "0.2000",
    )
    # After: of the first 40 students, the first RIGHT_AFTER[0] = 40 are right.
    assert (first["right_after"], first["answered_after"], first["share_after"]) == (
        "40",
        "40",
        "1.0000",
    )
    assert first["gain"] == "1.0000" and first["top_misconception_after"] == ""
    assert rows[3]["gain"] == ""  # 50 of 50 before: nothing to gain
    # Question 10 after: students 20-39 wrong, picking options 1 + (s + 9) % 3 in turn.
    q10 = rows[9]
    assert (q10["right_after"], q10["answered_after"]) == ("20", "40")
    picked = [1 + (s + 9) % 3 for s in range(20, 40)]
    top = max((1, 2, 3), key=lambda o: (picked.count(o), -o))
    assert q10["top_misconception_after"] == C.ITEMS[9].options[top].misconception
    assert q10["picked_by_after"] == str(picked.count(top))
    everything = rows[-1]
    after_right = sum(min(RIGHT_AFTER[i], 40) for i in range(K))
    assert (everything["right_after"], everything["answered_after"]) == (
        str(after_right),
        str(40 * K),
    )
    pre, post = Fraction(sum(RIGHT_BEFORE), 50 * K), Fraction(after_right, 40 * K)
    assert everything["gain"] == f"{float((post - pre) / (1 - pre)):.4f}"
    assert not any("phone-" in value for r in rows for value in r.values())


def test_a_phone_never_gets_the_key_before_the_results(concept_store, backend):
    store = concept_store(backend)
    poll = class_check(store)
    take(store, poll.code, CP.BEFORE, RIGHT_BEFORE, students=range(3))
    store.show(poll.code, poll.secret)  # even with the spread shown
    mine = store.student_view(poll.code, session(1))
    assert not isinstance(mine, Refused)
    assert mine.key is None and mine.key_label is None
    assert mine.payload == CP.payload() and "0,0,0" not in repr(mine.payload)
    assert mine.your_answer == tuple(answers(1, RIGHT_BEFORE))
    assert all(t.right is None for t in mine.tally or ())
    store.reask(poll.code, poll.secret)
    store.reveal(poll.code, poll.secret)
    after = store.student_view(poll.code, session(1))
    assert not isinstance(after, Refused) and after.key == (C.KEY,) * K


def test_an_answer_that_skips_a_question_is_refused_with_the_questions_named(concept_store):
    store = concept_store("memory")
    poll = class_check(store)
    partial: list[int | None] = [0] * K
    partial[2] = partial[6] = None
    refused = store.answer(poll.code, session(0), CP.BEFORE, partial)
    assert isinstance(refused, Refused)
    assert refused.message == "Pick an answer in every question (not yet: 3, 7)."
    too_big = store.answer(poll.code, session(0), CP.BEFORE, [4] * K)
    assert isinstance(too_big, Refused) and too_big.reason == "bad_answer"


def test_no_session_id_is_written_to_redis(concept_store, redis_server):
    import redis

    store = concept_store("redis")
    poll = class_check(store)
    take(store, poll.code, CP.BEFORE, RIGHT_BEFORE)
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    try:
        dump = everything_in_redis(client)
    finally:
        client.close()
    assert "phone-" not in dump and "streamlit-session" not in dump


def test_the_picks_format_reads_back_what_it_wrote():
    form = Picks(C.SIZES)
    value = tuple(answers(7, RIGHT_BEFORE))
    assert form.decode(form.encode(value)) == value
    assert form.matches(value, list(value)) and not form.matches(value, (0,) * K)
    assert CP.same_items(CP.payload()) and not CP.same_items({**CP.payload(), "items": ["x"]})


def test_a_phone_reads_back_its_own_rounds_and_nobody_else_s(concept_store, backend):
    store = concept_store(backend)
    poll = class_check(store)
    take(store, poll.code, CP.BEFORE, RIGHT_BEFORE, students=range(2))
    assert store.own_answers(poll.code, session(0)) == (tuple(answers(0, RIGHT_BEFORE)),)
    assert store.own_answers(poll.code, session(7)) == (None,)  # never answered
    store.reask(poll.code, poll.secret)
    take(store, poll.code, CP.AFTER, RIGHT_AFTER, students=[1])
    assert store.own_answers(poll.code, session(0)) == (tuple(answers(0, RIGHT_BEFORE)), None)
    assert store.own_answers(poll.code, session(1)) == (
        tuple(answers(1, RIGHT_BEFORE)),
        tuple(answers(1, RIGHT_AFTER)),
    )
    store.close(poll.code, poll.secret)
    closed = store.own_answers(poll.code, session(1))
    assert isinstance(closed, Refused) and closed.reason == "closed"
