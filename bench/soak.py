"""Soak: thousands of page runs on one live server, to show its memory levels off.

    .venv/bin/python bench/soak.py               # 5,000 page runs (~15 min), bench/soak-results.md
    .venv/bin/python bench/soak.py --short       # the CI form (tests/bench/test_soak.py, ~2 min)
    .venv/bin/python bench/soak.py --short --leak   # the same with a deliberate leak: must fail

attnviz runs as deployed (bench/live.py: the Dockerfile's ENV, the repository's config, so
without Streamlit's post-run collection) under bench/soak_server.py, a wrapper that can count
the process's objects. A few websocket sessions share one list of page runs: every page under a
spread of settings (book mode, longer texts, several widths and heads, biases, training mode
with dropout), the learn page's Train button under varied training settings and page 6's
"Measure at these settings" button (and, in the full soak, its book-shape button once).

Phases: first every page under every setting of the pool (960 runs in the full soak), Train at
each training setting of the short form's pool and Measure at each named setting, so every cache
the runs can fill is full (or at its cap) before any reading; then warm-up runs, not judged;
then the measured runs.

Readings: the server's RSS every ``--every`` runs; at the start, half and end of the measured
runs one full collection that counts the app's own objects by type, those still in use and
those in cycles that were only waiting for Python's collector. The verdict: RSS growth per
1,000 measured runs, from the median level of their first quarter to that of their last
quarter, must stay under ``--bound`` MB, and no type of the app's own may keep growing between
the censuses.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import live, loadtest  # noqa: E402
from bench.support import aio  # noqa: E402
from bench.support.network import Blackhole, proxy_env  # noqa: E402
from bench.support.pages import app_pages  # noqa: E402
from bench.support.server import LOOPBACK_FLAGS, running_app  # noqa: E402

RESULTS = ROOT / "bench" / "soak-results.md"
# A leak must not outlast a teaching day: ~30,000 page runs (6 lessons, 50 students, 100 runs
# each) at this bound is 150 MB, well inside the ~670 MB the 3 GB container keeps beyond the
# warm server and its full caches (docs/deploy.md, "Memory per session": ~400 MB warm).
BOUND_MB_PER_1000 = 5.0
# The short form's RSS reading allows more: after every cache is full, glibc's heap still
# fragments in steps of up to ~5 MB over the next ~1,300 runs while the memory in use stays
# flat (bench/soak-results.md), and its measured runs are only 1,200: four passing runs read
# +2.5 to +6.3 MB per 1,000 runs. 15 is 2.4 times the highest; the deliberate leak (~40 kB a
# run) read +37. Its leak check is the memory in use, at BOUND_MB_PER_1000.
SHORT_RSS_BOUND = 15.0
# Python's small-object blocks, as bytes: 92 B a block on average (sys._debugmallocstats after
# importing torch, plotly, streamlit, pandas and attnviz), rounded up.
BLOCK_BYTES = 96
# The CI form (tests/bench/test_soak.py, ``bench/soak.py --short``): every page under eight
# settings and every Train and Measure press once (the coverage pass fills every cache), a
# random warm-up, then the measured runs.
SHORT = dict(
    runs=1200,
    sessions=3,
    every=20,
    pool_size=8,
    seed=3,
    book_button=False,
    learn_pool=6,
    warmup=400,
    cover=True,
)
TEXTS = (
    "Your journey starts with one step",
    "Every effort moves you forward",
    "The cat sat on the mat because it was tired",
    "Attention is all you need, isn't it?",
    "1 2 3 <b>not bold</b> & 4",
    loadtest.LONGER_TEXT,
)


def settings_pool(size: int, seed: int) -> list[dict[str, str]]:
    """``size`` complete sidebar settings at classroom sizes, always the same for a seed."""
    rng = random.Random(seed)
    pool = [{**loadtest.DEFAULTS, **s} for s in loadtest.SETTINGS.values()]
    while len(pool) < size:
        heads = rng.choice((1, 2, 3, 4))
        pool.append(
            {
                **loadtest.DEFAULTS,
                "text": rng.choice(TEXTS),
                "text2": rng.choice(TEXTS),
                "book": "false",
                "d_in": str(rng.choice((4, 8, 16, 32, 48))),
                "d_out": str(heads * rng.choice((2, 4, 8))),
                "heads": str(heads),
                "ctx": str(rng.choice((16, 32, 64, 128))),
                "dropout": str(rng.choice((0.0, 0.1, 0.25, 0.5))),
                "train": rng.choice(("false", "true")),
                "bias": rng.choice(("false", "true")),
                "eseed": str(rng.randrange(5)),
                "wseed": str(rng.randrange(5)),
                "dseed": str(rng.randrange(5)),
            }
        )
    return pool


def learn_query(rng: random.Random) -> dict[str, str]:
    return {
        "task": rng.choice(("shift", "marked")),
        "k": str(rng.choice((1, 2, 3))),
        "lheads": str(rng.choice((1, 2))),
        "lr": rng.choice(("0.02", "0.05")),
        "steps": str(rng.choice((20, 40, 60))),
        "lseed": str(rng.randrange(12)),
    }


@dataclass
class Soak:
    runs: int  # measured page runs, after the warm-up
    sessions: int
    every: int
    pool: list[dict[str, str]]
    seed: int
    book_button: bool
    learn_pool: int = 0  # > 0: training settings drawn from this many (the short form)
    warmup: int = 0  # random page runs before the measured ones (not in the verdict)
    cover: bool = False  # first, every page under every setting, every Train and Measure
    samples: list[tuple[int, int]] = field(default_factory=list)  # (runs done, RSS bytes)
    heap: list[tuple[int, dict]] = field(default_factory=list)  # (runs done, heap_stats())
    censuses: dict[str, dict] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    presses: dict[str, int] = field(default_factory=dict)
    pages: dict[str, int] = field(default_factory=dict)  # page runs per page (all phases)
    settings_seen: set[int] = field(default_factory=set)  # indexes into pool that ran
    trained: int = 0  # Train presses answered with the learn page's trained-run charts
    covered: int = 0  # runs of the coverage pass
    done: int = 0  # random page runs (warm-up and measured)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return self.warmup + self.runs


class Census:
    def __init__(self, folder: Path):
        self.folder = folder

    async def take(self, name: str, mode: str = "") -> dict:
        (self.folder / f"{name}.request").write_text(mode)
        answer = self.folder / f"{name}.json"
        for _ in range(1200):
            if answer.exists():
                return json.loads(answer.read_text())
            await asyncio.sleep(0.05)
        raise TimeoutError(f"no census {name}")


async def drive(url: str, server: live.Server, soak: Soak, census: Census) -> None:
    pages = app_pages()
    total = soak.total
    marks = {soak.warmup + soak.runs // 2: "half"}  # "start" and "end": between the phases
    lock = asyncio.Lock()

    # The short form trains from a few settings only, so the learn page's store (64 runs) fills
    # during the warm-up, as it does in the full soak; the full soak draws them freely.
    fixed = random.Random(soak.seed)
    learn_pool = [learn_query(fixed) for _ in range(soak.learn_pool)]

    def step_for(page, query: dict[str, str]) -> loadtest.Step:
        return loadtest.Step(
            "soak", urlencode(query), page.url_path, "" if page.default else page.url_path
        )

    def next_step(r: random.Random, last_page: str | None):
        page = r.choice([p for p in pages if p.url_path != last_page])
        index = r.randrange(len(soak.pool))
        query = dict(soak.pool[index])
        press = None
        if page.url_path == "watch-attention-learn":
            query.update(r.choice(learn_pool) if learn_pool else learn_query(r))
            press = "Train" if r.random() < 0.5 else None
        elif page.url_path == "against-pytorch" and r.random() < 0.3:
            query = {**loadtest.DEFAULTS, **r.choice(list(loadtest.SETTINGS.values()))}
            press = "Measure at these settings"
        return step_for(page, query), press, index

    def coverage_steps():
        """Every page under every setting of the pool; then each training setting trained
        and page 6 measured at each named setting."""
        learn = next(p for p in pages if p.url_path == "watch-attention-learn")
        versus = next(p for p in pages if p.url_path == "against-pytorch")
        out = [(step_for(p, q), None, i) for i, q in enumerate(soak.pool) for p in pages]
        for j, extra in enumerate(learn_pool):
            out.append((step_for(learn, {**soak.pool[j % len(soak.pool)], **extra}), "Train", -1))
        for named in loadtest.SETTINGS.values():
            query = {**loadtest.DEFAULTS, **named}
            out.append((step_for(versus, query), "Measure at these settings", -1))
        return out

    async def cover_loop(i: int, queue: list) -> None:
        session = loadtest.Session(url, timeout=300)
        await session.connect()
        try:
            while queue:
                step, press, index = queue.pop()
                await one(session, step, press, index, counted=False)
        finally:
            await session.close()

    rngs = [random.Random(soak.seed * 1000 + i) for i in range(soak.sessions)]
    lasts: list[str | None] = [None] * soak.sessions

    async def session_loop(i: int, until: int) -> None:
        session = loadtest.Session(url, timeout=300)
        await session.connect()
        try:
            if i == 0 and soak.book_button and not soak.done:  # the 30-second benchmark, once
                await one(session, _book_step(pages), "Measure at the book's benchmark shape")
            while soak.done < until:
                step, press, index = next_step(rngs[i], lasts[i])
                lasts[i] = step.page
                await one(session, step, press, index)
        finally:
            await session.close()

    async def one(session, step, press_label, index=-1, counted=True) -> None:
        result = await session.rerun(step)
        if press_label:
            button = next((v for k, v in result.buttons.items() if k.startswith(press_label)), None)
            if button is None:
                soak.errors.append(f"{step.page}: no button {press_label!r}")
            else:
                result = await session.rerun(step, press=button)
                soak.presses[press_label] = soak.presses.get(press_label, 0) + 1
                if press_label == "Train" and result.charts:
                    soak.trained += 1
        soak.errors += [f"{step.page}: {e}" for e in result.errors]
        soak.pages[step.page] = soak.pages.get(step.page, 0) + 1
        if index >= 0:
            soak.settings_seen.add(index)
        async with lock:
            if not counted:
                soak.covered += 1
                return
            soak.done += 1
            n = soak.done
            if n % soak.every == 0:
                soak.samples.append((n, server.rss()))
            if n in marks:
                soak.censuses[marks[n]] = {**await census.take(marks[n], "garbage"), "runs": n}

    # Warm-up, one session, every page once: the first runs of a process import and compile
    # (and two sessions' first page-6 runs at once hit a race in inspect.getsource, reported).
    warm = loadtest.Session(url, timeout=300)
    await warm.connect()
    try:
        for page in pages:
            query = urlencode(loadtest.DEFAULTS)
            name = "" if page.default else page.url_path
            result = await warm.rerun(loadtest.Step("warm-up", query, page.url_path, name))
            soak.errors += [f"(warm-up) {page.url_path}: {e}" for e in result.errors]
    finally:
        await warm.close()
    start = time.perf_counter()
    if soak.cover:
        queue = coverage_steps()[::-1]
        await asyncio.gather(*(cover_loop(i, queue) for i in range(soak.sessions)))
    soak.samples.append((0, server.rss()))

    async def watch_heap() -> None:  # every few seconds, beside the runs (not under the lock)
        k = 0
        while soak.done < total:
            n = soak.done
            soak.heap.append((n, await census.take(f"heap-{k}", "stats")))
            k += 1
            await asyncio.sleep(2)

    async def runs_until(until: int) -> None:
        await asyncio.gather(*(session_loop(i, until) for i in range(soak.sessions)))

    async def both_phases() -> None:
        # The warm-up, then a census while no run is in flight (its "heap after collection"
        # is where the leak check starts), then the measured runs.
        await runs_until(soak.warmup)
        await asyncio.sleep(1)
        soak.censuses["start"] = {**await census.take("start", "garbage"), "runs": soak.done}
        await runs_until(total)

    await asyncio.gather(watch_heap(), both_phases())
    soak.seconds = time.perf_counter() - start
    await asyncio.sleep(2)
    soak.samples.append((soak.done, server.rss()))
    soak.censuses["end"] = {**await census.take("end", "garbage"), "runs": soak.done}


def _book_step(pages):
    page = next(p for p in pages if p.url_path == "against-pytorch")
    return loadtest.Step("soak", urlencode(loadtest.DEFAULTS), page.url_path, page.url_path)


def measured(samples: list[tuple[int, int]], start: int) -> list[tuple[int, int]]:
    """The RSS readings from ``start`` page runs on (the warm-up's readings left out)."""
    return [(n, rss) for n, rss in samples if n >= start]


def slope_mb_per_1000(samples: list[tuple[int, int]], start: int) -> float:
    """Least-squares RSS growth from ``start`` runs on, MB per 1,000 runs (reported only: one
    step or spike near either end moves it a lot)."""
    part = measured(samples, start)
    if len(part) < 3:
        return float("nan")
    xs = [n for n, _ in part]
    ys = [rss / 2**20 for _, rss in part]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return 1000 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


def level_change_per_1000(points: list[tuple[int, float]], start: int) -> float:
    """The change per 1,000 page runs from ``start`` on, read as the change in level between
    the first and the last quarter of the readings (each quarter's median value, over the
    distance between their median run counts). A median level ignores a reading taken while
    Python's collector had not yet freed a batch of cycles; a steady leak moves every reading
    of the last quarter and so the whole median."""
    part = [(n, v) for n, v in points if n >= start]
    q = len(part) // 4
    if q < 2:
        return float("nan")
    first, last = part[:q], part[-q:]
    runs = statistics.median(n for n, _ in last) - statistics.median(n for n, _ in first)
    rise = statistics.median(v for _, v in last) - statistics.median(v for _, v in first)
    return 1000 * rise / runs


def growth_mb_per_1000(samples: list[tuple[int, int]], start: int) -> float:
    """The verdict: RSS growth in MB per 1,000 page runs from ``start`` on (see above)."""
    return level_change_per_1000(samples, start) / 2**20


def heap_growth(soak: Soak) -> dict[str, float]:
    """What grew, per 1,000 measured runs (MB), read every few seconds without a collection:
    Python's small objects (blocks at BLOCK_BYTES each) and glibc's heap in use and free
    inside it (fragmentation)."""
    out = {}
    blocks = [(n, h["python blocks"] * BLOCK_BYTES) for n, h in soak.heap if "python blocks" in h]
    out["python objects"] = level_change_per_1000(blocks, soak.warmup) / 2**20
    for key in ("in use", "free in heap"):
        points = [(n, float(h["malloc"][key])) for n, h in soak.heap if "malloc" in h]
        out[f"malloc {key}"] = level_change_per_1000(points, soak.warmup) / 2**20
    return out


def in_use_mb(heap: dict) -> float:
    """Memory in use (MB): glibc's heap in use and mmapped, plus Python's small-object blocks
    at BLOCK_BYTES each."""
    return (heap["malloc"]["in use"] + heap["python blocks"] * BLOCK_BYTES) / 2**20


def in_use_growth_mb_per_1000(censuses: dict[str, dict]) -> float:
    """The leak check: memory in use right after a full collection, from the census at the
    start of the measured runs to the one at their end, per 1,000 runs. The allocator's free
    space (fragmentation, which levels off) is not in it; every byte a leak keeps is."""
    try:
        first, last = censuses["start"], censuses["end"]
        a, b = first["heap after collection"], last["heap after collection"]
        return 1000 * (in_use_mb(b) - in_use_mb(a)) / (last["runs"] - first["runs"])
    except (KeyError, ZeroDivisionError):
        return float("nan")


def _in_use(census: dict) -> dict:
    return census.get("reachable own", census.get("own", {}))


def growing_own_types(
    censuses: dict[str, dict], slack: int = 50
) -> dict[str, tuple[int, int, int]]:
    """The app's own types whose count in use kept rising from the start of the measured runs
    to their half to the end (by more than ``slack`` objects in all): a leak. Cycles only
    waiting for Python's collector are not counted (each census collects them first)."""
    first, mid, end = (_in_use(censuses.get(k, {})) for k in ("start", "half", "end"))
    out = {}
    for name, last in end.items():
        a, b = first.get(name, 0), mid.get(name, 0)
        if a < b < last and last - a > slack:
            out[name] = (a, b, last)
    return out


def run(
    runs: int,
    sessions: int,
    every: int,
    pool_size: int,
    seed: int,
    book_button: bool,
    learn_pool: int = 0,
    warmup: int = 0,
    cover: bool = False,
    leak: bool = False,
) -> Soak:
    """One soak on a fresh server. ``leak``: the deliberate regression (soak_server.py keeps
    a copy of every chart it sends), to show that the verdict catches a leak."""
    pool = settings_pool(pool_size, seed)
    soak = Soak(runs, sessions, every, pool, seed, book_button, learn_pool, warmup, cover)
    folder = Path(tempfile.mkdtemp(prefix="attnviz-census-"))
    env = {**live.deployed_env(), "ATTNVIZ_CENSUS_DIR": str(folder)}
    if leak:
        env["ATTNVIZ_SOAK_LEAK"] = "1"
    hole = Blackhole()
    command = [
        sys.executable,
        str(ROOT / "bench" / "soak_server.py"),
        "run",
        "app.py",
        *LOOPBACK_FLAGS,
        "--server.port",
        "{port}",
    ]
    log = ROOT / "test-artifacts" / "soak-server.log"
    try:
        with running_app(command=command, env={**env, **proxy_env(hole)}, log_path=log) as (
            url,
            proc,
        ):
            server = live.Server("attnviz", url, proc.pid)
            aio.run(drive(url, server, soak, Census(folder)))
    finally:
        hole.close()
    return soak


@dataclass
class Verdict:
    growth: float  # RSS, MB per 1,000 measured runs, first to last quarter's median level
    in_use: float  # memory in use after a full collection, MB per 1,000 measured runs
    slope: float  # RSS, least squares over the measured runs (reported only)
    growing: dict
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def verdict(
    soak: Soak, bound: float = BOUND_MB_PER_1000, rss_bound: float = BOUND_MB_PER_1000
) -> Verdict:
    growth = growth_mb_per_1000(soak.samples, soak.warmup)
    in_use = in_use_growth_mb_per_1000(soak.censuses)
    growing = growing_own_types(soak.censuses)
    problems = [f"error: {e}" for e in soak.errors[:5]]
    if not in_use <= bound:  # a NaN (no census) fails too
        problems.append(f"memory in use grew {in_use:+.2f} MB per 1,000 runs (bound {bound:g})")
    if not growth <= rss_bound:  # a NaN (too few readings) fails too
        problems.append(f"RSS grew {growth:+.2f} MB per 1,000 runs (bound {rss_bound:g})")
    if growing:
        problems.append(f"own types growing: {growing}")
    if soak.done < soak.total:
        problems.append(f"only {soak.done} of {soak.total} runs")
    slope = slope_mb_per_1000(soak.samples, soak.warmup)
    return Verdict(growth, in_use, slope, growing, problems)


def markdown(soak: Soak, result: Verdict, bound: float, rss_bound: float, command: str) -> str:
    first_mb = soak.samples[0][1] / 2**20
    peak_mb = max(r for _, r in soak.samples) / 2**20
    part = [r for _, r in measured(soak.samples, soak.warmup)]
    end = soak.censuses.get("end", {})
    garbage = end.get("garbage", {})
    freed = end.get("gc", {}).get("freed", {})
    lines = [
        "# Soak: memory without Streamlit's post-run collection",
        "",
        f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, `{command}`: "
        f"{soak.covered + soak.done} page runs by {soak.sessions} sessions in "
        f"{soak.seconds:.0f} s ({soak.covered} covering every page under every setting, "
        f"{soak.warmup} warm-up, {soak.runs} measured), {len(soak.pool)} settings "
        f"({len(soak.settings_seen)} used); page runs per page: {soak.pages}; buttons pressed: "
        f"{soak.presses} ({soak.trained} Train presses answered with the trained run's charts). "
        f"Errors: {len(soak.errors)}.",
        "",
        f"- RSS: {first_mb:.0f} MB when the random runs start, peak {peak_mb:.0f} MB; over the "
        f"measured runs {min(part) / 2**20:.0f}–{max(part) / 2**20:.0f} MB.",
        f"- Memory in use after a full collection, start to end of the measured runs: "
        f"**{result.in_use:+.2f} MB per 1,000 page runs** (bound {bound:g} MB).",
        f"- RSS over the measured runs (first to last quarter, median levels): "
        f"**{result.growth:+.2f} MB per 1,000 page runs** (bound {rss_bound:g} MB); "
        f"least-squares slope {result.slope:+.2f}.",
        "- Heap growth per 1,000 measured runs (MB, same reading): "
        + ", ".join(f"{k} {v:+.2f}" for k, v in heap_growth(soak).items())
        + ".",
        f"- The app's own types still growing: {result.growing or 'none'}.",
        f"- Cyclic garbage freed by Python's automatic collector during the soak: {freed}.",
        f"- At the end, one full collection found {garbage.get('unreachable', '?')} unreachable "
        f"objects; of the app's own types: {garbage.get('own types') or 'none'}.",
        f"- Verdict: {'OK' if result.ok else 'FAILED: ' + '; '.join(result.problems)}.",
        "",
        "RSS by page runs done (MB):",
        "",
        "| runs | "
        + " | ".join(str(n) for n, _ in soak.samples[:: max(1, len(soak.samples) // 12)])
        + " |",
        "|---|" + "---:|" * len(soak.samples[:: max(1, len(soak.samples) // 12)]),
        "| RSS | "
        + " | ".join(
            f"{r / 2**20:.0f}" for _, r in soak.samples[:: max(1, len(soak.samples) // 12)]
        )
        + " |",
        "",
        "The app's own objects by type at the start, half and end censuses of the measured runs: "
        "in use, and in "
        "cycles that were waiting for Python's collector (freed by the census's collection):",
        "",
        "| type | in use: start | half | end | waiting cycles: start | half | end |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    marks = [soak.censuses.get(k, {}) for k in ("start", "half", "end")]
    for name in sorted(end.get("own", {})):
        used = [_in_use(c).get(name, 0) for c in marks]
        waiting = [c.get("garbage", {}).get("own types", {}).get(name, 0) for c in marks]
        lines.append(f"| {name} | " + " | ".join(str(v) for v in used + waiting) + " |")
    if garbage.get("by type"):
        lines += ["", f"Unreachable objects at the end by type: {garbage['by type']}"]
    if soak.errors:
        lines += ["", "Errors:", "", *[f"- {e}" for e in soak.errors[:20]]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=4000, help="measured page runs")
    parser.add_argument("--warmup", type=int, default=1000, help="page runs before them")
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--every", type=int, default=100, help="runs between RSS readings")
    parser.add_argument("--pool", type=int, default=120, help="settings in the pool")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bound", type=float, default=BOUND_MB_PER_1000)
    parser.add_argument("--short", action="store_true", help="the CI form (SHORT), no options")
    parser.add_argument("--leak", action="store_true", help="the deliberate leak: must fail")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.short:
        soak = run(**SHORT, leak=args.leak)
    else:
        soak = run(
            args.runs,
            args.sessions,
            args.every,
            args.pool,
            args.seed,
            True,
            warmup=args.warmup,
            cover=True,
            leak=args.leak,
        )
    rss_bound = SHORT_RSS_BOUND if args.short else args.bound
    result = verdict(soak, args.bound, rss_bound)
    command = "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])
    text = markdown(soak, result, args.bound, rss_bound, command)
    print(text)
    default = RESULTS if not (args.short or args.leak) else ROOT / "test-artifacts" / "soak.md"
    output = args.output or default
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    (output.with_suffix(".json")).write_text(json.dumps(soak.samples))
    print("soak OK" if result.ok else "soak FAILED")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
