"""Page turns on and off (attnviz/server/gate.py), beside the trivial app, in one run.

    .venv/bin/python bench/gate.py                  # 50 sessions, one round, ~2 minutes
    .venv/bin/python bench/gate.py --repeat 3       # rounds of (turns on, turns off, trivial)

Each round runs bench/measure.py's own-sentence class (N sessions at once, each with a sentence
of its own, changing one sidebar value at each of six page runs) three times with one seed: on
an attnviz server as deployed with its default page turns (one page run at a time), on one with
``ATTNVIZ_PAGE_TURNS=0`` (every session's run at once, as before the gate), and on the trivial
app. Each server, the trivial app's too, is started fresh for its class (nothing cached from
another class), and the classes run back to back, so the machine's load moves them alike. Server
CPU per page run and the latency of each run (p50, p95) are the class's; bench/gate-results.md
gets the table. ``--default-only``: attnviz as deployed and the trivial app, nothing else.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from attnviz.server import gate  # noqa: E402
from bench import live, measure  # noqa: E402

RESULTS = ROOT / "bench" / "gate-results.md"
WAYS = (("page turns on (default)", {}), ("page turns off", {gate.ENV: "0"}))


def main(argv=None, ways=WAYS, results: Path = RESULTS, title: str | None = None, doc=None) -> int:
    """``ways``: (label, environment) of the attnviz servers each round compares, the first
    being the default."""
    parser = argparse.ArgumentParser(
        description=doc or __doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--output", type=Path, default=results)
    parser.add_argument(
        "--default-only", action="store_true", help="only the first way beside the trivial app"
    )
    args = parser.parse_args(argv)
    if args.default_only:
        ways = ways[:1]
    seed = args.seed if args.seed is not None else time.time_ns() % 2**31
    started, load_start = time.perf_counter(), os.getloadavg()[0]
    rows: list[dict] = []
    for round_ in range(args.repeat):
        class_seed = seed + round_
        for label, env in ways:
            with live.attnviz_server(extra_env=env, name="gate") as app:
                result = measure.own_sentence_class(
                    app.url, app.pids, label, args.sessions, class_seed
                )
            rows.append(result.row())
            print(f"  {live.class_line(rows[-1])}", flush=True)
        # A fresh trivial server each round too, as the attnviz ones are: no round's reference
        # carries what an earlier class left in its process.
        with live.trivial_server() as trivial:
            result = measure.own_sentence_class(
                trivial.url, trivial.pids, "trivial app", args.sessions, class_seed, trivial=True
            )
        rows.append(result.row())
        print(f"  {live.class_line(rows[-1])}", flush=True)
    text = markdown(rows, seed, time.perf_counter() - started, load_start, ways, title)
    print("\n" + text)
    args.output.write_text(text, encoding="utf-8")
    print(f"written to {args.output}")
    return 1 if any(r["errors"] for r in rows) else 0


def ratios(rows: list[dict], ways) -> list[str]:
    """Per round, the CPU per run of each way over the trivial app's and over the first way's:
    the ratios measured side by side, which the machine's load moves less than the ms."""
    per_round = len(ways) + 1
    lines = []
    for start in range(0, len(rows) - per_round + 1, per_round):
        block = rows[start : start + per_round]
        trivial, first = block[-1]["cpu_ms"], block[0]["cpu_ms"]
        said = [
            f"{r['label']} {r['cpu_ms'] / trivial:.2f}x the trivial app"
            + (f", {r['cpu_ms'] / first:.2f}x {block[0]['label']}" if i else "")
            for i, r in enumerate(block[:-1])
        ]
        lines.append(f"- round {start // per_round + 1}: " + "; ".join(said))
    return lines


def markdown(
    rows: list[dict], seed: int, wall: float, load_start: float, ways=WAYS, title=None
) -> str:
    command = "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])
    return (
        "\n".join(
            [
                f"# {title or 'Page turns: one page run at a time, or all at once'}",
                "",
                f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, `{command}` (seed {seed}); "
                f"{wall:.0f} s in all; {os.cpu_count()} cores shared with other work (load average "
                f"{load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end). The "
                "own-sentence class (bench/measure.py) on a fresh attnviz server for each of: "
                + ", ".join(
                    f"{label} ({' '.join(f'`{k}={v}`' for k, v in env.items()) or 'as deployed'})"
                    for label, env in ways
                )
                + "; then on the trivial app, in each round.",
                "",
                *live.class_table(rows),
                "",
                "CPU per page run, side by side in each round:",
                "",
                *ratios(rows, ways),
                "",
                "Errors: " + ("; ".join(e for r in rows for e in r["errors"][:5]) or "none."),
            ]
        )
        + "\n"
    )


if __name__ == "__main__":
    sys.exit(main())
