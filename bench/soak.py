"""Soak: thousands of page runs on one live server, to show its memory levels off.

    .venv/bin/python bench/soak.py                   # 5,000 page runs (~10 min), writes bench/soak-results.md
    .venv/bin/python bench/soak.py --runs 800 --short   # the CI form (tests/bench/test_soak.py)

attnviz runs as deployed (bench/live.py: the Dockerfile's ENV, the repository's config, so
without Streamlit's post-run collection) under bench/soak_server.py, a wrapper that can count
the process's objects. A few websocket sessions share one list of page runs: every page under a
spread of settings (book mode, longer texts, several widths and heads, biases, training mode
with dropout), the learn page's Train button under varied training settings and page 6's
"Measure at these settings" button (and, in the full soak, its book-shape button once).

Readings: the server's RSS every ``--every`` runs; at the quarter, half and end marks one
full collection (four in all, with the three-quarter mark) that counts the app's own objects by type, those still in use
and those in cycles that were only waiting for Python's collector. The verdict: RSS growth per 1,000 runs over the last half
(least-squares slope) must stay under ``--bound`` MB, and no type of the app's own may keep
growing between the censuses.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import random
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
from tests.support.network import Blackhole, proxy_env  # noqa: E402
from tests.support.pages import app_pages  # noqa: E402
from tests.support.server import LOOPBACK_FLAGS, running_app  # noqa: E402

RESULTS = ROOT / "bench" / "soak-results.md"
# A leak must not outlast a teaching day: ~30,000 page runs (6 lessons, 50 students, 100 runs
# each) at this bound is 150 MB, well inside the ~670 MB the 3 GB container keeps beyond the
# warm server and its full caches (README: 2,003 MB bound, ~400 MB warm).
BOUND_MB_PER_1000 = 5.0
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
    runs: int
    sessions: int
    every: int
    pool: list[dict[str, str]]
    seed: int
    book_button: bool
    learn_pool: int = 0  # > 0: training settings drawn from this many (the short form)
    samples: list[tuple[int, int]] = field(default_factory=list)  # (runs done, RSS bytes)
    censuses: dict[str, dict] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    presses: dict[str, int] = field(default_factory=dict)
    done: int = 0
    seconds: float = 0.0


class Census:
    def __init__(self, folder: Path):
        self.folder = folder

    async def take(self, name: str, mode: str = "") -> dict:
        (self.folder / f"{name}.request").write_text(mode)
        answer = self.folder / f"{name}.json"
        for _ in range(600):
            if answer.exists():
                return json.loads(answer.read_text())
            await asyncio.sleep(0.1)
        raise TimeoutError(f"no census {name}")


async def drive(url: str, server: live.Server, soak: Soak, census: Census) -> None:
    pages = app_pages()
    marks = {soak.runs // 4: "quarter", soak.runs // 2: "half", 3 * soak.runs // 4: "3 quarters"}
    lock = asyncio.Lock()

    # The short form trains from a few settings only, so the learn page's store (64 runs) fills
    # within its first half, as it does in the full soak; the full soak draws them freely.
    fixed = random.Random(soak.seed)
    learn_pool = [learn_query(fixed) for _ in range(soak.learn_pool)]

    def next_step(r: random.Random, last_page: str | None):
        page = r.choice([p for p in pages if p.url_path != last_page])
        query = dict(r.choice(soak.pool))
        press = None
        if page.url_path == "watch-attention-learn":
            query.update(r.choice(learn_pool) if learn_pool else learn_query(r))
            press = "Train" if r.random() < 0.5 else None
        elif page.url_path == "against-pytorch" and r.random() < 0.3:
            query = {**loadtest.DEFAULTS, **r.choice(list(loadtest.SETTINGS.values()))}
            press = "Measure at these settings"
        step = loadtest.Step(
            "soak", urlencode(query), page.url_path, "" if page.default else page.url_path
        )
        return step, press

    async def session_loop(i: int) -> None:
        session = loadtest.Session(url, timeout=300)
        await session.connect()
        r = random.Random(soak.seed * 1000 + i)
        last = None
        try:
            if i == 0 and soak.book_button:  # the 30-second benchmark, once
                await one(session, _book_step(pages), "Measure at the book's benchmark shape")
            while soak.done < soak.runs:
                step, press = next_step(r, last)
                last = step.page
                await one(session, step, press)
        finally:
            await session.close()

    async def one(session, step, press_label) -> None:
        result = await session.rerun(step)
        if press_label:
            button = next((v for k, v in result.buttons.items() if k.startswith(press_label)), None)
            if button is None:
                soak.errors.append(f"{step.page}: no button {press_label!r}")
            else:
                result = await session.rerun(step, press=button)
                soak.presses[press_label] = soak.presses.get(press_label, 0) + 1
        soak.errors += [f"{step.page}: {e}" for e in result.errors]
        async with lock:
            soak.done += 1
            n = soak.done
            if n % soak.every == 0:
                soak.samples.append((n, server.rss()))
            if n in marks:
                soak.censuses[marks[n]] = await census.take(marks[n], "garbage")

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
    soak.samples.append((0, server.rss()))
    start = time.perf_counter()
    await asyncio.gather(*(session_loop(i) for i in range(soak.sessions)))
    soak.seconds = time.perf_counter() - start
    await asyncio.sleep(2)
    soak.samples.append((soak.done, server.rss()))
    soak.censuses["end"] = await census.take("end", "garbage")


def _book_step(pages):
    page = next(p for p in pages if p.url_path == "against-pytorch")
    return loadtest.Step("soak", urlencode(loadtest.DEFAULTS), page.url_path, page.url_path)


def slope_mb_per_1000(samples: list[tuple[int, int]], runs: int) -> float:
    """Least-squares RSS growth over the last half of the runs, MB per 1,000 runs."""
    half = [(n, rss) for n, rss in samples if n >= runs / 2]
    if len(half) < 3:
        return float("nan")
    xs = [n for n, _ in half]
    ys = [rss / 2**20 for _, rss in half]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return 1000 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


def _in_use(census: dict) -> dict:
    return census.get("reachable own", census.get("own", {}))


def growing_own_types(
    censuses: dict[str, dict], slack: int = 50
) -> dict[str, tuple[int, int, int]]:
    """The app's own types whose count in use kept rising from the first quarter to the half to
    the end (by more than ``slack`` objects in all): a leak. Cycles only waiting for Python's
    collector are not counted (each census collects them first)."""
    first, mid, end = (_in_use(censuses.get(k, {})) for k in ("quarter", "half", "end"))
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
):
    pool = settings_pool(pool_size, seed)
    soak = Soak(runs, sessions, every, pool, seed, book_button, learn_pool)
    folder = Path(tempfile.mkdtemp(prefix="attnviz-census-"))
    env = {**live.deployed_env(), "ATTNVIZ_CENSUS_DIR": str(folder)}
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
            asyncio.run(drive(url, server, soak, Census(folder)))
    finally:
        hole.close()
    return soak


def markdown(soak: Soak, slope: float, growing: dict, bound: float, command: str) -> str:
    first_mb = soak.samples[0][1] / 2**20
    peak_mb = max(r for _, r in soak.samples) / 2**20
    half = [r for n, r in soak.samples if n >= soak.runs / 2]
    end = soak.censuses.get("end", {})
    garbage = end.get("garbage", {})
    freed = end.get("gc", {}).get("freed", {})
    lines = [
        "# Soak: memory without Streamlit's post-run collection",
        "",
        f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, `{command}`: {soak.done} page runs "
        f"by {soak.sessions} sessions in {soak.seconds:.0f} s, {len(soak.pool)} settings, every "
        f"page; buttons pressed: {soak.presses}. Errors: {len(soak.errors)}.",
        "",
        f"- RSS: {first_mb:.0f} MB after start-up, peak {peak_mb:.0f} MB; over the last half "
        f"{min(half) / 2**20:.0f}–{max(half) / 2**20:.0f} MB.",
        f"- Growth over the last half: **{slope:+.2f} MB per 1,000 page runs** (bound "
        f"{bound:g} MB).",
        f"- The app's own types still growing: {growing or 'none'}.",
        f"- Cyclic garbage freed by Python's automatic collector during the soak: {freed}.",
        f"- At the end, one full collection found {garbage.get('unreachable', '?')} unreachable "
        f"objects; of the app's own types: {garbage.get('own types') or 'none'}.",
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
        "The app's own objects by type at the quarter, half and end censuses: in use, and in "
        "cycles that were waiting for Python's collector (freed by the census's collection):",
        "",
        "| type | in use: quarter | half | end | waiting cycles: quarter | half | end |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    marks = [soak.censuses.get(k, {}) for k in ("quarter", "half", "end")]
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
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--every", type=int, default=100, help="runs between RSS readings")
    parser.add_argument("--pool", type=int, default=120, help="settings in the pool")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bound", type=float, default=BOUND_MB_PER_1000)
    parser.add_argument("--short", action="store_true", help="no book-shape benchmark press")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    soak = run(
        args.runs,
        args.sessions,
        args.every,
        args.pool,
        args.seed,
        not args.short,
        learn_pool=6 if args.short else 0,
    )
    slope = slope_mb_per_1000(soak.samples, soak.runs)
    growing = growing_own_types(soak.censuses)
    command = "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])
    text = markdown(soak, slope, growing, args.bound, command)
    print(text)
    output = args.output or (ROOT / "test-artifacts" / "soak-short.md" if args.short else RESULTS)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    ok = not soak.errors and slope <= args.bound and not growing
    print("soak OK" if ok else "soak FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
