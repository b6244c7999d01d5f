"""Two classes at once: attnviz as deployed and one other server, measured in the same seconds.

    .venv/bin/python bench/pair.py --trivial --rounds 6           # attnviz beside the trivial app
    .venv/bin/python bench/pair.py --env ATTNVIZ_PAGE_TURNS=2     # beside itself with a switch changed
    .venv/bin/python bench/pair.py --rev 80f4f3b --rounds 4       # beside an earlier commit

Each round starts two fresh servers: attnviz from this tree as deployed (A), and B, one of the
trivial app (``--trivial``), attnviz with more environment (``--env``, repeatable), or attnviz
from another commit (``--rev``, the tree ``git archive`` gives). After a short warm-up of each,
both run bench/measure.py's own-sentence class (50 sessions, each with a sentence of its own,
changing one sidebar value at each of six page runs) at the same time, from two client
processes. bench/gate.py runs its classes one after the other, half a minute apart, and on this
shared machine the load and the host's speed can change in that time: the trivial app's class
run measured 55.9 ms at 12:54 and 21.9 ms at 13:39 (bench/gate-results.md). Run at once, both
servers meet the same conditions, so the ratio B / A of their CPU per page run moves much less:
a change since removed (a widget key lookup) measured 0.94-0.97 over four paired rounds, where
back-to-back rounds of the same change had read 0.75-0.99. Which of the two clients starts
first alternates by round. bench/pair-results.md gets the table. A's switch
(``ATTNVIZ_PAGE_TURNS``) is set to its default, whatever the shell exports.
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
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from attnviz.server import gate  # noqa: E402
from bench import live, measure  # noqa: E402

RESULTS = ROOT / "bench" / "pair-results.md"
DEFAULT_SWITCHES = {gate.ENV: str(gate.DEFAULT_TURNS)}
WARM_SESSIONS = 5  # a few sessions' runs first, not measured: imports, the first traces


def parse_env(pairs: list[str]) -> dict[str, str]:
    """``["K=V", ...]`` as a dict; a pair without "=" is an error, not a silent skip."""
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--env wants KEY=VALUE, not {pair!r}")
        env[key] = value
    return env


def server_env(extra_env: dict[str, str]) -> dict[str, str]:
    """What a server gets on top of the image's environment: attnviz's own switches at their
    defaults whatever this shell exports (so A is as deployed), then ``extra_env``."""
    return {**DEFAULT_SWITCHES, **extra_env}


@contextlib.contextmanager
def revision_tree(rev: str):
    """The files of commit ``rev`` in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="pair-") as folder:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        yield Path(folder)


def client(url: str, pid: int, label: str, sessions: int, seed: int, trivial: bool) -> dict:
    """One class on one server (run in a process of its own by :func:`run_pair`)."""
    return measure.own_sentence_class(url, (pid,), label, sessions, seed, trivial=trivial).row()


def run_pair(
    a: live.Server, b: live.Server, b_trivial: bool, sessions: int, seed: int, b_first: bool
):
    """Both classes at once, each from a client process of its own; (A's row, B's row)."""
    jobs = [(a, False), (b, b_trivial)]
    if b_first:
        jobs.reverse()
    procs = []
    rows = {}
    try:
        for server, trivial in jobs:
            args = [sys.executable, __file__, "--client", server.url, str(server.pid), server.label]
            args += [str(sessions), str(seed)] + (["--client-trivial"] if trivial else [])
            procs.append((server.label, subprocess.Popen(args, stdout=subprocess.PIPE, text=True)))
        for label, proc in procs:
            out, _ = proc.communicate(timeout=900)
            if proc.returncode != 0:
                raise RuntimeError(f"the client for {label} failed ({proc.returncode})")
            rows[label] = json.loads(out.strip().splitlines()[-1])
    finally:
        for _, proc in procs:  # one failed or timed out: the other stops too
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
    return rows[a.label], rows[b.label]


def summary(pairs: list[tuple[dict, dict]]) -> list[str]:
    """Per round, B's CPU per page run over A's; then their median and range."""
    ratios = [b["cpu_ms"] / a["cpu_ms"] for a, b in pairs]
    lines = [
        f"- round {i + 1}: {b['label']} {b['cpu_ms']:.1f} ms, {a['label']} {a['cpu_ms']:.1f} ms "
        f"a page run: {a['label']} is {1 / r:.2f}x {b['label']}"
        for i, ((a, b), r) in enumerate(zip(pairs, ratios, strict=True))
    ]
    inverse = [1 / r for r in ratios]
    lines.append(
        f"- {pairs[0][0]['label']} / {pairs[0][1]['label']}: median {statistics.median(inverse):.2f}, "
        f"from {min(inverse):.2f} to {max(inverse):.2f} over {len(pairs)} rounds"
    )
    return lines


def markdown(pairs, described: str, seed: int, wall: float, load_start: float) -> str:
    command = "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])
    rows = [row for pair in pairs for row in pair]
    errors = "; ".join(e for r in rows for e in r["errors"][:5]) or "none."
    return "\n".join(
        [
            "# Two classes at once: attnviz beside " + described,
            "",
            f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, `{command}` (seed {seed}); "
            f"{wall:.0f} s in all; {os.cpu_count()} cores shared with other work (load average "
            f"{load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end). Each round: two "
            "fresh servers, each warmed up, then the own-sentence class (bench/measure.py) on both "
            "at the same time, from two client processes (so each server's CPU per run is measured "
            "in the same seconds as the other's; the clients share the machine with both).",
            "",
            *live.class_table(rows),
            "",
            "Server CPU per page run, in the same seconds:",
            "",
            *summary(pairs),
            "",
            "Errors: " + errors,
            "",
        ]
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--trivial", action="store_true", help="B is the trivial app")
    which.add_argument("--env", action="append", metavar="K=V", help="B is attnviz with K=V")
    which.add_argument("--rev", help="B is attnviz at this git revision")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    env = parse_env(args.env or [])
    seed = args.seed if args.seed is not None else time.time_ns() % 2**31
    if args.trivial:
        described, b_label = "the trivial app", "trivial app"
    elif args.rev:
        described, b_label = f"attnviz at {args.rev}", f"attnviz at {args.rev}"
    else:
        switches = " ".join(f"{k}={v}" for k, v in env.items())
        described, b_label = f"attnviz with {switches}", f"attnviz with {switches}"
    started, load_start = time.perf_counter(), os.getloadavg()[0]
    pairs = []
    with contextlib.ExitStack() as trees:
        b_tree = trees.enter_context(revision_tree(args.rev)) if args.rev else ROOT
        for round_ in range(args.rounds):
            with contextlib.ExitStack() as stack:
                a = stack.enter_context(
                    live.attnviz_server(extra_env=server_env({}), name="pair-a")
                )
                a = live.Server("attnviz", a.url, a.pid)
                if args.trivial:
                    b = stack.enter_context(live.trivial_server())
                    b = live.Server(b_label, b.url, b.pid)
                else:
                    b = stack.enter_context(
                        live.attnviz_server(extra_env=server_env(env), name="pair-b", root=b_tree)
                    )
                    b = live.Server(b_label, b.url, b.pid)
                measure.own_sentence_class(a.url, (a.pid,), "warm", WARM_SESSIONS, 1)
                measure.own_sentence_class(
                    b.url, (b.pid,), "warm", WARM_SESSIONS, 1, trivial=args.trivial
                )
                pair = run_pair(
                    a, b, args.trivial, args.sessions, seed + round_, b_first=bool(round_ % 2)
                )
            pairs.append(pair)
            for row in pair:
                print(f"  {live.class_line(row)}", flush=True)
    text = markdown(pairs, described, seed, time.perf_counter() - started, load_start)
    print("\n" + text)
    args.output.write_text(text, encoding="utf-8")
    print(f"written to {args.output}")
    return 1 if any(r["errors"] for pair in pairs for r in pair) else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        url, pid, label, sessions, seed = sys.argv[2:7]
        row = client(url, int(pid), label, int(sessions), int(seed), "--client-trivial" in sys.argv)
        print(json.dumps(row))
        sys.exit(0)
    sys.exit(main())
