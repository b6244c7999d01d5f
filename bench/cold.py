"""Server CPU per cold page run, with and without "Predict first", beside the trivial app.

    .venv/bin/python bench/cold.py                    # the four pass pages, 8 runs, 3 blocks
    .venv/bin/python bench/cold.py --runs 6 causal-attention

A class's clicks are mostly cold: each student's own sentence misses every cache. One websocket
session runs a pass page again and again, each run with a new text (so a new trace, lesson and,
with ``predict=true``, a new question), and the live server's CPU (psutil, user + system, every
thread) over those runs is divided by their number. In each block the page is measured cold with
the switches off, cold with "Predict first" on, cold with "Spot the bug" on, warm with "Predict
first" on (the same text again), and the trivial app's page run (bench/trivial/); the table
gives each column's median over the blocks. The servers run as bench/live.py starts them (the
attnviz server as deployed, the trivial one with Streamlit's defaults), on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import live, loadtest  # noqa: E402

RESULTS = ROOT / "bench" / "cold-results.md"
PASS_PAGES = (
    "simplified-attention",
    "trainable-attention",
    "causal-attention",
    "multi-head-attention",
)
WORDS = (
    "river stone quiet bright garden window morning letter yellow travel paper winter silver "
    "market thunder little forest simple number orange museum pocket candle"
).split()
COLUMNS = ("cold", "cold predict", "cold mystery", "warm predict", "trivial")


def sentence(i: int) -> str:
    """A new sentence of 6 to 9 words for run ``i`` (the number makes it unique)."""
    r = random.Random(i)
    words = [r.choice(WORDS) for _ in range(r.randint(5, 8))]
    return " ".join(words).capitalize() + f" {i}"


async def _cpu(server: live.Server, steps: list[loadtest.Step]) -> float:
    """CPU ms per run over ``steps[1:]`` (the first opens the session and is not counted)."""
    session = loadtest.Session(server.url, timeout=180)
    await session.connect()
    try:
        await session.rerun(steps[0])
        await asyncio.sleep(0.3)
        before = server.cpu_seconds()
        for step in steps[1:]:
            result = await session.rerun(step)
            if result.errors:
                raise RuntimeError(f"{server.label} {step.page}: {result.errors[0]}")
        await asyncio.sleep(0.3)  # the server's after-run work belongs to the runs
        return 1000 * (server.cpu_seconds() - before) / (len(steps) - 1)
    finally:
        await session.close()


def cpu(server: live.Server, steps: list[loadtest.Step]) -> float:
    return asyncio.run(_cpu(server, steps))


def steps_for(page: str, runs: int, first: int, extra: dict[str, str], cold: bool):
    """``runs + 1`` runs of ``page``: a new text each (cold) or one text throughout (warm)."""
    out = []
    for k in range(runs + 1):
        text = sentence(first + k if cold else first)
        query = urlencode({"text": text, **extra})
        out.append(loadtest.Step("cold" if cold else "warm", query, page, page))
    return out


def measure(pages, runs: int, blocks: int) -> dict[str, dict[str, float]]:
    seed = int(time.time())
    found: dict[str, dict[str, list[float]]] = {p: {c: [] for c in COLUMNS} for p in pages}
    with live.attnviz_server() as app, live.trivial_server() as trivial:
        for block in range(blocks):
            for i, page in enumerate(pages):
                base = seed + 100_000 * block + 1000 * i
                row = found[page]
                row["cold"].append(cpu(app, steps_for(page, runs, base, {}, True)))
                on = {"predict": "true"}
                row["cold predict"].append(cpu(app, steps_for(page, runs, base + 200, on, True)))
                mystery = {"mystery": "true"}
                row["cold mystery"].append(
                    cpu(app, steps_for(page, runs, base + 400, mystery, True))
                )
                row["warm predict"].append(cpu(app, steps_for(page, runs, base + 600, on, False)))
                t = [live.trivial_step(i % live.TRIVIAL_PAGES, s) for s in range(runs + 1)]
                row["trivial"].append(cpu(trivial, t))
                print(
                    f"block {block + 1} {page:22s} "
                    + "  ".join(f"{c} {row[c][-1]:6.1f}" for c in COLUMNS),
                    flush=True,
                )
    return {p: {c: statistics.median(v) for c, v in cols.items()} for p, cols in found.items()}


def markdown(result: dict[str, dict[str, float]], runs: int, blocks: int, load: tuple) -> str:
    lines = [
        "# Cold page runs with and without Predict first",
        "",
        f"`bench/cold.py --runs {runs} --blocks {blocks}` on "
        f"{time.strftime('%Y-%m-%d %H:%M')}, load average {load[0]:.1f} at the start and "
        f"{load[1]:.1f} at the end. Server CPU per page run (ms), median of {blocks} blocks of "
        f"{runs} runs; cold: a new text every run.",
        "",
        "| page | " + " | ".join(COLUMNS) + " | predict − cold | cold predict / trivial |",
        "|---|" + "---:|" * (len(COLUMNS) + 2),
    ]
    for page, row in result.items():
        cells = " | ".join(f"{row[c]:.1f}" for c in COLUMNS)
        extra = row["cold predict"] - row["cold"]
        lines.append(
            f"| {page} | {cells} | {extra:+.1f} | {row['cold predict'] / row['trivial']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    import os

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", default=list(PASS_PAGES))
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--blocks", type=int, default=3)
    args = parser.parse_args(argv)
    start = os.getloadavg()[0]
    result = measure(args.pages, args.runs, args.blocks)
    text = markdown(result, args.runs, args.blocks, (start, os.getloadavg()[0]))
    RESULTS.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
