"""The growing page's glue (page 8, "Grow an induction head") and the weights note of passes 2-4.

The page scrubs through the recorded run: every step's view (curves, heads' names, maps on a
text, ablation) is built once per process and key in the shared ``derived`` cache, so moving the
slider back and forth answers like any warm page and trains nothing. "Grow your own" is the one
thing that trains: only when pressed, one run at a time per server (:data:`TURNS`, the others
told their place in the queue), inside one of the server's heavy-work slots
(:func:`attnviz.server.budget.heavy_work`); any click (Cancel) or a session that leaves stops it at its
next progress report and frees the turn. Finished runs are kept, shared, in :data:`runs`.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import cast

import streamlit as st
import torch

from attnviz import figures
from attnviz.core.tokens import Tokens, tokenize
from attnviz.models.induction import api
from attnviz.models.induction.train import Progress
from attnviz.server import budget, gate
from attnviz.server.turns import Turns
from attnviz.teach.lessons import grow as G
from attnviz.teach.lessons import heads as H
from ui import cache, charts, state, url
from ui.memo import Memo

GROW_PAGE = "pages/grow-induction-heads.py"
GROW_TITLE = "8. Grow an induction head"


# --- passes 2-4: what the weights are -----------------------------------------------------------
# With random weights: where the page says how far they leave each query from an even share.
RANDOM_NOTE = {
    "book": (
        "The chapter's weights are random. The sentence under the attention weights below says "
        "how far they are from an even share of the keys. For trained heads, grow one on page "
        "8, or turn book mode off and set the weights on passes 2–4 to trained."
    ),
    "random": (
        "These weights are random, as in the book. The sentence under the attention weights "
        "below says how far they are from an even share of the keys. For trained heads, grow "
        "one on page 8, or set “Weights on passes 2–4” to trained."
    ),
}


def weights_note(cfg: state.Config, kind: str, spec) -> None:
    """Passes 2-4, under the page's top: with trained weights, what the module holds, the sizes
    they fix and the token rule; with random ones, where trained heads can be seen. Either way
    a link to the growing page. ``spec``: the module the page draws (its trace's spec)."""
    if spec.trained is not None:
        st.info(H.trained_note(kind, spec), icon=":material/school:")
    elif cfg.book:
        st.caption(RANDOM_NOTE["book"])
    else:
        st.caption(RANDOM_NOTE["random"])
    st.page_link(GROW_PAGE, label=GROW_TITLE, icon=":material/trending_up:")


# --- the page's own URL names -------------------------------------------------------------------
SEED_RANGE = (0, 2**31 - 1)
STEPS_RANGE = (25, api.GROW_STEPS)  # a live run: at least one measurement interval
STEPS_STEP = 25


@dataclass(frozen=True)
class Param:
    url: str
    parse: Callable[[str], object]  # raises ValueError with the reason


PARAMS = (
    Param(url.GSTEP, url.checkpoint(api.steps)),
    Param(url.GABLATE, url.parse_bool),
    Param(url.GHEAD, url.whole(0, 3)),
    Param(url.GSEED, url.whole(*SEED_RANGE)),
    Param(url.GSTEPS, url.whole(*STEPS_RANGE, STEPS_STEP)),
)
PARSERS = {p.url: p.parse for p in PARAMS}
URL_WARNING_KEY = "_grow_url_warning"


def read_url() -> str | None:
    """Check this page's values in the link (the sidebar's reader, with this page's names)."""
    return state.read_url(PARSERS, URL_WARNING_KEY)


# --- the recorded run: every view built once per key, shared --------------------------------------
def step_slider() -> int:
    """The step the page shows: a slider over the recorded checkpoints, kept in the URL."""
    steps = api.steps()
    return int(
        st.select_slider(
            "Training step (a checkpoint every 100 steps)",
            options=list(steps),
            value=steps[-1],
            key=url.GSTEP,  # no format_func: the URL keeps an option as formatted
            bind="query-params",
        )
    )


def run_view(step: int) -> G.RunView:
    return cache.lesson_of(("grow run", step), lambda: G.run_view(step))


def tokens_of(text: str, cap: int) -> Tokens:
    """The text's tokens, at most ``cap`` (the app's token cap, as on every page)."""
    return cache.derived.get(("grow tokens", text, cap), tokenize, (text, cap))


def maps_view(tokens: Tokens, step: int) -> G.MapsView:
    key = ("grow maps", tokens.ids, step)  # the ids fix the displays (one tokenizer a server)
    return cache.lesson_of(key, lambda: G.maps_view(step, tokens.ids, tokens.displays))


def ablation_view(step: int) -> G.AblationView:
    key = ("lesson", "grow ablation", step)
    if key in cache.derived:
        return cache.lesson_of(key[1:], lambda: G.ablation_view(step))
    gate.give_up()  # 2^heads + 2 measurements on 256 sequences: let other page runs go
    with st.spinner(
        "Zeroing every set of layer-0 heads on 256 held-out sequences (once per step)…"
    ):
        return cache.lesson_of(key[1:], lambda: G.ablation_view(step))


# --- grow your own ------------------------------------------------------------------------------
TURNS = Turns(capacity=1)  # one live run at a time per server; the rest queue in order
RUN_ENTRIES = 32
runs = Memo(
    RUN_ENTRIES, budget.CACHE_BYTES["grown runs"], "grown runs", long_work=True
)  # (seed, steps) -> run
LAST_RUN_KEY = "_grow_last_run"  # this session's last live run: how long it queued, how often
# the page heard from it


@dataclass(frozen=True)
class LiveRun:
    """What one session saw of its live run (kept in its session state, not shared)."""

    key: tuple[int, int]
    ahead: int  # runs ahead of it when it joined the queue
    waited: float  # seconds in the queue
    longest_gap: float  # the longest time between two progress updates on the page, s
    updates: int


def grow_controls() -> tuple[int, int, bool]:
    """The seed and the number of steps of a live run (kept in the URL), and whether Grow was
    pressed in this run."""
    left, right = st.columns(2)
    with left:
        seed = st.number_input(
            "Seed",
            min_value=SEED_RANGE[0],
            max_value=SEED_RANGE[1],
            value=0,
            key=url.GSEED,
            bind="query-params",
            help="Fixes the initial weights and the training batches; seed 0 is the recorded run.",
        )
    with right:
        steps = st.number_input(
            "Steps",
            min_value=STEPS_RANGE[0],
            max_value=STEPS_RANGE[1],
            value=STEPS_RANGE[1],
            step=STEPS_STEP,
            key=url.GSTEPS,
            bind="query-params",
            help="Each step is one Adam update on 64 fresh sequences.",
        )
    pressed = st.button("Grow", type="primary", key="ggrow", icon=":material/play_arrow:")
    return int(seed), int(steps), pressed


def finished_run(seed: int, steps: int) -> tuple[Progress, ...] | None:
    return runs.peek((seed, steps))


def _progress_text(p: Progress) -> str:
    return (
        f"Step {p.step:,} of {p.steps:,} · loss on the repeat {p.measures.loss_repeat:.2f} · "
        f"layer 1's best induction score {api.layer_induction(p.measures):.2f} · "
        f"{p.seconds:.0f} s"
    )


_OPTIMIZER_READY = threading.Event()


def warm_optimizer() -> None:
    """Build one Adam optimizer: the first one in a process imports torch._dynamo (about 5 s of
    CPU on this machine), which would otherwise fall between two progress reports."""
    p = torch.zeros(1, requires_grad=True)
    torch.optim.Adam([p])
    _OPTIMIZER_READY.set()


def grow_live(seed: int, steps: int) -> tuple[Progress, ...] | None:
    """Train a model from ``seed`` for ``steps`` steps, live, and keep it in :data:`runs`.

    Waits its turn in :data:`TURNS` (saying its place every second), then for a heavy-work
    slot, then trains, updating a progress bar and a chart at every report (every 0.4 s of
    training). Any Streamlit call here is where a click (Cancel) or a session that left stops
    the run: the ``finally`` closes the trainer and gives the turn up. Returns the reports, or
    None when the server stayed busy past its wait."""
    status, bar, live, cancel = st.empty(), st.empty(), st.empty(), st.empty()
    cancel.button("Cancel", key="gcancel", icon=":material/stop:")  # any click stops this run
    gate.give_up()  # growing takes seconds: the other sessions' page runs go meanwhile
    ticket = TURNS.join()
    ahead, joined = ticket.ahead(), time.monotonic()
    reports: list[Progress] = []
    gaps: list[float] = []  # seconds between two progress updates, from the training's start
    last = time.monotonic()
    try:
        while not ticket.wait(1.0):
            status.info(
                f"One model grows at a time on this server: yours is number {ticket.place()} in "
                f"the queue ({ticket.ahead()} ahead of it; waited "
                f"{time.monotonic() - joined:.0f} s). Press Cancel or leave to give the place up."
            )
        waited = time.monotonic() - joined

        def slot_wait(seconds: float) -> None:
            status.info(f"Waiting for one of the server's heavy-work slots ({seconds:.0f} s)…")

        with budget.heavy_work(slot_wait):
            if not _OPTIMIZER_READY.is_set():
                status.info(
                    "Loading PyTorch's optimizer: the first run on a server waits a few "
                    "seconds for it…"
                )
                warm_optimizer()
            status.info(f"Growing a model from seed {seed}: nothing else trains meanwhile.")
            last = time.monotonic()
            trainer = cast(Generator[Progress, None, None], api.grow(seed, steps))
            with contextlib.closing(trainer):  # a stop or rerun here ends the training too
                for p in trainer:
                    reports.append(p)
                    bar.progress(min(1.0, p.step / p.steps), text=_progress_text(p))
                    if len(reports) >= 2:
                        _draw_now(G.grown_chart(reports, f"Growing: seed {seed}"), live)
                    now = time.monotonic()
                    gaps.append(now - last)
                    last = now
    except budget.ServerBusy as busy:
        status.error(str(busy))
        return None
    finally:
        ticket.leave()
    status.empty()
    live.empty()
    cancel.empty()
    bar.progress(1.0, text=f"Grown: {reports[-1].step:,} steps in {reports[-1].seconds:.0f} s")
    done = tuple(reports)
    st.session_state[LAST_RUN_KEY] = LiveRun(
        (seed, steps), ahead, waited, max(gaps, default=0.0), len(gaps)
    )
    return runs.get((seed, steps), lambda: done)


def live_note(seed: int, steps: int) -> str | None:
    """What this session saw of its last live run of (seed, steps): the queue and the pace."""
    last = st.session_state.get(LAST_RUN_KEY)
    if not isinstance(last, LiveRun) or last.key != (seed, steps):
        return None
    queued = (
        f"It waited {last.waited:.1f} s in the queue behind {last.ahead} other run"
        + ("" if last.ahead == 1 else "s")
        if last.ahead
        else "It started at once (no other run was growing)"
    )
    return (
        f"{queued}; the page heard from it {last.updates} times, at most "
        f"{last.longest_gap:.1f} s apart."
    )


def grown_view(seed: int, reports: tuple[Progress, ...]) -> G.GrownView:
    return cache.lesson_of(
        ("grown", seed, reports[-1].steps, len(reports)), lambda: G.grown_view(seed, reports)
    )


def _draw_now(chart: figures.Chart, where) -> None:
    """A chart that changes at every report, sent as is (not kept in the shared cache)."""
    spec = json.dumps(chart.spec, separators=(",", ":"), allow_nan=False)
    height = int(chart.spec["layout"]["height"])
    charts.send_plotly_spec(where, spec, charts.PLOT_CONFIG_JSON, height, None, chart.label)


def ablation_chart(view: G.AblationView, head: int) -> figures.Chart:
    return cache.lesson_of(("grow ablation chart", view.step, head), lambda: view.chart(head))
