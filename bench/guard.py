"""The speed regression guard that CI runs (a step of .ci/run, not a pytest).

It measures what a class pays, on live servers started side by side (bench/live.py): attnviz as
deployed and the trivial one-heatmap app without Streamlit's post-run collection (the yardstick,
below). Per page, two ratios:

- cold: the server CPU of the page's FIRST run with a new text (a sentence no one computed
  before) over the trivial app's page run measured right after it;
- warm: the server CPU of the rerun that follows (the same text, every cache hit) over the
  trivial run measured right after that.

It is built to hold on a busy machine (CI shares its two cores with whatever else runs):

- fine interleaving: one app run, then one trivial run, repeated; each ratio is taken within
  its pair, a second apart, so load that comes and goes moves both sides alike;
- CPU time, not wall time, of each server process (nanoseconds, from the kernel's per-process
  CPU clock: bench/measure.py), read after each run's tail;
- the median over ROUNDS pairs per page and kind;
- a page over its limit is measured again (ROUNDS fresh pairs each time), up to RETRIES times,
  and judged on its lowest median: noise only ever adds CPU to a run, so the lowest of three
  medians is the closest to the code's own cost, while a real regression is over the limit in
  every measurement (the deliberate one below read 2.5-2.9x the baseline in all of them).

A ratio fails when it exceeds TOLERANCE x the committed one in bench/baseline.json. Why the
tolerances (bench/guard-results.md has the runs): see TOLERANCE below.

The yardstick is the trivial app with its post-run collection off. On Streamlit's defaults its
page run is mostly that one full collection (94% of its samples in py-spy), a walk whose cost
moves with the host: 37-42 ms a run at 06:21 on 2026-12-02 and 69-79 ms in the CI guard on
a7b9c5f, while attnviz's runs moved far less. Against a baseline made at 06:21 a deliberate
regression that more than doubles attnviz's runs passed twice at 16:45 (1.11 and 1.26 of the
baseline, bench/guard-results.md). Without the collection the trivial app's run (Streamlit's own
work and one graph_objects heatmap, the same kind of work as attnviz's) read 6.4-9.2 ms.

    .venv/bin/python bench/guard.py            # check (2-4 minutes on a busy machine)
    .venv/bin/python bench/guard.py --update   # rewrite the baseline (commit it and say why)
    .venv/bin/python bench/guard.py --regress  # the deliberate regression: it must fail

``--regress`` starts attnviz with bench/support/regression/ on PYTHONPATH: every new figure is
validated by plotly.graph_objects on the request path again, as before issue 22. (``--gc on``,
Streamlit's post-run collection, was the deliberate regression until the server froze its
start-up heap after its first run: a full collection then walks only what the caches made since,
and turning it on measured 1.02-1.07x the baseline on 2026-12-02, bench/guard-results.md.)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import live, measure  # noqa: E402
from bench.support.pages import app_pages  # noqa: E402

BASELINE = ROOT / "bench" / "baseline.json"
REGRESSION = ROOT / "bench" / "support" / "regression"  # its sitecustomize.py: --regress
KINDS = ("cold", "warm")
# Why 1.6: against the yardstick (the trivial app without its post-run collection), ten guard runs
# with two busy processes beside each (load average 1.4-2.8, 2026-12-02 16:51-16:59,
# bench/guard-results.md) stayed at or under 1.45x the baseline, cold and warm, with no retry;
# the baseline is the median of three quiet runs. What the guard is for still fails: sending
# every chart through graph_objects and to_json on every run (--regress) read 2.50-2.65x cold and
# 2.57-2.87x warm in two runs out of two. (Against the trivial app on Streamlit's defaults,
# earlier that day, ten such runs had read at most 0.50x and the regression 1.01-1.26x, a pass: its
# run had doubled since that baseline was made.) What it cannot see: a change under about 1.6x
# on a page.
# Why cold 2.1 since 2026-12-05: that morning, on a quiet machine (load average 0.2-0.3), the
# same commit that had passed CI the day before (0960dab) read trained-heads cold at 7.83-8.41
# (1.76-1.89x its baseline) and grow-induction-heads at 4.31-4.84 (1.63-1.83x), the lowest of
# three medians each, in runs side by side with main; warm stayed under 1.6x. A cold run is
# mostly torch work the trivial app does not do, and its share moved with the host. The
# deliberate regression read 2.50-2.65x cold, still over 2.1.
TOLERANCE = {"cold": 2.1, "warm": 1.6}
YARDSTICK = f"post-run GC off ({live.POST_RUN_GC_ENV}=false)"  # the baseline says so
ROUNDS = 5  # pairs per page and kind: the median of 5 moves little when one or two are off
# Why 2 retries: on 2026-12-04 a CI run failed on multi-head-attention's cold ratio (5.28, limit
# 4.57) while the image was built and run beside it, and a fresh server on a quiet machine read
# trained-heads cold at 10.3-10.7 (limit 7.13) for its first three minutes, then 4.2-4.4 on the
# same commit for the rest of the hour (the same code had read 3.6-4.4 at eight earlier commits).
RETRIES = 2


def load_baseline(path: Path = BASELINE) -> dict:
    """The committed baseline: {"cold": {page: ratio}, "warm": {page: ratio}, ...}."""
    data = json.loads(path.read_text()) if path.exists() else {}
    if "ratios" in data and "warm" not in data:  # the warm-only format before cold runs
        data["warm"] = data["ratios"]
    return data


def measure_pages(app, trivial, pages, rounds: int = ROUNDS, seed: int | None = None) -> dict:
    """{kind: {page file: median ratio}} over ``rounds`` pairs of each kind per page."""
    seed = time.time_ns() % 2**31 if seed is None else seed
    pairs = measure.cold_warm_pairs(app, trivial, pages, rounds, seed)
    for path, pp in pairs.items():
        if pp.errors:
            raise RuntimeError(f"{path}: {pp.errors[0]}")
    return {
        "cold": {path: pp.cold_ratio for path, pp in pairs.items()},
        "warm": {path: pp.warm_ratio for path, pp in pairs.items()},
        "ms": {path: pp.summary() for path, pp in pairs.items()},
    }


def check(pages, measured: dict, baseline: dict, remeasure, final: dict | None = None) -> bool:
    """True when every page has a baseline of each kind and stays within TOLERANCE x it; pages
    over a limit are measured again (``remeasure(pages) -> {kind: {page: ratio}}``), up to
    RETRIES times while any stays over, each kind judged on its lowest measurement.
    ``final``: filled with the ratios judged."""

    def over(p) -> list[str]:
        return [
            kind
            for kind in KINDS
            if p.path in baseline.get(kind, {})
            and measured[kind][p.path] > TOLERANCE[kind] * baseline[kind][p.path]
        ]

    failing = [p for p in pages if over(p)]
    for attempt in range(1, RETRIES + 1):
        if not failing:
            break
        print(
            f"{len(failing)} page(s) over their limit; measuring them again ({attempt}/{RETRIES})",
            flush=True,
        )
        again = remeasure(failing)
        measured = {
            kind: {
                page: min(ratio, again.get(kind, {}).get(page, ratio))
                for page, ratio in measured[kind].items()
            }
            for kind in KINDS
        }
        failing = [p for p in failing if over(p)]
    if final is not None:
        final.update({kind: dict(measured[kind]) for kind in KINDS})
    missing = [
        f"{p.path} ({kind})"
        for p in pages
        for kind in KINDS
        if p.path not in baseline.get(kind, {})
    ]
    for p in pages:
        parts = []
        for kind in KINDS:
            if p.path in baseline.get(kind, {}):
                limit = TOLERANCE[kind] * baseline[kind][p.path]
                flag = "" if measured[kind][p.path] <= limit else " FAIL"
                parts.append(f"{kind} {measured[kind][p.path]:5.2f} (limit {limit:5.2f}){flag}")
        state = "FAIL" if p in failing else "ok"
        print(f"  {state:4s} {p.path:32s} " + "  ".join(parts))
    if missing:
        print(f"  no baseline for {', '.join(missing)}: run bench/guard.py --update, commit why")
    return not failing and not missing


def write_baseline(measured: dict, path: Path = BASELINE) -> None:
    path.write_text(
        json.dumps(
            {
                "what": "live server CPU per page run, attnviz / trivial app without its "
                "post-run collection, measured right after it (bench/guard.py): cold = the "
                "page's first run with a new text, warm = its rerun; median over pairs",
                "tolerance": TOLERANCE,
                "made": f"bench/guard.py --update on {datetime.date.today()}, load average "
                f"{os.getloadavg()[0]:.1f}",
                "machine": {**live.machine(), "trivial app": YARDSTICK},
                "cold": measured["cold"],
                "warm": measured["warm"],
            },
            indent=2,
        )
        + "\n"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--update", action="store_true", help="write the measured ratios")
    parser.add_argument(
        "--gc",
        choices=("config", "on", "off"),
        default="config",
        help="force Streamlit's post-run collection on or off (default: the config's)",
    )
    parser.add_argument(
        "--regress",
        action="store_true",
        help="the deliberate regression: validate every new figure with graph_objects",
    )
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"pairs per page ({ROUNDS})")
    parser.add_argument("--json", type=Path, default=None, help="also write the measurement here")
    args = parser.parse_args(argv)
    pages = app_pages()
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    print(
        "speed guard: live server CPU per page run, attnviz / trivial app without its post-run "
        f"collection, cold (a new text) and warm; load average {load_before:.1f}",
        flush=True,
    )
    with ExitStack() as stack:
        regress = {"PYTHONPATH": str(REGRESSION)} if args.regress else None
        app = stack.enter_context(live.attnviz_server(args.gc, extra_env=regress))
        trivial = stack.enter_context(live.trivial_server(post_run_gc=False))
        measured = measure_pages(app, trivial, pages, args.rounds)
        for row in measured["ms"].values():
            print(
                f"  {row['page']:26s} cold {row['cold_ms']:6.1f} ms  warm {row['warm_ms']:5.1f}"
                f" ms  trivial {row['trivial_ms']:5.1f} ms",
                flush=True,
            )
        if args.update:
            write_baseline(measured)
            print(f"wrote {BASELINE}")
            return 0
        baseline = load_baseline()
        judged: dict = {}
        passed = check(
            pages,
            measured,
            baseline,
            lambda again: measure_pages(app, trivial, again, args.rounds),
            judged,
        )
    wall = time.perf_counter() - started
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        summary = {
            "passed": passed,
            "wall_s": wall,
            "loadavg": [load_before, os.getloadavg()[0]],
            "first": {"cold": measured["cold"], "warm": measured["warm"]},
            "judged": judged,
            "ms": measured["ms"],
        }
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    print(
        f"speed guard {'passed' if passed else 'FAILED'} in {wall:.0f} s "
        f"(load average {load_before:.1f} → {os.getloadavg()[0]:.1f})",
        file=sys.stdout if passed else sys.stderr,
    )
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
