"""Ask the class: a question of ``attnviz.teach.questions`` as a class poll of ``attnviz.classroom.polls``.

The presenter's :class:`~attnviz.teach.questions.Question` becomes a
:class:`~attnviz.classroom.polls.PollQuestion` (:func:`poll_question`): what every phone receives
(:func:`payload_of`: the kind, page, seed and prompt, and the presenter's text, settings and
book flag) carries no key; the key and the answers of its misconceptions go into the store's
sealed part, in the poll's own answer format:

- a token to click, one of a few choices, a shape: :class:`~attnviz.classroom.polls.Choice` (a shape is
  picked among the distinct orders of its four sizes);
- a whole number, a number to two decimals: :class:`~attnviz.classroom.polls.Number`;
- a sketched row: :class:`~attnviz.classroom.polls.Sketch` (graded as the store grades it: each row
  scaled to sum to 1, then total variation ≤ 0.10).

A phone rebuilds the question from the payload alone (:func:`question_from`, through
``questions.make``) and checks that its prompt is the presenter's, so it never shows a different
question. After the reveal, :func:`reveal_figure` is the true figure (the matrix the question
hid, the asked row outlined), and :func:`tally_chart` draws a round's answers.

Every sentence about the class's answers (:func:`share_lines`, :func:`misconception_lines`) is
made from the counts. Nothing here imports Streamlit.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from attnviz import figures
from attnviz.classroom.polls import (
    AnswerFormat,
    Choice,
    Number,
    PollQuestion,
    PresenterView,
    RoundTally,
    Sketch,
    total_variation,
)
from attnviz.core.settings import Settings
from attnviz.teach import questions as Q
from attnviz.teach.panel import CAUSAL_WEIGHTS, HOLDS_DROPPED, HOLDS_SCORES, WEIGHTS, Panel, Style

PAYLOAD_VERSION = 1
# The poll's figures on a projector: the projector's letters (28 px cell numbers), 560 px tall
# rather than the lesson's 600, so that the question, the answer, the share right in two rounds
# and the true figure fit one 1920×1080 screen together.
POLL_LOOK = dataclasses.replace(figures.PROJECTOR, name="poll", min_height=560)
MAX_OPTIONS = 64  # a Choice holds at most this many (a phone lists them all)

# What each misconception is called on the projector (the explanations are questions.py's).
TITLES = {
    Q.COLUMN: "reading a column instead of a row",
    Q.NO_RENORMALISE: "masking without renormalizing",
    Q.MASK_WITH_ZERO: "masking with 0 instead of −∞",
    Q.ROWS_SUM_TO_ONE: "expecting rows to still sum to 1 after dropout",
    Q.NO_RESCALE: "forgetting dropout's 1/(1 − p) scaling",
    Q.DIAGONAL_MASKED: "masking the diagonal too",
    Q.NO_TRANSPOSE: "splitting heads without the transpose",
    Q.SCALING_BACKWARDS: "thinking 1/√d_k sharpens the row",
}


def title_of(name: str) -> str:
    return TITLES.get(name, name.replace("_", " "))


def explanation_of(name: str) -> str:
    return Q.EXPLANATIONS.get(name, "")


# --- the question, as a poll --------------------------------------------------------------
def payload_of(q: Q.Question) -> tuple[dict[str, Any], dict[str, Any]]:
    """(payload, settings): what every phone receives, and nothing else. No key, no
    misconception answers: those are sealed in the store."""
    payload = {
        "v": PAYLOAD_VERSION,
        "kind": q.kind,
        "page": q.page,
        "seed": q.seed,
        "prompt": q.prompt,
    }
    settings = {"text": q.text, "book": q.book, "settings": dataclasses.asdict(q.settings)}
    return payload, settings


def _shape_options(key: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Every distinct order of the shape's sizes, sorted: the key is one among them."""
    return tuple(sorted(set(itertools.permutations(key))))


def shape_label(dims: Sequence[int]) -> str:
    return "(" + ", ".join(str(int(d)) for d in dims) + ")"


def answer_format(q: Q.Question) -> AnswerFormat:
    """The poll's answer format for ``q``; ValueError when the class cannot be polled on it
    (more than MAX_OPTIONS tokens or keys, an unknown format)."""
    fmt = q.answer_format
    if fmt == Q.TOKEN:
        if len(q.choices) > MAX_OPTIONS:
            raise ValueError(f"the text has {len(q.choices)} tokens: a poll lists at most 64")
        return Choice(tuple(q.choices))
    if fmt == Q.CHOICE:
        return Choice(tuple(q.choices))
    if fmt == Q.SHAPE:
        assert isinstance(q.key, tuple)
        dims = tuple(int(v) for v in q.key)
        return Choice(tuple(shape_label(o) for o in _shape_options(dims)))
    if fmt in (Q.INTEGER, Q.NUMBER):
        decimals = 0 if fmt == Q.INTEGER else 2
        values = [float(q.key)] + [float(m.answer) for m in q.misconceptions]  # type: ignore[arg-type]
        low = min([float(q.low if q.low is not None else 0.0), *values])
        high = max([float(q.high if q.high is not None else 0.0), *values])
        unit = 10.0**-decimals
        # Outward to the answer's unit: a float32 key just above a float64 bound stays inside.
        lo = math.floor(round(low / unit, 6)) * unit
        hi = math.ceil(round(high / unit, 6)) * unit
        return Number(decimals, round(lo, decimals), round(hi, decimals))
    if fmt == Q.ROW:
        if len(q.choices) > MAX_OPTIONS:
            raise ValueError(f"the row has {len(q.choices)} keys: a poll sketches at most 64")
        return Sketch(len(q.choices), Q.TV_TOLERANCE)
    raise ValueError(f"answers of the form {fmt!r} cannot be polled")


def to_poll_answer(q: Q.Question, answer: Any) -> Any:
    """An answer in ``questions``' form (a token's position, a choice's text, a shape, a
    number, a row) in the poll's form (an option's index, a number, a row)."""
    fmt = q.answer_format
    if fmt == Q.CHOICE:
        return q.choices.index(str(answer))
    if fmt == Q.SHAPE:
        assert isinstance(q.key, tuple)
        options = _shape_options(tuple(int(v) for v in q.key))
        return options.index(tuple(int(v) for v in answer))
    if fmt == Q.TOKEN:
        return int(answer)
    if fmt == Q.INTEGER:
        return int(answer)
    if fmt == Q.NUMBER:
        return float(answer)
    return tuple(float(v) for v in answer)


def _apart(form: AnswerFormat, a: Any, b: Any) -> bool:
    """No answer can match both ``a`` and ``b`` under the poll's grading."""
    if isinstance(form, Sketch):
        return total_variation(a, b) > 2 * form.tolerance + 1e-9
    return not form.matches(a, b)


def poll_question(q: Q.Question) -> PollQuestion:
    """``q`` as a poll: the payload phones get, the answer format, the sealed key and the
    misconceptions whose answers the poll's grading can tell apart from the key and from each
    other (a sketch is scaled to sum to 1 before grading, so "masking without renormalizing"
    gives the key's own row there and is dropped). ValueError when it cannot be polled."""
    form = answer_format(q)
    key = form.clean(to_poll_answer(q, q.key))
    found = []
    for m in q.misconceptions:
        try:
            found.append((m.name, form.clean(to_poll_answer(q, m.answer))))
        except (ValueError, TypeError):
            continue  # an answer the poll's options cannot hold
    kept = {
        name: value
        for i, (name, value) in enumerate(found)
        if _apart(form, value, key)
        and all(_apart(form, value, other) for j, (_, other) in enumerate(found) if j != i)
    }
    payload, settings = payload_of(q)
    return PollQuestion(payload, settings, form, key, kept)


def question_from(
    payload: Mapping[str, Any], settings: Mapping[str, Any], numbers: Q.Numbers | None = None
) -> Q.Question | None:
    """The presenter's question made again from what a phone received, or None when it cannot
    be (another version wrote it, the settings are not valid here, or the question made here
    is not the presenter's: its prompt differs)."""
    try:
        if payload.get("v") != PAYLOAD_VERSION:
            return None
        made = Q.make(
            str(payload["kind"]),
            str(payload["page"]),
            str(settings["text"]),
            Settings(**settings["settings"]),
            bool(settings["book"]),
            int(payload["seed"]),
            numbers,
        )
    except (KeyError, TypeError, ValueError):
        return None
    if made is None or made.prompt != payload.get("prompt"):
        return None
    return made


def trace_args(settings: Mapping[str, Any]) -> tuple[str, Settings, bool] | None:
    """(text, Settings, book) of a poll's settings, or None when they are not valid."""
    try:
        return (
            str(settings["text"]),
            Settings(**settings["settings"]),
            bool(settings["book"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


# --- what the projector and the phones say ------------------------------------------------
def percent(count: int, total: int) -> str:
    return f"{round(100 * count / total)}%" if total else "0%"


def answered_line(tally: RoundTally) -> str:
    word = "answer" if tally.answered == 1 else "answers"
    return f"Round {tally.round}: {tally.answered} {word}"


def share_lines(view: PresenterView) -> tuple[str, ...]:
    """After the reveal: the share right in each round, from the store's tally."""
    return tuple(
        f"Round {t.round}: {t.right} of {t.answered} right ({percent(t.right, t.answered)})"
        for t in view.rounds
        if t.right is not None
    )


def misconception_lines(view: PresenterView) -> tuple[str, ...]:
    """After the reveal: each misconception's share in the last round, the answer that shows
    it and what it gets wrong (every count from the store's tally)."""
    if not view.rounds or not view.rounds[-1].misconceptions:
        return ()
    last = view.rounds[-1]
    labels = {name: label for name, _value, label in view.misconceptions or ()}
    lines = []
    for name, count in last.misconceptions or ():
        said = f" ({labels[name]})" if name in labels else ""
        lines.append(
            f"{percent(count, last.answered)} ({count} of {last.answered}) answered as "
            f"{title_of(name)} would{said}: {explanation_of(name)}"
        )
    return tuple(lines)


# --- figures ------------------------------------------------------------------------------
def tally_chart(
    form: AnswerFormat,
    rounds: Sequence[RoundTally],
    key: Any = None,
    labels: Sequence[str] = (),
) -> figures.Chart | None:
    """The class's answers as bars: one bar per option (or value) and round; a sketch: the
    class's mean row beside its spread (after the reveal, the true row too). ``key``: the
    right answer, after the reveal (its bar is highlighted). ``labels``: a sketch's keys."""
    rounds = [t for t in rounds if t.answered]
    if not rounds:
        return None
    if isinstance(form, Sketch):
        last = rounds[-1]
        assert last.mean is not None and last.spread is not None
        names = tuple(labels) if len(labels) == form.length else tuple(map(str, range(form.length)))
        series: dict[str, Any] = {"class mean": last.mean, "spread (SD)": last.spread}
        if key is not None:
            total = sum(key)
            series["true row"] = [v / total for v in key]
        return figures.grouped_bars(
            series,
            names,
            title=f"Round {last.round}: the class's sketch ({last.answered} answers)",
            value_name="weight",
        )
    if isinstance(form, Number):
        values = sorted({label for t in rounds for label, _ in t.counts}, key=float)
    else:
        values = [label for label, _ in rounds[-1].counts]
    if len(rounds) == 1:
        counts = dict(rounds[0].counts)
        highlight = None
        if key is not None:
            key_label = form.label(key)
            highlight = values.index(key_label) if key_label in values else None
        # The heading above the chart already says the round and how many answered.
        what = "value" if isinstance(form, Number) else "option"
        title = f"Answers per {what}" + ("; the answer in yellow" if highlight is not None else "")
        return figures.bars(
            [counts.get(v, 0) for v in values],
            values,
            title=title,
            value_name="answers",
            highlight=highlight,
            counts=True,
        )
    series = {f"round {t.round}": [dict(t.counts).get(v, 0) for v in values] for t in rounds}
    return figures.grouped_bars(
        series, values, title="Answers, round by round", value_name="answers", counts=True
    )


def _hidden_matrix(q: Q.Question, n: Q.Numbers) -> tuple[torch.Tensor, str, str, float | None]:
    """(the matrix the question hid, its colour, what its values are, its top): what its kind
    asks about (``questions.READS``): the scores, the weights after dropout, or the weights."""
    h = q.head or 0
    reads = Q.READS[q.kind]
    if reads == HOLDS_SCORES:
        scores = n.raw[h]
        if n.causal:
            future = torch.triu(torch.ones_like(scores, dtype=torch.bool), diagonal=1)
            scores = scores.masked_fill(future, -math.inf)
        return scores, "signed", "score", None
    if reads == HOLDS_DROPPED and n.dropped is not None:
        return n.dropped[h], "weights", "weight", 1 / (1 - n.p)
    return n.weights[h], "weights", "weight", None


def reveal_figure(q: Q.Question, n: Q.Numbers) -> Panel | figures.Chart | None:
    """The true figure, drawn after the reveal: the matrix the question hid with the asked
    row outlined (a score, a weight, a row after dropout, a count of zeros), the asked row
    with and without 1/√d_k (the scaling question), or None (a shape: its answer is words)."""
    if q.kind == Q.SPLIT_SHAPE:
        return None
    labels = tuple(n.labels)
    if q.kind == Q.SCALING_ENTROPY:
        assert q.query is not None
        row = q.query
        return figures.grouped_bars(
            {
                "softmax(scores / √d_k)": n.weights[0][row],
                "softmax(scores)": torch.softmax(n.raw[0][row], dim=-1),
            },
            labels,
            title=f"Row {labels[row]} with and without 1/√d_k",
        )
    values, colour, name, zmax = _hidden_matrix(q, n)
    head = f", head {q.head}" if q.head is not None else ""
    what = {"score": "Scores", "weight": "Attention weights"}[name]
    if q.kind in (Q.DROPOUT_SURVIVOR, Q.DROPOUT_ROW_SUM):
        what = f"Weights after dropout (p = {n.p:g})"
    outline = (q.query,) if q.query is not None else ()
    return Panel(
        key=f"poll_{q.hides}",
        values=values.detach().clone(),
        rows=labels,
        cols=labels,
        title=f"{what}{head}: the answer",
        kind=("" if name == "score" else CAUSAL_WEIGHTS if n.causal else WEIGHTS),
        style=Style(
            colour=colour,
            zmax=zmax,
            value_name=name,
            outline_rows=outline,
        ),
    )
