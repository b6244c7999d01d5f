"""Measuring a live server the way a class uses it (bench/live.py, bench/guard.py,
bench/replicas.py share this).

- ``cpu_seconds(pid)``: a process's CPU time, every thread, finished ones included. Read from
  the kernel's per-process CPU clock (nanoseconds, the same user + system time psutil reports in
  10 ms ticks), so one page run of a few milliseconds can be measured on its own; psutil when
  that clock cannot be read.
- ``Sentences``: sentences no one computed before, 5 to 8 common words (the default text has
  6), drawn with a per-run seed and never repeated within a run.
- ``measured_run``: one page run over a session's websocket and the server CPU it cost,
  read after the run's tail (what the server does after ``script_finished``, such as
  Streamlit's post-run collection).
- ``cold_warm_pairs``: per page, the first run with a new text (cold) and its rerun (warm),
  each paired with a trivial-app page run measured right after it, so load on the machine
  moves both sides of a ratio alike.
- ``own_sentence_class``: N sessions at once, each with a sentence of its own, changing one
  sidebar value at each of six page runs; the same harness drives the trivial app.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import urlencode

import psutil

from bench import loadtest
from bench.support import aio
from bench.support.pages import PageInfo, app_pages

# --- server CPU ----------------------------------------------------------------------------------
_CPUCLOCK_SCHED = 2  # the kernel's clock id for a process's total CPU time (all its threads)


def _process_clock(pid: int) -> int:
    """The clock id ``clock_getcpuclockid(pid)`` returns on Linux."""
    return (~pid << 3) | _CPUCLOCK_SCHED


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far, every thread included."""
    try:
        return time.clock_gettime(_process_clock(pid))
    except OSError:
        times = psutil.Process(pid).cpu_times()
        return times.user + times.system


def cpu_of(pids: tuple[int, ...]) -> float:
    return sum(cpu_seconds(pid) for pid in pids)


# --- new sentences -------------------------------------------------------------------------------
WORDS = tuple(
    """
    apple river stone quiet garden teacher window morning yellow bright simple ocean little
    mountain winter summer doctor letter market bridge silver forest candle pencil student
    friendly careful happy gentle sudden hidden open warm cold busy early late slow quick
    child mother father brother sister neighbour village city island desert valley cloud rain
    snow wind storm light shadow music story picture question answer number paper table chair
    door wall floor kitchen road train ship plane horse rabbit bird fish tiger lion dog cat
    bread cheese honey milk coffee tea sugar salt lemon orange grape cherry flower leaf tree
    grass seed field farm house school library museum garden park street corner evening night
    reads writes finds brings keeps opens closes carries builds paints sings walks runs jumps
    watches learns teaches helps follows leaves meets counts draws tells hears sees makes
    """.split()
)


class Sentences:
    """Sentences of 5 to 8 words, different at every call and from every earlier run (a
    fresh ``seed`` each run; ``avoid``: texts already used, never returned)."""

    def __init__(self, seed: int, avoid: tuple[str, ...] = ()):
        self.rng = random.Random(seed)
        self.used: set[str] = set(avoid)

    def __call__(self) -> str:
        while True:
            words = self.rng.sample(WORDS, self.rng.randint(5, 8))
            text = " ".join(words).capitalize()
            if text not in self.used:
                self.used.add(text)
                return text


# --- one measured run ----------------------------------------------------------------------------
TAIL = 0.1  # seconds after script_finished before the clock is read (then: until quiet)
QUIET = 0.002  # CPU seconds in QUIET_WINDOW below which the server counts as done with the run
QUIET_WINDOW = 0.05


@dataclass
class Measured:
    cpu_ms: float
    wall_ms: float
    errors: list[str] = field(default_factory=list)
    charts: int = 0


async def settle(pids: tuple[int, ...], tail: float = TAIL, limit: float = 2.0) -> None:
    """Wait ``tail`` seconds, then until the server has been quiet for QUIET_WINDOW (its
    after-run work can be late when other processes hold the cores), at most ``limit``."""
    await asyncio.sleep(tail)
    deadline = time.monotonic() + limit
    last = cpu_of(pids)
    while time.monotonic() < deadline:
        await asyncio.sleep(QUIET_WINDOW)
        now = cpu_of(pids)
        if now - last < QUIET:
            return
        last = now


async def measured_run(
    session: loadtest.Session, pids: tuple[int, ...], step: loadtest.Step, tail: float = TAIL
) -> Measured:
    """Run ``step`` and return the server CPU it cost, its tail included."""
    before = cpu_of(pids)
    start = time.perf_counter()
    result = await session.rerun(step)
    wall = time.perf_counter() - start
    await settle(pids, tail)
    cpu = cpu_of(pids) - before
    return Measured(1000 * cpu, 1000 * wall, list(result.errors), len(result.charts))


# --- steps ---------------------------------------------------------------------------------------
def app_text_step(page: PageInfo, values: dict[str, str], label: str = "") -> loadtest.Step:
    """``page`` with the given URL values; every other value is its default (the run is a
    history navigation, so the URL, not the session's widgets, sets every bound widget)."""
    return loadtest.Step(
        label or ",".join(values),
        urlencode(values),
        page.url_path,
        "" if page.default else page.url_path,
    )


TRIVIAL_PAGES = 7  # bench/trivial/app.py's PAGE_COUNT


def trivial_page_step(i: int, seed: int) -> loadtest.Step:
    page = i % TRIVIAL_PAGES
    return loadtest.Step(
        f"seed={seed}", f"seed={seed}", f"page-{page}", "" if page == 0 else f"page-{page}"
    )


# --- cold and warm runs, paired with the trivial app's -------------------------------------------
@dataclass
class PagePairs:
    page: str
    cold: list[float] = field(default_factory=list)  # app CPU ms, first run with a new text
    warm: list[float] = field(default_factory=list)  # app CPU ms, the rerun right after
    trivial_cold: list[float] = field(default_factory=list)  # trivial ms, paired with cold
    trivial_warm: list[float] = field(default_factory=list)  # trivial ms, paired with warm
    errors: list[str] = field(default_factory=list)

    @staticmethod
    def _ratio(ours: list[float], theirs: list[float]) -> float:
        ratios = [a / t for a, t in zip(ours, theirs, strict=True) if t > 0]
        return statistics.median(ratios) if ratios else float("nan")

    @property
    def cold_ratio(self) -> float:
        """Median over pairs of (cold run / the trivial run measured right after it)."""
        return self._ratio(self.cold, self.trivial_cold)

    @property
    def warm_ratio(self) -> float:
        return self._ratio(self.warm, self.trivial_warm)

    def summary(self) -> dict:
        med = statistics.median
        trivial = self.trivial_cold + self.trivial_warm
        return {
            "page": self.page,
            "pairs": len(self.cold),
            "cold_ms": med(self.cold) if self.cold else float("nan"),
            "warm_ms": med(self.warm) if self.warm else float("nan"),
            "trivial_ms": med(trivial) if trivial else float("nan"),
            "cold_ratio": self.cold_ratio,
            "warm_ratio": self.warm_ratio,
            "errors": list(self.errors),
        }


class PairedSessions:
    """One websocket session on the app and one on the trivial app, kept open while pairs of
    runs are measured; every run's text (app) or seed (trivial) is new."""

    def __init__(self, app, trivial, seed: int, timeout: float = 180):
        self.app, self.trivial = app, trivial
        self.texts = Sentences(seed)
        self.next_seed = 1_000_000 + 1000 * (seed % 1000)
        self.timeout = timeout
        self.a: loadtest.Session | None = None
        self.t: loadtest.Session | None = None

    async def open(self, pages: tuple[PageInfo, ...]) -> None:
        self.a = loadtest.Session(self.app.url, self.timeout)
        self.t = loadtest.Session(self.trivial.url, self.timeout)
        for s in (self.a, self.t):
            await s.load_page()
            await s.connect()
        # Warm-up, not measured: every page once at its defaults (imports, the tokenizer).
        for i, page in enumerate(pages):
            result = await self.a.rerun(app_text_step(page, {}, "defaults"))
            if result.errors:
                raise RuntimeError(f"warm-up {page.url_path}: {result.errors[0]}")
            await self.t.rerun(trivial_page_step(i, 0))
        await settle(self.app.pids)
        await settle(self.trivial.pids)

    async def close(self) -> None:
        for s in (self.a, self.t):
            if s is not None:
                await s.close()

    async def trivial_run(self, i: int) -> Measured:
        assert self.t is not None
        self.next_seed += 1
        return await measured_run(self.t, self.trivial.pids, trivial_page_step(i, self.next_seed))

    async def pair(self, out: PagePairs, page: PageInfo, i: int, warm: bool = True) -> None:
        """Measure a cold run of ``page`` and a trivial run; with ``warm``, then the warm rerun
        and another trivial run."""
        assert self.a is not None
        step = app_text_step(page, {"text": self.texts()}, "new text")
        cold = await measured_run(self.a, self.app.pids, step)
        trivial = await self.trivial_run(i)
        out.cold.append(cold.cpu_ms)
        out.trivial_cold.append(trivial.cpu_ms)
        out.errors += cold.errors + trivial.errors
        if warm:
            again = await measured_run(self.a, self.app.pids, step)
            trivial = await self.trivial_run(i)
            out.warm.append(again.cpu_ms)
            out.trivial_warm.append(trivial.cpu_ms)
            out.errors += again.errors + trivial.errors


async def _cold_warm_pairs(app, trivial, pages, rounds: int, seed: int, timeout: float):
    paired = PairedSessions(app, trivial, seed, timeout)
    out = {p.path: PagePairs(p.url_path) for p in pages}
    try:
        await paired.open(pages)
        for _ in range(rounds):
            for i, page in enumerate(pages):
                await paired.pair(out[page.path], page, i)
    finally:
        await paired.close()
    return out


def cold_warm_pairs(
    app, trivial, pages=None, rounds: int = 5, seed: int | None = None, timeout: float = 180
) -> dict[str, PagePairs]:
    """Per page (keyed by its file), ``rounds`` pairs of (cold run, trivial run) and (warm
    rerun, trivial run), the pages taken in turn each round, one text per page and round."""
    pages = tuple(pages or app_pages())
    seed = time.time_ns() % 2**31 if seed is None else seed
    return aio.run(_cold_warm_pairs(app, trivial, pages, rounds, seed, timeout))


# --- the own-sentence class ----------------------------------------------------------------------
CLASS_RUNS = 6  # page runs per student


def class_pages() -> tuple[PageInfo, ...]:
    """The six pages a class moves the sidebar on: those drawn from the sidebar's text, in the
    app's order (the first six: why attention, the four passes, against PyTorch)."""
    return tuple(p for p in app_pages() if p.draws_sidebar_text)[:CLASS_RUNS]


def student_changes(rng: random.Random, text: str) -> list[dict[str, str]]:
    """Six URL states, each one sidebar value away from the one before: the student's own
    text, then d_out, heads (a divisor of d_out), training mode, dropout and one seed. Every
    value is inside the sidebar's bounds (ui/state.py, attnviz/core/settings.py)."""
    values = {"text": text}
    states = [dict(values)]
    d_out = rng.choice((4, 6, 12, 16))  # the default is 8, with 2 heads
    values["d_out"] = str(d_out)
    states.append(dict(values))
    values["heads"] = str(rng.choice([h for h in (1, 3, 4) if d_out % h == 0]))
    states.append(dict(values))
    values["train"] = "true"
    states.append(dict(values))
    values["dropout"] = rng.choice(("0.0", "0.2", "0.3", "0.5"))  # the default is 0.1
    states.append(dict(values))
    values[rng.choice(("eseed", "wseed", "dseed"))] = str(rng.randrange(124, 10_000))
    states.append(dict(values))
    return states


def app_class_plan(sessions: int, seed: int, shared: int = 0) -> list[list[loadtest.Step]]:
    """Per student: six page runs, a page each (rotated, so the class spreads over pages).
    ``shared``: the class shares that many sentences (student i takes sentence i mod
    ``shared``, as a class typing the sentences on the board does); 0: one each."""
    pages = class_pages()
    texts = Sentences(seed)
    board = [texts() for _ in range(shared)]
    plans = []
    for i in range(sessions):
        rng = random.Random(seed * 7919 + i)
        states = student_changes(rng, board[i % shared] if shared else texts())
        plans.append(
            [
                app_text_step(pages[(i + j) % len(pages)], state, f"change {j + 1}")
                for j, state in enumerate(states)
            ]
        )
    return plans


def trivial_class_plan(sessions: int, seed: int) -> list[list[loadtest.Step]]:
    """The same shape on the trivial app: six page runs per student, each with a seed no one
    used before (its one cached heatmap is then new, as the student's settings are)."""
    base = 10_000 + 100_000 * (seed % 1000)
    return [
        [
            trivial_page_step((i + j) % CLASS_RUNS, base + CLASS_RUNS * i + j)
            for j in range(CLASS_RUNS)
        ]
        for i in range(sessions)
    ]


@dataclass
class ClassResult:
    label: str
    sessions: int
    runs: int = 0
    seconds: float = 0.0  # from the first run sent to the last run finished
    cpu_seconds: float = 0.0  # the server processes', over those seconds
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    loadavg: tuple[float, float] = (0.0, 0.0)
    sticky: Counter = field(default_factory=Counter)  # sessions per balancer cookie value

    @property
    def runs_per_s(self) -> float:
        return self.runs / self.seconds if self.seconds else 0.0

    @property
    def cpu_ms(self) -> float:
        return 1000 * self.cpu_seconds / self.runs if self.runs else float("nan")

    @property
    def p50(self) -> float:
        return loadtest.pct(self.latencies, 0.5)

    @property
    def p95(self) -> float:
        return loadtest.pct(self.latencies, 0.95)

    def row(self) -> dict:
        return {
            "label": self.label,
            "sessions": self.sessions,
            "runs": self.runs,
            "runs_per_s": self.runs_per_s,
            "p50": self.p50,
            "p95": self.p95,
            "cpu_ms": self.cpu_ms,
            "cores_busy": self.cpu_seconds / self.seconds if self.seconds else 0.0,
            "errors": list(self.errors),
            "loadavg": self.loadavg,
            "sticky": dict(self.sticky),
        }


async def _own_sentence_class(
    url: str, pids: tuple[int, ...], label: str, plans, warm_steps, timeout: float, warm_urls
) -> ClassResult:
    result = ClassResult(label, len(plans))
    # Warm-up, not measured: each server's first runs import and load what every later run
    # uses (behind a balancer, each replica straight: ``warm_urls``). None: the class finds
    # the server as it is.
    for address in (warm_urls or [url]) if warm_steps else []:
        warm = loadtest.Session(address, timeout)
        await warm.load_page()
        await warm.connect()
        try:
            for step in warm_steps:
                await warm.rerun(step)
        finally:
            await warm.close()
    if warm_steps:
        await settle(pids, 0.5)

    sessions = [loadtest.Session(url, timeout) for _ in plans]

    async def arrive(session: loadtest.Session) -> None:
        if await session.load_page() != 200:
            raise loadtest.ProtocolError("GET /: not 200")
        await session.connect()

    arrived = await asyncio.gather(*(arrive(s) for s in sessions), return_exceptions=True)
    live = []
    for i, outcome in enumerate(arrived):
        if isinstance(outcome, BaseException):
            result.errors.append(f"session {i}: connect failed: {outcome!r}")
        else:
            live.append((sessions[i], plans[i]))
            result.sticky[sessions[i].cookies.get(loadtest.STICKY_COOKIE, "(none)")] += 1

    async def drive(session: loadtest.Session, plan: list[loadtest.Step]) -> None:
        for step in plan:
            try:
                run = await session.rerun(step)
            except Exception as exc:
                result.errors.append(f"{step.setting} @ {step.page}: {exc!r}")
                return
            result.runs += 1
            result.latencies.append(run.seconds)
            result.errors += [f"{step.setting} @ {step.page}: {e}" for e in run.errors]

    load_before = os.getloadavg()[0]
    cpu_before = cpu_of(pids)
    start = time.perf_counter()
    await asyncio.gather(*(drive(s, p) for s, p in live))
    result.seconds = time.perf_counter() - start
    await settle(pids)
    result.cpu_seconds = cpu_of(pids) - cpu_before
    result.loadavg = (load_before, os.getloadavg()[0])
    await asyncio.gather(*(s.close() for s, _ in live), return_exceptions=True)
    return result


def own_sentence_class(
    url: str,
    pids: tuple[int, ...],
    label: str,
    sessions: int,
    seed: int,
    trivial: bool = False,
    timeout: float = 300,
    warm_urls: list[str] | None = None,
    warm: bool = True,
    shared: int = 0,
) -> ClassResult:
    """``sessions`` students at once on the server at ``url`` (``pids``: its processes, all
    replicas behind a balancer, each warmed up straight at ``warm_urls``), each running its
    six page runs back to back. ``warm=False``: no warm-up run first (the class arrives at the
    server as it is); ``shared``: the class shares that many sentences (:func:`app_class_plan`;
    the trivial app's students draw a new seed at every run either way)."""
    if trivial:
        plans = trivial_class_plan(sessions, seed)
        warm_steps = [trivial_page_step(i, 0) for i in range(CLASS_RUNS)]
    else:
        plans = app_class_plan(sessions, seed, shared)
        warm_steps = [app_text_step(p, {}, "defaults") for p in class_pages()]
    if not warm:
        warm_steps = []
    return aio.run(_own_sentence_class(url, pids, label, plans, warm_steps, timeout, warm_urls))
