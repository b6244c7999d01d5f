"""Page 5's own controls and its training cache ("Watch attention learn").

The page's controls are not the sidebar's: they live on the page, bound to the URL under their
own short names (:data:`PARAMS`). Importing this module registers those names with
:mod:`ui.state`, so app.py (which imports it before ``state.read_url()``) does not reject them
as unknown; :func:`read_url` checks their values on the page itself, with the same reader.

Training runs only when a student presses Train. Finished runs are kept in one process-wide
memo (:data:`runs`) keyed by the run's frozen settings, so the page can show a run that already
exists without ever starting one, and two students pressing Train with the same settings share
one computation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from attnviz import learn
from attnviz.learn import LearnConfig, LearnResult

from . import state
from .memo import Memo

RUN_ENTRIES = 64  # finished runs kept (each is a few hundred kB at most)
STEPS_RANGE = (1, 1000)
SEED_RANGE = (0, 2**31 - 1)
DEFAULTS = LearnConfig()


@dataclass(frozen=True)
class Param:
    url: str  # the query-parameter name and widget key
    default: object
    parse: Callable[[str], object]  # raises ValueError with the reason


def _int_in(low: float, high: float):
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
PARSERS = {p.url: p.parse for p in PARAMS}


def read_url() -> str | None:
    """Check this page's values in the link (the sidebar's reader, with this page's names)."""
    return state.read_url(PARSERS, URL_WARNING_KEY)


# --- the finished runs ----------------------------------------------------------------------
# One process-wide memo keyed by the run's frozen settings: the page can show a run that
# already exists without starting one (``peek``), and two students pressing Train with the same
# settings share one computation. Runs are small (a few hundred kB), so entries bound it.
runs = Memo(RUN_ENTRIES, name="learn runs")


def existing_run(config: LearnConfig) -> LearnResult | None:
    return runs.peek(config)


def train(
    config: LearnConfig, on_progress: Callable[[int, int], None] | None = None
) -> LearnResult:
    """Train (or wait for / reuse) the run for ``config``."""
    return runs.get(config, learn.train, (config, on_progress))
