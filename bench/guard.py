"""The speed regression guard that CI runs (a step of .ci/run, not a pytest).

It measures what a class pays: on live servers started side by side (bench/live.py), attnviz
as deployed and the trivial one-heatmap app on Streamlit's defaults, each page's server CPU per
warm page run at the default settings, as a ratio app / trivial. A page fails when its ratio
exceeds TOLERANCE x the committed one in bench/baseline.json; failing pages are measured once
more before the guard gives up (this machine is shared).

Why 1.5x: the three measurements behind the committed baseline, on this shared two-core
machine under a load average of ~15, spread by up to 1.46x on one page (the learn page: 0.24,
0.29, 0.35) and by less than 1.3x on the others (CPU time is read in 10 ms ticks, and each
app's cost per run moves with the machine's load), so 1.5x over the median with one retry does
not fail on noise; a regression that adds half a page run's cost (~10 ms a run: an uncached
figure, a table built eagerly) fails, and Streamlit's post-run collection back on (5-8x) fails
every page.

    .venv/bin/python bench/guard.py            # check (about 2 minutes)
    .venv/bin/python bench/guard.py --update   # rewrite the baseline (commit it and say why)
    .venv/bin/python bench/guard.py --gc on    # the deliberate regression: it must fail
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import live  # noqa: E402
from bench.support.pages import app_pages  # noqa: E402

BASELINE = ROOT / "bench" / "baseline.json"
TOLERANCE = 1.5
RUNS = 20  # warm reruns per block: 20 runs of ~20 ms make the 10 ms CPU tick a 2.5% error
BLOCKS = 3


def load_baseline(path: Path = BASELINE) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def measure(app, trivial, pages) -> dict[str, float]:
    costs = live.page_costs(app, trivial, pages, RUNS, BLOCKS)
    return {path: c["ratio"] for path, c in costs.items()}


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
    args = parser.parse_args(argv)
    pages = app_pages()
    print(
        "speed guard: live server CPU per warm page run, attnviz / trivial app, default settings",
        flush=True,
    )
    with ExitStack() as stack:
        app = stack.enter_context(live.attnviz_server(args.gc))
        trivial = stack.enter_context(live.trivial_server())
        measured = measure(app, trivial, pages)
        if args.update:
            # A baseline is the median of three measurements, so one noisy run does not set it.
            more = [measure(app, trivial, pages), measure(app, trivial, pages)]
            measured = {p: sorted([measured[p], *(m[p] for m in more)])[1] for p in measured}
            BASELINE.write_text(
                json.dumps(
                    {
                        "what": "live server CPU per warm page run, attnviz / trivial app "
                        "(bench/live.py), default settings",
                        "tolerance": TOLERANCE,
                        "machine": live.machine(),
                        "ratios": measured,
                    },
                    indent=2,
                )
                + "\n"
            )
            print(f"wrote {BASELINE}")
            return 0
        baseline = load_baseline().get("ratios", {})
        passed = check(pages, measured, baseline, lambda again: measure(app, trivial, again))
    print(
        "speed guard passed" if passed else "speed guard FAILED",
        file=sys.stdout if passed else sys.stderr,
    )
    return 0 if passed else 1


def check(pages, measured: dict, baseline: dict, remeasure) -> bool:
    """True when every page has a baseline and stays within TOLERANCE x its baseline ratio;
    pages over the limit are measured once more (``remeasure(pages) -> ratios``)."""
    failing = [
        p for p in pages if p.path in baseline and measured[p.path] > TOLERANCE * baseline[p.path]
    ]
    if failing:
        print(
            f"{len(failing)} page(s) over {TOLERANCE}x their baseline ratio; measuring them again"
        )
        measured = {**measured, **remeasure(failing)}
        failing = [p for p in failing if measured[p.path] > TOLERANCE * baseline[p.path]]
    missing = [p.path for p in pages if p.path not in baseline]
    for p in pages:
        if p.path in baseline:
            state = "FAIL" if p in failing else "ok"
            print(
                f"  {state:4s} {p.path:28s} ratio {measured[p.path]:.2f} "
                f"(baseline {baseline[p.path]:.2f}, limit {TOLERANCE * baseline[p.path]:.2f})"
            )
    if missing:
        print(f"  no baseline for {', '.join(missing)}: run bench/guard.py --update and commit why")
    return not failing and not missing


if __name__ == "__main__":
    sys.exit(main())
