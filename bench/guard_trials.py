"""Does the speed guard hold under load, and does it still catch a regression?

    .venv/bin/python bench/guard_trials.py --runs 10 --hogs 2            # ~35 min
    .venv/bin/python bench/guard_trials.py --runs 1 --hogs 2 -- --gc on   # must fail

Runs bench/guard.py ``--runs`` times in a row, each with ``--hogs`` busy processes
(``python -c "while True: pass"``) started beside it and stopped after it, and appends a table
to bench/guard-results.md: per run, the verdict, the wall time, the load average, and per page
and kind the ratio judged over its baseline (the spread TOLERANCE in bench/guard.py must cover).
Arguments after ``--`` go to bench/guard.py.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import guard  # noqa: E402

RESULTS = ROOT / "bench" / "guard-results.md"
ARTIFACTS = ROOT / "test-artifacts" / "guard"


def start_hogs(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop_hogs(hogs: list[subprocess.Popen]) -> None:
    for hog in hogs:
        hog.terminate()
    for hog in hogs:
        hog.wait(10)


def one_run(index: int, hogs: int, extra: list[str], tag: str) -> dict:
    out = ARTIFACTS / f"{tag}-{index}.json"
    busy = start_hogs(hogs)
    try:
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, str(ROOT / "bench" / "guard.py"), "--json", str(out), *extra],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
    finally:
        stop_hogs(busy)
    log = ARTIFACTS / f"{tag}-{index}.log"
    log.write_text(proc.stdout + proc.stderr)
    summary = json.loads(out.read_text()) if out.exists() else {}
    return {"exit": proc.returncode, "wall": wall, "summary": summary, "log": log}


def over_baseline(summary: dict, baseline: dict) -> dict[str, float]:
    """Per kind, the largest (judged ratio / baseline ratio) over the pages."""
    worst = {}
    for kind in guard.KINDS:
        judged = summary.get("judged", {}).get(kind) or summary.get("first", {}).get(kind, {})
        worst[kind] = max(
            (r / baseline[kind][p] for p, r in judged.items() if p in baseline.get(kind, {})),
            default=float("nan"),
        )
    return worst


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--hogs", type=int, default=2)
    parser.add_argument("--tag", default=None, help="names the runs' files (test-artifacts/guard)")
    args = parser.parse_args(argv)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tag = args.tag or datetime.datetime.now().strftime("trial-%H%M")
    baseline = guard.load_baseline()
    rows = []
    for i in range(args.runs):
        got = one_run(i, args.hogs, extra, tag)
        s = got["summary"]
        worst = over_baseline(s, baseline) if s else {}
        load = s.get("loadavg", [os.getloadavg()[0]] * 2)
        row = (
            f"| {i + 1} | {'pass' if got['exit'] == 0 else 'FAIL'} | {got['wall']:.0f} | "
            f"{load[0]:.1f} / {load[1]:.1f} | "
            + " | ".join(f"{worst.get(k, float('nan')):.2f}" for k in guard.KINDS)
            + " |"
        )
        rows.append(row)
        print(row, flush=True)
    header = (
        f"\n## {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}: {args.runs} guard run(s), "
        f"{args.hogs} busy process(es) beside each"
        + (f", guard arguments `{' '.join(extra)}`" if extra else "")
        + f"\n\n`python bench/guard_trials.py {' '.join(sys.argv[1:])}`; tolerance "
        f"{guard.TOLERANCE}. Worst page: the largest judged ratio over its baseline.\n\n"
        "| run | verdict | wall (s) | load average before / after | worst cold / baseline | "
        "worst warm / baseline |\n|---:|---|---:|---|---:|---:|\n"
    )
    with open(RESULTS, "a", encoding="utf-8") as f:
        if f.tell() == 0:
            f.write("# The speed guard under load\n\nbench/guard_trials.py appends here.\n")
        f.write(header + "\n".join(rows) + "\n")
    passed = sum(r.split("|")[2].strip() == "pass" for r in rows)
    print(f"{passed} of {len(rows)} passed; appended to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
