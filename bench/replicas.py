"""Scale out on one box: the own-sentence class against one replica and against two, both
behind the repository's HAProxy config (deploy/haproxy.cfg, Debian's haproxy, on loopback).

    .venv/bin/python bench/replicas.py                 # 50 sessions, ~6 minutes
    .venv/bin/python bench/replicas.py --sessions 20 --repeat 2

Two attnviz servers run as deployed (bench/live.py: the Dockerfile's ENV, the repository's
config), with one cookie secret, as deploy/compose.yaml gives them. "One replica" is the same
config with both of its server lines pointing at replica A, so the balancer's work is the same
in both rows; "two replicas" points them at A and B. The class is bench/measure.py's: N sessions
at once, each with a sentence of its own, changing one sidebar value at each of six page runs,
each session kept on its replica by the config's cookie. Server CPU is the sum over the replicas
behind the balancer. Every row records the machine's load average (this machine is shared).
Writes bench/replicas-results.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import live, measure  # noqa: E402
from bench.support.haproxy import running_haproxy  # noqa: E402

RESULTS = ROOT / "bench" / "replicas-results.md"
LOGS = ROOT / "test-artifacts"


def one_class(proxy_for, replicas: list, sessions: int, seed: int) -> dict:
    """The class through a balancer in front of ``replicas`` (one Server, or two)."""
    a = replicas[0]
    b = replicas[1] if len(replicas) > 1 else replicas[0]
    label = f"{len(replicas)} replica{'s' if len(replicas) > 1 else ''} behind HAProxy"
    with proxy_for(a.url, b.url, label) as proxy:
        pids = tuple(r.pid for r in replicas)
        print(f"{label}: {sessions} sessions … (load {os.getloadavg()[0]:.1f})", flush=True)
        result = measure.own_sentence_class(
            proxy, pids, label, sessions, seed, warm_urls=[r.url for r in replicas]
        )
    row = result.row()
    print(f"  {live.class_line(row)}; sessions per replica {row['sticky']}", flush=True)
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=1, help="rounds of (one, two) (1)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else time.time_ns() % 2**31
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    rows: list[dict] = []
    failed: list[str] = []
    secret = {"STREAMLIT_SERVER_COOKIE_SECRET": "bench-" + os.urandom(16).hex()}
    with ExitStack() as stack:
        a = stack.enter_context(live.attnviz_server(extra_env=secret, name="replica-a"))
        b = stack.enter_context(live.attnviz_server(extra_env=secret, name="replica-b"))

        def proxy_for(first: str, second: str, label: str):
            log = LOGS / f"replicas-haproxy-{label.split()[0]}.log"
            return running_haproxy(first, second, log)

        for round_ in range(args.repeat):
            # A new seed per class: every sentence is new to both replicas.
            for replicas, offset in (([a], 0), ([a, b], 5)):
                try:
                    rows.append(
                        one_class(proxy_for, replicas, args.sessions, seed + 10 * round_ + offset)
                    )
                except RuntimeError as exc:  # a balancer that never came up: say so, go on
                    print(f"  not measured: {exc}", flush=True)
                    failed.append(f"round {round_ + 1}, {len(replicas)} replica(s): {exc}")
    wall = time.perf_counter() - started
    text = markdown(rows, args, seed, wall, load_start, failed)
    print("\n" + text)
    args.output.write_text(text, encoding="utf-8")
    print(f"written to {args.output}")
    return 1 if failed or any(r["errors"] for r in rows) else 0


def markdown(
    rows: list[dict], args, seed: int, wall: float, load_start: float, failed: list[str]
) -> str:
    command = "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])
    lines = [
        "# One replica or two, on one machine",
        "",
        f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, `{command}` (seed {seed}); "
        f"{wall:.0f} s in all; {os.cpu_count()} cores shared with other work (load average "
        f"{load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end). The own-sentence "
        "class (bench/measure.py) through deploy/haproxy.cfg; one replica = both server lines on "
        "replica A. Server CPU summed over the replicas behind the balancer.",
        "",
        *live.class_table(rows),
        "",
        "Sessions per replica (the config's cookie): "
        + "; ".join(f"{r['label']}: {r['sticky']}" for r in rows),
        "",
        "Errors: " + ("; ".join(e for r in rows for e in r["errors"][:5]) or "none."),
        *(["", "Not measured: " + "; ".join(failed)] if failed else []),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
