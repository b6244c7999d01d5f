"""Page 8's slider on the live server: server CPU per page run when a student scrubs through the
recorded run, beside a warm run of the same page, a warm run of a pass page, and the trivial app.

    .venv/bin/python bench/grow_scrub.py            # about 3 minutes
    .venv/bin/python bench/grow_scrub.py --runs 40

Every measurement is one websocket session on the deployed server (bench/live.py's), its
connect run not counted; CPU is the server process's, read before and after ``--runs`` page runs
(and the post-run work after the last). Rows:

- warm page 8: the same URL again (every view cached);
- scrub, new steps: each run moves the slider (its widget state, as the browser sends it) to a
  step no session asked for yet on this server (what the first student to drag there pays);
- scrub, seen steps: the same steps again, in another order (what the rest of the class pays);
- warm causal attention: the heaviest pass page, warm, for scale;
- trivial app: bench/trivial/, one cached heatmap with Streamlit's defaults.

Nothing trains on any of these runs: the page reads the shipped run (ui/models/growing.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import live, loadtest
from bench.loadtest import BackMsg, ForwardMsg
from bench.support import aio

PAGE = "grow-induction-heads"


async def _page_run(session: loadtest.Session, query: str, page: str, slider=None):
    """One run of ``page`` as the browser asks for it: a rerun with the URL the page is at and,
    when ``slider`` is (widget id, value), that slider moved to the value. Returns the steps
    the run's charts mark and the step slider's widget id."""
    msg = BackMsg()
    msg.rerun_script.query_string = query
    msg.rerun_script.page_name = page
    if slider is not None:
        moved = msg.rerun_script.widget_states.widgets.add()
        moved.id = slider[0]
        moved.string_array_value.data.append(str(slider[1]))
    await session.ws.send(msg.SerializeToString())
    marks, slider_id = [], None
    while True:
        fm = ForwardMsg()
        fm.ParseFromString(await asyncio.wait_for(session.ws.recv(), 180))
        kind = fm.WhichOneof("type")
        if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
            element = fm.delta.new_element
            which = element.WhichOneof("type")
            if which == "plotly_chart":
                shapes = json.loads(element.plotly_chart.spec)["layout"].get("shapes", [])
                marks += [shape["x0"] for shape in shapes if "x0" in shape]
            elif which == "slider" and element.slider.label.startswith("Training step"):
                slider_id = element.slider.id
            elif which == "exception":
                raise RuntimeError(element.exception.message)
        elif kind == "script_finished" and fm.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
            return marks, slider_id


async def _cpu(server: live.Server, page: str, moves: list[int | None]) -> tuple[float, int]:
    """Server CPU (ms) per page run over ``moves`` (the slider moved to each step, or None for a
    plain rerun), after a first run that opens the page (not counted); and how many different
    steps those runs' charts marked."""
    session = loadtest.Session(server.url, timeout=180)
    await session.connect()
    try:
        _, slider = await _page_run(session, "", page)
        await asyncio.sleep(0.3)
        before = server.cpu_seconds()
        marked = set()
        for step in moves:
            marks, _ = await _page_run(session, "", page, None if step is None else (slider, step))
            marked.add(tuple(sorted(set(marks))))
        await asyncio.sleep(0.3)
        return 1000 * (server.cpu_seconds() - before) / len(moves), len(marked)
    finally:
        await session.close()


def cpu(server: live.Server, page: str, moves: list[int | None]) -> tuple[float, int]:
    return aio.run(_cpu(server, page, moves))


async def _trivial(server: live.Server, runs: int) -> tuple[float, int]:
    steps = [live.trivial_step(i % live.TRIVIAL_PAGES) for i in range(runs + 1)]
    session = loadtest.Session(server.url, timeout=180)
    await session.connect()
    try:
        await session.rerun(steps[0])
        await asyncio.sleep(0.3)
        before = server.cpu_seconds()
        for step in steps[1:]:
            await session.rerun(step)
        await asyncio.sleep(0.3)
        return 1000 * (server.cpu_seconds() - before) / runs, 0
    finally:
        await session.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="page runs per row (at most 40)")
    args = parser.parse_args(argv)
    runs = max(2, min(args.runs, 40))
    from attnviz.models.induction import api

    steps = list(api.steps())
    rng = random.Random(0)
    new = rng.sample(steps[:-1], runs)  # the last step is the page's default: already seen
    seen = rng.sample(new, runs)
    rows = []
    with live.attnviz_server() as app, live.trivial_server() as trivial:
        rows.append(("warm page 8 (same step)", cpu(app, PAGE, [None] * runs)))
        rows.append(("scrub, new steps", cpu(app, PAGE, new)))
        rows.append(("scrub, seen steps", cpu(app, PAGE, seen)))
        rows.append(("warm causal attention", cpu(app, "causal-attention", [None] * runs)))
        rows.append(("trivial app", aio.run(_trivial(trivial, runs))))
    trivial_ms = rows[-1][1][0]
    print(f"server CPU per page run, {runs} runs a row (load average: {_load()})")
    print("| run | CPU per run | × trivial app | different steps marked |")
    print("|---|---:|---:|---:|")
    for name, (ms, drawn) in rows:
        print(f"| {name} | {ms:.1f} ms | {ms / trivial_ms:.2f} | {drawn} |")
    return 0


def _load() -> str:
    import os

    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    raise SystemExit(main())
