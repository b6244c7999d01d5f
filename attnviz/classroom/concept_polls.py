"""The concept check as a class poll: "Did the class learn it?" (issue 37).

One poll of the store (``attnviz.classroom.polls``) holds the whole check: its answer format is
:class:`~attnviz.classroom.polls.Picks` (one pick per item of ``attnviz.teach.concepts``, in the
items' canonical order), round 1 is the check *before* the lesson and round 2 the same check
*after* it (the store's "ask again"), and the reveal shows the results. What every phone
receives (:func:`payload`) is the items' ids and nothing of the key; the key (every item's
canonical index 0) is sealed in the store like any poll's.

The presenter's view of the store counts each distinct answer; :func:`report` expands those
counts into every student's answers and grades them question by question: the share right
before and after and Hake's normalized gain, per question and overall, with exact counts. No
name is stored: the store keeps an HMAC per browser, and nothing here adds to it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from attnviz.classroom.polls import Picks, PollQuestion, PresenterView, RoundTally
from attnviz.teach import concepts as C

KIND = "concept_check"
PAYLOAD_VERSION = 1
BEFORE, AFTER = 1, 2  # the store's rounds
ROUND_NAMES = {BEFORE: "before", AFTER: "after"}
ITEM_COUNT = len(C.ITEMS)
PROMPT = f"Concept check: {ITEM_COUNT} questions on chapter 3's ideas"


def payload() -> dict[str, Any]:
    """What every phone receives: the kind, the items' ids (a phone checks it holds the same
    items) and the prompt. No key."""
    return {
        "v": PAYLOAD_VERSION,
        "kind": KIND,
        "items": [item.id for item in C.ITEMS],
        "prompt": PROMPT,
    }


def poll_question() -> PollQuestion:
    """The check as a poll: picks in canonical order, the key sealed, no single-answer
    misconceptions (each wrong option names its own, in the items)."""
    return PollQuestion(
        payload=payload(),
        settings={},
        answer=Picks(C.SIZES),
        key=(C.KEY,) * len(C.ITEMS),
    )


def is_concept_check(poll_payload: Mapping[str, Any]) -> bool:
    return poll_payload.get("kind") == KIND


def same_items(poll_payload: Mapping[str, Any]) -> bool:
    """True when this server's items are the ones the poll was opened on (another version
    of the app may have other items: then its answers cannot be read here)."""
    return (
        poll_payload.get("v") == PAYLOAD_VERSION
        and is_concept_check(poll_payload)
        and list(poll_payload.get("items", ())) == [item.id for item in C.ITEMS]
    )


# --- the class's answers, graded ----------------------------------------------------------
def answers_of(tally: RoundTally) -> tuple[tuple[int, ...], ...]:
    """Every answer of one round, each a tuple of canonical picks (the store counts each
    distinct answer once with its count: expanded here, one per student)."""
    form = Picks(C.SIZES)
    out: list[tuple[int, ...]] = []
    for label, count in tally.counts:
        out += [form.decode(label)] * count
    return tuple(out)


def option_counts(answers: Sequence[Sequence[int]], index: int) -> tuple[int, ...]:
    """How many picked each option (canonical order) of item ``index``."""
    counts = [0] * C.SIZES[index]
    for a in answers:
        counts[a[index]] += 1
    return tuple(counts)


@dataclass(frozen=True)
class Report:
    """The class's before and after: per question and overall, and each round's answers."""

    per: tuple[C.Gain, ...]
    overall: C.Gain
    before: tuple[tuple[int, ...], ...]
    after: tuple[tuple[int, ...], ...]

    def top_misconception(self, index: int, round_: int = AFTER) -> tuple[str, int] | None:
        """The wrong option of item ``index`` picked most in ``round_`` (its misconception
        and count), or None when nobody picked a wrong one. A tie goes to the first listed."""
        answers = self.after if round_ == AFTER else self.before
        counts = option_counts(answers, index)
        wrong = [(n, -i) for i, n in enumerate(counts) if i != C.KEY and n > 0]
        if not wrong:
            return None
        n, minus_i = max(wrong)
        name = C.ITEMS[index].options[-minus_i].misconception
        assert name is not None
        return name, n


def report(view: PresenterView) -> Report:
    """Grade the presenter's view of a concept-check poll (its rounds' counts)."""
    rounds = {t.round: t for t in view.rounds}
    before = answers_of(rounds[BEFORE]) if BEFORE in rounds else ()
    after = answers_of(rounds[AFTER]) if AFTER in rounds else ()
    per, overall = C.class_gains(before, after)
    return Report(per, overall, before, after)


def _share(score: C.Score) -> str:
    share = score.share
    return "" if share is None else f"{float(share):.4f}"


def report_csv(result: Report) -> str:
    """One row per question and one for all of them: right and answered before and after,
    each share, and the normalized gain (empty where there is none); then, per question, the
    wrong option picked most after the lesson. Nothing names a student."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "question",
            "id",
            "topic",
            "right_before",
            "answered_before",
            "share_before",
            "right_after",
            "answered_after",
            "share_after",
            "gain",
            "top_misconception_after",
            "picked_by_after",
        ]
    )
    rows: list[tuple[str, str, str, C.Gain]] = [
        (str(i + 1), g.item.id, g.item.topic, g) for i, g in enumerate(result.per) if g.item
    ]
    rows.append(("all", "", "every question", result.overall))
    for i, (number, ident, topic, g) in enumerate(rows):
        gain = g.gain
        top = result.top_misconception(i) if i < len(result.per) else None
        writer.writerow(
            [
                number,
                ident,
                topic,
                g.before.right,
                g.before.answered,
                _share(g.before),
                g.after.right,
                g.after.answered,
                _share(g.after),
                "" if gain is None else f"{float(gain):.4f}",
                "" if top is None else top[0],
                "" if top is None else top[1],
            ]
        )
    return out.getvalue()


def score_line(score: C.Score) -> str:
    """ "31 of 50 (62%)", from the counts."""
    return f"{score.right} of {score.answered} ({C.percent(score.share)})"


def summary_line(result: Report) -> str:
    """The whole class in one sentence, from the counts."""
    o = result.overall
    students = f"{len(result.before)} before, {len(result.after)} after"
    return (
        f"Right before: {score_line(o.before)}; after: {score_line(o.after)} "
        f"({students}). Normalized gain ⟨g⟩ = {C.gain_text(o.gain)}"
        + (" (everyone was right before)" if o.gain is None and o.before.share == 1 else "")
        + "."
    )
