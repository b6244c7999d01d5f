"""Spot the bug: one bug of the break-it gallery (or none), switched on at random, to diagnose.

:func:`pose` picks, from a seed, either no bug or one bug of the page's pass (the registry in
:mod:`attnviz.teach.bugs`) that the student could see at these settings, runs the pass with it the
way the page runs it (eval or training mode, the dropout seed), and returns a
:class:`Mystery`: the :class:`Exhibit` (exactly what the page may show: the tensors, their
shapes, the weights' row sums, or the error PyTorch raised; never the bug's name, its diff or
a badge), the diagnosis choices, and the :class:`Reveal` for after the answer (the check that
catches the bug, :mod:`attnviz.teach.checks`, and the one-line diff the engine ran, ``Bug.diff``).

A bug is posed only where it shows: :func:`candidates` keeps a bug when its settings do not
hide it (``Bug.hidden_at``: one head, one token, dropout 0, ``T == context_length`` ...), when
it changes something the page shows by at least ``VISIBLE`` (or raises), and when the page
lets the student point at the symptom: the error, or one of the exhibit's "Signs to check"
(:func:`signs_of`: row sums, the weights against the softmax of the scores shown, the scores
against the queries and keys shown, the weight on future keys, route 1 against route 2,
dropout in eval mode) off what right code gives. A page draws its mystery from the student's
session seed, so neighbors get different ones. Dropout left on
in eval mode changes nothing in training mode, so it is never posed there. Nothing here
imports Streamlit.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace

import torch

from attnviz.core import book as BK
from attnviz.core import modules as M
from attnviz.core.seeding import seeded
from attnviz.core.settings import Settings
from attnviz.core.trace import ModuleSpec, record
from attnviz.teach import bugs, prepare
from attnviz.teach.checks import CheckResult

Tensor = torch.Tensor

PAGES = ("simplified", "trainable", "causal", "multihead")
NONE = "none"
NONE_TITLE = "No bug: the engine's own code"
VISIBLE = 0.01  # a change smaller than this in every number shown does not count as seen

# What the page calls each tensor it shows (the exhibit's names; never a bug's).
INPUTS = "inputs"
QUERIES = "queries"
KEYS = "keys"
VALUES = "values"
SCORES = "scores"
WEIGHTS = "weights"
ROUTE1 = "weights by route 1 (softmax, zero the future, renormalize)"
DROPPED = "weights after dropout"
CONTEXT = "context"
OUTPUT = "output"
WEIGHT_NAMES = (WEIGHTS, ROUTE1, DROPPED)


@dataclass(frozen=True)
class Setup:
    """The sizes and mode the page states beside the tensors (the sidebar's, or the book's)."""

    tokens: int
    d_in: int
    d_out: int
    num_heads: int
    head_dim: int
    context_length: int
    dropout: float
    training: bool


@dataclass(frozen=True)
class Shown:
    """One tensor as the page shows it: the first example of the batch, (T, T), (T, d) or
    (H, T, T) for the heads; ``shape`` is the whole tensor's, batch included."""

    name: str
    values: Tensor
    shape: tuple[int, ...]

    def __eq__(self, other: object) -> bool:  # the same numbers (a tensor has no plain ==)
        if not isinstance(other, Shown):
            return NotImplemented
        same = self.name == other.name and self.shape == other.shape
        return same and torch.equal(self.values, other.values)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Sign:
    """One number to check, measured on the tensors the page shows (the same measurement
    whatever ran): ``what`` it compares, its ``value``, and what the engine's own code gives
    (``expected``: 0 or 1, a property of right code, not a run of it)."""

    what: str
    value: float
    expected: float

    @property
    def off(self) -> bool:
        """Whether the exhibit's tensors break the property (by VISIBLE or more)."""
        return not math.isfinite(self.value) or abs(self.value - self.expected) >= VISIBLE


@dataclass(frozen=True)
class Exhibit:
    """What the page may show before the diagnosis: no bug name, no diff, no badge."""

    page: str
    labels: tuple[str, ...]
    setup: Setup
    shown: tuple[Shown, ...]  # empty when the pass raised
    row_sums: tuple[tuple[str, tuple[float, ...]], ...]  # per weights tensor, each row's sum
    error: str | None  # what PyTorch raised, word for word
    signs: tuple[Sign, ...] = ()  # the "Signs to check" table (none when the pass raised)

    @property
    def symptoms(self) -> tuple[Sign, ...]:
        """The signs that are off: what a student can point at (empty for right code)."""
        return tuple(s for s in self.signs if s.off)

    def get(self, name: str) -> Tensor | None:
        for s in self.shown:
            if s.name == name:
                return s.values
        return None

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {s.name: s.shape for s in self.shown}


@dataclass(frozen=True)
class Choice:
    key: str  # a bug's key, or NONE
    title: str


@dataclass(frozen=True)
class Reveal:
    """After the answer: which bug it was, the check that catches it and the diff it ran."""

    answer: str  # the bug's key, or NONE
    title: str
    diff: str  # Bug.diff(spec): the engine's code to the code that ran ("" for none)
    check: CheckResult | None  # the bug's named check on the buggy run (None: it raised)
    error: str | None  # the error it raised, when it raised
    why: str | None  # why the shapes clash, when it raised
    summary: str  # one sentence: what the bug does, or that nothing was wrong


@dataclass(frozen=True)
class Mystery:
    page: str
    text: str
    settings: Settings
    book: bool
    seed: int | None
    exhibit: Exhibit
    choices: tuple[Choice, ...]
    answer: str
    reveal: Reveal


@dataclass(frozen=True)
class Diagnosis:
    """A student's diagnosis (a choice's key) of ``mystery``: graded, with the reveal."""

    mystery: Mystery
    choice: str

    @property
    def right(self) -> bool:
        return self.choice == self.mystery.answer

    @property
    def answer(self) -> str:
        return self.mystery.answer

    @property
    def reveal(self) -> Reveal:
        return self.mystery.reveal


# --- the page's inputs and module ----------------------------------------------------------
@dataclass(frozen=True)
class _Stage:
    page: str
    labels: tuple[str, ...]
    x: Tensor  # (T, d_in) on passes 1-2, (1, T, d_in) on passes 3-4
    spec: ModuleSpec | None
    training: bool
    dropout_seed: int


def _stage(page: str, text: str, settings: Settings, book: bool) -> _Stage | None:
    """The inputs and module the page runs, as :mod:`attnviz.teach.prepare` builds them; None when
    the page cannot run (no tokens, d_out not divisible by num_heads)."""
    s = settings
    if page not in PAGES:
        raise ValueError(f"unknown page {page!r}")
    if page == "multihead" and not book and s.multihead_problem():
        return None
    prep = prepare.prepare(text, s, book)
    if prep.empty:
        return None
    if page in ("causal", "multihead"):
        prep, _ = prepare.within_context(prep, s.context_length)
    spec: ModuleSpec | None
    if page == "simplified":
        spec = None
    elif page == "trainable":
        spec = BK.SPEC_V2 if book else prepare.spec_trainable(s)
    elif page == "causal":
        spec = BK.SPEC_MASKING_WALK if book else prepare.spec_causal(s)
    else:
        spec = BK.SPEC_MHA if book else prepare.spec_multihead(s)
    x = prep.x if page in ("causal", "multihead") else prep.x[0]
    training = s.training and not book and page in ("causal", "multihead")
    return _Stage(page, prep.labels, x, spec, training, s.seed_dropout)


def _setup(st: _Stage) -> Setup:
    tokens, d_in = st.x.shape[-2], st.x.shape[-1]
    spec = st.spec
    if spec is None:
        return Setup(tokens, d_in, d_in, 1, d_in, tokens, 0.0, False)
    heads = spec.num_heads if st.page == "multihead" else 1
    masked = st.page in ("causal", "multihead")
    return Setup(
        tokens,
        d_in,
        spec.d_out,
        heads,
        spec.d_out // heads,
        spec.context_length if masked else tokens,
        spec.dropout if masked else 0.0,
        st.training,
    )


# --- running the pass, with or without the bug ---------------------------------------------
def _run(st: _Stage, bug: bugs.Bug | None) -> Exhibit:
    """Run the page's pass (the bug's one-line edit when ``bug`` is given) as the page runs
    it, and collect what the page shows."""
    module = st.spec.build() if st.spec is not None else None
    if module is not None:
        module.train(st.training)  # a private module: switching its mode is safe
    in_route1 = bug is not None and bug.where == "route1"
    forward = bugs.forward_of(None if in_route1 else bug, st.page, st.spec)
    labels, setup = st.labels, _setup(st)
    first = st.x if st.x.dim() == 2 else st.x[0]
    try:
        with torch.inference_mode(), seeded(st.dropout_seed):
            output, taps = record(lambda: forward(module, st.x))
            route1 = None
            if st.page == "causal" and module is not None:
                renormalized = bug.compiled(st.spec) if in_route1 and bug else None
                route = renormalized or M.renormalized_causal_weights
                route1 = route(taps["queries"][0], taps["keys"][0], module.mask)
    except RuntimeError as err:
        inputs = (Shown(INPUTS, first, tuple(st.x.shape)),)
        return Exhibit(st.page, labels, setup, inputs, (), str(err))

    found: list[tuple[str, Tensor | None]] = [
        (INPUTS, st.x),
        (QUERIES, _tap(taps, "queries")),
        (KEYS, _tap(taps, "keys")),
        (VALUES, _tap(taps, "values")),
        (SCORES, _tap(taps, "attn_scores")),
        (WEIGHTS, _tap(taps, "attn_weights")),
        (ROUTE1, route1),
        (DROPPED, _tap(taps, "weights_dropped")),
        (CONTEXT, _tap(taps, "context") if st.page == "multihead" else output),
        (OUTPUT, output if st.page == "multihead" else None),
    ]
    shown = tuple(
        Shown(name, t if st.x.dim() == 2 else t[0], tuple(t.shape))
        for name, t in found
        if t is not None
    )
    sums = tuple(
        (s.name, tuple(float(v) for v in s.values.double().sum(dim=-1).flatten()))
        for s in shown
        if s.name in WEIGHT_NAMES
    )
    exhibit = Exhibit(st.page, labels, setup, shown, sums, None)
    return replace(exhibit, signs=signs_of(exhibit))


# --- signs to check -----------------------------------------------------------------------
SIGN_SUMS = "largest |row sum − 1| of the weights"
SIGN_SOFTMAX = "largest |weights − softmax(scores{scale}, dim=-1)|"
SIGN_PRODUCT = "largest |score − {q} · {k}| on the keys each query sees"
SIGN_FUTURE = "largest weight on a key after its query"
SIGN_FUTURE_ROUTE1 = "largest weight on a key after its query, route 1"
SIGN_ROUTES = "largest |route 1 − route 2|"
SIGN_EVAL = "largest |weights after dropout − weights| (eval mode: dropout is off)"
SIGN_SHAPE = "the weights are (…, T, T), T = number of tokens (1 yes, 0 no)"


def _largest(values: Tensor) -> float:
    """The largest absolute value (0 for none)."""
    return float(values.abs().max()) if values.numel() else 0.0


def signs_of(ex: Exhibit) -> tuple[Sign, ...]:
    """The "Signs to check" of an exhibit: each a number measured on the tensors it shows,
    beside what right code gives. Every bug that runs breaks one of them (the tests: a bug is
    posed only where one is off)."""
    inputs, scores, weights = ex.get(INPUTS), ex.get(SCORES), ex.get(WEIGHTS)
    if scores is None or weights is None:
        return ()
    t = len(ex.labels)
    found = [Sign(SIGN_SHAPE, float(tuple(weights.shape[-2:]) == (t, t)), 1.0)]
    if tuple(weights.shape[-2:]) != (t, t) or tuple(scores.shape[-2:]) != (t, t):
        return tuple(found)
    w, sc = weights.double(), scores.double()
    causal = ex.page in ("causal", "multihead")
    future = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    seen = ~future if causal else torch.ones(t, t, dtype=torch.bool)
    found.append(Sign(SIGN_SUMS, float((w.sum(dim=-1) - 1).abs().max()), 0.0))
    head_dim = ex.setup.head_dim
    scale = 1.0 if ex.page == "simplified" else head_dim**0.5
    words = "" if ex.page == "simplified" else f" / √{head_dim}"
    masked = sc.masked_fill(~seen, -math.inf)
    expected = torch.softmax(masked / scale, dim=-1)
    found.append(Sign(SIGN_SOFTMAX.format(scale=words), float((w - expected).abs().max()), 0.0))
    q, k = (inputs, inputs) if ex.page == "simplified" else (ex.get(QUERIES), ex.get(KEYS))
    if q is not None and k is not None and q.shape[-2] == t and k.shape == q.shape:
        qd, kd = q.double(), k.double()
        if sc.dim() == 3:  # heads: each head's slice of the queries' and keys' columns
            heads = sc.shape[0]
            qd = qd.view(t, heads, -1).transpose(0, 1)
            kd = kd.view(t, heads, -1).transpose(0, 1)
        product = qd @ kd.transpose(-2, -1)
        gap = (sc - product).abs().masked_fill(~seen, 0.0)
        names = ("inputs[i]", "inputs[j]") if ex.page == "simplified" else ("q_i", "k_j")
        found.append(Sign(SIGN_PRODUCT.format(q=names[0], k=names[1]), float(gap.max()), 0.0))
    if causal:
        found.append(Sign(SIGN_FUTURE, _largest(w[..., future]), 0.0))
        route1 = ex.get(ROUTE1)
        if route1 is not None:
            r1 = route1.double()
            found.append(Sign(SIGN_FUTURE_ROUTE1, _largest(r1[..., future]), 0.0))
            found.append(Sign(SIGN_ROUTES, float((r1 - w).abs().max()), 0.0))
        dropped = ex.get(DROPPED)
        if dropped is not None and not ex.setup.training:
            found.append(Sign(SIGN_EVAL, float((dropped.double() - w).abs().max()), 0.0))
    return tuple(found)


def _tap(taps: dict[str, list[Tensor]], name: str) -> Tensor | None:
    return taps[name][0] if name in taps else None


def change(a: Exhibit, b: Exhibit) -> float:
    """The largest difference between two exhibits of the same page, over every tensor both
    show with the same shape: inf where one raised and the other did not, or where an entry is
    infinite (a masked −∞) in one and finite in the other."""
    if (a.error is None) != (b.error is None):
        return math.inf
    worst = 0.0
    theirs = {s.name: s.values for s in b.shown}
    for s in a.shown:
        other = theirs.get(s.name)
        if other is None or other.shape != s.values.shape:
            if other is not None:
                return math.inf
            continue
        x, y = s.values.double(), other.double()
        if not torch.equal(torch.isinf(x), torch.isinf(y)) or not torch.equal(
            torch.isnan(x), torch.isnan(y)
        ):
            return math.inf
        finite = torch.isfinite(x) & torch.isfinite(y)
        if finite.any():
            worst = max(worst, float((x[finite] - y[finite]).abs().max()))
    return worst


# --- posing ------------------------------------------------------------------------------
def candidates(page: str, text: str, settings: Settings, book: bool = False) -> tuple[str, ...]:
    """NONE and every bug of the page that the student could see here: its settings do not
    hide it, it raises or moves a number the page shows by at least VISIBLE, and the page lets
    her point at it: the error, or a sign to check that is off (:func:`signs_of`)."""
    st = _stage(page, text, settings, book)
    if st is None:
        return ()
    right = _run(st, None)
    found = [NONE]
    for bug in bugs.bugs_for(page):
        if bug.hidden_at(st.x, st.spec) is not None:
            continue
        wrong = _run(st, bug)
        if change(wrong, right) >= VISIBLE and (wrong.error is not None or wrong.symptoms):
            found.append(bug.key)
    return tuple(found)


def choices_for(page: str) -> tuple[Choice, ...]:
    """Every bug of the page's pass, in the gallery's order, then "no bug"."""
    return (*(Choice(b.key, b.title) for b in bugs.bugs_for(page)), Choice(NONE, NONE_TITLE))


def _reveal(st: _Stage, bug: bugs.Bug | None) -> Reveal:
    if bug is None:
        return Reveal(
            NONE,
            NONE_TITLE,
            "",
            None,
            None,
            None,
            "No bug: this was the engine's own code, and every number on the page is right.",
        )
    ran = bugs.run_bug(bug, st.x, st.spec)  # its named check, in eval mode where checks hold
    if ran.error:
        caught = f"PyTorch refuses to run it: {ran.error}"
    elif ran.check is not None and ran.check.status == "fail":
        caught = f"the check “{ran.check.title}” catches it"
    elif ran.check is not None:  # honest: the numbers show it, the check does not
        caught = f"the check “{ran.check.title}” does not catch it at these numbers"
    else:
        caught = "no check ran"
    return Reveal(
        bug.key,
        bug.title,
        bug.diff(st.spec),
        ran.check,
        ran.error,
        ran.why,
        f"{bug.title}: {bug.symptom}; {caught}.",
    )


def stage(
    page: str, text: str, settings: Settings, book: bool, answer: str, seed: int | None = None
) -> Mystery | None:
    """The mystery with ``answer`` (a bug key of the page, or NONE) switched on, whether or
    not it shows here (tests and :func:`pose` use it); None when the page cannot run."""
    st = _stage(page, text, settings, book)
    if st is None:
        return None
    bug = None if answer == NONE else bugs.BUGS_BY_KEY[answer]
    if bug is not None and bug.pass_kind != page:
        raise ValueError(f"{answer!r} is not a bug of the {page} pass")
    return Mystery(
        page,
        text,
        settings,
        book,
        seed,
        _run(st, bug),
        choices_for(page),
        answer,
        _reveal(st, bug),
    )


def pose(page: str, text: str, settings: Settings, book: bool = False, seed: int = 0):
    """A mystery picked from ``seed``: no bug, or one of the page's bugs that shows here, each
    equally likely. The same plain values always give the same mystery. None when the page
    cannot run."""
    found = candidates(page, text, settings, book)
    if not found:
        return None
    return stage(page, text, settings, book, pick(page, found, seed), seed)


def pick(page: str, found: tuple[str, ...], seed: int) -> str:
    """One of ``found`` (the :func:`candidates`), each equally likely, fixed by the seed."""
    return random.Random(f"mystery:{page}:{seed}").choice(found)


def diagnose(mystery: Mystery, choice: str) -> Diagnosis:
    """Grade a diagnosis (a choice's key) and hand over the reveal."""
    keys = [c.key for c in mystery.choices]
    if choice not in keys:
        raise ValueError("Pick one of: " + ", ".join(c.title for c in mystery.choices) + ".")
    return Diagnosis(mystery, choice)
