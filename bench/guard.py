"""The speed regression guard that CI runs (a step of .ci/run, not a pytest).

For every page at the default settings it measures the median server-side rerun time, and the
one-heatmap reference app's, in the same run, and compares the ratio page / reference with the
committed ratio in bench/baseline.json. A page fails when its ratio exceeds 1.5x the committed
one; failing pages are measured again once before the guard gives up (this machine is shared).

    .venv/bin/python bench/guard.py            # check
    .venv/bin/python bench/guard.py --update   # rewrite the baseline (commit it and say why)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import suite  # noqa: E402
from tests.support.pages import app_pages  # noqa: E402

BASELINE = suite.ROOT / "bench" / "baseline.json"
TOLERANCE = 1.5
RERUNS = 15


def ratios(pages) -> dict[str, float]:
    """Each page's median rerun time over the reference app's, measured alternately."""
    out = {}
    for page in pages:
        page_ms, reference_ms = suite.measure_ratio(page.path, {}, RERUNS)
        out[page.path] = page_ms / reference_ms
        print(
            f"  {page.path:28s} {page_ms:7.1f} ms  reference {reference_ms:6.1f} ms  "
            f"ratio {out[page.path]:.2f}",
            flush=True,
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--update", action="store_true", help="write the measured ratios as the baseline"
    )
    args = parser.parse_args()
    pages = app_pages()
    print("speed guard: page rerun / reference app rerun, default settings", flush=True)
    measured = ratios(pages)
    if args.update:
        # A baseline is the median of three measurements, so one noisy run does not set it.
        more = [ratios(pages), ratios(pages)]
        measured = {p: sorted([measured[p], *(m[p] for m in more)])[1] for p in measured}
        BASELINE.write_text(
            json.dumps(
                {"tolerance": TOLERANCE, "machine": suite.machine(), "ratios": measured}, indent=2
            )
            + "\n"
        )
        print(f"wrote {BASELINE}")
        return 0
    baseline = suite.load_json(BASELINE).get("ratios", {})
    passed = check(pages, measured, baseline, ratios)
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
