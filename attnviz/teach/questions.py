"""Predict first: questions made from the student's own numbers (issue 25, the engine part).

A :class:`Question` asks for the number a page is about to draw (which key a query weighs most,
a softmax row, how many causal weights are exactly 0, what dropout makes of a kept weight, the
shape after the head split, whether a row sharpens without 1/√d_k, a score) before the panel
that shows it (``Question.hides``, a lesson panel key) is revealed. It is a frozen value of plain
types: its key, tolerance and the wrong answers of known misconceptions are stored in it, so it
is graded (:func:`grade`) without the trace, and :func:`make` rebuilds it from (kind, page,
text, settings, book, seed) alone (issue 26 polls a class on the same question).

A question is posed only when its answer is clear at these numbers (an argmax wins by at least
``ARGMAX_MARGIN``, a row is not close to an even share, a misconception's wrong answer is
distinct from the key and from the others ...) and when a uniform guess is right at most a
third of the time; otherwise :func:`make` returns None and :func:`choose` tries another kind.

The prompt names tokens by their 0-based labels ("3: ␣the"): it holds the student's text, so a
page shows it as plain text, never as Markdown or HTML. Nothing here imports Streamlit.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from attnviz.core import book as BK
from attnviz.core import trace as tracing
from attnviz.core.seeding import seeded
from attnviz.core.settings import Settings
from attnviz.teach import declared, prepare
from attnviz.teach import panel as P

Tensor = torch.Tensor
Answer = int | float | str | tuple[int, ...] | tuple[float, ...]

PAGES = ("simplified", "trainable", "causal", "multihead")

# How an answer is given, and how it is graded.
TOKEN = "token"  # click a token: its 0-based position
ROW = "row"  # one value per key (sliders): graded by total-variation distance
INTEGER = "integer"  # a whole number in [low, high]
NUMBER = "number"  # a number to 2 decimals in [low, high]
CHOICE = "choice"  # one of ``choices``
SHAPE = "shape"  # a tuple of whole numbers

ARGMAX_MARGIN = 0.02  # the largest weight beats the second by at least this
TV_TOLERANCE = 0.10  # a sketched row is right within this total-variation distance
NUMBER_TOLERANCE = 0.005  # "to two decimals": within half a unit of the second decimal
ENTROPY_CLEAR = 0.05  # nats: the two rows' entropies differ by at least this
MAX_GUESS_CHANCE = 1 / 3  # a uniform guess is right at most this often
_SLACK = 1e-6  # float32 rounding at the edge of a tolerance

SHARPER, FLATTER, UNCHANGED = "sharper", "flatter", "unchanged"


# --- the kinds ----------------------------------------------------------------------------
ARGMAX_KEY = "argmax_key"
SKETCH_ROW = "sketch_row"
MASKED_ZEROS = "masked_zeros"
DROPOUT_SURVIVOR = "dropout_survivor"
DROPOUT_ROW_SUM = "dropout_row_sum"
SPLIT_SHAPE = "split_shape"
SCALING_ENTROPY = "scaling_entropy"
SCORE = "score"
KINDS = (
    ARGMAX_KEY,
    SKETCH_ROW,
    MASKED_ZEROS,
    DROPOUT_SURVIVOR,
    DROPOUT_ROW_SUM,
    SPLIT_SHAPE,
    SCALING_ENTROPY,
    SCORE,
)

# The kinds each page can ask, in the book's order of the page.
PAGE_KINDS: dict[str, tuple[str, ...]] = {
    "simplified": (SCORE, ARGMAX_KEY, SKETCH_ROW),
    "trainable": (SCORE, SCALING_ENTROPY, ARGMAX_KEY, SKETCH_ROW),
    "causal": (SCORE, MASKED_ZEROS, ARGMAX_KEY, SKETCH_ROW, DROPOUT_SURVIVOR, DROPOUT_ROW_SUM),
    "multihead": (SPLIT_SHAPE, MASKED_ZEROS, ARGMAX_KEY, SKETCH_ROW, DROPOUT_SURVIVOR),
}

# --- the misconceptions -------------------------------------------------------------------
COLUMN = "column_not_row"
NO_RENORMALISE = "mask_without_renormalising"
MASK_WITH_ZERO = "mask_with_zero"
ROWS_SUM_TO_ONE = "rows_sum_to_one_after_dropout"
# Known too, though not in the list: each has its own wrong answer from the numbers.
NO_RESCALE = "dropout_without_rescaling"
DIAGONAL_MASKED = "diagonal_masked"
NO_TRANSPOSE = "split_without_transpose"
SCALING_BACKWARDS = "scaling_backwards"

EXPLANATIONS = {
    COLUMN: "A query's weights are its row: reading the column instead gives how much every "
    "query weighs that one key.",
    NO_RENORMALISE: "Zeroing the future weights after the softmax leaves a row that sums to less "
    "than 1: the kept weights must be divided by their new sum (or the scores masked with −∞ "
    "before the softmax).",
    MASK_WITH_ZERO: "A masked score of 0 is not hidden: the softmax gives it weight exp(0) like "
    "any other score, so the future leaks in; only −∞ becomes a weight of exactly 0.",
    ROWS_SUM_TO_ONE: "Dropout does not renormalize: it zeroes weights and multiplies the "
    "survivors by 1/(1 − p), so a row sums to 1 only on average, not every time.",
    NO_RESCALE: "Dropout also multiplies every surviving weight by 1/(1 − p), so that each "
    "weight keeps its expected value.",
    DIAGONAL_MASKED: "The mask hides only the keys after the query (triu with diagonal=1): "
    "each query still sees itself, so the diagonal is not 0.",
    NO_TRANSPOSE: "view(b, num_tokens, num_heads, head_dim) only cuts the last dimension into "
    "heads; transpose(1, 2) then brings the heads in front of the tokens.",
    SCALING_BACKWARDS: "Dividing by √d_k shrinks the gaps between the scores; without it the "
    "gaps are √d_k times wider, so the softmax gets sharper, never flatter.",
}


# What each kind asks about, among the numbers a panel draws: the question hides the panel of its
# page that holds them (its declaration says: attnviz.teach.declared), and every other panel
# that draws them again (``Declared.same``).
READS: dict[str, str] = {
    ARGMAX_KEY: P.HOLDS_WEIGHTS,
    SKETCH_ROW: P.HOLDS_WEIGHTS,
    MASKED_ZEROS: P.HOLDS_WEIGHTS,
    DROPOUT_SURVIVOR: P.HOLDS_DROPPED,
    DROPOUT_ROW_SUM: P.HOLDS_DROPPED,
    SPLIT_SHAPE: P.HOLDS_SPLIT,
    SCALING_ENTROPY: P.HOLDS_CHANGE,
    SCORE: P.HOLDS_SCORES,
}


class AnswerError(ValueError):
    """An answer that does not fit the question's format, with a sentence a student reads."""


@dataclass(frozen=True)
class Misconception:
    """A known misconception: the wrong answer it leads to here, computed from the numbers."""

    name: str
    answer: Answer
    explanation: str


@dataclass(frozen=True)
class Question:
    """One question, as plain values. ``key`` is the number about to be drawn in ``hides``.

    ``choices``: the token labels (token and row formats, one per position 0..T-1) or the
    options (choice format). ``low``/``high``: the range of an integer or number answer.
    ``query``, ``other`` and ``head``: the row, the column (a key) and the head asked about.
    """

    kind: str
    page: str
    text: str
    settings: Settings
    book: bool
    seed: int
    prompt: str
    answer_format: str
    key: Answer
    tolerance: float
    hides: str
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    query: int | None = None
    other: int | None = None
    head: int | None = None
    misconceptions: tuple[Misconception, ...] = ()

    @property
    def conceals(self) -> tuple[str, ...]:
        """Every lesson panel the page keeps hidden until the answer: ``hides`` first, then
        the panels that draw the same numbers again (its declaration's ``same``)."""
        return (self.hides, *declared.same_numbers(self.hides))

    @property
    def guess_chance(self) -> float | None:
        """How often a uniform guess is right (None for a sketched row: see the tests'
        simulation). Token: any of the T positions; number: a uniform draw from [low, high]."""
        if self.answer_format in (TOKEN, CHOICE):
            return 1 / len(self.choices)
        if self.answer_format == INTEGER:
            assert self.low is not None and self.high is not None
            return 1 / (int(self.high) - int(self.low) + 1)
        if self.answer_format == NUMBER:
            assert self.low is not None and self.high is not None
            return min(1.0, 2 * self.tolerance / (self.high - self.low))
        if self.answer_format == SHAPE:
            return 1 / _arrangements(tuple(int(v) for v in _floats(self.key)))
        return None


@dataclass(frozen=True)
class Grade:
    """Right or wrong, the key, and the misconception a wrong answer matched (if any)."""

    right: bool
    key: Answer
    answer: Answer
    misconception: str | None = None
    explanation: str | None = None
    distance: float | None = None  # a sketched row: total-variation distance to the key
    gap: tuple[float, ...] | None = None  # a sketched row: answer − key per key, for drawing


@dataclass(frozen=True)
class Score:
    """A session's score: questions answered, answered right, and right in a row."""

    answered: int = 0
    right: int = 0
    streak: int = 0


def scored(score: Score, grade: Grade) -> Score:
    """The score after one more graded answer (a pure function: the page keeps the value)."""
    if grade.right:
        return Score(score.answered + 1, score.right + 1, score.streak + 1)
    return Score(score.answered + 1, score.right, 0)


# --- what the questions read from the traces ----------------------------------------------
@dataclass(frozen=True)
class Numbers:
    """What a page's questions read from its traces: one (T, T) matrix per head.

    ``raw``: the scores before any mask (X Xᵀ on pass 1, Q Kᵀ after); ``weights``: the softmax
    the weights panel draws (before dropout); ``dropped``: after dropout, in training mode (the
    causal page: its dropout lab, which runs in training mode at the sidebar's rate and seed);
    ``scale``: what the scores are divided by (√d_k; 1 on pass 1).
    """

    page: str
    labels: tuple[str, ...]
    raw: Tensor  # (H, T, T)
    weights: Tensor  # (H, T, T)
    scale: float
    causal: bool
    training: bool
    p: float  # the dropout rate behind ``dropped``
    dropped: Tensor | None  # (H, T, T)
    queries_shape: tuple[int, ...] | None = None  # multi-head: (b, T, d_out)
    split_shape: tuple[int, ...] | None = None  # multi-head: queries after view + transpose

    @property
    def num_tokens(self) -> int:
        return len(self.labels)

    @property
    def num_heads(self) -> int:
        return self.weights.shape[0]


def traces_for(page: str, text: str, settings: Settings, book: bool):
    """The page's trace (and, on the causal page, its dropout lab's, or None) the way the pages
    get them (``ui/cache.py``): causal passes cut to ``context_length``; None when the page
    cannot run (no tokens, d_out not divisible by num_heads)."""
    s = settings
    if page == "multihead" and s.multihead_problem() and not book:
        return None, None
    prep = prepare.prepare(text, s, book)
    if prep.empty:
        return None, None
    if page in ("causal", "multihead"):
        prep, _ = prepare.within_context(prep, s.context_length)
    if page == "simplified":
        return prepare.simplified(prep), None
    if page == "trainable":
        return prepare.trainable(prep, s, "v2"), None
    if page == "causal":
        main = prepare.causal(prep, s)
        if book or s.dropout == 0:
            return main, None
        lab = main if s.training else prepare.causal(prep, s.with_changes(training=True))
        return main, lab
    if page == "multihead":
        return prepare.multihead(prep, s), None
    raise ValueError(f"unknown page {page!r}")


def numbers_of(page: str, main, lab=None, book: bool = False) -> Numbers:
    """:class:`Numbers` from a page's traces (a page passes the ones it has cached)."""
    with torch.inference_mode():
        if page == "simplified":
            return Numbers(
                page, main.labels, main.attn_scores[None], main.attn_weights[None], 1.0,
                False, False, 0.0, None,
            )  # fmt: skip
        if page == "trainable":
            return Numbers(
                page, main.labels, main.attn_scores[None], main.attn_weights[None],
                main.d_k**0.5, False, False, 0.0, None,
            )  # fmt: skip
        raw = tracing.unmasked_scores(main)[0]
        weights = main.attn_weights[0]
        if page == "causal":
            raw, weights = raw[None], weights[None]
            if book:  # the chapter's dropout example: p = 0.5, seed 123, on these weights
                p = BK.DROPOUT_EXAMPLE_P
                with seeded(BK.SEED_DROPOUT):
                    dropped = torch.nn.Dropout(p)(main.attn_weights[0])[None]
            elif lab is not None:
                p, dropped = lab.spec.dropout, lab.weights_dropped[0][None]
            else:
                p, dropped = 0.0, None
            return Numbers(
                page, main.labels, raw, weights, main.d_k**0.5, True, main.training, p, dropped
            )
        if page == "multihead":
            p = main.spec.dropout
            dropped = main.weights_dropped[0] if main.training and p > 0 else None
            return Numbers(
                page, main.labels, raw, weights, main.d_k**0.5, True, main.training, p,
                dropped, tuple(main.queries.shape), tuple(main.queries_heads.shape),
            )  # fmt: skip
    raise ValueError(f"unknown page {page!r}")


def read(page: str, text: str, settings: Settings, book: bool = False) -> Numbers | None:
    """The numbers a page's questions read, computed from (page, text, settings, book)."""
    main, lab = traces_for(page, text, settings, book)
    return None if main is None else numbers_of(page, main, lab, book)


# --- making and choosing ------------------------------------------------------------------
def make(
    kind: str,
    page: str,
    text: str,
    settings: Settings,
    book: bool = False,
    seed: int = 0,
    numbers: Numbers | None = None,
) -> Question | None:
    """The question of ``kind`` on ``page`` for this text and these settings, or None when it
    is not clear here. ``seed`` picks the row (and head, and key) among the clear ones.
    ``numbers``: :func:`numbers_of` the page's cached traces (computed here when None)."""
    if kind not in PAGE_KINDS.get(page, ()):
        return None
    n = numbers if numbers is not None else read(page, text, settings, book)
    if n is None or n.num_tokens == 0:
        return None
    rng = random.Random(f"{kind}:{page}:{seed}")
    where = dict(kind=kind, page=page, text=text, settings=settings, book=book, seed=seed)
    return _MAKERS[kind](n, rng, where)


def choose(
    page: str,
    text: str,
    settings: Settings,
    book: bool = False,
    seed: int = 0,
    hides: str | None = None,
    numbers: Numbers | None = None,
) -> Question | None:
    """A question for the page (or the presenter's step that shows panel ``hides``), picked
    deterministically from ``seed`` among the kinds that are clear at these settings."""
    n = numbers if numbers is not None else read(page, text, settings, book)
    if n is None:
        return None
    kinds = list(PAGE_KINDS.get(page, ()))
    random.Random(f"choose:{page}:{seed}").shuffle(kinds)
    for kind in kinds:
        q = make(kind, page, text, settings, book, seed, n)
        if q is not None and (hides is None or q.hides == hides):
            return q
    return None


# --- grading ------------------------------------------------------------------------------
def total_variation(a: Sequence[float], b: Sequence[float]) -> float:
    """Half the sum of the absolute differences: 0 for equal rows, 1 for disjoint ones."""
    return 0.5 * sum(abs(float(x) - float(y)) for x, y in zip(a, b, strict=True))


def _as_answer(q: Question, answer: Any) -> Answer:
    """The answer in the question's format, or an AnswerError saying what is expected."""
    fmt = q.answer_format
    try:
        if fmt in (TOKEN, INTEGER):
            if isinstance(answer, bool) or not float(answer).is_integer():
                raise ValueError
            value = int(answer)
            if fmt == TOKEN and not 0 <= value < len(q.choices):
                raise AnswerError(
                    f"Pick one of the {len(q.choices)} tokens (0 to {len(q.choices) - 1})."
                )
            return value
        if fmt == NUMBER:
            number = float(answer)
            if not math.isfinite(number):
                raise ValueError
            return number
        if fmt == CHOICE:
            if answer not in q.choices:
                raise AnswerError("Pick one of: " + ", ".join(q.choices) + ".")
            return str(answer)
        if fmt == SHAPE:
            dims = tuple(int(v) for v in answer)
            if len(dims) != len(_floats(q.key)) or any(
                float(v) != d for v, d in zip(answer, dims, strict=True)
            ):
                raise ValueError
            return dims
        if fmt == ROW:
            row = tuple(float(v) for v in answer)
            if len(row) != len(q.choices) or not all(math.isfinite(v) and v >= 0 for v in row):
                raise ValueError
            return row
    except AnswerError:
        raise
    except (TypeError, ValueError, OverflowError):
        pass
    expected = {
        TOKEN: "a token",
        INTEGER: "a whole number",
        NUMBER: "a number",
        CHOICE: "one of the choices",
        SHAPE: f"a shape of {len(q.key) if isinstance(q.key, tuple) else '?'} whole numbers",
        ROW: f"{len(q.choices)} values, one per key, none negative",
    }[fmt]
    raise AnswerError(f"This question takes {expected}.")


def _floats(v: Answer) -> tuple[float, ...]:
    assert isinstance(v, tuple), v
    return tuple(float(x) for x in v)


def _number(v: Answer) -> float:
    assert isinstance(v, int | float), v
    return float(v)


def _matches(q: Question, answer: Answer, target: Answer) -> bool:
    if q.answer_format == NUMBER:
        return abs(_number(answer) - _number(target)) <= q.tolerance + _SLACK
    if q.answer_format == ROW:
        return total_variation(_floats(answer), _floats(target)) <= q.tolerance + _SLACK
    return answer == target


def grade(q: Question, answer: Any) -> Grade:
    """Right or wrong, graded from the question alone (no trace); a wrong answer that equals a
    misconception's wrong answer gets its one-sentence explanation. Raises
    :class:`AnswerError` (a sentence for the student) when the answer has the wrong form."""
    value = _as_answer(q, answer)
    right = _matches(q, value, q.key)
    distance = gap = None
    if q.answer_format == ROW:
        row, key = _floats(value), _floats(q.key)
        distance = total_variation(row, key)
        gap = tuple(a - k for a, k in zip(row, key, strict=True))
    if not right:
        for m in q.misconceptions:
            if _matches(q, value, m.answer):
                return Grade(False, q.key, value, m.name, m.explanation, distance, gap)
    return Grade(right, q.key, value, None, None, distance, gap)


# --- helpers ------------------------------------------------------------------------------
SCAN = 64  # candidates looked at for one whose misconceptions are distinct (bounds the cost)


def _arrangements(dims: tuple[int, ...]) -> int:
    """How many distinct orders of these numbers there are (a multiset's permutations)."""
    count = math.factorial(len(dims))
    for d in set(dims):
        count //= math.factorial(dims.count(d))
    return count


def _row(t: Tensor) -> tuple[float, ...]:
    return tuple(float(v) for v in t)


def _entropies(rows: Tensor) -> Tensor:
    """The entropy of each row (in nats), 0·log 0 counted as 0."""
    p = rows.double()
    return -(p * p.clamp_min(1e-300).log()).sum(dim=-1)


def _future(n: int) -> Tensor:
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)


def _allowed(n: Numbers) -> Tensor:
    """(T, T): True where query i may see key j (everywhere, or j ≤ i under the mask)."""
    t = n.num_tokens
    return ~_future(t) if n.causal else torch.ones(t, t, dtype=torch.bool)


def _top_two(m: Tensor, allowed: Tensor) -> tuple[Tensor, Tensor]:
    """Per row of ``m`` over the ``allowed`` entries: (winner's position, winner − runner-up);
    the margin is 0 where fewer than two entries are allowed."""
    x = m.double().masked_fill(~allowed, -math.inf)
    if x.shape[-1] < 2:
        return x.argmax(dim=-1), torch.zeros(x.shape[:-1], dtype=torch.float64)
    top = x.topk(2, dim=-1)
    margin = (top.values[..., 0] - top.values[..., 1]).nan_to_num(0.0, 0.0, 0.0)
    return top.indices[..., 0], margin


def _keep_distinct(key: Answer, found: list[Misconception], apart) -> tuple[Misconception, ...]:
    """The misconceptions whose wrong answer is apart from the key and from every other one
    (two that give the same answer could not tell which one the student holds: both go)."""
    kept = []
    for i, m in enumerate(found):
        others = [o for j, o in enumerate(found) if j != i]
        if apart(m.answer, key) and all(apart(m.answer, o.answer) for o in others):
            kept.append(m)
    return tuple(kept)


def _pick(rng: random.Random, candidates: Sequence | Tensor, build):
    """One candidate, picked by ``rng``, preferring one whose misconceptions are distinct
    (``build(c)`` gives them): the first such among up to SCAN drawn, else the first drawn."""
    order = rng.sample(range(len(candidates)), min(len(candidates), SCAN))
    first = None
    for i in order:
        found = build(candidates[i])
        if found:
            return candidates[i], found
        if first is None:
            first = (candidates[i], found)
    return first


def _misconception(name: str, answer: Answer) -> Misconception:
    return Misconception(name, answer, EXPLANATIONS[name])


def _head_words(n: Numbers, h: int) -> str:
    return f" in head {h}" if n.page == "multihead" else ""


def _head(n: Numbers, h: int) -> int | None:
    return h if n.page == "multihead" else None


def _before_dropout(n: Numbers) -> str:
    return " before dropout" if n.training and n.p > 0 else ""


def _hidden(n: Numbers, kind: str) -> str:
    """The panel a question of ``kind`` hides on the page of ``n``: the one that holds what it
    asks about, at this dropout."""
    return declared.holding(n.page, READS[kind], dropped=n.training and n.p > 0)


def _masked_with_zero(n: Numbers) -> Tensor:
    """(H, T, T): the weights had the future scores been set to 0 instead of −∞."""
    t = n.num_tokens
    return torch.softmax(n.raw.masked_fill(_future(t), 0.0) / n.scale, dim=-1)


def _not_renormalised(n: Numbers) -> Tensor:
    """(H, T, T): softmax over every key, then the future zeroed, without dividing by the new
    row sum."""
    t = n.num_tokens
    return torch.softmax(n.raw / n.scale, dim=-1).masked_fill(_future(t), 0.0)


def _number_apart(a, b) -> bool:
    """Two numbers a 2-decimal answer cannot both match (their tolerances do not overlap)."""
    return abs(float(a) - float(b)) > 2 * NUMBER_TOLERANCE


def _rows_apart(a, b) -> bool:
    """Two rows a sketch cannot both match (their tolerance balls do not overlap)."""
    return total_variation(a, b) > 2 * TV_TOLERANCE


_TOLERANCE = {NUMBER: NUMBER_TOLERANCE, ROW: TV_TOLERANCE}  # every other format: exact


def _question(n: Numbers, where: dict, answer_format: str, key: Answer, **fields) -> Question:
    """The question of ``where["kind"]``: it hides the panel that holds what it asks about,
    and is graded within its format's tolerance."""
    return Question(
        **where,
        answer_format=answer_format,
        key=key,
        tolerance=_TOLERANCE.get(answer_format, 0.0),
        hides=_hidden(n, where["kind"]),
        **fields,
    )


def _row_question(
    n: Numbers, where: dict, answer_format: str, key: Answer, prompt: str, h: int, q: int,
    misconceptions: tuple[Misconception, ...],
) -> Question:  # fmt: skip
    """A question about row ``q`` (of head ``h``), answered over its keys: the tokens."""
    return _question(
        n,
        where,
        answer_format,
        key,
        prompt=prompt,
        choices=n.labels,
        query=q,
        head=_head(n, h),
        misconceptions=misconceptions,
    )


# --- the kinds ----------------------------------------------------------------------------
def _argmax_key(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """Which key does query q (of head h) weigh most? Clear: the winner beats the runner-up
    by ARGMAX_MARGIN, and the query sees at least 3 keys (a guess among them: at most 1/3)."""
    w, allowed = n.weights, _allowed(n)
    winner, margin = _top_two(w, allowed)  # (H, T) each
    rows = torch.nonzero((margin >= ARGMAX_MARGIN) & (allowed.sum(dim=-1) >= 3))
    if not len(rows):
        return None
    everything = torch.ones_like(allowed)
    col_winner, col_margin = _top_two(w.transpose(-2, -1), everything)  # column q of each head
    zero_winner, zero_margin = _top_two(_masked_with_zero(n), everything)

    def build(c) -> tuple[Misconception, ...]:
        h, q = int(c[0]), int(c[1])
        found = []
        if col_margin[h, q] >= ARGMAX_MARGIN:
            found.append(_misconception(COLUMN, int(col_winner[h, q])))
        if n.causal and zero_margin[h, q] >= ARGMAX_MARGIN:
            found.append(_misconception(MASK_WITH_ZERO, int(zero_winner[h, q])))
        return _keep_distinct(int(winner[h, q]), found, lambda a, b: a != b)

    c, misconceptions = _pick(rng, rows, build)
    h, q = int(c[0]), int(c[1])
    prompt = (
        f"Which key does query {n.labels[q]}{_head_words(n, h)} weigh most"
        f"{_before_dropout(n)}? Click a token."
    )
    return _row_question(n, where, TOKEN, int(winner[h, q]), prompt, h, q, misconceptions)


def _sketch_row(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """Sketch row q (of head h) of the weights, one value per key. Clear: at least 3 keys are
    visible and an even share over them is more than TV_TOLERANCE away (graded wrong)."""
    w, allowed = n.weights, _allowed(n)
    visible = allowed.sum(dim=-1)
    even = allowed.double() / visible[:, None]
    far = 0.5 * (w.double() - even).abs().sum(dim=-1) > TV_TOLERANCE  # (H, T)
    rows = torch.nonzero(far & (visible >= 3))
    if not len(rows):
        return None
    others = [(COLUMN, w.transpose(-2, -1))]
    if n.causal:
        others += [(NO_RENORMALISE, _not_renormalised(n)), (MASK_WITH_ZERO, _masked_with_zero(n))]

    def build(c) -> tuple[Misconception, ...]:
        h, q = int(c[0]), int(c[1])
        found = [_misconception(name, _row(m[h, q])) for name, m in others]
        return _keep_distinct(_row(w[h, q]), found, _rows_apart)

    c, misconceptions = _pick(rng, rows, build)
    h, q = int(c[0]), int(c[1])
    future = " (the keys after it too)" if n.causal else ""
    prompt = (
        f"Sketch row {n.labels[q]} of the attention weights{_head_words(n, h)}"
        f"{_before_dropout(n)}: one value per key{future}, each between 0 and 1."
    )
    return _row_question(n, where, ROW, _row(w[h, q]), prompt, h, q, misconceptions)


def _masked_zeros(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """How many weights of the causal matrix are exactly 0? Needs 2 tokens (a future key);
    a guess from 0 to T² is right at most 1 time in 5."""
    t = n.num_tokens
    if not n.causal or t < 2:
        return None
    h = rng.randrange(n.num_heads)
    zero = n.weights[h] == 0
    key = int(zero.sum())
    found = [
        _misconception(MASK_WITH_ZERO, int((_masked_with_zero(n)[h] == 0).sum())),
        _misconception(DIAGONAL_MASKED, int((zero | torch.eye(t, dtype=torch.bool)).sum())),
    ]
    prompt = (
        f"The causal attention weights{_head_words(n, h)}{_before_dropout(n)} of these {t} "
        f"tokens form a {t}×{t} matrix. How many of its {t * t} entries are exactly 0?"
    )
    return _question(
        n,
        where,
        INTEGER,
        key,
        prompt=prompt,
        low=0,
        high=t * t,
        head=_head(n, h),
        misconceptions=_keep_distinct(key, found, lambda a, b: a != b),
    )


def _dropout_survivor(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """A weight dropout kept: what is it after dropout? Clear: it moves by more than twice the
    tolerance (so "unchanged" is graded wrong); a guess from [0, 1/(1 − p)] is right ≤ 1%."""
    if n.dropped is None or n.p <= 0:
        return None
    w, d = n.weights.double(), n.dropped
    moved = (d.double() - w).abs() > 2 * NUMBER_TOLERANCE
    found = torch.nonzero((w > 0) & (d != 0) & moved & _allowed(n))  # (h, q, k) triples
    if not len(found):
        return None
    kept = (w * (d != 0)).sum(dim=-1)  # (H, T): each row's kept weights, before dropout

    def build(c) -> tuple[Misconception, ...]:
        h, q, k = (int(v) for v in c)
        wrong = [
            _misconception(ROWS_SUM_TO_ONE, float(w[h, q, k] / kept[h, q])),
            _misconception(NO_RESCALE, float(w[h, q, k])),
        ]
        return _keep_distinct(float(d[h, q, k]), wrong, _number_apart)

    c, misconceptions = _pick(rng, found, build)
    h, q, k = (int(v) for v in c)
    p = n.p
    prompt = (
        f"Training mode, dropout p = {p:g}{_head_words(n, h)}: the weight of query "
        f"{n.labels[q]} on key {n.labels[k]} is {float(w[h, q, k]):.4f} before dropout, and "
        "dropout keeps it. What is it after dropout? Answer to 2 decimals."
    )
    return _question(
        n,
        where,
        NUMBER,
        float(d[h, q, k]),
        prompt=prompt,
        low=0.0,
        high=1 / (1 - p),
        query=q,
        other=k,
        head=_head(n, h),
        misconceptions=misconceptions,
    )


def _dropout_row_sum(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """What does row q (of head h) sum to after dropout? Clear: more than twice the tolerance
    from 1 (so "still 1" is graded wrong)."""
    if n.dropped is None or n.p <= 0:
        return None
    sums = n.dropped.double().sum(dim=-1)  # (H, T)
    rows = torch.nonzero((sums - 1).abs() > 2 * NUMBER_TOLERANCE)
    if not len(rows):
        return None
    h, q = (int(v) for v in rows[rng.randrange(len(rows))])
    p = n.p
    prompt = (
        f"Training mode, dropout p = {p:g}{_head_words(n, h)}: dropout zeroes some weights of "
        f"row {n.labels[q]} and scales the rest. What does the row sum to after dropout? "
        "Answer to 2 decimals."
    )
    return _question(
        n,
        where,
        NUMBER,
        float(sums[h, q]),
        prompt=prompt,
        low=0.0,
        high=1 / (1 - p),
        query=q,
        head=_head(n, h),
        misconceptions=(_misconception(ROWS_SUM_TO_ONE, 1.0),),
    )


def _split_shape(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """The shape after view(...).transpose(1, 2). Clear: T ≠ num_heads (else the transpose
    leaves the shape as it was) and the four sizes have at least 3 distinct orders."""
    if n.split_shape is None or n.queries_shape is None:
        return None
    key = tuple(int(v) for v in n.split_shape)
    b, heads, t, head_dim = key
    if t == heads or _arrangements(key) < 3:
        return None
    prompt = (
        f"In MultiHeadAttention, queries = self.W_query(x) has shape {n.queries_shape} "
        f"(b, num_tokens, d_out), with num_heads = {heads} and head_dim = {head_dim}. What shape "
        "does queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2) have?"
    )
    return _question(
        n,
        where,
        SHAPE,
        key,
        prompt=prompt,
        misconceptions=(_misconception(NO_TRANSPOSE, (b, t, heads, head_dim)),),
    )


def _scaling_entropy(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """Without the 1/√d_k, does row q get sharper or flatter? Graded by the two rows'
    entropies; clear when they differ by at least ENTROPY_CLEAR nats. Three choices."""
    if n.page != "trainable":
        return None
    change = _entropies(torch.softmax(n.raw[0], dim=-1)) - _entropies(n.weights[0])
    rows = torch.nonzero(change.abs() >= ENTROPY_CLEAR).flatten()
    if not len(rows):
        return None
    q = int(rows[rng.randrange(len(rows))])
    key = SHARPER if change[q] < 0 else FLATTER
    d_k = round(n.scale**2)
    prompt = (
        f"Row {n.labels[q]} of the weights is softmax(scores / √{d_k}). Without the 1/√d_k, "
        "softmax(scores): would the row get sharper, flatter, or stay unchanged?"
    )
    wrong = FLATTER if key == SHARPER else SHARPER
    return _question(
        n,
        where,
        CHOICE,
        key,
        prompt=prompt,
        choices=(SHARPER, FLATTER, UNCHANGED),
        query=q,
        misconceptions=(_misconception(SCALING_BACKWARDS, wrong),),
    )


def _score(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """A score to two decimals: x_q · x_k on pass 1, q_q · k_k (before scaling) after.
    Guessing: a uniform draw from [low, high], at least 1 wide (right at most 1%)."""
    if n.page == "multihead":
        return None
    s = n.raw[0]
    pairs = torch.nonzero(_allowed(n))
    low, high = math.floor(float(s.min())), math.ceil(float(s.max()))
    high = max(high, low + 1)

    def build(pair) -> tuple[Misconception, ...]:
        if n.causal:  # key q of query k is in the future: masked, not a score to misread
            return ()
        q, k = int(pair[0]), int(pair[1])
        found = [_misconception(COLUMN, float(s[k, q]))]
        return _keep_distinct(float(s[q, k]), found, _number_apart)

    pair, misconceptions = _pick(rng, pairs, build)
    q, k = int(pair[0]), int(pair[1])
    lq, lk = n.labels[q], n.labels[k]
    if n.page == "simplified":
        what = f"the score of query {lq} with key {lk}, inputs[{q}] · inputs[{k}]"
    else:
        what = (
            f"the raw score of query {lq} on key {lk}, queries[{q}] · keys[{k}] (before the 1/√d_k)"
        )
    return _question(
        n,
        where,
        NUMBER,
        float(s[q, k]),
        prompt=f"What is {what}? Answer to 2 decimals.",
        low=float(low),
        high=float(high),
        query=q,
        other=k,
        misconceptions=misconceptions,
    )


_MAKERS = {
    ARGMAX_KEY: _argmax_key,
    SKETCH_ROW: _sketch_row,
    MASKED_ZEROS: _masked_zeros,
    DROPOUT_SURVIVOR: _dropout_survivor,
    DROPOUT_ROW_SUM: _dropout_row_sum,
    SPLIT_SHAPE: _split_shape,
    SCALING_ENTROPY: _scaling_entropy,
    SCORE: _score,
}


# --- plain values (a question's id is made of them) ---------------------------------------
def to_plain(q: Question) -> dict[str, Any]:
    """The question as JSON-ready values (tuples become lists)."""
    return dataclasses.asdict(q)
