"""Server CPU per cold page run (a new text every run), beside warm runs and the trivial app.

A class's clicks are mostly cold (each student's own sentence), so this measures what a page
costs when nothing it draws is cached yet. For each page it opens one websocket session on the
live server (the Dockerfile's environment, the repository's config) and runs the page ``runs``
times with a new text each time (cold), then ``runs`` times with the same URL (warm), and the
trivial one-heatmap app ``runs`` times; it reads the server's CPU clock around each block.

``--before DIR`` also starts the app from another checkout (e.g. the commit before a change,
unpacked with ``git archive``) and measures it in the same way, page by page, alternating with
this one, so that both see the same machine load:

    .venv/bin/python bench/cold_checkouts.py --runs 16 --blocks 3 --before /tmp/base --query cell=q3k1 \\
        simplified-attention causal-attention
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import live, loadtest  # noqa: E402
from bench.support import aio  # noqa: E402
from bench.support.pages import app_pages  # noqa: E402

WORDS = (
    "river stone quiet bright garden window morning letter yellow travel paper winter silver "
    "market thunder little forest simple number orange museum pocket candle"
).split()


def new_text(n: int) -> str:
    """A sentence of 5 to 8 words no other run has used (it ends with its own number)."""
    rng = random.Random(n)
    words = [rng.choice(WORDS) for _ in range(rng.randint(5, 8))]
    return " ".join(words).capitalize() + f" {n}"


async def _cpu_ms(server: live.Server, steps: list[loadtest.Step]) -> tuple[float, float]:
    """Server CPU (ms) and kB received per run over ``steps[1:]`` (the first run connects and
    is not counted)."""
    session = loadtest.Session(server.url, timeout=180)
    await session.connect()
    try:
        await session.rerun(steps[0])
        await asyncio.sleep(0.3)
        before = server.cpu_seconds()
        received = 0
        for step in steps[1:]:
            result = await session.rerun(step)
            if result.errors:
                raise RuntimeError(f"{server.label} {step.page}: {result.errors[0]}")
            received += result.received_bytes
        await asyncio.sleep(0.3)  # the after-run work belongs to the runs
        runs = len(steps) - 1
        return 1000 * (server.cpu_seconds() - before) / runs, received / 1024 / runs
    finally:
        await session.close()


def cpu_ms(server: live.Server, steps: list[loadtest.Step]) -> tuple[float, float]:
    return aio.run(_cpu_ms(server, steps))


def _steps(page, name: str, query: str, runs: int, first: int) -> tuple[list, list]:
    """(cold, warm) steps of one page: a new text every cold run; ``query`` added to each."""
    extra = f"&{query}" if query else ""
    cold = [
        loadtest.Step("cold", urlencode({"text": new_text(first + k)}) + extra, page.url_path, name)
        for k in range(runs + 1)
    ]
    warm = [loadtest.Step("warm", query, page.url_path, name)] * (runs + 1)
    return cold, warm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", help="url paths (default: every page)")
    parser.add_argument("--runs", type=int, default=8, help="page runs a measurement")
    parser.add_argument("--blocks", type=int, default=1, help="measurements a page (median)")
    parser.add_argument("--before", type=Path, help="another checkout to measure beside this one")
    parser.add_argument(
        "--query",
        default="",
        help="also measure this checkout with more in the URL, e.g. cell=q3k1 (a cell open)",
    )
    args = parser.parse_args()
    pages = [p for p in app_pages() if not args.pages or p.url_path in args.pages]
    seed = int(time.time())
    print(f"load average at the start: {os.getloadavg()[0]:.1f}", flush=True)
    with ExitStack() as stack:
        runs: list[tuple[str, live.Server, str]] = []
        if args.before is not None:
            runs.append(
                (
                    "before",
                    stack.enter_context(live.attnviz_server(name="cold-before", root=args.before)),
                    "",
                )
            )
        after = stack.enter_context(live.attnviz_server(name="cold-after"))
        runs.append(("after", after, ""))
        if args.query:
            runs.append((f"after, {args.query}", after, args.query))
        trivial = stack.enter_context(live.trivial_server())
        for i, page in enumerate(pages):
            name = "" if page.default else page.url_path
            found: dict[str, list[tuple[float, float, float]]] = {label: [] for label, _, _ in runs}
            found["trivial"] = []
            for block in range(args.blocks):
                for k, (label, app, query) in enumerate(runs):
                    first = seed + 100_000 * i + 1_000 * block + 100 * k
                    cold, warm = _steps(page, name, query, args.runs, first)
                    (c, kb), (w, _) = cpu_ms(app, cold), cpu_ms(app, warm)
                    found[label].append((c, kb, w))
                steps = [live.trivial_step(i % live.TRIVIAL_PAGES, s) for s in range(args.runs + 1)]
                found["trivial"].append((cpu_ms(trivial, steps)[0], 0.0, 0.0))
            line = [f"{page.url_path:22s}"]
            for label, values in found.items():
                c, kb, w = (statistics.median(v[n] for v in values) for n in range(3))
                if label == "trivial":
                    line.append(f"trivial {c:5.1f}")
                else:
                    line.append(f"{label}: cold {c:5.1f} ({kb:3.0f} kB) warm {w:5.1f}")
            print(" | ".join(line), flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}", flush=True)
    print("(ms of server CPU per page run, median of the blocks; kB sent per cold run)")


if __name__ == "__main__":
    main()
