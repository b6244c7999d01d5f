"""Hake's normalized gain, <g> = (post − pre) / (100% − pre), on exact counts."""

from __future__ import annotations

from fractions import Fraction

import pytest

from attnviz.teach import concepts as C

K = len(C.ITEMS)
RIGHT = [0] * K


def wrong_on(*items: int) -> list[int]:
    answers = [0] * K
    for i in items:
        answers[i] = 1 + i % 3  # one of the three wrong options
    return answers


def test_the_gain_is_the_share_of_what_was_left_to_gain():
    assert C.normalized_gain(Fraction(2, 5), Fraction(4, 5)) == Fraction(2, 3)
    assert C.normalized_gain(Fraction(0), Fraction(1)) == 1
    assert C.normalized_gain(Fraction(1, 2), Fraction(1, 4)) == Fraction(-1, 2)  # fell
    assert C.normalized_gain(Fraction(1), Fraction(1)) is None  # nothing to gain
    assert C.normalized_gain(Fraction(1), Fraction(3, 4)) is None
    with pytest.raises(ValueError):
        C.normalized_gain(Fraction(3, 2), Fraction(1))


def test_a_class_of_four_counted_per_question_and_overall():
    before = [RIGHT, wrong_on(0, 1), wrong_on(0), wrong_on(0, 2)]
    after = [RIGHT, RIGHT, wrong_on(1), wrong_on(0)]
    per, overall = C.class_gains(before, after)
    q0, q1, q2 = per[0], per[1], per[2]
    assert (q0.before, q0.after) == (C.Score(1, 4), C.Score(3, 4))
    assert q0.gain == Fraction(2, 3)  # (3/4 − 1/4) / (3/4)
    assert (q1.before, q1.after) == (C.Score(3, 4), C.Score(3, 4)) and q1.gain == 0
    assert (q2.before, q2.after) == (C.Score(3, 4), C.Score(4, 4)) and q2.gain == 1
    assert per[3].gain is None  # everyone right before
    assert overall.before == C.Score(4 * K - 5, 4 * K)
    assert overall.after == C.Score(4 * K - 2, 4 * K)
    assert overall.gain == Fraction(3, 5)  # (3 / 4K) / (5 / 4K)


def test_the_rounds_may_have_different_students():
    per, overall = C.class_gains([wrong_on(0)] * 2, [RIGHT] * 3)
    assert per[0].before == C.Score(0, 2) and per[0].after == C.Score(3, 3)
    assert per[0].gain == 1 and overall.after.share == 1


def test_no_answers_give_no_share_and_no_gain():
    per, overall = C.class_gains([], [])
    assert overall.before.share is None and overall.gain is None
    assert C.percent(None) == "—" and C.gain_text(None) == "—"
    assert C.percent(Fraction(2, 3)) == "67%" and C.gain_text(Fraction(2, 3)) == "0.67"


def test_graded_wants_one_answer_per_item():
    assert C.graded(RIGHT) == (True,) * K
    with pytest.raises(ValueError):
        C.graded(RIGHT[:-1])
