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

import copy
import dataclasses
import itertools
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
from attnviz.teach.panel import (
    CAUSAL_WEIGHTS,
    HOLDS_DROPPED,
    HOLDS_SCALED,
    HOLDS_SCORES,
    WEIGHTS,
    Panel,
    Style,
)

PAYLOAD_VERSION = 1
# The poll's figures on a projector: the projector's letters (28 px cell numbers), 560 px tall
# rather than the lesson's 600, so that the question, the answer, the share right in two rounds
# and the true figure fit one 1920×1080 screen together.
POLL_LOOK = dataclasses.replace(figures.PROJECTOR, name="poll", min_height=560)
MAX_OPTIONS = 64  # a Choice holds at most this many (a phone lists them all)

# The kinds a poll asks, best first: a class reasons its way from the figure both screens show
# (:func:`given`) to the key. Which key a query weighs most is read off its row of scores (the
# softmax keeps their order); the causal zeros are counted off the unmasked scores; the rest
# take arithmetic on the figure's cells, or a sketch.
POLL_KINDS = (
    Q.ARGMAX_KEY,
    Q.MASKED_ZEROS,
    Q.SCORE_RISES,
    Q.SCALING_ENTROPY,
    Q.SPLIT_SHAPE,
    Q.DROPOUT_ROW_SUM,
    Q.DROPOUT_SURVIVOR,
    Q.WEIGHT_RATIO,
    Q.SKETCH_ROW,
    Q.SCORE,
    Q.SCALED_SCORE,
)

# What each misconception is called on the projector (the explanations are questions.py's).
TITLES = {
    Q.COLUMN: "reading a column instead of a row",
    Q.NO_RENORMALISE: "masking without renormalizing",
    Q.MASK_WITH_ZERO: "masking with 0 instead of −∞",
    Q.ROWS_SUM_TO_ONE: "expecting rows to still sum to 1 after dropout",
    Q.NO_RESCALE: "forgetting dropout's 1/(1 − p) scaling",
    Q.DIAGONAL_MASKED: "masking the diagonal too",
    Q.NO_TRANSPOSE: "splitting heads without the transpose",
    Q.SCALING_BACKWARDS: "thinking a larger divisor sharpens the row",
    Q.OTHERS_UNCHANGED: "thinking one weight can grow alone",
    Q.ROWS_SHARE: "thinking the rows share one softmax",
    Q.MASKED_SCORE_COUNTS: "forgetting that a masked score counts for nothing",
    Q.SHIFT_CHANGES: "thinking a shift of every score changes the softmax",
    Q.PROPORTIONAL: "thinking weights are proportional to scores",
    Q.RATIO_UNSCALED: "forgetting the 1/√d_k in a ratio of weights",
    Q.DIVIDE_BY_D_K: "dividing by d_k instead of √d_k",
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


def _shape_options(q: Q.Question) -> tuple[tuple[int, ...], ...]:
    """Every distinct order of the shape's sizes, in an order the question's seed draws (the
    same on every phone): the key is one among them, and not where a fixed pick finds it
    (sorted, an ascending key such as (1, 2, 6, 6) would always come first)."""
    assert isinstance(q.key, tuple)
    options = sorted(set(itertools.permutations(int(v) for v in q.key)))
    random.Random(f"shape options:{q.seed}:{q.prompt}").shuffle(options)
    return tuple(options)


def shape_label(dims: Sequence[int]) -> str:
    return "(" + ", ".join(str(int(d)) for d in dims) + ")"


# How far from the key a number worked out by hand is still right, per kind, when the figure
# it is read from is not at hand (``given`` computes it from that figure): a score summed from
# two rows of two-decimal cells, a row's kept weights summed and scaled by 1/(1 − p); a weight
# or a score the prompt gives to 4 decimals, scaled once: to the answer's last digit.
TOLERANCE = {
    Q.SCORE: 0.05,
    Q.DROPOUT_ROW_SUM: 0.05,
    Q.DROPOUT_SURVIVOR: 0.01,
    Q.SCALED_SCORE: 0.01,
}
RATIO_SHARE = 0.02  # a ratio of weights, exp of a difference: right within 2 % of itself
READING = 0.005  # a cell printed to two decimals is at most this far from its value


def tolerance_of(q: Q.Question) -> float:
    """A number question's tolerance when its figure is not at hand (:data:`TOLERANCE`; a
    ratio of two weights: RATIO_SHARE of the key)."""
    if q.kind == Q.WEIGHT_RATIO and isinstance(q.key, int | float):
        return _hundredths_up(RATIO_SHARE * abs(float(q.key)))
    return TOLERANCE.get(q.kind, 0.01)


def _hundredths_up(x: float) -> float:
    """``x`` rounded up to the next hundredth (the answers' unit), at least 0.01."""
    return max(0.01, math.ceil(round(x * 100, 6)) / 100)


def choose(
    page: str,
    text: str,
    settings: Settings,
    book: bool,
    seed: int,
    numbers: Q.Numbers | None = None,
) -> Q.Question | None:
    """The poll's question on ``page``: among the kinds clear at these numbers, in
    :data:`POLL_KINDS`' order, seed 0 the first; each next seed the next kind, and once every
    kind was asked, other rows (``questions.make``'s seed)."""
    kinds = [k for k in POLL_KINDS if k in Q.PAGE_KINDS.get(page, ())]
    clear = [k for k in kinds if Q.make(k, page, text, settings, book, 0, numbers) is not None]
    if not clear:
        return None
    kind = clear[seed % len(clear)]
    return Q.make(kind, page, text, settings, book, seed // len(clear), numbers)


def answer_format(q: Q.Question, tolerance: float | None = None) -> AnswerFormat:
    """The poll's answer format for ``q``; ValueError when the class cannot be polled on it
    (more than MAX_OPTIONS tokens or keys, an unknown format). ``tolerance``: how far from the
    key a number answer is still right (:func:`given`'s, from the figure the class reads; None:
    :func:`tolerance_of` its kind's)."""
    fmt = q.answer_format
    if fmt == Q.TOKEN:
        if len(q.choices) > MAX_OPTIONS:
            raise ValueError(f"the text has {len(q.choices)} tokens: a poll lists at most 64")
        return Choice(tuple(q.choices))
    if fmt == Q.CHOICE:
        return Choice(tuple(q.choices))
    if fmt == Q.SHAPE:
        return Choice(tuple(shape_label(o) for o in _shape_options(q)))
    if fmt in (Q.INTEGER, Q.NUMBER):
        decimals = 0 if fmt == Q.INTEGER else 2
        values = [float(q.key)] + [float(m.answer) for m in q.misconceptions]  # type: ignore[arg-type]
        low = min([float(q.low if q.low is not None else 0.0), *values])
        high = max([float(q.high if q.high is not None else 0.0), *values])
        unit = 10.0**-decimals
        # Outward to the answer's unit: a float32 key just above a float64 bound stays inside.
        lo = math.floor(round(low / unit, 6)) * unit
        hi = math.ceil(round(high / unit, 6)) * unit
        if fmt == Q.INTEGER:
            return Number(0, round(lo), round(hi))  # a count: exactly
        allowed = tolerance_of(q) if tolerance is None else tolerance
        return Number(decimals, round(lo, decimals), round(hi, decimals), allowed)
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
        return _shape_options(q).index(tuple(int(v) for v in answer))
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
    if isinstance(form, Number) and form.tolerance:
        return abs(float(a) - float(b)) > 2 * form.tolerance + 1e-9
    return not form.matches(a, b)


def poll_question(q: Q.Question, tolerance: float | None = None) -> PollQuestion:
    """``q`` as a poll: the payload phones get, the answer format, the sealed key and the
    misconceptions whose answers the poll's grading can tell apart from the key and from each
    other (a sketch is scaled to sum to 1 before grading, so "masking without renormalizing"
    gives the key's own row there and is dropped). ``tolerance``: as :func:`answer_format`'s.
    ValueError when it cannot be polled."""
    form = answer_format(q, tolerance)
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
        highlight: list[int] = []
        if key is not None and isinstance(form, Number):  # every value within the tolerance
            highlight = [i for i, v in enumerate(values) if form.matches(float(v), key)]
        elif key is not None and form.label(key) in values:
            highlight = [values.index(form.label(key))]
        # The heading above the chart already says the round and how many answered.
        what = "value" if isinstance(form, Number) else "option"
        marked = "; the answer in yellow" if len(highlight) == 1 else ""
        if len(highlight) > 1:
            marked = "; right answers in yellow"
        title = f"Answers per {what}{marked}"
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


PROJECTED_HEIGHT = 460  # px: the class's answers beside the true figure, read from the back


def projected(chart: figures.Chart) -> figures.Chart:
    """``chart`` (the class's answers) at a projector's sizes: POLL_LOOK's title and tick
    labels, its legend as large, and PROJECTED_HEIGHT tall (the numbers are the same)."""
    spec = copy.deepcopy(chart.spec)
    layout = spec["layout"]
    look = POLL_LOOK
    title = layout.get("title", {})
    title.setdefault("font", {})["size"] = look.title
    grow = look.top - figures.TITLE_TOP
    legend = "legend" in layout
    if legend:
        layout["legend"] = {**layout["legend"], "font": {"size": look.ticks}}
        grow += round(0.5 * look.ticks)
    layout["margin"] = {**layout["margin"], "t": layout["margin"]["t"] + grow}
    for axis in ("xaxis", "yaxis"):
        if axis in layout:
            layout[axis] = {**layout[axis], "tickfont": {"size": look.ticks}}
            if "title" in layout[axis]:
                layout[axis]["title"] = {
                    **layout[axis]["title"],
                    "font": {"size": look.axis_titles},
                }
    names = [str(x) for trace in spec["data"] for x in trace.get("x", ())]
    if names and max(map(len, names)) > 4:  # tokens at 22 px would run into each other level
        layout["xaxis"] = {**layout.get("xaxis", {}), "tickangle": -45}
    layout["height"] = max(int(layout.get("height", 0)), PROJECTED_HEIGHT)
    return dataclasses.replace(chart, spec=spec)


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
    if reads == HOLDS_SCALED:
        return n.raw[h] / n.scale, "signed", "score", None
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
        changed = n.weights[0][row].double() + Q.scaling_change(q, n)[row].double()
        name = {
            Q.WITHOUT: "softmax(scores)",
            Q.WIDER: "softmax(scores / (2·√d_k))",
            Q.SHIFTED: "softmax((scores + 3) / √d_k)",
        }[q.variant or Q.WITHOUT]
        return figures.grouped_bars(
            {"softmax(scores / √d_k)": n.weights[0][row], name: changed.to(torch.float32)},
            labels,
            title=f"Row {labels[row]}: the page's weights and {name}",
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


# --- what the class reasons from ------------------------------------------------------------
@dataclass(frozen=True)
class Given:
    """What a poll's question is answered from: the figure both screens show before the reveal
    (``figure``: a matrix the question does not hide, the asked row outlined), and, for a
    number, how far from the key an answer worked out from that figure's two-decimal cells
    may land (``tolerance``; None: not a number, or no figure to read it from)."""

    figure: Panel | None
    tolerance: float | None = None


def _signed(values: torch.Tensor) -> float:
    """The colour scale's reach for scores: the largest finite magnitude (1 when none)."""
    finite = values[torch.isfinite(values)]
    return float(finite.abs().max()) if finite.numel() else 1.0


def _vectors(q: Q.Question, main) -> Given:
    """A score: the two rows whose dot product it is (``inputs`` on pass 1, ``queries`` and
    ``keys`` on pass 2), and the most a sum of their two-decimal cells' products can miss."""
    assert q.query is not None and q.other is not None
    if q.page == "simplified":
        left, right = main.inputs, main.inputs
        names = (f"inputs[{q.query}]", f"inputs[{q.other}]")
    else:
        left, right = main.queries, main.keys
        names = (f"queries[{q.query}]", f"keys[{q.other}]")
    if left.dim() == 3:  # (b, num_tokens, d): the first text's
        left, right = left[0], right[0]
    a, b = left[q.query], right[q.other]
    a, b = a.detach().double(), b.detach().double()
    # |â·b̂ − a·b| ≤ Σ (|a_i| + |b_i|)·r + d·r² with every cell off by at most r.
    miss = READING * float(a.abs().sum() + b.abs().sum()) + len(a) * READING**2
    values = torch.stack([a, b]).float()
    figure = Panel(
        key=f"poll_given_{q.kind}",
        values=values,
        rows=names,
        cols=tuple(str(i) for i in range(values.shape[1])),
        title=f"{names[0]} and {names[1]}: the score is their dot product",
        style=Style(
            colour="signed",
            zmax=_signed(values),
            row_name="vector",
            col_name="dimension",
            value_name="value",
        ),
    )
    return Given(figure, _hundredths_up(miss))


def given(q: Q.Question, n: Q.Numbers, main=None) -> Given:
    """The figure a class answers ``q`` from, on the projector and the phones alike, and a
    number's tolerance from it. Like Predict first, it shows none of the numbers the question
    hides (``q.conceals``): the scores (masked; divided by √d_k for a sketch, as the softmax
    reads them) for a weight's question, the unmasked
    scores for the causal zeros, the weights before dropout (with the cells dropout zeroes
    blank) for dropout's questions, the two rows of a score, the queries before the head split
    for its shape. ``main``: the page's trace (a score's rows, the queries' shape)."""
    h = q.head or 0
    labels = tuple(n.labels)
    head = f", head {q.head}" if q.head is not None else ""
    outline = (q.query,) if q.query is not None else ()
    if q.kind == Q.SCORE:
        return _vectors(q, main) if main is not None else Given(None)
    if q.kind == Q.SPLIT_SHAPE:
        if main is None:
            return Given(None)
        queries = main.queries[0].detach().clone()  # (num_tokens, d_out), the first text
        b, t, d_out = tuple(main.queries.shape)
        return Given(
            Panel(
                key=f"poll_given_{q.kind}",
                values=queries,
                rows=labels,
                cols=tuple(str(i) for i in range(d_out)),
                title=f"queries[0]: one of b = {b}, num_tokens × d_out = {t} × {d_out}",
                style=Style(
                    colour="signed", zmax=_signed(queries), col_name="d_out", value_name="value"
                ),
            )
        )
    if q.kind in (Q.DROPOUT_ROW_SUM, Q.DROPOUT_SURVIVOR):
        weights = n.weights[h].detach().clone()
        title = f"Attention weights before dropout{head}"
        miss = None
        if q.kind == Q.DROPOUT_ROW_SUM and n.dropped is not None:
            zeroed = (weights > 0) & (n.dropped[h] == 0)
            weights = weights.masked_fill(zeroed, math.nan)
            title += f"; blank: the weights dropout zeroes (p = {n.p:g})"
            kept = int(torch.isfinite(weights[q.query]).sum()) if q.query is not None else 0
            miss = _hundredths_up(READING * kept / (1 - n.p))
        return Given(
            Panel(
                key=f"poll_given_{q.kind}",
                values=weights,
                rows=labels,
                cols=labels,
                title=title,
                kind=CAUSAL_WEIGHTS if n.causal else WEIGHTS,
                style=Style(colour="weights", zmax=1.0, outline_rows=outline),
            ),
            miss,
        )
    scores = n.raw[h].detach().clone()
    if q.kind == Q.MASKED_ZEROS:
        what = "Scores before the mask" if n.causal else "Scores"
        outline = ()
    elif q.kind == Q.SCALED_SCORE:  # the raw scores: the scaled ones are its answer
        what = "Scores, before the 1/√d_k"
    else:  # a weight's order follows from its row of scores; a sketch's shape from scaled ones
        what = "Scores X Xᵀ" if n.page == "simplified" else "Scores QKᵀ"
        if q.kind == Q.SKETCH_ROW and n.scale != 1:
            scores = scores / n.scale
            what = "Scores ÷ √d_k, what the softmax reads"
        if n.causal:
            future = torch.triu(torch.ones_like(scores, dtype=torch.bool), diagonal=1)
            scores = scores.masked_fill(future, -math.inf)
            what += " (blank: masked)"
    return Given(
        Panel(
            key=f"poll_given_{q.kind}",
            values=scores,
            rows=labels,
            cols=labels,
            title=f"{what}{head}",
            style=Style(
                colour="signed", zmax=_signed(scores), value_name="score", outline_rows=outline
            ),
        )
    )
