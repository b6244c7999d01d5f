"""Predict first: questions made from the student's own numbers (issues 25 and 37, the engine).

A :class:`Question` asks about an idea of the pass with the numbers a page is about to draw:
which key a query weighs most and why, what a raised score does to a weight, how many times
larger one weight is than another, a row sketched, what the mask leaves, what dropout makes of
a kept weight or a row, how a row changes with √d_k, which shape comes next, a score worked
from at most ``MAX_PRODUCTS`` products. It is asked before the panel that shows the answer
(``Question.hides``, a lesson panel key) and below the panels it relies on (``RELIES_ON``,
drawn unhidden above it). It is a frozen value of plain types: its key, tolerance, the wrong
answers of known misconceptions and the reason the key is right are stored in it, so it is
graded (:func:`grade`) without the trace, and :func:`make` rebuilds it from (kind, page, text,
settings, book, seed) alone (issue 26 polls a class on the same question).

A question is posed only when its answer is clear at these numbers (an argmax wins by at least
``ARGMAX_MARGIN``, a row is not close to an even share, a misconception's wrong answer is
distinct from the key and from the others ...), when a uniform guess is right at most a third of
the time, and when no fixed strategy finds the key: a typed number is none of the numbers the
prompt states (nor 0, 1 or 1/(1 − p)); which key wins is drawn evenly among the key's relations
to the query (itself, the first token, the one before, another) and posed only where three
have candidates; a choice's answer and the key's place among the options come from balanced
draws over consecutive seeds (:func:`_balanced`). ``bench/question_strategies.py`` measures it.

:func:`choose` takes the kinds clear at these numbers in turn, so "Next question" (the next
seed) asks another kind, never the question before. A page's seeds start from the session's
own (``attnviz.core.seeding.session_seed``), so neighbors get different questions.

The prompt names tokens by their 0-based labels ("3: ␣the"): it holds the student's text, so a
page shows it as plain text, never as Markdown or HTML. Nothing here imports Streamlit.
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
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
SCALING_CLEAR = 1e-4  # nats: a scaling question's two rows' entropies differ by at least this
MAX_GUESS_CHANCE = 1 / 3  # a uniform guess is right at most this often
SKETCH_KEYS_UP_TO = 24  # a sketch of a longer row (one slider a key) is not asked
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
SCORE_RISES = "score_rises"
WEIGHT_RATIO = "weight_ratio"
SCALED_SCORE = "scaled_score"
KINDS = (
    ARGMAX_KEY,
    SKETCH_ROW,
    MASKED_ZEROS,
    DROPOUT_SURVIVOR,
    DROPOUT_ROW_SUM,
    SPLIT_SHAPE,
    SCALING_ENTROPY,
    SCORE,
    SCORE_RISES,
    WEIGHT_RATIO,
    SCALED_SCORE,
)

# The kinds each page can ask, in the book's order of the page. A raw dot product is asked
# only where the page draws the queries and keys (page 2), and only at d_out <= MAX_PRODUCTS.
PAGE_KINDS: dict[str, tuple[str, ...]] = {
    "simplified": (ARGMAX_KEY, SCORE_RISES, WEIGHT_RATIO, SKETCH_ROW),
    "trainable": (
        SCORE,
        SCALED_SCORE,
        SCALING_ENTROPY,
        ARGMAX_KEY,
        SCORE_RISES,
        WEIGHT_RATIO,
        SKETCH_ROW,
    ),
    "causal": (
        MASKED_ZEROS,
        ARGMAX_KEY,
        SCORE_RISES,
        WEIGHT_RATIO,
        SKETCH_ROW,
        DROPOUT_SURVIVOR,
        DROPOUT_ROW_SUM,
    ),
    "multihead": (
        SPLIT_SHAPE,
        MASKED_ZEROS,
        ARGMAX_KEY,
        SCORE_RISES,
        WEIGHT_RATIO,
        SKETCH_ROW,
        DROPOUT_SURVIVOR,
    ),
}
MAX_PRODUCTS = 8  # no question needs more multiplications than this by hand

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
OTHERS_UNCHANGED = "other_weights_unchanged"
ROWS_SHARE = "rows_share_one_softmax"
MASKED_SCORE_COUNTS = "masked_score_counts"
SHIFT_CHANGES = "shift_changes_the_softmax"
PROPORTIONAL = "weights_proportional_to_scores"
RATIO_UNSCALED = "ratio_without_scaling"
DIVIDE_BY_D_K = "divide_by_d_k"

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
    SCALING_BACKWARDS: "Dividing by a larger number shrinks the gaps between the scores, so the "
    "softmax gets flatter; dividing by less (or not at all) widens them, so it gets sharper.",
    OTHERS_UNCHANGED: "The softmax divides by the row's sum: when one weight of a row grows, "
    "every other weight of that row shrinks, so the row still sums to 1.",
    ROWS_SHARE: "Each row is a softmax of its own: a score of another query's row changes "
    "nothing in this one.",
    MASKED_SCORE_COUNTS: "The mask puts −∞ on every score after the query, whatever it was: "
    "raising a future score changes no weight.",
    SHIFT_CHANGES: "The softmax depends only on the differences between a row's scores: adding "
    "the same number to all of them changes no weight.",
    PROPORTIONAL: "Weights are not proportional to the scores: the softmax exponentiates, so "
    "two weights' ratio is exp(difference of their scores), after the 1/√d_k.",
    RATIO_UNSCALED: "The softmax sees the scores after the 1/√d_k: the ratio of two weights is "
    "exp(difference / √d_k), not exp(difference).",
    DIVIDE_BY_D_K: "The scores are divided by the square root of d_k, not by d_k itself.",
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
    SCORE_RISES: P.HOLDS_WEIGHTS,
    WEIGHT_RATIO: P.HOLDS_WEIGHTS,
    SCALED_SCORE: P.HOLDS_SCALED,
}

# What each kind relies on: the numbers a student reasons from, drawn (unhidden) above the
# question on its page, by the panels that hold them (``declared.holding``). The prompt states
# the rest (a dropout question gives the weight before dropout; a shape question the shapes).
RELIES_ON: dict[str, tuple[str, ...]] = {
    ARGMAX_KEY: (P.HOLDS_SCORES,),
    SKETCH_ROW: (P.HOLDS_SCORES,),
    MASKED_ZEROS: (),
    DROPOUT_SURVIVOR: (),
    DROPOUT_ROW_SUM: (P.HOLDS_WEIGHTS, P.HOLDS_DROP_MASK),
    SPLIT_SHAPE: (),
    SCALING_ENTROPY: (P.HOLDS_SCORES,),
    SCORE: (P.HOLDS_QUERIES, P.HOLDS_KEYS),
    SCORE_RISES: (P.HOLDS_SCORES,),
    WEIGHT_RATIO: (P.HOLDS_SCORES,),
    SCALED_SCORE: (P.HOLDS_SCORES,),
}


def relies_on(kind: str, page: str) -> tuple[str, ...]:
    """The panels of ``page`` a question of ``kind`` relies on (drawn above it, unhidden)."""
    return tuple(declared.holding(page, what, dropped=False) for what in RELIES_ON[kind])


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
    ``products``: the multiplications it takes by hand (at most MAX_PRODUCTS).
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
    products: int = 0
    variant: str = ""  # the change a scaling question asks about (WITHOUT, WIDER, SHIFTED)
    # Why the key is right, from these numbers: shown with the verdict, after the answer.
    reason: str = ""

    @property
    def relies_on(self) -> tuple[str, ...]:
        """The panels of its page it relies on: drawn, unhidden, above it."""
        return relies_on(self.kind, self.page)

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
    deterministically from ``seed``. The kinds clear at these numbers take turns: consecutive
    seeds ("Next question") ask different kinds whenever two or more are clear, in an order
    drawn afresh for every round of them; the question is never the one of ``seed - 1``."""
    n = numbers if numbers is not None else read(page, text, settings, book)
    if n is None:
        return None
    args = (page, text, settings, book)
    kinds = clear_kinds(page, n, book, settings)
    made = _turn(*args, seed, n, kinds, hides)
    before = _turn(*args, seed - 1, n, kinds, hides)
    if made is not None and before is not None and made.prompt == before.prompt:
        return _turn(*args, seed, n, kinds, hides, skip=made.kind)
    return made


def clear_kinds(
    page: str, n: Numbers, book: bool = False, settings: Settings | None = None
) -> tuple[str, ...]:
    """The kinds of ``page`` clear at these numbers (a kind is clear, or not, whatever the
    seed: its maker poses it only where every kind of key it balances has candidates)."""
    s = settings if settings is not None else Settings()
    return tuple(k for k in PAGE_KINDS.get(page, ()) if make(k, page, "", s, book, 0, n))


def _round(kinds: Sequence[str], page: str, index: int) -> list[str]:
    """The order of the clear kinds in round ``index``: a fresh shuffle, whose first kind is
    never the last of the round before (for three or more kinds: the rounds join cleanly)."""
    order = list(kinds)
    random.Random(f"choose:{page}:{index}").shuffle(order)
    if len(order) >= 3:
        last = list(kinds)
        random.Random(f"choose:{page}:{index - 1}").shuffle(last)
        if order[0] == last[-1]:
            order[0], order[1] = order[1], order[0]
    return order


def _turn(
    page, text, settings, book, seed: int, n: Numbers, kinds, hides: str | None, skip: str = ""
) -> Question | None:
    """The question whose turn it is at ``seed`` among the clear ``kinds`` (the next kind in
    the round when its maker has none, or its kind is ``skip``)."""
    if not kinds:
        return None
    index, at = divmod(seed, len(kinds))
    order = _round(kinds, page, index)
    for kind in order[at:] + order[:at]:
        if kind == skip:
            continue
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
    """One candidate, picked by ``rng``, preferring one with the most distinct misconceptions
    (``build(c)`` gives them): the first with the most among up to SCAN drawn."""
    return _pick_where(rng, candidates, lambda c: True, build)


def _pick_where(rng: random.Random, candidates: Sequence | Tensor, ok, build):
    """Like :func:`_pick`, among the candidates ``ok`` accepts (every candidate is looked at
    until SCAN accepted ones were: whether any is accepted does not depend on ``rng``); None
    when ``ok`` accepts none."""
    best = None
    looked = 0
    for i in rng.sample(range(len(candidates)), len(candidates)):
        c = candidates[i]
        if not ok(c):
            continue
        found = build(c)
        if best is None or len(found) > len(best[1]):
            best = (c, found)
        looked += 1
        if looked >= SCAN:
            break
    return best


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")


def shown_numbers(prompt: str) -> tuple[float, ...]:
    """Every number a prompt states (token positions, sizes, scores, weights, p), in order."""
    return tuple(float(m) for m in _NUMBER.findall(prompt))


def _rate(where: dict) -> float:
    """The sidebar's dropout rate (its 1/(1 − p) is a number a student may type blindly)."""
    return float(where["settings"].dropout)


def _apart_from_shown(key: float, prompt: str, p: float, apart: float = 2 * NUMBER_TOLERANCE):
    """Whether ``key`` is none of the numbers the prompt states, nor 1/(1 − p) (dropout's
    scale), nor 0 or 1: answering any of those is graded wrong."""
    shown = [*shown_numbers(prompt), 0.0, 1.0]
    if p > 0:
        shown.append(1 / (1 - p))
    return all(abs(key - x) > apart for x in shown)


def _misconception(name: str, answer: Answer) -> Misconception:
    return Misconception(name, answer, EXPLANATIONS[name])


def _score_word(n: Numbers) -> str:
    return "score" if n.page == "simplified" else "raw score"


def _scale_words(n: Numbers) -> str:
    return "" if n.page == "simplified" else " / √d_k"


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
    misconceptions: tuple[Misconception, ...], reason: str,
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
        reason=reason,
    )


# --- the kinds ----------------------------------------------------------------------------
def _argmax_key(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """Which key does query q (of head h) weigh most, or most besides itself? Clear: the
    winner's score (the softmax keeps the scores' order) beats the runner-up's by
    ARGMAX_MARGIN among at least 3 keys, q >= 2.

    The key is spread: the candidates fall into four relations of the key to the query (the
    query itself, the first token, the token before it, another), a relation is drawn evenly
    among those with candidates, then a candidate of it. Posed only where at least three
    relations have candidates, so no relation (no fixed click) is the key more than a third
    of the time."""
    w, allowed = n.weights, _allowed(n)
    t = n.num_tokens
    others = allowed & ~torch.eye(t, dtype=torch.bool)
    found: dict[str, list[tuple[int, int, bool, int]]] = {}
    for besides, where_ in ((False, allowed), (True, others)):
        winner, margin = _top_two(n.raw, where_)  # (H, T) each: the scores, drawn above
        rows = torch.nonzero((margin >= ARGMAX_MARGIN) & (where_.sum(dim=-1) >= 3))
        for h, q in rows.tolist():
            if q < 2:
                continue
            k = int(winner[h, q])
            found.setdefault(_relation(q, k), []).append((h, q, besides, k))
    if len(found) < 3:
        return None
    relation = sorted(found)[_balanced(where, len(found), "relation")]
    everything = torch.ones_like(allowed)
    col_winner, col_margin = _top_two(w.transpose(-2, -1), everything)  # column q of each head
    zero_winner, zero_margin = _top_two(_masked_with_zero(n), everything)

    def build(c) -> tuple[Misconception, ...]:
        h, q, besides, k = c
        wrong = []
        if col_margin[h, q] >= ARGMAX_MARGIN and not besides:
            wrong.append(_misconception(COLUMN, int(col_winner[h, q])))
        if n.causal and zero_margin[h, q] >= ARGMAX_MARGIN and not besides:
            wrong.append(_misconception(MASK_WITH_ZERO, int(zero_winner[h, q])))
        return _keep_distinct(k, wrong, lambda a, b: a != b)

    (h, q, besides, k), misconceptions = _pick(rng, found[relation], build)
    which = " besides itself" if besides else ""
    prompt = (
        f"Which key does query {n.labels[q]}{_head_words(n, h)} weigh most{which}"
        f"{_before_dropout(n)}? Read its row of scores above. Click a token."
    )
    row = n.raw[h, q].double().masked_fill(~(others[q] if besides else allowed[q]), -math.inf)
    second = int(row.masked_fill(torch.arange(t) == k, -math.inf).argmax())
    reason = (
        f"Key {n.labels[k]} has the largest {_score_word(n)} in row {n.labels[q]}{which}: "
        f"{float(row[k]):.4f}, against {float(row[second]):.4f} for {n.labels[second]}, the next. "
        "The softmax keeps the scores' order, so it gets the largest weight."
    )
    return _row_question(n, where, TOKEN, k, prompt, h, q, misconceptions, reason)


SELF, FIRST, PREVIOUS, ANOTHER = "itself", "first", "previous", "another"


def _relation(q: int, k: int) -> str:
    """How key ``k`` stands to query ``q`` (q >= 2): the query itself, the first token, the
    token just before the query, or another."""
    if k == q:
        return SELF
    if k == 0:
        return FIRST
    if k == q - 1:
        return PREVIOUS
    return ANOTHER


def _sketch_row(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """Sketch row q (of head h) of the weights, one value per key. Clear: at least 3 keys are
    visible, an even share over them is more than TV_TOLERANCE away (graded wrong), and so is
    every row with all its weight on one key (no key holds 0.9 minus the slack: "all on the
    largest score" is graded wrong too); at most SKETCH_KEYS_UP_TO keys (one slider each)."""
    w, allowed = n.weights, _allowed(n)
    if n.num_tokens > SKETCH_KEYS_UP_TO:
        return None
    visible = allowed.sum(dim=-1)
    even = allowed.double() / visible[:, None]
    far = 0.5 * (w.double() - even).abs().sum(dim=-1) > TV_TOLERANCE  # (H, T)
    spread = w.double().amax(dim=-1) < 1 - 1.5 * TV_TOLERANCE
    rows = torch.nonzero(far & spread & (visible >= 3))
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
    top = int(w[h, q].argmax())
    reason = (
        f"Each weight is exp(score{_scale_words(n)}) over the row's sum: the largest "
        f"{_score_word(n)}, {float(n.raw[h, q, top]):.4f} on {n.labels[top]}, gets the largest "
        f"weight, {float(w[h, q, top]):.4f}"
        + ("; the keys after the query get 0." if n.causal else ".")
    )
    return _row_question(n, where, ROW, _row(w[h, q]), prompt, h, q, misconceptions, reason)


def _masked_zeros(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """How many weights of the causal matrix are exactly 0? Needs 2 tokens (a future key);
    a guess from 0 to T² is right at most 1 time in 5; the key is none of the numbers the
    prompt states (T = 3 has 3 zeros: not asked)."""
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
    if not _apart_from_shown(key, prompt, _rate(where), 0.5):
        return None
    future = t * (t - 1) // 2
    reason = (
        f"Query i sees keys 0 to i, so the mask zeroes the {future} weights above the "
        f"diagonal: 0 + 1 + … + {t - 1} = {future}"
    )
    if key > future:
        reason += f", and {key - future} more weights are too small for float32"
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
        reason=reason + ".",
    )


def _dropout_survivor(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """A weight dropout kept: what is it after dropout? Clear: it moves by more than twice the
    tolerance (so "unchanged" is graded wrong), and it is none of the numbers the prompt
    states, nor 1/(1 − p); a guess from [0, 1/(1 − p)] is right ≤ 1%."""
    if n.dropped is None or n.p <= 0:
        return None
    w, d = n.weights.double(), n.dropped
    moved = (d.double() - w).abs() > 2 * NUMBER_TOLERANCE
    found = torch.nonzero((w > 0) & (d != 0) & moved & _allowed(n)).tolist()  # (h, q, k)
    kept = (w * (d != 0)).sum(dim=-1)  # (H, T): each row's kept weights, before dropout
    p = n.p

    def prompt_of(c) -> str:
        h, q, k = c
        return (
            f"Training mode, dropout p = {p:g}{_head_words(n, h)}: the weight of query "
            f"{n.labels[q]} on key {n.labels[k]} is {float(w[h, q, k]):.4f} before dropout, "
            "and dropout keeps it. What is it after dropout? Answer to 2 decimals."
        )

    def ok(c) -> bool:
        h, q, k = c
        return _apart_from_shown(float(d[h, q, k]), prompt_of(c), p)

    def build(c) -> tuple[Misconception, ...]:
        h, q, k = c
        wrong = [
            _misconception(ROWS_SUM_TO_ONE, float(w[h, q, k] / kept[h, q])),
            _misconception(NO_RESCALE, float(w[h, q, k])),
        ]
        return _keep_distinct(float(d[h, q, k]), wrong, _number_apart)

    picked = _pick_where(rng, found, ok, build)
    if picked is None:
        return None
    (h, q, k), misconceptions = picked
    return _question(
        n,
        where,
        NUMBER,
        float(d[h, q, k]),
        prompt=prompt_of((h, q, k)),
        low=0.0,
        high=1 / (1 - p),
        query=q,
        other=k,
        head=_head(n, h),
        misconceptions=misconceptions,
        products=1,
        reason=f"{float(w[h, q, k]):.4f} / (1 − {p:g}) = {float(d[h, q, k]):.4f}: dropout scales "
        "every weight it keeps by 1/(1 − p).",
    )


def _dropout_row_sum(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """What does row q (of head h) sum to after dropout? Clear: dropout zeroed a weight of the
    row (so the sum is neither 1 nor 1/(1 − p)), the row has at most MAX_PRODUCTS keys to add,
    and the sum is none of the numbers the prompt states. Not in book mode: its dropout example
    is the chapter's printout, with no dropout mask drawn above to read the kept weights from."""
    if n.dropped is None or n.p <= 0 or where["book"]:
        return None
    p = n.p
    w, d = n.weights.double(), n.dropped.double()
    sums = d.sum(dim=-1)  # (H, T)
    lost = (w * ((d == 0) & (w > 0))).sum(dim=-1)  # the weight dropout took from each row
    visible = _allowed(n).sum(dim=-1)
    rows = torch.nonzero((lost * (1 / (1 - p)) > 2 * NUMBER_TOLERANCE) & (visible <= MAX_PRODUCTS))

    def prompt_of(c) -> str:
        h, q = c
        return (
            f"Training mode, dropout p = {p:g}{_head_words(n, h)}: the dropout mask shown here "
            f"zeroes some weights of row {n.labels[q]} and scales the rest. What does the row "
            "sum to after dropout? Answer to 2 decimals."
        )

    def ok(c) -> bool:
        h, q = c
        key = float(sums[h, q])
        return _apart_from_shown(key, prompt_of(c), p) and _number_apart(key, 1.0)

    picked = _pick_where(rng, rows.tolist(), ok, lambda c: ())
    if picked is None:
        return None
    (h, q), _ = picked
    return _question(
        n,
        where,
        NUMBER,
        float(sums[h, q]),
        prompt=prompt_of((h, q)),
        low=0.0,
        high=1 / (1 - p),
        query=q,
        head=_head(n, h),
        misconceptions=(_misconception(ROWS_SUM_TO_ONE, 1.0),),
        products=1,
        reason=f"The weights dropout keeps sum to {float(w[h, q].sum() - lost[h, q]):.4f}; "
        f"times 1/(1 − {p:g}) that is {float(sums[h, q]):.4f}.",
    )


SPLIT, SCORES_SHAPE, MERGE, FLATTEN = "split", "scores", "merge", "flatten"


def _split_shape(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """Which shape comes next in MultiHeadAttention's forward: after the split into heads
    (view, transpose), the scores (queries @ keys.transpose(2, 3)), the heads brought back
    ((weights @ values).transpose(1, 2)), or their merge (contiguous().view). One step is drawn
    evenly among those whose answer is none of the shapes the prompt states and has at least 3
    distinct orders. Needs T ≠ num_heads (else the transposes leave the shape as it was)."""
    if n.split_shape is None or n.queries_shape is None:
        return None
    b, heads, t, head_dim = (int(v) for v in n.split_shape)
    d_out = int(n.queries_shape[-1])
    if t == heads:
        return None
    split, merged = (b, heads, t, head_dim), (b, t, heads, head_dim)
    steps = {
        SPLIT: (
            f"queries = self.W_query(x) has shape {(b, t, d_out)} (b, num_tokens, d_out), with "
            f"num_heads = {heads} and head_dim = {head_dim}. What shape does "
            "queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2) have?",
            split,
            (b, t, heads, head_dim),
        ),
        SCORES_SHAPE: (
            f"queries and keys, split into heads, have shape {split}. What shape does "
            "attn_scores = queries @ keys.transpose(2, 3) have?",
            (b, heads, t, t),
            None,
        ),
        MERGE: (
            f"attn_weights has shape {(b, heads, t, t)} and values {split}. What shape does "
            "context_vec = (attn_weights @ values).transpose(1, 2) have?",
            merged,
            split,
        ),
        FLATTEN: (
            f"context_vec has shape {merged} (b, num_tokens, num_heads, head_dim). What shape "
            f"does context_vec.contiguous().view(b, num_tokens, self.d_out) have, with "
            f"d_out = {d_out}?",
            (b, t, d_out),
            None,
        ),
    }
    fine = [
        name
        for name, (prompt, key, _) in steps.items()
        if _arrangements(key) >= 3 and key not in _shown_shapes(prompt)
    ]
    if len(fine) < 2:
        return None
    step = rng.choice(fine)
    prompt, key, no_transpose = steps[step]
    wrong = () if no_transpose is None else (_misconception(NO_TRANSPOSE, no_transpose),)
    reason = {
        SPLIT: f"view cuts d_out = {d_out} into {heads} heads of {head_dim}: "
        f"{(b, t, heads, head_dim)}; transpose(1, 2) swaps the tokens and the heads.",
        SCORES_SHAPE: f"Each head multiplies ({t}, {head_dim}) by ({head_dim}, {t}): one "
        f"{t}×{t} score matrix per head.",
        MERGE: f"Each head's ({t}, {t}) weights times its ({t}, {head_dim}) values give "
        f"{split}; transpose(1, 2) brings the tokens back in front of the heads.",
        FLATTEN: f"view joins the {heads} heads of {head_dim} back into d_out = {d_out}.",
    }[step]
    return _question(
        n,
        where,
        SHAPE,
        key,
        prompt="In MultiHeadAttention, " + prompt,
        misconceptions=wrong,
        reason=reason,
    )


def _shown_shapes(prompt: str) -> set[tuple[int, ...]]:
    """Every shape a prompt states, as tuples of whole numbers."""
    found = re.findall(r"\((\d+(?:, \d+)+)\)", prompt)
    return {tuple(int(v) for v in f.split(", ")) for f in found}


WITHOUT, WIDER, SHIFTED = "without", "wider", "shifted"


def _scaling_entropy(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """How would row q change: without the 1/√d_k (sharper), divided by 2√d_k instead
    (flatter), or with the same number added to all its scores first (unchanged)? A softmax's
    entropy grows with the number its scores are divided by, so a row whose scores differ gets
    sharper or flatter; posed where the entropies differ by at least SCALING_CLEAR nats. The three changes are drawn evenly, so each answer is the key a third
    of the time; d_k >= 2. Three choices, in an order the seed shuffles."""
    if n.page != "trainable" or n.scale < 2**0.5 - 1e-9:
        return None
    raw, w = n.raw[0].double(), n.weights[0].double()
    now = _entropies(w)
    without = _entropies(torch.softmax(raw, dim=-1)) - now
    wider = _entropies(torch.softmax(raw / (2 * n.scale), dim=-1)) - now
    rows = {
        WITHOUT: torch.nonzero(without <= -SCALING_CLEAR).flatten().tolist(),
        WIDER: torch.nonzero(wider >= SCALING_CLEAR).flatten().tolist(),
        SHIFTED: list(range(n.num_tokens)) if n.num_tokens >= 2 else [],
    }
    if not all(rows.values()):
        return None
    change = (WITHOUT, WIDER, SHIFTED)[_balanced(where, 3, "change")]
    q = rng.choice(rows[change])
    d_k = round(n.scale**2)
    what = {
        WITHOUT: "Without the 1/√d_k, softmax(scores)",
        WIDER: f"Divided by 2·√{d_k} instead, as if d_k were 4 times larger",
        SHIFTED: "With 3 added to every score of the row first, softmax((scores + 3) / √d_k)",
    }[change]
    key = {WITHOUT: SHARPER, WIDER: FLATTER, SHIFTED: UNCHANGED}[change]
    wrong = {WITHOUT: FLATTER, WIDER: SHARPER, SHIFTED: SHARPER}[change]
    name = SHIFT_CHANGES if change == SHIFTED else SCALING_BACKWARDS
    prompt = (
        f"Row {n.labels[q]} of the weights is softmax(scores / √{d_k}). {what}: would the row "
        "get sharper, flatter, or stay unchanged?"
    )
    entropy_now = float(now[q])
    reason = {
        WITHOUT: f"Without it the gaps between the scores are √{d_k} = {n.scale:.4f} times "
        f"wider, so the softmax is sharper: its entropy goes from {entropy_now:.4f} to "
        f"{entropy_now + float(without[q]):.4f} nats.",
        WIDER: "Dividing by twice as much halves the gaps between the scores, so the softmax is "
        f"flatter: its entropy goes from {entropy_now:.4f} to "
        f"{entropy_now + float(wider[q]):.4f} nats.",
        SHIFTED: "softmax(x + c) = softmax(x): exp(c) multiplies every exp and their sum alike, "
        "and cancels.",
    }[change]
    return _question(
        n,
        where,
        CHOICE,
        key,
        prompt=prompt,
        choices=_shuffled(rng, (SHARPER, FLATTER, UNCHANGED), key, where),
        query=q,
        misconceptions=(_misconception(name, wrong),),
        variant=change,
        reason=reason,
    )


def scaling_change(q: Question, n: Numbers) -> Tensor:
    """(T, T): what a scaling question's change does to the weights: the changed softmax
    minus the page's (``q.variant``: without the 1/√d_k, divided by 2√d_k, scores + 3)."""
    raw, scale = n.raw[0].double(), n.scale
    with torch.inference_mode():
        changed = {
            WITHOUT: torch.softmax(raw, dim=-1),
            WIDER: torch.softmax(raw / (2 * scale), dim=-1),
            SHIFTED: torch.softmax((raw + 3) / scale, dim=-1),
        }[q.variant or WITHOUT]
        return (changed - n.weights[0].double()).to(torch.float32)


def _balanced(where: dict, count: int, what: str) -> int:
    """One of ``count`` indices, from the question's seed, so that every ``count`` consecutive
    seeds (a block) give each index once, in an order drawn for the block: over a student's
    questions each answer, and each place of the key among the options, comes as often."""
    block, at = divmod(int(where["seed"]), count)
    order = list(range(count))
    random.Random(f"{what}:{where['kind']}:{where['page']}:{block}").shuffle(order)
    return order[at]


def _shuffled(rng: random.Random, options: Sequence[str], key: str, where: dict) -> tuple:
    """The options in an order the question's seed draws (each student's own): the key at a
    place :func:`_balanced` picks, the others around it at random."""
    others = [o for o in options if o != key]
    rng.shuffle(others)
    others.insert(_balanced(where, len(options), "place"), key)
    return tuple(others)


def _cell_number(
    n: Numbers, rng: random.Random, where: dict, values: Tensor, prompt_of, wrong_of, reason_of,
    products: int,
) -> Question | None:  # fmt: skip
    """A number to two decimals read off one allowed cell (query q, key k) of ``values``: a cell
    whose value is none of the numbers ``prompt_of(q, k)`` states, with the misconception
    ``wrong_of(q, k)`` where it differs from the key. Guessing: a uniform draw from [low, high],
    the values' range to whole numbers, at least 1 wide."""
    low, high = math.floor(float(values.min())), math.ceil(float(values.max()))
    high = max(high, low + 1)

    def ok(c) -> bool:
        return _apart_from_shown(float(values[c[0], c[1]]), prompt_of(*c), _rate(where))

    def build(c) -> tuple[Misconception, ...]:
        return _keep_distinct(float(values[c[0], c[1]]), [wrong_of(*c)], _number_apart)

    picked = _pick_where(rng, torch.nonzero(_allowed(n)).tolist(), ok, build)
    if picked is None:
        return None
    (q, k), misconceptions = picked
    return _question(
        n,
        where,
        NUMBER,
        float(values[q, k]),
        prompt=prompt_of(q, k),
        low=float(low),
        high=float(high),
        query=q,
        other=k,
        misconceptions=misconceptions,
        products=products,
        reason=reason_of(q, k),
    )


def _score(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """A raw score to two decimals, q_q · k_k (before scaling): asked only where the page draws
    the queries and keys (page 2), at d_k <= MAX_PRODUCTS products, and where the score is none
    of the numbers the prompt states. Guessing: a uniform draw from [low, high], at least 1
    wide (right at most 1%)."""
    d_k = round(n.scale**2)
    if n.page != "trainable" or d_k > MAX_PRODUCTS:
        return None
    s = n.raw[0]

    def prompt_of(q: int, k: int) -> str:
        return (
            f"What is the raw score of query {n.labels[q]} on key {n.labels[k]}, "
            f"queries[{q}] · keys[{k}] (before the 1/√d_k)? Answer to 2 decimals."
        )

    return _cell_number(
        n,
        rng,
        where,
        s,
        prompt_of,
        wrong_of=lambda q, k: _misconception(COLUMN, float(s[k, q])),
        reason_of=lambda q, k: (
            f"The sum of the {d_k} products queries[{q}][i] · keys[{k}][i], "
            f"i = 0 to {d_k - 1}: {float(s[q, k]):.4f}."
        ),
        products=d_k,
    )


GROWS, SHRINKS, SAME = "it would grow", "it would shrink", "it would stay the same"


def _score_rises(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """If the score of query q on key k were 1 higher, what would happen to the weight of
    query r on key j? It grows (r = q, j = k), shrinks (r = q, another key j it sees), or
    stays the same (another row r, or on a causal page a key k after q: its score is masked).
    The three answers are drawn evenly (each the key a third of the time), then a case of it,
    checked on the numbers in float64. Three choices, in an order the seed shuffles."""
    t = n.num_tokens
    allowed = _allowed(n)
    rows = [q for q in range(t) if int(allowed[q].sum()) >= 2]
    if t < 3 or not rows:
        return None
    raw = n.raw.double()
    weights = torch.softmax(raw.masked_fill(~allowed, -math.inf) / n.scale, dim=-1)
    answer = (GROWS, SHRINKS, SAME)[_balanced(where, 3, "answer")]
    for _ in range(SCAN):
        h = rng.randrange(n.num_heads)
        q = rng.choice(rows)
        seen = torch.nonzero(allowed[q]).flatten().tolist()
        k = rng.choice(seen)
        if answer == GROWS:
            r, j = q, k
        elif answer == SHRINKS:
            r, j = q, rng.choice([x for x in seen if x != k])
        else:
            future = [x for x in range(t) if not allowed[q, x]]
            if future and rng.random() < 0.5:  # a masked score: no weight moves
                k = rng.choice(future)
                r = q
            else:
                r = rng.choice([x for x in range(t) if x != q])
            j = rng.choice(torch.nonzero(allowed[r]).flatten().tolist())
        raised = raw[h].clone()
        raised[q, k] += 1
        after = torch.softmax(raised.masked_fill(~allowed, -math.inf) / n.scale, dim=-1)
        moved = float(after[r, j] - weights[h, r, j])
        if {GROWS: moved > 1e-9, SHRINKS: moved < -1e-9, SAME: moved == 0}[answer]:
            break
    else:
        return None
    labels = n.labels
    score = "score" if n.page == "simplified" else "raw score (before the 1/√d_k)"
    prompt = (
        f"Suppose the {score} of query {labels[q]} on key {labels[k]}{_head_words(n, h)} "
        f"were 1 higher, every other score as it is. What would happen to the weight of query "
        f"{labels[r]} on key {labels[j]}{_before_dropout(n)}?"
    )
    wrong = {
        GROWS: [],
        SHRINKS: [_misconception(OTHERS_UNCHANGED, SAME)],
        SAME: [
            _misconception(
                MASKED_SCORE_COUNTS if r == q else ROWS_SHARE, GROWS if j == k else SHRINKS
            )
        ],
    }[answer]
    change = f" (here from {float(weights[h, r, j]):.4f} to {float(after[r, j]):.4f})"
    if answer == GROWS:
        factor = f"{math.exp(1 / n.scale):.4f}"
        reason = f"Its exp grows by a factor {factor}, the row's sum by less: it grows" + change
    elif answer == SHRINKS:
        reason = "The row's sum grows with that one exp, so every other weight shrinks" + change
    elif r == q:
        reason = (
            f"Key {labels[k]} comes after query {labels[q]}: the mask sets that score to −∞ "
            "whatever it was, so no weight moves"
        )
    else:
        reason = (
            f"Row {labels[r]} is a softmax of its own: it reads none of row {labels[q]}'s scores"
        )
    return _question(
        n,
        where,
        CHOICE,
        answer,
        reason=reason + ".",
        prompt=prompt,
        choices=_shuffled(rng, (GROWS, SHRINKS, SAME), answer, where),
        query=r,
        other=j,
        head=_head(n, h),
        misconceptions=tuple(wrong),
    )


RATIO_LOW, RATIO_HIGH = 1.05, 20.0  # the ratios asked: apart from 1, small enough to type


def _weight_ratio(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """How many times larger is query q's weight on key a than on key b? The softmax makes it
    exp((s_a − s_b) / √d_k) whatever the row's other scores: one exponential, from the two
    scores the prompt states (to 4 decimals, from the scores drawn above). Asked where the
    ratio is between RATIO_LOW and RATIO_HIGH and none of the numbers the prompt states."""
    t = n.num_tokens
    allowed = _allowed(n).tolist()
    w = n.weights.double().tolist()
    raw = n.raw.double().tolist()
    pairs = [
        (h, q, a, b)
        for h in range(n.num_heads)
        for q in range(t)
        for a in range(t)
        for b in range(t)
        if a != b and allowed[q][a] and allowed[q][b] and w[h][q][b] > 0
    ]
    score = "score" if n.page == "simplified" else "raw score"

    def ratio(c) -> float:
        h, q, a, b = c
        return w[h][q][a] / w[h][q][b]

    def prompt_of(c) -> str:
        h, q, a, b = c
        scale = "" if n.page == "simplified" else f", and d_k = {round(n.scale**2)}"
        return (
            f"In row {n.labels[q]}{_head_words(n, h)}, the {score} on key {n.labels[a]} is "
            f"{raw[h][q][a]:.4f} and on key {n.labels[b]} is {raw[h][q][b]:.4f}"
            f"{scale}. How many times larger is the weight on {n.labels[a]} than the weight "
            f"on {n.labels[b]}{_before_dropout(n)}? Answer to 2 decimals."
        )

    def ok(c) -> bool:
        r = ratio(c)
        return RATIO_LOW <= r <= RATIO_HIGH and _apart_from_shown(r, prompt_of(c), _rate(where))

    def build(c) -> tuple[Misconception, ...]:
        h, q, a, b = c
        sa, sb = raw[h][q][a], raw[h][q][b]
        wrong = []
        if n.scale > 1:
            wrong.append(_misconception(RATIO_UNSCALED, math.exp(min(sa - sb, 50.0))))
        if sa > 0 and sb > 0:
            wrong.append(_misconception(PROPORTIONAL, sa / sb))
        return _keep_distinct(ratio(c), wrong, _number_apart)

    picked = _pick_where(rng, pairs, ok, build)
    if picked is None:
        return None
    (h, q, a, b), misconceptions = picked
    delta = (raw[h][q][a] - raw[h][q][b]) / n.scale
    gap = f"{raw[h][q][a]:.4f} − {raw[h][q][b]:.4f}"
    over = gap if n.page == "simplified" else f"({gap}) / {n.scale:.4f}"
    reason = (
        f"exp({over}) = exp({delta:.4f}) = "
        f"{ratio((h, q, a, b)):.4f}: the row's sum divides both weights alike and cancels."
    )
    return _question(
        n,
        where,
        NUMBER,
        ratio((h, q, a, b)),
        reason=reason,
        prompt=prompt_of((h, q, a, b)),
        low=0.0,
        high=RATIO_HIGH + 5,
        query=q,
        other=a,
        head=_head(n, h),
        misconceptions=misconceptions,
        products=1,
    )


def _scaled_score(n: Numbers, rng: random.Random, where: dict) -> Question | None:
    """What does the 1/√d_k make of one raw score (page 2's scaled scores)? One division.
    Asked where d_k >= 2 and the scaled score is none of the numbers the prompt states."""
    d_k = round(n.scale**2)
    if n.page != "trainable" or d_k < 2:
        return None
    s = n.raw[0].double()
    scaled = (n.raw[0] / n.scale).double()  # as the trace divides: float32 by √d_k

    def prompt_of(q: int, k: int) -> str:
        return (
            f"The raw score of query {n.labels[q]} on key {n.labels[k]} is "
            f"{float(s[q, k]):.4f}, and d_k = {d_k}. What is it after the scaling, as the "
            "scaled scores will show it? Answer to 2 decimals."
        )

    return _cell_number(
        n,
        rng,
        where,
        scaled,
        prompt_of,
        wrong_of=lambda q, k: _misconception(DIVIDE_BY_D_K, float(s[q, k] / d_k)),
        reason_of=lambda q, k: (
            f"{float(s[q, k]):.4f} / √{d_k} = {float(s[q, k]):.4f} / "
            f"{n.scale:.4f} = {float(scaled[q, k]):.4f}."
        ),
        products=1,
    )


_MAKERS = {
    SCORE_RISES: _score_rises,
    WEIGHT_RATIO: _weight_ratio,
    SCALED_SCORE: _scaled_score,
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
