"""Class polls: one question asked of the whole class, answered from phones, tallied on the projector.

Peer instruction in four steps: everyone answers (round 1), the presenter may show the spread,
neighbours discuss and everyone answers again (round 2), then the reveal. This module is the store
behind it, with no Streamlit: pages call it through ``ui/`` later.

A poll holds a question as plain JSON (what a phone shows: the question's description and the
presenter's sentence and settings), the form its answers take (:class:`Choice`, :class:`Number`
or :class:`Sketch`), and a sealed key (with the answers that show each named misconception),
which no view returns before the reveal.

Two backends, chosen by one setting (:func:`store_from_env`): without ``ATTNVIZ_REDIS_URL`` the
polls live in this process (one server: a laptop, one container); with it they live in Redis,
so replicas behind a load balancer share them (``attnviz.classroom.redis_store``).

Every operation returns a value, never raises to its caller: the result, or :class:`Refused`
with a reason and a sentence a page can show as it is (an unknown or closed poll, a wrong
secret, a full poll, a store that is down).

Nothing personal is kept. A student is counted by her browser: a random token the browser
keeps (``ui.classroom.poll_views.browser_token``), stored as an HMAC under a random salt made for
that poll, so the same browser has unrelated ids in two polls and the raw token is never
written; no address, no name. A reload, an app switch or a move to another replica keeps the
token, so she keeps her one answer. Polls expire (:attr:`Limits.ttl_seconds`).

No one can jam a class: a poll admits new browsers at a class's pace
(:attr:`Limits.join_burst`, then :attr:`Limits.joins_per_minute`), one browser sends at most
:attr:`Limits.sends_per_minute` answers a minute to a poll, and the presenter's view counts
every answer refused (:class:`Refusals`). One presenter (her browser's token) has at most
:attr:`Limits.polls_per_presenter` polls taking answers, and a poll revealed or closed frees its
place there and in :attr:`Limits.max_polls`.

Who may do what: the join code (six characters a student types, or the QR code's link) lets
anyone read the question and answer; opening the spread, asking again, revealing and closing
need the presenter's key: the poll's secret, made with :mod:`secrets` when the poll is created
and stored only as its SHA-256, or the token of the browser that created it (stored as an HMAC
under the poll's salt, so a reload keeps the controls without a secret in the address bar);
both are compared in constant time.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import math
import os
import re
import secrets
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast

# Join codes: no 0/O or 1/I, so a code read off a projector is typed right.
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 6
ROUNDS = (1, 2)
FORMAT_VERSION = "1"


@dataclass(frozen=True)
class Limits:
    """How much one store holds, and how fast. The defaults fit a lecture hall and bound
    Redis's memory: 300 stored polls x 2 rounds x 500 answers of at most ~0.5 kB is under
    300 MB at the very worst (a real poll of 60 phones is a few kB)."""

    max_polls: int = 100  # polls taking answers; one revealed or closed frees its place
    max_stored: int = 300  # polls kept at all, stopped ones too (their counts, until they expire)
    polls_per_presenter: int = 5  # polls taking answers, per presenter's browser
    # Polls one network address opens in an hour, per server process (a browser token is the
    # client's to make up, its address is not; a school's one NAT address has room for several
    # presenters). Held in the process only: no address is ever written.
    polls_per_address_hour: int = 20
    max_answers: int = 500  # distinct browsers per round of one poll
    join_burst: int = 60  # new browsers a poll admits at once (a class arriving) ...
    joins_per_minute: int = 30  # ... and then this many a minute
    sends_per_minute: int = 12  # answers one browser may send to one poll in a minute
    ttl_seconds: float = 4 * 3600  # a poll and its answers vanish this long after creation
    max_question_bytes: int = 64 * 1024  # the question and settings as JSON

    def __post_init__(self) -> None:
        counts = (
            self.max_polls,
            self.max_stored,
            self.polls_per_presenter,
            self.polls_per_address_hour,
            self.max_answers,
            self.join_burst,
            self.joins_per_minute,
            self.sends_per_minute,
        )
        if min(counts) < 1:
            raise ValueError("every count limit must be at least 1")
        if self.max_stored < self.max_polls:
            raise ValueError("max_stored must be at least max_polls")
        if not 0 < self.ttl_seconds <= 7 * 24 * 3600:
            raise ValueError("ttl_seconds must be in (0, one week]")


# --- results -----------------------------------------------------------------------------------

Reason = Literal[
    "unknown",
    "closed",
    "revealed",
    "wrong_round",
    "not_allowed",
    "bad_answer",
    "bad_question",
    "bad_state",
    "full",
    "crowded",
    "too_fast",
    "too_many_polls",
    "unavailable",
]


@dataclass(frozen=True)
class Refused:
    """Why an operation did nothing, with one plain sentence for the page (no Markdown)."""

    reason: Reason
    message: str


UNKNOWN = Refused(
    "unknown", "There is no poll with this code: it may have expired or been mistyped."
)
CLOSED = Refused("closed", "This poll is closed.")
REVEALED = Refused("revealed", "The answer has been revealed: this poll takes no more answers.")
NOT_ALLOWED = Refused("not_allowed", "Only the presenter's link can do this.")
UNAVAILABLE_MESSAGE = (
    "The poll store is unavailable (Redis did not answer): polls are paused, "
    "the lessons keep working, and a poll page carries on by itself once it answers."
)


@dataclass(frozen=True)
class Created:
    """A new poll. ``code`` goes on the projector; ``secret`` only into the presenter's link."""

    code: str
    secret: str

    def __repr__(self) -> str:  # keep the secret out of logs and tracebacks
        return f"Created(code={self.code!r}, secret=<hidden>)"


@dataclass(frozen=True)
class Answered:
    round: int
    replaced: bool  # True when this session had answered this round before


Phase = Literal["open", "revealed", "closed"]


@dataclass(frozen=True)
class PollState:
    """Where a poll is: open (taking answers for ``round``), revealed (no more answers, key
    shown), or closed. ``shown``: the presenter has put the spread up."""

    phase: Phase
    round: int
    shown: bool


Action = Literal["show", "reask", "reveal", "close"]


def next_state(state: PollState, action: Action) -> PollState | Refused:
    """The state machine: open(1) -> [show] -> reask -> open(2) -> [show] -> reveal -> close.

    Showing and revealing are idempotent; revealing may skip round 2; closing works from any
    phase. A closed poll refuses everything.
    """
    if state.phase == "closed":
        return CLOSED
    if action == "close":
        return PollState("closed", state.round, state.shown)
    if action == "show":
        return PollState(state.phase, state.round, True)
    if action == "reveal":
        return PollState("revealed", state.round, True)
    if action == "reask":
        if state.phase == "revealed":
            return Refused("bad_state", "The answer is already revealed: it cannot be asked again.")
        if state.round >= ROUNDS[-1]:
            return Refused(
                "bad_state", "The question has already been asked again: reveal it next."
            )
        return PollState("open", state.round + 1, False)
    return Refused("bad_state", f"Unknown action {action!r}.")


# --- answer formats ----------------------------------------------------------------------------


class AnswerError(ValueError):
    """An answer (or a key) that does not fit the question's format; its text is the message."""


def _finite(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AnswerError(f"{what} must be a number.")
    number = float(value)
    if not math.isfinite(number):
        raise AnswerError(f"{what} must be a finite number.")
    return number


@dataclass(frozen=True)
class Choice:
    """Pick one of ``options`` (a token to click, a shape, a diagnosis). An answer is an index."""

    options: tuple[str, ...]
    kind: Literal["choice"] = field(default="choice", init=False)

    def __post_init__(self) -> None:
        if not 2 <= len(self.options) <= 64:
            raise ValueError("a choice question needs 2 to 64 options")
        if any(not isinstance(o, str) or len(o) > 200 for o in self.options):
            raise ValueError("each option must be a string of at most 200 characters")

    def clean(self, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise AnswerError("Pick one of the options.")
        if not 0 <= value < len(self.options):
            raise AnswerError(f"Pick one of the {len(self.options)} options.")
        return value

    def encode(self, value: Any) -> str:
        return str(int(value))

    def decode(self, text: str) -> int:
        return int(text)

    def label(self, value: Any) -> str:
        return self.options[int(value)]

    def matches(self, a: Any, b: Any) -> bool:
        return int(a) == int(b)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "options": list(self.options)}


@dataclass(frozen=True)
class Number:
    """Type a number (a score, how many weights are 0). Answers are rounded to ``decimals`` and
    counted by that rounded value. The key matches the same rounded value, or, with a
    ``tolerance``, every rounded value at most that far from it (a number worked out by hand
    from a figure's two-decimal cells lands near the key, not on it)."""

    decimals: int = 2
    lo: float = -1e9
    hi: float = 1e9
    tolerance: float = 0.0
    kind: Literal["number"] = field(default="number", init=False)

    def __post_init__(self) -> None:
        if not 0 <= self.decimals <= 6:
            raise ValueError("decimals must be 0 to 6")
        if not (math.isfinite(self.lo) and math.isfinite(self.hi) and self.lo <= self.hi):
            raise ValueError("lo and hi must be finite with lo <= hi")
        if not (math.isfinite(self.tolerance) and 0 <= self.tolerance <= self.hi - self.lo):
            raise ValueError("tolerance must be finite, 0 to hi - lo")

    def clean(self, value: object) -> float:
        number = _finite(value, "The answer")
        if not self.lo <= number <= self.hi:
            raise AnswerError(f"The answer must be between {self.lo:g} and {self.hi:g}.")
        return round(number, self.decimals) + 0.0  # + 0.0 turns -0.0 into 0.0

    def encode(self, value: Any) -> str:
        return f"{float(value):.{self.decimals}f}"

    def decode(self, text: str) -> float:
        return float(text)

    def label(self, value: Any) -> str:
        return self.encode(value)

    def matches(self, a: Any, b: Any) -> bool:
        if self.tolerance:  # the rounded values, as counted; 1e-9: float error at the edge
            return abs(float(self.encode(a)) - float(self.encode(b))) <= self.tolerance + 1e-9
        return self.encode(a) == self.encode(b)

    def to_json(self) -> dict[str, Any]:
        made = {"kind": self.kind, "decimals": self.decimals, "lo": self.lo, "hi": self.hi}
        if self.tolerance:  # a poll stored before tolerances reads the same
            made["tolerance"] = self.tolerance
        return made


def total_variation(a: Sequence[float], b: Sequence[float]) -> float:
    """Half the L1 distance between two rows, each first scaled to sum to 1."""
    sa, sb = sum(a), sum(b)
    return 0.5 * sum(abs(x / sa - y / sb) for x, y in zip(a, b, strict=True))


@dataclass(frozen=True)
class Sketch:
    """Sketch a softmax row: one weight in [0, 1] per key. Two sketches match when their total
    variation distance (each scaled to sum to 1) is at most ``tolerance``. The class's tally is
    the mean sketch and its spread (population standard deviation) per key, each sketch scaled
    to sum to 1 first; there are no counts."""

    length: int
    tolerance: float = 0.10
    kind: Literal["sketch"] = field(default="sketch", init=False)

    def __post_init__(self) -> None:
        if not 1 <= self.length <= 64:
            raise ValueError("a sketch has 1 to 64 weights")
        if not 0 <= self.tolerance < 1:
            raise ValueError("tolerance must be in [0, 1)")

    def clean(self, value: object) -> tuple[float, ...]:
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise AnswerError("A sketch is one weight per key.")
        if len(value) != self.length:
            raise AnswerError(f"A sketch has {self.length} weights, one per key.")
        row = tuple(round(_finite(v, "Each weight"), 4) + 0.0 for v in value)
        if any(not 0 <= v <= 1 for v in row):
            raise AnswerError("Each weight must be between 0 and 1.")
        if sum(row) <= 0:
            raise AnswerError("Move at least one weight above 0.")
        return row

    def encode(self, value: Any) -> str:
        return json.dumps([float(v) for v in value], separators=(",", ":"))

    def decode(self, text: str) -> tuple[float, ...]:
        return tuple(float(v) for v in json.loads(text))

    def label(self, value: Any) -> str:
        return "[" + ", ".join(f"{float(v):.2f}" for v in value) + "]"

    def matches(self, a: Any, b: Any) -> bool:
        return total_variation(a, b) <= self.tolerance + 1e-9

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "length": self.length, "tolerance": self.tolerance}


@dataclass(frozen=True)
class Picks:
    """Pick one option in each of several questions (the concept check,
    ``attnviz.classroom.concept_polls``): an answer is a tuple of option indices, one per
    question, with ``sizes[i]`` options in question ``i``. Two answers match when every pick
    does. The tally counts each distinct answer, so a page can grade question by question."""

    sizes: tuple[int, ...]
    kind: Literal["picks"] = field(default="picks", init=False)

    def __post_init__(self) -> None:
        if not 1 <= len(self.sizes) <= 64 or any(not 2 <= n <= 64 for n in self.sizes):
            raise ValueError("picks need 1 to 64 questions of 2 to 64 options each")

    def clean(self, value: object) -> tuple[int, ...]:
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise AnswerError("An answer is one pick per question.")
        if len(value) != len(self.sizes):
            raise AnswerError(f"Answer all {len(self.sizes)} questions.")
        missing = [i + 1 for i, v in enumerate(value) if v is None]
        if missing:
            listed = ", ".join(map(str, missing))
            raise AnswerError(f"Pick an answer in every question (not yet: {listed}).")
        if any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise AnswerError("Each pick is one of its question's options.")
        if any(not 0 <= v < n for v, n in zip(value, self.sizes, strict=True)):
            raise AnswerError("Each pick is one of its question's options.")
        return tuple(int(v) for v in value)

    def encode(self, value: Any) -> str:
        return ",".join(str(int(v)) for v in value)

    def decode(self, text: str) -> tuple[int, ...]:
        return tuple(int(v) for v in text.split(","))

    def label(self, value: Any) -> str:
        return self.encode(value)

    def matches(self, a: Any, b: Any) -> bool:
        return self.encode(a) == self.encode(b)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "sizes": list(self.sizes)}


AnswerFormat = Choice | Number | Sketch | Picks


def format_from_json(data: Mapping[str, Any]) -> AnswerFormat:
    kind = data.get("kind")
    if kind == "choice":
        return Choice(tuple(data["options"]))
    if kind == "number":
        return Number(
            int(data["decimals"]),
            float(data["lo"]),
            float(data["hi"]),
            float(data.get("tolerance", 0.0)),
        )
    if kind == "sketch":
        return Sketch(int(data["length"]), float(data["tolerance"]))
    if kind == "picks":
        return Picks(tuple(int(n) for n in data["sizes"]))
    raise ValueError(f"unknown answer format {kind!r}")


@dataclass(frozen=True)
class PollQuestion:
    """What the presenter asks.

    ``payload`` and ``settings`` are JSON objects a phone needs to show the same question on
    the presenter's sentence and settings (the question's own description comes from
    ``attnviz.teach.questions``; this module never looks inside, so they must not carry the answer:
    every phone receives them as they are). ``key`` is the right answer and
    ``misconceptions`` names the answers that show a known misconception: both are sealed,
    returned by no view before the reveal.
    """

    payload: Mapping[str, Any]
    settings: Mapping[str, Any]
    answer: AnswerFormat
    key: Any
    misconceptions: Mapping[str, Any] = field(default_factory=dict)


# --- views -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoundTally:
    """One round's answers, counted. ``counts`` has one (label, count) per option (choices, in
    the options' order, zeros included) or per distinct value (numbers, in increasing order);
    a sketch has the class's ``mean`` row and its ``spread`` (standard deviation per key).
    ``right`` and ``misconceptions`` (name, count) are filled in only after the reveal."""

    round: int
    answered: int
    counts: tuple[tuple[str, int], ...] = ()
    mean: tuple[float, ...] | None = None
    spread: tuple[float, ...] | None = None
    right: int | None = None
    misconceptions: tuple[tuple[str, int], ...] | None = None

    def share(self, count: int) -> float:
        return count / self.answered if self.answered else 0.0

    @property
    def misconception_shares(self) -> tuple[tuple[str, float], ...]:
        return tuple((name, self.share(n)) for name, n in self.misconceptions or ())


@dataclass(frozen=True)
class Refusals:
    """Answers a poll refused, by why: ``crowded`` (new browsers came faster than a class
    joins), ``too_fast`` (one browser sent more than its share a minute), ``full`` (the round
    held :attr:`Limits.max_answers` browsers)."""

    crowded: int = 0
    too_fast: int = 0
    full: int = 0

    @property
    def total(self) -> int:
        return self.crowded + self.too_fast + self.full


@dataclass(frozen=True)
class StudentView:
    """What a phone may see. ``tally`` only once the presenter shows it; ``key`` (and its
    label) only after the reveal; ``your_answer``: this session's answer in the current round."""

    code: str
    state: PollState
    payload: dict[str, Any]
    settings: dict[str, Any]
    answer: AnswerFormat
    your_answer: Any = None
    tally: tuple[RoundTally, ...] | None = None
    key: Any = None
    key_label: str | None = None
    expires_in: float | None = None  # seconds until the poll and its answers vanish


@dataclass(frozen=True)
class PresenterView:
    """What the projector may draw (the presenter decides when): every round's tally, and
    after the reveal the key and the share right and per misconception; the answers refused,
    and how long the poll has left. A display view (:meth:`PollStore.display_view`, no key
    needed) has the same fields with each round's counts left out until the presenter shows
    them."""

    code: str
    state: PollState
    payload: dict[str, Any]
    settings: dict[str, Any]
    answer: AnswerFormat
    rounds: tuple[RoundTally, ...]
    key: Any = None
    key_label: str | None = None
    # After the reveal: (name, the answer that shows it, its label) per misconception.
    misconceptions: tuple[tuple[str, Any, str], ...] | None = None
    refused: Refusals = Refusals()
    expires_in: float | None = None  # seconds until the poll and its answers vanish
    display: bool = False  # made by display_view: no key was shown, no controls go with it


# --- the store ---------------------------------------------------------------------------------


PutOutcome = Literal[
    "new", "replaced", "full", "crowded", "too_fast", "wrong_round", "revealed", "closed", "unknown"
]
InsertOutcome = Literal["ok", "taken", "full", "stored_full", "presenter_full"]
SwapOutcome = Literal["ok", "changed", "unknown"]


class StoreDown(Exception):
    """Raised by a backend's primitive when its store does not answer; never leaves the store."""


Outcome = TypeVar("Outcome")


def _salted(salt_hex: str, session_id: str) -> str:
    """The id a session is stored under in one poll: HMAC-SHA256 of its id under the poll's salt."""
    mac = hmac.new(bytes.fromhex(salt_hex), session_id.encode("utf-8"), hashlib.sha256)
    return mac.hexdigest()[:32]


def _secret_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def _owner_mac(salt_hex: str, token: str) -> str:
    """How a poll knows the browser that created it: an HMAC of its token under the poll's
    salt, apart from the same browser's id as a voter (another message under the same key)."""
    return _salted(salt_hex, "presenter:" + token)


def owner_id(token: str) -> str:
    """A presenter's browser as the store counts its polls (the SHA-256 of its token: the
    same in every poll, so :attr:`Limits.polls_per_presenter` holds across them)."""
    return hashlib.sha256(("owner:" + token).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def clean_code(code: object) -> str | None:
    """A join code as typed (any case, spaces around) in its stored form, or None."""
    if not isinstance(code, str):
        return None
    code = code.strip().upper()
    if len(code) != CODE_LENGTH or any(c not in CODE_ALPHABET for c in code):
        return None
    return code


@dataclass(frozen=True)
class _Poll:
    """A poll's stored fields, parsed (the stored form is a flat str -> str map)."""

    code: str
    state: PollState
    question: dict[str, Any]
    answer: AnswerFormat
    sealed: dict[str, Any]
    salt: str
    secret_sha256: str
    max_answers: int
    sends_per_minute: int = 0
    owner_mac: str = ""
    owner_id: str = ""
    refused: Refusals = Refusals()
    expires_in: float | None = None

    @classmethod
    def parse(cls, code: str, fields: Mapping[str, str]) -> _Poll:
        question = json.loads(fields["question"])
        phase = fields["phase"]
        if fields.get("version") != FORMAT_VERSION or phase not in ("open", "revealed", "closed"):
            raise ValueError("not a poll this version wrote")
        state = PollState(cast(Phase, phase), int(fields["round"]), fields["shown"] == "1")
        return cls(
            code=code,
            state=state,
            question=question,
            answer=format_from_json(question["answer"]),
            sealed=json.loads(fields["sealed"]),
            salt=fields["salt"],
            secret_sha256=fields["secret_sha256"],
            max_answers=int(fields["max_answers"]),
            sends_per_minute=int(fields.get("sends_per_minute", 0)),
            owner_mac=fields.get("owner_mac", ""),
            owner_id=fields.get("owner_id", ""),
            refused=Refusals(
                int(fields.get("refused_crowded", 0)),
                int(fields.get("refused_too_fast", 0)),
                int(fields.get("refused_full", 0)),
            ),
            expires_in=int(fields["ttl_ms"]) / 1000 if "ttl_ms" in fields else None,
        )

    def allows(self, secret: object) -> bool:
        """``secret`` is the presenter's key: the poll's secret, or the creating browser's
        token."""
        if not isinstance(secret, str) or not 0 < len(secret) <= 256:
            return False
        by_secret = hmac.compare_digest(_secret_digest(secret), self.secret_sha256)
        by_owner = bool(self.owner_mac) and hmac.compare_digest(
            _owner_mac(self.salt, secret), self.owner_mac
        )
        return by_secret or by_owner

    @property
    def revealed(self) -> bool:
        """Revealed now, or closed after a reveal (the presenter keeps the key and the shares)."""
        return self.state.phase == "revealed" or bool(self.sealed.get("revealed", False))

    def tallies(self, answers: Mapping[int, Mapping[str, str]]) -> tuple[RoundTally, ...]:
        sealed = self.sealed if self.revealed else None
        return tuple(
            tally_round(self.answer, r, list(answers.get(r, {}).values()), sealed)
            for r in range(1, self.state.round + 1)
        )

    def key(self) -> tuple[Any, str]:
        value = self.answer.decode(self.sealed["key"])
        return value, self.answer.label(value)

    def view_fields(self, with_key: bool) -> dict[str, Any]:
        """What the student's and the presenter's views both hold: the question as asked and,
        when ``with_key``, its key and the key's label."""
        key, key_label = self.key() if with_key else (None, None)
        return dict(
            code=self.code,
            state=self.state,
            payload=self.question["payload"],
            settings=self.question["settings"],
            answer=self.answer,
            key=key,
            key_label=key_label,
            expires_in=self.expires_in,
        )

    def misconception_answers(self) -> tuple[tuple[str, Any], ...]:
        return tuple(
            (name, self.answer.decode(text)) for name, text in self.sealed["misconceptions"].items()
        )

    def presenter_view(
        self, rounds: tuple[RoundTally, ...], *, display: bool = False
    ) -> PresenterView:
        """The presenter's (or, with ``display``, the projector's) view of these ``rounds``:
        the key and each misconception's answer only once the poll is revealed."""
        misconceptions = None
        if self.revealed:
            misconceptions = tuple(
                (name, value, self.answer.label(value))
                for name, value in self.misconception_answers()
            )
        return PresenterView(
            **self.view_fields(with_key=self.revealed),
            rounds=rounds,
            misconceptions=misconceptions,
            refused=self.refused,
            display=display,
        )


def tally_round(
    answer: AnswerFormat, round_: int, encoded: Sequence[str], sealed: Mapping[str, Any] | None
) -> RoundTally:
    """Count one round's stored answers; with ``sealed`` (after the reveal), also how many were
    right and how many match each misconception."""
    values: list[Any] = [answer.decode(text) for text in encoded]
    counts: tuple[tuple[str, int], ...] = ()
    mean = spread = None
    if isinstance(answer, Choice):
        per = [0] * len(answer.options)
        for v in values:
            per[v] += 1
        counts = tuple(zip(answer.options, per, strict=True))
    elif isinstance(answer, Number):
        seen: dict[str, int] = {}
        for text in (answer.encode(v) for v in values):
            seen[text] = seen.get(text, 0) + 1
        counts = tuple(sorted(seen.items(), key=lambda kv: float(kv[0])))
    elif isinstance(answer, Picks):
        picked: dict[str, int] = {}
        for text in (answer.encode(v) for v in values):
            picked[text] = picked.get(text, 0) + 1
        counts = tuple(sorted(picked.items()))
    elif values:
        # Each sketch scaled to sum to 1 first, as sketches are graded: the mean is a row of
        # weights, and a student who slid every weight to half counts as uniform.
        rows = [[x / sum(row) for x in row] for row in values]
        n = len(rows)
        mean = tuple(sum(col) / n for col in zip(*rows, strict=True))
        spread = tuple(
            math.sqrt(sum((x - m) ** 2 for x in col) / n)
            for col, m in zip(zip(*rows, strict=True), mean, strict=True)
        )
    right = misconceptions = None
    if sealed is not None:
        key = answer.decode(sealed["key"])
        right = sum(answer.matches(v, key) for v in values)
        misconceptions = tuple(
            (name, sum(answer.matches(v, answer.decode(text)) for v in values))
            for name, text in sealed["misconceptions"].items()
        )
    return RoundTally(round_, len(values), counts, mean, spread, right, misconceptions)


def _csv_text(value: str) -> str:
    """A label as a spreadsheet cell: text that a spreadsheet would run as a formula gets a
    leading apostrophe (a token typed by a student can start with '='). A plain number
    (``-1.00``) stays a number."""
    if _PLAIN_NUMBER.fullmatch(value):
        return value
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


_PLAIN_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")


class PollStore(ABC):
    """The operations pages call. Subclasses supply the storage primitives below; every public
    method returns its result or a :class:`Refused`, and never raises."""

    backend: str = "abstract"

    # After the store failed to answer, this long without trying again: a frozen Redis then
    # costs one socket timeout per second in a process, not one per operation per student.
    retry_after_seconds = 1.0

    def __init__(self, limits: Limits = Limits()) -> None:
        self.limits = limits
        self._down_message = UNAVAILABLE_MESSAGE
        self._down_until = 0.0  # time.monotonic() before which the store is not tried
        # Network address -> when it opened its polls of the last hour (this process only).
        self._opened_from: dict[str, list[float]] = {}
        self._opened_lock = threading.Lock()

    def _now(self) -> float:
        return time.monotonic()

    def _opened_recently(self, address: str, record: bool) -> int:
        """How many polls ``address`` opened in the last hour (counting this one if
        ``record``). The map forgets an address an hour after its last poll and holds at most
        10,000 of them, oldest dropped first."""
        with self._opened_lock:
            now = self._now()
            recent = [t for t in self._opened_from.pop(address, []) if now - t < 3600]
            if record:
                recent.append(now)
            if recent:
                self._opened_from[address] = recent  # re-inserted: the newest last
            while len(self._opened_from) > 10_000:
                del self._opened_from[next(iter(self._opened_from))]
            return len(recent)

    # The storage primitives (they may raise StoreDown, or the backend's own errors listed in
    # _down_errors). A poll's fields are a flat str -> str map; answers a map per round from a
    # salted session id to an encoded answer.
    _down_errors: tuple[type[BaseException], ...] = (StoreDown,)

    @abstractmethod
    def _insert(self, code: str, fields: dict[str, str]) -> InsertOutcome:
        """Store a new poll unless its code is taken or a cap is reached (``fields["owner_id"]``,
        when not empty, names the presenter whose polls are counted)."""

    @abstractmethod
    def _fields(self, code: str) -> dict[str, str] | None: ...

    @abstractmethod
    def _answers(self, code: str, rounds: Sequence[int]) -> dict[int, dict[str, str]]: ...

    @abstractmethod
    def _own_answer(self, code: str, round_: int, sid: str) -> str | None: ...

    @abstractmethod
    def _put_answer(self, code: str, round_: int, sid: str, encoded: str) -> PutOutcome:
        """One answer, checked in one step against the poll's phase and round, the browser's
        sends a minute, the round's cap and the poll's join pace (the limits are the poll's
        fields); a refusal for pace, speed or cap is counted in the poll's fields."""

    @abstractmethod
    def _swap_state(
        self, code: str, old: PollState, new: PollState, extra: dict[str, str], owner: str
    ) -> SwapOutcome:
        """Compare-and-set of the state; a poll that closes leaves the count of polls (and of
        its presenter's, ``owner``)."""

    @abstractmethod
    def _ping(self) -> None: ...

    def _uptime(self) -> float | None:
        """Seconds since the store's own process started, when that can be known (a store
        that restarts loses its polls)."""
        return None

    def _unknown(self) -> Refused:
        """No poll with a well-formed code: mistyped, expired, or lost in a store restart, said
        when the store restarted within a poll's lifetime."""
        uptime = self._uptime()
        if uptime is None or uptime >= self.limits.ttl_seconds:
            return UNKNOWN
        return Refused(
            "unknown",
            "There is no poll with this code. The poll store restarted "
            f"{_ago(uptime)} ago and the polls opened before then were lost; "
            "otherwise the code may be mistyped.",
        )

    # --- the guard: a store that is down gives a value, not an exception --------------------------
    def _guarded(self, run: Callable[[], Outcome]) -> Outcome | Refused:
        if time.monotonic() < self._down_until:
            return Refused("unavailable", self._down_message)
        try:
            return run()
        except self._down_errors:
            self._down_until = time.monotonic() + self.retry_after_seconds
            return Refused("unavailable", self._down_message)

    def _load(self, code: object) -> _Poll | Refused:
        clean = clean_code(code)
        if clean is None:
            return UNKNOWN
        fields = self._fields(clean)
        if fields is None:
            return self._unknown()
        try:
            return _Poll.parse(clean, fields)
        except (KeyError, ValueError, TypeError):  # written by another version: not ours to read
            return UNKNOWN

    def available(self) -> bool:
        """True when the store answers now (a page can say so before offering a poll). Always
        asks the store, even within ``retry_after_seconds`` of a failure, and on an answer lets
        the other operations try again at once."""
        try:
            self._ping()
        except self._down_errors:
            self._down_until = time.monotonic() + self.retry_after_seconds
            return False
        self._down_until = 0.0
        return True

    # --- presenter: create ------------------------------------------------------------------------
    def create(
        self, question: PollQuestion, owner: str | None = None, address: str | None = None
    ) -> Created | Refused:
        """Open a poll on ``question`` (round 1, spread hidden); return its join code and secret.
        ``owner``: the presenter's browser token; that browser then holds the controls without
        the secret, and its polls taking answers count against
        :attr:`Limits.polls_per_presenter`. ``address``: the client's network address, for
        :attr:`Limits.polls_per_address_hour` (kept in this process only)."""
        try:
            answer = question.answer
            key = answer.encode(answer.clean(question.key))
            misconceptions = {
                str(name)[:100]: answer.encode(answer.clean(value))
                for name, value in dict(question.misconceptions).items()
            }
            if len(misconceptions) > 16:
                raise AnswerError("At most 16 misconceptions per question.")
            if not isinstance(question.payload, Mapping) or not isinstance(
                question.settings, Mapping
            ):
                raise AnswerError("The question and the settings must be JSON objects.")
            text = json.dumps(
                {
                    "payload": dict(question.payload),
                    "settings": dict(question.settings),
                    "answer": answer.to_json(),
                },
                allow_nan=False,
                separators=(",", ":"),
            )
        except (AnswerError, TypeError, ValueError) as error:
            return Refused("bad_question", f"This question cannot be polled: {error}")
        if len(text.encode("utf-8")) > self.limits.max_question_bytes:
            return Refused(
                "bad_question",
                f"The question and its settings are over {self.limits.max_question_bytes:,} bytes.",
            )
        if owner is not None and not _valid_session(owner):
            return Refused("bad_question", "This browser's token is not one the store takes.")
        secret = secrets.token_urlsafe(24)
        salt = secrets.token_bytes(16).hex()
        limits = self.limits
        fields = {
            "version": FORMAT_VERSION,
            "question": text,
            "sealed": json.dumps({"key": key, "misconceptions": misconceptions}),
            "salt": salt,
            "secret_sha256": _secret_digest(secret),
            "phase": "open",
            "round": "1",
            "shown": "0",
            "max_answers": str(limits.max_answers),
            "join_burst": str(limits.join_burst),
            "joins_per_minute": str(limits.joins_per_minute),
            "sends_per_minute": str(limits.sends_per_minute),
            "join_tokens": str(limits.join_burst),
            "join_at_ms": "0",
            "owner_mac": "" if owner is None else _owner_mac(salt, owner),
            "owner_id": "" if owner is None else owner_id(owner),
        }
        refusals = {
            "full": Refused(
                "too_many_polls",
                f"The server already holds {limits.max_polls} polls taking answers (a poll "
                "revealed or closed frees its place): reveal or close one of yours, or wait for "
                "others to stop or expire.",
            ),
            "stored_full": Refused(
                "too_many_polls",
                f"The server already keeps {limits.max_stored} polls, revealed and closed ones "
                "included, until they expire: try again later.",
            ),
            "presenter_full": Refused(
                "too_many_polls",
                f"You already have {limits.polls_per_presenter} polls taking answers: reveal "
                "or close one to open another.",
            ),
        }

        per_address = limits.polls_per_address_hour
        if address and self._opened_recently(address, record=False) >= per_address:
            return Refused(
                "too_many_polls",
                f"{per_address} polls were opened from this network address within the last "
                "hour, the most this server takes from one address: try again later.",
            )

        def run() -> Created | Refused:
            for _ in range(8):  # a taken code is a one-in-a-billion event; try another
                code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
                outcome = self._insert(code, fields)
                if outcome == "ok":
                    if address:
                        self._opened_recently(address, record=True)
                    return Created(code, secret)
                if outcome in refusals:
                    return refusals[outcome]
            return Refused("unavailable", "No free join code was found: try again.")

        return self._guarded(run)

    # --- students ---------------------------------------------------------------------------------
    def student_view(self, code: str, session_id: str | None = None) -> StudentView | Refused:
        """The question as a phone shows it; the spread once shown; the key once revealed."""

        def run() -> StudentView | Refused:
            poll = self._load(code)
            if isinstance(poll, Refused):
                return poll
            if poll.state.phase == "closed":
                return CLOSED
            mine = None
            if session_id is not None and _valid_session(session_id):
                sid = _salted(poll.salt, session_id)
                stored = self._own_answer(poll.code, poll.state.round, sid)
                mine = None if stored is None else poll.answer.decode(stored)
            tally = None
            if poll.state.shown:
                tally = poll.tallies(self._answers(poll.code, range(1, poll.state.round + 1)))
            return StudentView(
                **poll.view_fields(with_key=poll.state.phase == "revealed"),
                your_answer=mine,
                tally=tally,
            )

        return self._guarded(run)

    def own_answers(self, code: str, session_id: str) -> tuple[Any, ...] | Refused:
        """This session's answer in every round so far (None where it gave none): what a page
        shows a student of her own rounds (the concept check's before and after), a reload
        included. Nobody else's answer is read."""

        def run() -> tuple[Any, ...] | Refused:
            poll = self._load(code)
            if isinstance(poll, Refused):
                return poll
            if poll.state.phase == "closed":
                return CLOSED
            if not _valid_session(session_id):
                return Refused("bad_answer", "This page has no session.")
            sid = _salted(poll.salt, session_id)
            stored = [self._own_answer(poll.code, r, sid) for r in range(1, poll.state.round + 1)]
            return tuple(None if text is None else poll.answer.decode(text) for text in stored)

        return self._guarded(run)

    def answer(self, code: str, session_id: str, round: int, value: object) -> Answered | Refused:
        """Record this session's answer for ``round``; a second answer in a round replaces the
        first (the tally moves one count)."""

        def run() -> Answered | Refused:
            poll = self._load(code)
            if isinstance(poll, Refused):
                return poll
            if not _valid_session(session_id):
                return Refused("bad_answer", "This answer has no session.")
            try:
                encoded = poll.answer.encode(poll.answer.clean(value))
            except AnswerError as error:
                return Refused("bad_answer", str(error))
            if isinstance(round, bool) or round not in ROUNDS:
                return Refused("wrong_round", "There is no such round.")
            sid = _salted(poll.salt, session_id)
            outcome = self._put_answer(poll.code, round, sid, encoded)
            if outcome in ("new", "replaced"):
                return Answered(round, outcome == "replaced")
            if outcome == "full":
                return Refused(
                    "full", f"This poll has reached its limit of {poll.max_answers} answers."
                )
            if outcome == "crowded":
                return Refused(
                    "crowded",
                    "Many phones are joining this poll at once: send your answer again in a few "
                    "seconds.",
                )
            if outcome == "too_fast":
                return Refused(
                    "too_fast",
                    f"This browser sent {poll.sends_per_minute} answers to this poll within a "
                    "minute: wait a moment, then send again.",
                )
            if outcome == "wrong_round":
                latest = self._load(code)
                current = latest.state.round if isinstance(latest, _Poll) else round
                return Refused(
                    "wrong_round",
                    f"This poll is taking answers for round {current}: answer again.",
                )
            return {"revealed": REVEALED, "closed": CLOSED}.get(outcome) or self._unknown()

        return self._guarded(run)

    # --- presenter: views and actions -------------------------------------------------------------
    def presenter_view(self, code: str, secret: str) -> PresenterView | Refused:
        def run() -> PresenterView | Refused:
            poll = self._load(code)
            if isinstance(poll, Refused):
                return poll
            if not poll.allows(secret):
                return NOT_ALLOWED
            rounds = poll.tallies(self._answers(poll.code, range(1, poll.state.round + 1)))
            return poll.presenter_view(rounds)

        return self._guarded(run)

    def display_view(self, code: str) -> PresenterView | Refused:
        """What a projector shows without the presenter's key (the address on the projected
        screen carries no secret): the presenter's view with each round's counts, mean and
        spread left out until the presenter shows them, and no misconceptions' answers before
        the reveal."""

        def run() -> PresenterView | Refused:
            poll = self._load(code)
            if isinstance(poll, Refused):
                return poll
            rounds = poll.tallies(self._answers(poll.code, range(1, poll.state.round + 1)))
            if not poll.state.shown:
                rounds = tuple(RoundTally(t.round, t.answered) for t in rounds)
            return poll.presenter_view(rounds, display=True)

        return self._guarded(run)

    def _act(self, code: str, secret: str, action: Action) -> PollState | Refused:
        def run() -> PollState | Refused:
            for _ in range(16):  # another replica may move the state between read and write
                poll = self._load(code)
                if isinstance(poll, Refused):
                    return poll
                if not poll.allows(secret):
                    return NOT_ALLOWED
                new = next_state(poll.state, action)
                if isinstance(new, Refused):
                    return new
                if new == poll.state:
                    return new
                # A closed poll remembers that it had been revealed (for its tally and CSV).
                extra = {}
                if action == "reveal":
                    extra["sealed"] = json.dumps({**poll.sealed, "revealed": True})
                outcome = self._swap_state(poll.code, poll.state, new, extra, poll.owner_id)
                if outcome == "ok":
                    return new
                if outcome == "unknown":
                    return self._unknown()
            return Refused("unavailable", "The poll kept changing: try again.")

        return self._guarded(run)

    def show(self, code: str, secret: str) -> PollState | Refused:
        """Let the projector and phones show the spread of answers (answering goes on)."""
        return self._act(code, secret, "show")

    def reask(self, code: str, secret: str) -> PollState | Refused:
        """Discuss and answer again: round 2 opens, the spread is hidden again."""
        return self._act(code, secret, "reask")

    def reveal(self, code: str, secret: str) -> PollState | Refused:
        """Stop answers, show the key and the share right and per misconception."""
        return self._act(code, secret, "reveal")

    def close(self, code: str, secret: str) -> PollState | Refused:
        """End the poll: phones see it closed; the presenter keeps its tally and CSV."""
        return self._act(code, secret, "close")

    def csv(self, code: str, secret: str) -> str | Refused:
        """The counts as CSV text. Choices and numbers: one row per round and answer
        (round, answer, count, share; after the reveal also is_key and the misconceptions that
        answer shows). Sketches: one row per round and key position (round, position, answered,
        mean, spread; after the reveal also the key's weight there)."""
        view = self.presenter_view(code, secret)
        if isinstance(view, Refused):
            return view
        return counts_csv(view)


def counts_csv(view: PresenterView) -> str:
    """:meth:`PollStore.csv` for a presenter's view already read."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    revealed = view.misconceptions is not None
    answer = view.answer
    if isinstance(answer, Sketch):
        writer.writerow(
            ["round", "position", "answered", "mean", "spread"] + (["key"] if revealed else [])
        )
        for tally in view.rounds:
            for i in range(answer.length):
                row: list[object] = [tally.round, i, tally.answered]
                row.append("" if tally.mean is None else f"{tally.mean[i]:.4f}")
                row.append("" if tally.spread is None else f"{tally.spread[i]:.4f}")
                if revealed:
                    row.append(f"{float(view.key[i]):.4f}")
                writer.writerow(row)
        return out.getvalue()
    writer.writerow(
        ["round", "answer", "count", "share"] + (["is_key", "misconception"] if revealed else [])
    )
    for tally in view.rounds:
        for i, (label, count) in enumerate(tally.counts):
            row = [tally.round, _csv_text(label), count, f"{tally.share(count):.4f}"]
            if revealed:
                value = i if isinstance(answer, Choice) else answer.decode(label)
                row.append("yes" if answer.matches(value, view.key) else "")
                names = [n for n, v, _ in view.misconceptions or () if answer.matches(value, v)]
                row.append(_csv_text("; ".join(names)))
            writer.writerow(row)
    return out.getvalue()


def _valid_session(session_id: object) -> bool:
    return isinstance(session_id, str) and 0 < len(session_id) <= 256


def _ago(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes < 1:
        return "less than a minute"
    if minutes < 120:
        return "1 minute" if minutes == 1 else f"{minutes} minutes"
    return f"{minutes // 60} hours"


# --- in process --------------------------------------------------------------------------------


@dataclass
class _Held:
    """One poll in memory (changed only under the store's lock)."""

    fields: dict[str, str]
    answers: dict[int, dict[str, str]]
    expires_at: float
    # Each admitted browser's sends in its current minute: salted id -> (minute's start, count).
    sends: dict[str, tuple[float, int]] = field(default_factory=dict)


class MemoryPollStore(PollStore):
    """Polls in this process: one lock around a dict. For one server (a laptop, one container);
    replicas do not see each other's polls, so use Redis with replicas."""

    backend = "memory"

    def __init__(self, limits: Limits = Limits(), clock: Callable[[], float] = time.monotonic):
        super().__init__(limits)
        self._clock = clock
        self._lock = threading.Lock()
        self._polls: dict[str, _Held] = {}

    def _now(self) -> float:
        return self._clock()

    def _live(self, code: str) -> _Held | None:
        held = self._polls.get(code)
        if held is not None and held.expires_at <= self._clock():
            del self._polls[code]
            return None
        return held

    def _insert(self, code: str, fields: dict[str, str]) -> InsertOutcome:
        with self._lock:
            now = self._clock()
            for old in [c for c, h in self._polls.items() if h.expires_at <= now]:
                del self._polls[old]
            if code in self._polls:
                return "taken"
            if len(self._polls) >= self.limits.max_stored:
                return "stored_full"
            live = [h for h in self._polls.values() if h.fields["phase"] == "open"]
            if len(live) >= self.limits.max_polls:
                return "full"
            owner = fields.get("owner_id", "")
            mine = [h for h in live if owner and h.fields.get("owner_id") == owner]
            if len(mine) >= self.limits.polls_per_presenter:
                return "presenter_full"
            self._polls[code] = _Held(
                dict(fields), {r: {} for r in ROUNDS}, now + self.limits.ttl_seconds
            )
            return "ok"

    def _fields(self, code: str) -> dict[str, str] | None:
        with self._lock:
            held = self._live(code)
            if held is None:
                return None
            ttl_ms = max(0, int((held.expires_at - self._clock()) * 1000))
            return {**held.fields, "ttl_ms": str(ttl_ms)}

    def _answers(self, code: str, rounds: Sequence[int]) -> dict[int, dict[str, str]]:
        with self._lock:
            held = self._live(code)
            if held is None:
                return {}
            return {r: dict(held.answers[r]) for r in rounds}

    def _own_answer(self, code: str, round_: int, sid: str) -> str | None:
        with self._lock:
            held = self._live(code)
            return None if held is None else held.answers[round_].get(sid)

    def _put_answer(self, code: str, round_: int, sid: str, encoded: str) -> PutOutcome:
        with self._lock:
            held = self._live(code)
            if held is None:
                return "unknown"
            phase = held.fields["phase"]
            if phase == "revealed":
                return "revealed"
            if phase == "closed":
                return "closed"
            if held.fields["round"] != str(round_):
                return "wrong_round"
            fields, now = held.fields, self._clock()
            start, count = held.sends.get(sid, (now, 0))
            if now - start >= 60:
                start, count = now, 0
            if count >= int(fields["sends_per_minute"]):
                return _count_refusal(fields, "too_fast")
            answers = held.answers[round_]
            replaced = sid in answers
            if not replaced and len(answers) >= int(fields["max_answers"]):
                return _count_refusal(fields, "full")
            if sid not in held.sends:  # a browser new to this poll: the class's pace
                burst = float(fields["join_burst"])
                elapsed = now - float(fields["join_at_ms"]) / 1000
                tokens = min(
                    burst,
                    float(fields["join_tokens"]) + elapsed * float(fields["joins_per_minute"]) / 60,
                )
                fields["join_at_ms"] = str(now * 1000)
                if tokens < 1:
                    fields["join_tokens"] = str(tokens)
                    return _count_refusal(fields, "crowded")
                fields["join_tokens"] = str(tokens - 1)
            held.sends[sid] = (start, count + 1)
            answers[sid] = encoded
            return "replaced" if replaced else "new"

    def _swap_state(
        self, code: str, old: PollState, new: PollState, extra: dict[str, str], owner: str
    ) -> SwapOutcome:
        with self._lock:
            held = self._live(code)
            if held is None:
                return "unknown"
            if _Poll.parse(code, held.fields).state != old:
                return "changed"
            held.fields.update(_state_fields(new), **extra)
            return "ok"

    def _ping(self) -> None:
        return None


def _count_refusal(fields: dict[str, str], outcome: Literal["full", "crowded", "too_fast"]):
    """Count a refused answer in a held poll's fields (what the presenter's view reads)."""
    name = f"refused_{outcome}"
    fields[name] = str(int(fields.get(name, 0)) + 1)
    return outcome


def _state_fields(state: PollState) -> dict[str, str]:
    return {"phase": state.phase, "round": str(state.round), "shown": "1" if state.shown else "0"}


class UnavailableStore(MemoryPollStore):
    """A store that is never there: what a page gets when ``ATTNVIZ_REDIS_URL`` cannot be used.
    Every operation returns the "unavailable" result with ``message``; lessons keep working."""

    backend = "unavailable"

    def __init__(self, message: str, limits: Limits = Limits()) -> None:
        super().__init__(limits)
        self._down_message = message

    def _fields(self, code: str) -> dict[str, str] | None:
        raise StoreDown

    def _insert(self, code: str, fields: dict[str, str]) -> InsertOutcome:
        raise StoreDown

    def _ping(self) -> None:
        raise StoreDown


def store_from_env(environ: Mapping[str, str] = os.environ, limits: Limits = Limits()) -> PollStore:
    """The store this server uses: in process without ``ATTNVIZ_REDIS_URL``, Redis with it.

    A URL that redis-py cannot read gives a store whose every operation says so (the URL is
    not repeated: it may carry a password); the app keeps teaching without polls.
    """
    url = environ.get("ATTNVIZ_REDIS_URL", "").strip()
    if not url:
        return MemoryPollStore(limits)
    from attnviz.classroom.redis_store import RedisPollStore

    try:
        return RedisPollStore.from_url(url, limits)
    except ValueError:
        return UnavailableStore(
            "ATTNVIZ_REDIS_URL is not a Redis URL (redis://host:port/0): polls are off, "
            "the lessons keep working.",
            limits,
        )
