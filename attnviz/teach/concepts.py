"""The concept check: chapter 3's ideas as multiple-choice items, each wrong option a named
misconception (``concepts.toml``, read once), and the arithmetic of a before/after check.

An :class:`Item` lists its options right answer first (its *canonical* order). Nobody sees
that order: :func:`shown_order` shuffles each item per student and round (the seed comes from
a string that names both, through ``attnviz.core.seeding``), so "always the first option" wins
only by chance. Answers are stored and graded in canonical indices; the index shown on a
screen never leaves the page.

Everything here is immutable and imports no Streamlit: the class poll
(``attnviz.classroom.concept_polls``), the page (``ui/classroom/concept_views.py``) and the
tests share the same items.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from attnviz.core.seeding import permutation

KEY = 0  # the right answer's canonical index in every item


@dataclass(frozen=True)
class Option:
    """One answer. ``misconception`` names the mistaken idea a wrong option shows (None for
    the right answer); ``explanation`` is one line on what the chapter does instead (for the
    right answer: why it is right)."""

    text: str
    misconception: str | None
    explanation: str


@dataclass(frozen=True)
class Item:
    id: str
    topic: str
    section: str
    prompt: str
    options: tuple[Option, ...]  # canonical order: the right answer first
    evidence: str  # the line of modules.py or of the book's outputs the answer rests on

    @property
    def answer(self) -> Option:
        return self.options[KEY]

    @property
    def wrong(self) -> tuple[Option, ...]:
        return self.options[KEY + 1 :]

    def is_right(self, canonical: int) -> bool:
        return canonical == KEY


def _load(text: str) -> tuple[Item, ...]:
    items = []
    for raw in tomllib.loads(text)["item"]:
        right = Option(raw["answer"], None, raw["why"])
        wrong = tuple(Option(w["text"], w["misconception"], w["explanation"]) for w in raw["wrong"])
        items.append(
            Item(
                id=raw["id"],
                topic=raw["topic"],
                section=raw["section"],
                prompt=raw["prompt"],
                options=(right, *wrong),
                evidence=raw["evidence"],
            )
        )
    return tuple(items)


SOURCE = Path(__file__).with_name("concepts.toml")
ITEMS: tuple[Item, ...] = _load(SOURCE.read_text(encoding="utf-8"))
SIZES: tuple[int, ...] = tuple(len(item.options) for item in ITEMS)


def shown_order(item: Item, who: str, round_: str) -> tuple[int, ...]:
    """The canonical indices of ``item``'s options in the order one student sees them in one
    round (``who``: her session's id, or a solo student's; ``round_``: "before" or "after").
    The same arguments always give the same order; the order never depends on which option is
    right."""
    return permutation(len(item.options), f"concepts:{who}:{round_}:{item.id}")


def graded(answers: Sequence[int]) -> tuple[bool, ...]:
    """Right or not, per item, for one student's canonical answers (one per item)."""
    if len(answers) != len(ITEMS):
        raise ValueError(f"expected {len(ITEMS)} answers, got {len(answers)}")
    return tuple(item.is_right(a) for item, a in zip(ITEMS, answers, strict=True))


def misconception_of(item: Item, canonical: int) -> Option | None:
    """The wrong option picked (with its misconception), or None for the right answer."""
    return None if item.is_right(canonical) else item.options[canonical]


# --- before and after ---------------------------------------------------------------------
def normalized_gain(pre: Fraction, post: Fraction) -> Fraction | None:
    """Hake's normalized gain g = (post − pre) / (1 − pre): the share of what could be gained
    that was gained (shares in [0, 1]). None when pre = 1: nothing was left to gain. Negative
    when the share right fell."""
    if not (0 <= pre <= 1 and 0 <= post <= 1):
        raise ValueError("shares must be in [0, 1]")
    if pre == 1:
        return None
    return (post - pre) / (1 - pre)


@dataclass(frozen=True)
class Score:
    """How many answers were right of how many given."""

    right: int
    answered: int

    @property
    def share(self) -> Fraction | None:
        return Fraction(self.right, self.answered) if self.answered else None


@dataclass(frozen=True)
class Gain:
    """One question (or all of them, ``item`` None): right before and after, and the gain."""

    item: Item | None
    before: Score
    after: Score

    @property
    def gain(self) -> Fraction | None:
        pre, post = self.before.share, self.after.share
        if pre is None or post is None:
            return None
        return normalized_gain(pre, post)


def class_gains(
    before: Sequence[Sequence[int]], after: Sequence[Sequence[int]]
) -> tuple[tuple[Gain, ...], Gain]:
    """Per question and overall, from every student's canonical answers in each round.

    Hake's class gain works on the class's average share right, not on matched students: a
    student may answer only one of the two rounds. Overall, every answer of every question
    counts once: right answers over questions × students, before and after.
    """
    grades_before = [graded(a) for a in before]
    grades_after = [graded(a) for a in after]
    per = tuple(
        Gain(
            item,
            Score(sum(g[i] for g in grades_before), len(grades_before)),
            Score(sum(g[i] for g in grades_after), len(grades_after)),
        )
        for i, item in enumerate(ITEMS)
    )
    overall = Gain(
        None,
        Score(sum(g.before.right for g in per), len(ITEMS) * len(grades_before)),
        Score(sum(g.after.right for g in per), len(ITEMS) * len(grades_after)),
    )
    return per, overall


def percent(share: Fraction | None) -> str:
    """A share as a whole percent ("—" when there is none)."""
    return "—" if share is None else f"{round(100 * share)}%"


def gain_text(gain: Fraction | None) -> str:
    """Hake's g to two decimals; "—" when there was nothing left to gain."""
    return "—" if gain is None else f"{float(gain):.2f}"
