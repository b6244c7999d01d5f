"""Page 5's own controls and its training cache ("Watch attention learn").

The page's controls are not the sidebar's: they live on the page, bound to the URL under their
own short names (:data:`PARAMS`). Importing this module registers those names with
:mod:`ui.state`, so app.py (which imports it before ``state.read_url()``) does not reject them
as unknown; :func:`read_url` checks their values on the page itself.

Training runs only when a student presses Train. Finished runs are kept in one process-wide
store (held by ``st.cache_resource``) keyed by the run's plain settings, so the page can show a
run that already exists without ever starting one, and two students pressing Train with the
same settings share one computation.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from attnviz import learn
from attnviz.learn import LearnConfig, LearnResult

from . import state
from .text import md_escape

RUN_ENTRIES = 64  # finished runs kept (each is a few hundred kB at most)
STEPS_RANGE = (1, 1000)
SEED_RANGE = (0, 2**31 - 1)
DEFAULTS = LearnConfig()


@dataclass(frozen=True)
class Param:
    url: str  # the query-parameter name and widget key
    default: object
    parse: Callable[[str], object]  # raises ValueError with the reason


def _int_in(low: int, high: int):
    def parse(raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise ValueError("not a whole number") from None
        if not low <= value <= high:
            raise ValueError(f"outside {low}–{high}")
        return value

    return parse


def _one_of(choices, kind=str):
    def parse(raw: str):
        try:
            value = kind(raw.strip())
        except ValueError:
            raise ValueError("not a number") from None
        for choice in choices:
            if value == choice or (
                kind is float and math.isclose(float(value), choice, rel_tol=1e-9)
            ):
                return choice
        raise ValueError("not one of " + ", ".join(str(c) for c in choices))

    return parse


PARAMS: tuple[Param, ...] = (
    Param("task", DEFAULTS.task, _one_of(tuple(learn.TASKS))),
    Param("k", DEFAULTS.k, _int_in(*learn.BOUNDS["k"])),
    Param("lheads", DEFAULTS.num_heads, _one_of(learn.HEAD_CHOICES, int)),
    Param("lr", DEFAULTS.lr, _one_of(learn.LR_CHOICES, float)),
    Param("steps", DEFAULTS.steps, _int_in(*STEPS_RANGE)),
    Param("lseed", DEFAULTS.seed, _int_in(*SEED_RANGE)),
)
PAGE_KEYS = tuple(p.url for p in PARAMS)
state.register_page_keys(*PAGE_KEYS)


URL_WARNING_KEY = "_learn_url_warning"


def read_url() -> str | None:
    """Check this page's values in the link before its widgets exist; drop what is rejected.

    Returns one warning naming every rejected key, or None. Streamlit seeds bound widgets from
    the link as it was when the run started, so after dropping a value the page starts again
    from the cleaned link (the warning waits in the session and is shown once).
    """
    params = st.query_params
    rejected = []
    removed = False
    for p in PARAMS:
        if p.url not in params:
            continue
        values = params.get_all(p.url)
        try:
            if len(values) != 1:
                raise ValueError("given more than once")
            p.parse(values[0])
            continue
        except ValueError as err:
            rejected.append(f"{p.url} ({err})")
        try:
            del params[p.url]
            removed = True
        except Exception:  # noqa: BLE001 - a key already bound by a widget cannot be deleted
            pass
    if rejected:
        listed = "; ".join(md_escape(r[:80]) for r in rejected)
        warning = (
            "Some values in the link were not understood and the defaults are used instead: "
            f"{listed}."
        )
        if removed:
            st.session_state[URL_WARNING_KEY] = warning
            st.rerun()
        return warning
    return st.session_state.pop(URL_WARNING_KEY, None)


# --- the run store ------------------------------------------------------------------------
class RunStore:
    """Finished runs by settings key: a bounded LRU with one computation per key at a time."""

    def __init__(self, max_entries: int = RUN_ENTRIES) -> None:
        self.max_entries = max_entries
        self._runs: OrderedDict[tuple, LearnResult] = OrderedDict()
        self._lock = threading.Lock()
        self._computing: dict[tuple, threading.Lock] = {}

    def peek(self, key: tuple) -> LearnResult | None:
        """The finished run for ``key``, or None. Never trains."""
        with self._lock:
            result = self._runs.get(key)
            if result is not None:
                self._runs.move_to_end(key)
            return result

    def get_or_train(self, key: tuple, compute: Callable[[], LearnResult]) -> LearnResult:
        """The run for ``key``, computed by ``compute`` unless it exists or is being computed
        (then wait for that computation instead of starting a second one)."""
        with self._lock:
            key_lock = self._computing.setdefault(key, threading.Lock())
        with key_lock:
            found = self.peek(key)
            if found is not None:
                return found
            result = compute()
            with self._lock:
                self._runs[key] = result
                self._runs.move_to_end(key)
                while len(self._runs) > self.max_entries:
                    self._runs.popitem(last=False)
                self._computing.pop(key, None)
            return result

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)


@st.cache_resource(show_spinner=False)
def store() -> RunStore:
    """One store per process, shared by every session (cleared with the resource caches)."""
    return RunStore()


def existing_run(config: LearnConfig) -> LearnResult | None:
    return store().peek(config.key())


def train(
    config: LearnConfig, on_progress: Callable[[int, int], None] | None = None
) -> LearnResult:
    """Train (or wait for / reuse) the run for ``config``."""
    return store().get_or_train(config.key(), lambda: learn.train(config, on_progress))
