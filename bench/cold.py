"""Server CPU per cold page run with and without "Predict first", beside the trivial app.

    .venv/bin/python bench/cold.py                      # the four pass pages, 8 rounds
    .venv/bin/python bench/cold.py --rounds 4 causal-attention

A class's clicks are mostly cold: each student's own sentence misses every cache. With
"Predict first" on, a cold run also chooses the question from the new numbers and leaves the
panels it hides unsent. Per pass page and round, one websocket session on the live server
(as deployed: bench/live.py's ``attnviz_server``) runs the page with a sentence no one computed
before, four ways, each followed by a trivial-app page run measured right after it (so load on
the machine moves both sides alike), with bench/measure.py's clock (the kernel's per-process
CPU time, the run's tail included):

- cold: a new text, both switches off;
- cold predict: a new text, ``predict=true`` (a question waits);
- cold mystery: a new text, ``mystery=true`` (``mystery.pose`` on the new numbers);
- warm predict: the same URL as "cold predict" again.

The table gives each column's median over the rounds and the median ratio to the paired
trivial run. Output: bench/cold-results.md and the console. Loopback only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import live, loadtest, measure  # noqa: E402
from bench.support import aio  # noqa: E402
from bench.support.pages import PageInfo, app_pages  # noqa: E402

RESULTS = ROOT / "bench" / "cold-results.md"
PASS_PAGES = (
    "simplified-attention",
    "trainable-attention",
    "causal-attention",
    "multi-head-attention",
)
WAYS = {
    "cold": ({}, True),
    "cold predict": ({"predict": "true"}, True),
    "cold mystery": ({"mystery": "true"}, True),
    "warm predict": ({"predict": "true"}, False),
}


@dataclass
class Row:
    page: str
    ours: dict[str, list[float]] = field(default_factory=lambda: {w: [] for w in WAYS})
    trivial: dict[str, list[float]] = field(default_factory=lambda: {w: [] for w in WAYS})
    errors: list[str] = field(default_factory=list)

    def ms(self, way: str) -> float:
        return statistics.median(self.ours[way])

    def ratio(self, way: str) -> float:
        pairs = zip(self.ours[way], self.trivial[way], strict=True)
        return statistics.median(a / t for a, t in pairs if t > 0)

    def trivial_ms(self) -> float:
        return statistics.median(v for vs in self.trivial.values() for v in vs)


async def _measure(app, trivial, pages: tuple[PageInfo, ...], rounds: int, seed: int):
    texts = measure.Sentences(seed)
    rows = {p.url_path: Row(p.url_path) for p in pages}
    a = loadtest.Session(app.url, 180)
    t = loadtest.Session(trivial.url, 180)
    next_seed = 1_000_000 + seed % 1000
    try:
        for s in (a, t):
            await s.load_page()
            await s.connect()
        for i, page in enumerate(pages):  # warm-up, not measured: imports, the tokenizer
            await a.rerun(measure.app_text_step(page, {}, "defaults"))
            await t.rerun(measure.trivial_page_step(i, 0))
        await measure.settle(app.pids)
        for _ in range(rounds):
            for i, page in enumerate(pages):
                row = rows[page.url_path]
                last: dict[str, str] = {}
                for way, (switches, cold) in WAYS.items():
                    values = {"text": texts() if cold else last["text"], **switches}
                    last = values
                    ran = await measure.measured_run(
                        a, app.pids, measure.app_text_step(page, values, way)
                    )
                    next_seed += 1
                    paired = await measure.measured_run(
                        t, trivial.pids, measure.trivial_page_step(i, next_seed)
                    )
                    row.ours[way].append(ran.cpu_ms)
                    row.trivial[way].append(paired.cpu_ms)
                    row.errors += ran.errors + paired.errors
                print(
                    f"{page.url_path:22s} "
                    + "  ".join(f"{w} {row.ours[w][-1]:6.1f}" for w in WAYS)
                    + f"  trivial {statistics.median(row.trivial['cold'][-1:]):5.1f} ms",
                    flush=True,
                )
    finally:
        for s in (a, t):
            await s.close()
    return rows


def markdown(rows: dict[str, Row], rounds: int, load: tuple[float, float]) -> str:
    lines = [
        "# Cold page runs with and without Predict first",
        "",
        f"`bench/cold.py --rounds {rounds}` on {time.strftime('%Y-%m-%d %H:%M')}, load average "
        f"{load[0]:.1f} at the start and {load[1]:.1f} at the end. Server CPU per page run "
        "(ms, median over the rounds; cold: a sentence no one computed before), and in brackets "
        "the median ratio to the trivial app's page run measured right after each.",
        "",
        "| page | " + " | ".join(WAYS) + " | trivial | predict − off (cold) |",
        "|---|" + "---:|" * (len(WAYS) + 2),
    ]
    for page, row in rows.items():
        cells = " | ".join(f"{row.ms(w):.1f} ({row.ratio(w):.2f})" for w in WAYS)
        extra = row.ms("cold predict") - row.ms("cold")
        lines.append(f"| {page} | {cells} | {row.trivial_ms():.1f} | {extra:+.1f} |")
    errors = [e for row in rows.values() for e in row.errors]
    lines += ["", f"Errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else "")]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", default=list(PASS_PAGES))
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args(argv)
    pages = tuple(p for p in app_pages() if p.url_path in args.pages)
    start = os.getloadavg()[0]
    with live.attnviz_server() as app, live.trivial_server() as trivial:
        rows = aio.run(_measure(app, trivial, pages, args.rounds, time.time_ns() % 2**31))
    text = markdown(rows, args.rounds, (start, os.getloadavg()[0]))
    RESULTS.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
