"""Every name the app reads from a link, and the one way each kind of value is read.

A link carries the sidebar's values (``d_out=12``), presenter mode and its step, the pages' own
view controls (``colour``, ``tokens``, a pass's bug), the closed parts a link opens (``lab``),
"Predict first" and "Spot the bug", the cell "Explain a cell" opens, page 5's and page 8's own
controls, the home page's toy sentence, and a poll's codes. Each name is declared here, once; the modules that draw the
controls use these constants (``ui/state.py``, ``ui/links.py``, ``ui/sections.py``,
``ui/teach/present.py``, ``ui/teach/predict.py``, ``ui/teach/explain.py``,
``ui/models/watch.py``, ``ui/models/growing.py``, ``ui/models/alignment.py``,
``ui/classroom/poll_views.py``).

Every value is read by one of the parsers below: :func:`parse_bool`, :func:`parse_int`,
:func:`parse_choice` (and :func:`parse_float` for the dropout rate, :func:`parse_cell` for a
cell). Each returns the value or raises ValueError with the reason the link warning gives
("not true or false", "outside 1–1600"); ``ui.state.read_url`` names the key with that reason
and drops it, so the control starts from its default. The factories (:func:`whole`,
:func:`choice`, ...) make the one-argument functions a page hands read_url.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

# --- the sidebar (ui/state.py) ------------------------------------------------------------------
BOOK = "book"
TEXT = "text"
TEXT2 = "text2"
D_IN = "d_in"
D_OUT = "d_out"
HEADS = "heads"
CTX = "ctx"
DROPOUT = "dropout"
ESEED = "eseed"
WSEED = "wseed"
DSEED = "dseed"
BIAS = "bias"
TRAIN = "train"
WEIGHTS = "weights"
SIDEBAR = frozenset(
    {BOOK, TEXT, TEXT2, D_IN, D_OUT, HEADS, CTX, DROPOUT, ESEED, WSEED, DSEED, BIAS, TRAIN, WEIGHTS}
)

# --- presenter mode (ui/teach/present.py), Predict first and Spot the bug (ui/teach/predict.py)
PRESENT = "present"
STEP = "step"
PREDICT = "predict"
MYSTERY = "mystery"

# --- Explain a cell (ui/teach/explain.py) -------------------------------------------------------
CELL = "cell"

# --- the pages' view controls (ui/links.py) -----------------------------------------------------
COLOUR = "colour"
TOKENS = "tokens"
QUERY = "query"
STRETCH = "stretch"
SHIFT = "shift"
MODULE = "module"
PLACEMENT = "placement"
HEAD = "head"
NUMBERS = "numbers"
HEADS_SHOWN = "heads_shown"
PASSES = ("simplified", "trainable", "causal", "multihead")


def bug(pass_kind: str) -> str:
    """The URL name of a pass's "Turn on a bug" box: ``bug_causal``."""
    return f"bug_{pass_kind}"


BUGS = tuple(bug(kind) for kind in PASSES)

# --- the pages' closed parts (ui/sections.py): page 3's, page 2's, page 4's ---------------------
SECTIONS = LAB, BATCH, SCALING, V1_V2, RESHAPE, WRAPPER = (
    "lab",
    "batch",
    "scaling",
    "v1v2",
    "reshape",
    "wrapper",
)

# --- page 5, "Watch attention learn" (ui/models/watch.py) ---------------------------------------
LEARN = TASK, K, LHEADS, LR, STEPS, LSEED = ("task", "k", "lheads", "lr", "steps", "lseed")

# --- page 8, "Grow an induction head" (ui/models/growing.py, pages/grow-induction-heads.py) -----
GROW = GSTEP, GABLATE, GHEAD, GSEED, GSTEPS = ("gstep", "gablate", "ghead", "gseed", "gsteps")

# --- the home page's toy sentence (ui/models/alignment.py): its length, seed and typed text ----
WHY = WHY_WORDS, WHY_SEED, WHY_TEXT = ("why_words", "why_seed", "why_text")

# --- the class poll (ui/classroom/poll_views.py) ------------------------------------------------
JOIN = "join"
POLL = "poll"
SECRET = "secret"

# Streamlit's own query parameters: never the app's to check.
STREAMLIT = frozenset({"embed", "embed_options"})

# Every name the app reads, beside the sidebar's: the sidebar's link check leaves them to the
# page or module that reads them (none is "unknown", whichever page the link opens first).
PAGE_NAMES = frozenset(
    {PRESENT, STEP, PREDICT, MYSTERY, CELL}
    | {COLOUR, TOKENS, QUERY, STRETCH, SHIFT, MODULE, PLACEMENT, HEAD, NUMBERS, HEADS_SHOWN}
    | {*BUGS, *SECTIONS, *LEARN, *GROW, *WHY, JOIN, POLL, SECRET}
)
NAMES = SIDEBAR | PAGE_NAMES


# --- the parsers ---------------------------------------------------------------------------------
def _said(bound: float) -> str:
    """A bound as the warning says it: a whole number as written, a float with ``:g``."""
    return f"{bound:g}" if isinstance(bound, float) else str(bound)


def parse_bool(raw: str) -> bool:
    """``true`` or ``false``, in any case: only what Streamlit's bound toggle reads from a URL.
    Anything else ("1", "yes") it would drop silently, so it is refused (and named)."""
    word = raw.lower()
    if word == "true":
        return True
    if word == "false":
        return False
    raise ValueError("not true or false")


def parse_int(raw: str, low: float, high: float, every: int = 1) -> int:
    """A whole number in ``low``–``high`` (spaces around it allowed), and ``low`` plus a
    multiple of ``every``. "7.5" and "1e3" are not whole numbers."""
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError("not a whole number") from None
    if not low <= value <= high:
        raise ValueError(f"outside {_said(low)}–{_said(high)}")
    if (value - low) % every:
        raise ValueError(f"not a multiple of {every}")
    return value


def parse_float(raw: str, low: float, high: float) -> float:
    """A finite number in ``low``–``high`` (the sidebar's dropout rate)."""
    try:
        value = float(raw.strip())
    except ValueError:
        raise ValueError("not a number") from None
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    if not low <= value <= high:
        raise ValueError(f"outside {low:g}–{high:g}")
    return value


def parse_choice(raw: str, choices: Sequence[Any], refusal: str = "", *, strip: bool = False):
    """The one of ``choices`` that ``raw`` names, or ValueError(``refusal``; by default "not
    one of" the choices, listed). Text choices are matched as written (``strip``: once the
    spaces around ``raw`` are cut, as page 5's task always was); number choices (page 5's heads
    and learning rates) as numbers, so "0.010" names 0.01."""
    numbers = bool(choices) and all(
        isinstance(c, (int, float)) and not isinstance(c, bool) for c in choices
    )
    if numbers:
        kind = int if all(isinstance(c, int) for c in choices) else float
        try:
            value = kind(raw.strip())
        except ValueError:
            raise ValueError("not a number") from None
        for c in choices:
            if value == c or (kind is float and math.isclose(value, c, rel_tol=1e-9)):
                return c
    else:
        text = raw.strip() if strip else raw
        if text in choices:
            return text
    raise ValueError(refusal or "not one of " + ", ".join(str(c) for c in choices))


# "Explain a cell": [lab. | batch.] [h<head>] [b<example>] q<query> k<key>
_CELL = re.compile(
    r"^(?:(?P<source>lab|batch)\.)?(?:h(?P<head>\d{1,3}))?(?:b(?P<batch>\d))?"
    r"q(?P<query>\d{1,4})k(?P<key>\d{1,4})$"
)


def parse_cell(raw: str) -> tuple[str, int, int, int, int]:
    """A cell's (source, head, batch, query, key) from its URL text (``q2k1``, ``h1q2k1``,
    ``lab.q2k1``, ``batch.b1q2k1``), or ValueError saying what is wrong with it."""
    found = _CELL.match(raw.strip())
    if found is None:
        raise ValueError("not a cell such as q2k1 (query 2, key 1) or h1q2k1 (head 1)")
    return (
        found["source"] or "",
        int(found["head"] or 0),
        int(found["batch"] or 0),
        int(found["query"]),
        int(found["key"]),
    )


# --- the functions a page hands ``ui.state.read_url`` (each takes the one raw value) -------------
def whole(low: float, high: float, every: int = 1) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        return parse_int(raw, low, high, every)

    return parse


def number(low: float, high: float) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        return parse_float(raw, low, high)

    return parse


def choice(
    choices: Sequence[Any], refusal: str = "", *, strip: bool = False
) -> Callable[[str], Any]:
    def parse(raw: str):
        return parse_choice(raw, choices, refusal, strip=strip)

    return parse


def text(limit: int) -> Callable[[str], str]:
    """A text: its first ``limit`` characters (read_url says when it was cut)."""

    def parse(raw: str) -> str:
        return raw[:limit]

    return parse


def checked(limit: int, problem: Callable[[str], str | None]) -> Callable[[str], str]:
    """A text of at most ``limit`` characters in which ``problem`` (it returns the reason, or
    None) finds nothing wrong: the home page's toy sentence."""

    def parse(raw: str) -> str:
        if len(raw) > limit:
            raise ValueError(f"longer than {limit:,} characters")
        reason = problem(raw)
        if reason:
            raise ValueError(reason)
        return raw

    return parse


def checkpoint(steps: Callable[[], Sequence[int]]) -> Callable[[str], int]:
    """A recorded run's step (page 8): a whole number that is one of ``steps()``."""

    def parse(raw: str) -> int:
        known = steps()
        value = parse_int(raw, 0, known[-1])
        if value not in known:
            raise ValueError(f"no checkpoint there (every {known[1]} steps)")
        return value

    return parse


_POSITION = re.compile(r"(\d+)[: ]")


def token_label(top: int) -> Callable[[str], str]:
    """A token as page 1's query box names it: its position first ("3: ␣with")."""

    def parse(raw: str) -> str:
        found = _POSITION.match(raw)
        if found is None:
            raise ValueError("not a token of the text (its position first, as in 1: ␣journey)")
        parse_int(found[1], 0, top)
        return raw

    return parse


# A parser with a true ``many`` attribute gets the list of the name's values (read_url).
def span(low: int, high: int) -> Callable[[list[str]], tuple[int, int]]:
    """A range slider's two ends: two whole numbers, the first not after the last."""

    def parse(values: list[str]) -> tuple[int, int]:
        if len(values) != 2:
            raise ValueError("not two token positions, the first and the last")
        first, last = (parse_int(v, low, high) for v in values)
        if first > last:
            raise ValueError("the first token after the last")
        return first, last

    parse.many = True  # type: ignore[attr-defined]
    return parse


def named_heads(top: int) -> Callable[[list[str]], tuple[int, ...]]:
    """A multiselect of heads, each as its option reads: "head 3"."""

    def parse(values: list[str]) -> tuple[int, ...]:
        heads = []
        for raw in values:
            if not raw.startswith("head "):
                raise ValueError("not heads named as in head 3")
            heads.append(parse_int(raw[5:], 0, top))
        return tuple(heads)

    parse.many = True  # type: ignore[attr-defined]
    return parse
