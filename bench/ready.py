"""A class arriving the moment a fresh server says it is ready, beside the trivial app.

    .venv/bin/python bench/ready.py --ready script --rounds 3    # after: ready means warm
    .venv/bin/python bench/ready.py --ready health --rounds 3    # before: ready = it answers
    .venv/bin/python bench/ready.py --ready students --rounds 3  # three students warmed it first

Each round starts two fresh servers at once: attnviz as deployed (the Dockerfile's ENV, which
turns Streamlit's script health check on, and the repository's config) and the trivial app
(bench/trivial/, Streamlit's defaults, with the script health check on too). Each is then
checked with the same readiness check, which ``--ready`` names:

- ``health``: Streamlit's ``/_stcore/health`` says "ok" (the server answers; what the
  deployment asked before issue 35: nothing has run yet);
- ``script``: ``/_stcore/script-health-check`` says "ok" (the deployment's check now: the
  trivial app's answers once its script ran once; attnviz's once every page has run once at
  its defaults, ui/entry.py);
- ``students``: ``/_stcore/health``, then three students each run six pages on each server
  (their own sentences and settings, bench/measure.py), not measured: a server warmed by use.

The moment both are ready, 50 students arrive at each at the same time, from two client
processes (so both servers are measured in the same seconds): every student loads the page,
connects, and runs six pages back to back, one sidebar value changed at each (bench/measure.py's
own-sentence class), the class sharing five sentences (student i types sentence i mod 5); the
trivial app's students draw a new seed at every run. Server CPU per page run (the server
process, every thread, from the first run sent to the last finished) and p95 latency, per
round; their ratio attnviz / trivial. Results are appended to bench/ready-results.md with the
date, the command and the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import live, measure  # noqa: E402
from bench.support.server import HEALTH, READY, wait_healthy  # noqa: E402

RESULTS = ROOT / "bench" / "ready-results.md"
SHARED_SENTENCES = 5
WARM_STUDENTS = 3
CHECK = {"health": HEALTH, "script": READY, "students": HEALTH}
SCRIPT_CHECK_ON = {"STREAMLIT_SERVER_SCRIPT_HEALTH_CHECK_ENABLED": "true"}


def client(url: str, pid: int, label: str, sessions: int, seed: int, trivial: bool) -> dict:
    """One class on one server, arriving as it is (run in a process of its own)."""
    result = measure.own_sentence_class(
        url, (pid,), label, sessions, seed, trivial=trivial, warm=False, shared=SHARED_SENTENCES
    )
    return result.row()


def both_classes(servers: list[tuple[live.Server, bool]], sessions: int, seed: int) -> list[dict]:
    """Both classes at once, each from a client process of its own; their rows, in order."""
    procs = []
    try:
        for server, trivial in servers:
            args = [sys.executable, __file__, "--client", server.url, str(server.pid), server.label]
            args += [str(sessions), str(seed)] + (["--client-trivial"] if trivial else [])
            procs.append(subprocess.Popen(args, stdout=subprocess.PIPE, text=True))
        rows = []
        for (server, _), proc in zip(servers, procs, strict=True):
            out, _ = proc.communicate(timeout=900)
            if proc.returncode != 0:
                raise RuntimeError(f"the client for {server.label} failed ({proc.returncode})")
            rows.append(json.loads(out.strip().splitlines()[-1]))
        return rows
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)


def warm_by_students(server: live.Server, trivial: bool, seed: int) -> None:
    """Three students' six runs each, not measured (a server warmed by use)."""
    measure.own_sentence_class(
        server.url, (server.pid,), "warm", WARM_STUDENTS, seed, trivial=trivial, warm=False
    )


def one_round(ready: str, sessions: int, seed: int) -> dict:
    with contextlib.ExitStack() as stack:
        # Both started before either is waited for, so they start in the same seconds.
        a = stack.enter_context(live.attnviz_server(name="ready-attnviz"))
        b = stack.enter_context(live.trivial_server(extra_env=SCRIPT_CHECK_ON))
        app = live.Server("attnviz", a.url, a.pid)
        trivial = live.Server("trivial app", b.url, b.pid)
        ready_s = {}
        for server in (app, trivial):  # each has answered /_stcore/health already
            ready_s[server.label] = wait_healthy(server.url, timeout=300, path=CHECK[ready])
        if ready == "students":
            warm_by_students(app, False, seed + 7)
            warm_by_students(trivial, True, seed + 7)
            time.sleep(1.0)
        rows = both_classes([(app, False), (trivial, True)], sessions, seed)
    return {"ready_s": ready_s, "rows": rows}


def markdown(rounds: list[dict], ready: str, seed: int, wall: float, load_start: float) -> str:
    command = "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])
    rows = [row for r in rounds for row in r["rows"]]
    lines = [
        f"## {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}: readiness `{ready}` "
        f"({CHECK[ready]}{', then three students' if ready == 'students' else ''})",
        "",
        f"`{command}` (seed {seed}); {wall:.0f} s in all; {os.cpu_count()} cores shared with "
        f"other work (load average {load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the "
        "end). Each round: attnviz and the trivial app started at once, each checked with the "
        f"same readiness check, then {rows[0]['sessions']} students on each at the same time "
        f"({SHARED_SENTENCES} shared sentences, six page runs each).",
        "",
        *live.class_table(rows),
        "",
    ]
    cpu, p95 = [], []
    for i, r in enumerate(rounds):
        a, t = r["rows"]
        cpu.append(a["cpu_ms"] / t["cpu_ms"])
        p95.append(a["p95"] / t["p95"])
        waited = ", ".join(f"{k} {v:.1f} s" for k, v in r["ready_s"].items())
        lines.append(
            f"- round {i + 1}: attnviz {a['cpu_ms']:.1f} ms a run, trivial app "
            f"{t['cpu_ms']:.1f} ms: {cpu[-1]:.2f}x; p95 {a['p95']:.2f} s against "
            f"{t['p95']:.2f} s: {p95[-1]:.2f}x; ready after the server answered: {waited}"
        )
    lines += [
        f"- attnviz / trivial app, CPU per page run: median {statistics.median(cpu):.2f}, "
        f"{min(cpu):.2f}-{max(cpu):.2f}; p95: median {statistics.median(p95):.2f}, "
        f"{min(p95):.2f}-{max(p95):.2f} over {len(rounds)} rounds",
        "",
        "Errors: " + ("; ".join(e for r in rows for e in r["errors"][:5]) or "none."),
        "",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ready", choices=sorted(CHECK), default="script")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else time.time_ns() % 2**31
    started, load_start = time.perf_counter(), os.getloadavg()[0]
    rounds = []
    for i in range(args.rounds):
        result = one_round(args.ready, args.sessions, seed + i)
        rounds.append(result)
        for row in result["rows"]:
            print(f"  {live.class_line(row)}", flush=True)
        print(f"  ready after: {result['ready_s']}", flush=True)
    text = markdown(rounds, args.ready, seed, time.perf_counter() - started, load_start)
    print("\n" + text)
    with args.output.open("a", encoding="utf-8") as out:
        out.write("\n" + text)
    print(f"appended to {args.output}")
    return 1 if any(row["errors"] for r in rounds for row in r["rows"]) else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        url, pid, label, sessions, seed = sys.argv[2:7]
        row = client(url, int(pid), label, int(sessions), int(seed), "--client-trivial" in sys.argv)
        print(json.dumps(row))
        sys.exit(0)
    sys.exit(main())
