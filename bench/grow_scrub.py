"""Page 8's slider on the live server: server CPU per page run when a student scrubs through the
recorded run, beside a warm run of the same page, a warm run of a pass page, and the trivial app.

    .venv/bin/python bench/grow_scrub.py            # about 3 minutes
    .venv/bin/python bench/grow_scrub.py --runs 40

Every measurement is one websocket session on the deployed server (bench/live.py's), its
connect run not counted; CPU is the server process's, read before and after ``--runs`` page runs
(and the post-run work after the last). Rows:

- warm page 8: the same URL again (every view cached);
- scrub, new steps: each run moves the slider to a step no session asked for yet on this server
  (what the first student to drag the slider pays for a step);
- scrub, seen steps: the same steps again, in another order (what the rest of the class pays);
- warm causal attention: the heaviest pass page, warm, for scale;
- trivial app: bench/trivial/, one cached heatmap with Streamlit's defaults.

Nothing trains on any of these runs: the page reads the shipped run (ui/induction.py).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import live, loadtest
from tests.support.pages import app_pages

PAGE = "grow-induction-heads"


async def _cpu(server: live.Server, steps: list[loadtest.Step]) -> tuple[float, int]:
    """Server CPU (ms) per page run over ``steps[1:]`` (``steps[0]`` connects, not counted), and
    how many different sets of charts those runs drew (a moved slider draws new ones)."""
    session = loadtest.Session(server.url, timeout=180)
    await session.connect()
    try:
        result = await session.rerun(steps[0])
        if result.errors:
            raise RuntimeError(result.errors[0])
        await asyncio.sleep(0.3)
        before = server.cpu_seconds()
        drawn = set()
        for step in steps[1:]:
            result = await session.rerun(step)
            if result.errors:
                raise RuntimeError(f"{step.query}: {result.errors[0]}")
            drawn.add(result.charts)
        await asyncio.sleep(0.3)
        return 1000 * (server.cpu_seconds() - before) / (len(steps) - 1), len(drawn)
    finally:
        await session.close()


def cpu(server: live.Server, steps: list[loadtest.Step]) -> tuple[float, int]:
    return asyncio.run(_cpu(server, steps))


def grow_step(step: int | None) -> loadtest.Step:
    query = "" if step is None else f"gstep={step}"
    return loadtest.Step(f"gstep={step}", query, PAGE, PAGE)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="page runs per row (at most 40)")
    args = parser.parse_args(argv)
    runs = max(2, min(args.runs, 40))
    from attnviz.induction import api

    steps = list(api.steps())
    rng = random.Random(0)
    new = rng.sample(steps[:-1], runs)  # the last step is the page's default: already seen
    seen = rng.sample(new, runs)
    pages = {p.url_path: p for p in app_pages()}
    rows = []
    with live.attnviz_server() as app, live.trivial_server() as trivial:
        warm = [grow_step(None)] * (runs + 1)
        rows.append(("warm page 8 (same step)", cpu(app, warm)))
        rows.append(("scrub, new steps", cpu(app, [grow_step(None), *map(grow_step, new)])))
        rows.append(("scrub, seen steps", cpu(app, [grow_step(None), *map(grow_step, seen)])))
        causal = live.app_step(pages["causal-attention"])
        rows.append(("warm causal attention", cpu(app, [causal] * (runs + 1))))
        triv = [live.trivial_step(i % live.TRIVIAL_PAGES) for i in range(runs + 1)]
        rows.append(("trivial app", cpu(trivial, triv)))
    trivial_ms = rows[-1][1][0]
    print(f"server CPU per page run, {runs} runs a row (load average: {_load()})")
    print("| run | CPU per run | × trivial app | different chart sets drawn |")
    print("|---|---:|---:|---:|")
    for name, (ms, drawn) in rows:
        print(f"| {name} | {ms:.1f} ms | {ms / trivial_ms:.2f} | {drawn} |")
    return 0


def _load() -> str:
    import os

    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    raise SystemExit(main())
