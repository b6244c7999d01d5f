"""Page 5's own controls and its training cache ("Watch attention learn").

The page's controls are not the sidebar's: they live on the page, bound to the URL under their
own short names (:data:`PARAMS`, declared in ui/url.py, so app.py's ``state.read_url()`` does
not reject them as unknown); :func:`read_url` checks their values on the page itself, with the
same reader.

Training runs only when a student presses Train. Finished runs are kept in one process-wide
memo (:data:`runs`) keyed by the run's frozen settings, so the page can show a run that already
exists without ever starting one, and two students pressing Train with the same settings share
one computation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from attnviz.models import toy_tasks as learn
from attnviz.models.toy_tasks import LearnConfig, LearnResult
from attnviz.server import budget
from ui import state, url
from ui.memo import Memo

RUN_ENTRIES = 64  # finished runs kept (126 kB each at the largest the page allows)
STEPS_RANGE = (1, 1000)
SEED_RANGE = (0, 2**31 - 1)
DEFAULTS = LearnConfig()


@dataclass(frozen=True)
class Param:
    url: str  # the query-parameter name and widget key
    default: str | int | float
    parse: Callable[[str], object]  # raises ValueError with the reason
    bounds: tuple[float, float] = (0, 0)  # (lowest, highest) of a whole-number parameter


def _whole(name: str, default: int, bounds: tuple[float, float]) -> Param:
    return Param(name, default, url.whole(*bounds), bounds)


PARAMS: tuple[Param, ...] = (
    Param(url.TASK, DEFAULTS.task, url.choice(tuple(learn.TASKS), strip=True)),
    _whole(url.K, DEFAULTS.k, learn.BOUNDS["k"]),
    Param(url.LHEADS, DEFAULTS.num_heads, url.choice(learn.HEAD_CHOICES)),
    Param(url.LR, DEFAULTS.lr, url.choice(learn.LR_CHOICES)),
    _whole(url.STEPS, DEFAULTS.steps, STEPS_RANGE),
    _whole(url.LSEED, DEFAULTS.seed, SEED_RANGE),
)
PARAMS_BY_URL = {p.url: p for p in PARAMS}
PAGE_KEYS = url.LEARN


URL_WARNING_KEY = "_learn_url_warning"
PARSERS = {p.url: p.parse for p in PARAMS}


def read_url() -> str | None:
    """Check this page's values in the link (the sidebar's reader, with this page's names)."""
    return state.read_url(PARSERS, URL_WARNING_KEY)


# --- the finished runs ----------------------------------------------------------------------
# One process-wide memo keyed by the run's frozen settings: the page can show a run that
# already exists without starting one (``peek``), and two students pressing Train with the same
# settings share one computation. Capped in bytes like every shared cache (attnviz/server/budget.py).
runs = Memo(RUN_ENTRIES, budget.CACHE_BYTES["learn runs"], "learn runs", long_work=True)


def existing_run(config: LearnConfig) -> LearnResult | None:
    return runs.peek(config)


def train(
    config: LearnConfig, on_progress: Callable[[int, int], None] | None = None
) -> LearnResult:
    """Train (or wait for / reuse) the run for ``config``."""
    return runs.get(config, learn.train, (config, on_progress))


# --- the page's controls ----------------------------------------------------------------------
def controls() -> tuple[LearnConfig, bool]:
    """Page 5's controls, bound to the URL under :data:`PARAMS`' names; returns the run's
    settings and whether Train was pressed in this run."""
    D = DEFAULTS
    with st.container(border=True):
        left, middle, right = st.columns(3)
        with left:
            task = st.radio(
                "Task",
                list(learn.TASKS),
                index=list(learn.TASKS).index(D.task),
                captions=[learn.TASKS["shift"], learn.TASKS["marked"]],
                key=url.TASK,
                bind="query-params",
            )
            k = _whole_box(url.K, "k (how far back, shift task)", disabled=task != "shift")
        with middle:
            heads = st.radio(
                "Heads",
                list(learn.HEAD_CHOICES),
                index=list(learn.HEAD_CHOICES).index(D.num_heads),
                horizontal=True,
                key=url.LHEADS,
                bind="query-params",
                help=f"d_out = {D.d_out} in total, split into heads of d_out / heads columns.",
            )
            lr = st.select_slider(
                "Learning rate (Adam)",
                options=list(learn.LR_CHOICES),
                value=D.lr,
                key=url.LR,
                bind="query-params",
            )
        with right:
            steps = _whole_box(
                url.STEPS,
                "Training steps",
                step=10,
                help=f"Each step is one Adam update on a fresh batch of {D.batch_size} sequences.",
            )
            seed = _whole_box(
                url.LSEED,
                "Seed",
                help="Fixes the initial weights (torch.manual_seed, as the book) and the batches.",
            )
        config = LearnConfig(
            task=str(task),
            k=int(k) if task == "shift" else D.k,  # the marked task has no k: one cache entry
            num_heads=int(heads),
            lr=float(lr),
            steps=int(steps),
            seed=int(seed),
        )
        st.caption(
            f"Defaults: one head, Adam at learning rate **{learn.DEFAULT_LR}**, "
            f"{learn.DEFAULT_STEPS} steps of {D.batch_size} sequences. With them both tasks reach "
            "100% held-out accuracy and more than 0.9 of the attention on the expected key "
            f"(checked for 30 seeds). Inputs: {D.vocab} symbols, sequences of {D.seq_len}, each "
            "token encoded as a one-hot symbol (plain or marked) beside a one-hot position: "
            f"d_in = {config.d_in}."
        )
        pressed = st.button("Train", type="primary", key="ltrain", icon=":material/play_arrow:")
    return config, pressed


def _whole_box(name: str, label: str, **more):
    """A whole-number box for the page parameter ``name``: its bounds and default, bound to the
    URL under that name. ``more``: st.number_input's other arguments (step, help, disabled)."""
    p = PARAMS_BY_URL[name]
    low, high = p.bounds
    return st.number_input(
        label,
        min_value=int(low),
        max_value=int(high),
        value=int(p.default),
        key=name,
        bind="query-params",
        **more,
    )
