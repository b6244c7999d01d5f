"""What a class poll costs: CPU per answer and per tally read, on both backends, side by side.

One run, one table. For each backend (in process; Redis on a loopback redis-server started
here) a poll is filled with a class's answers, then timed in blocks that alternate with a
trivial comparison (a dict update under a lock, the least an in-process store could do):

- answer: a student changes their answer (``PollStore.answer``: the poll read, the HMAC of the
  session id, the one-answer-per-session write), cycling over the class;
- tally read: the projector's ``presenter_view`` (every answer of the round read and counted);
- phone view: a phone's ``student_view`` with its own answer (spread hidden).

CPU is the calling thread's (``time.thread_time``) and, for Redis, the server's own (``INFO
cpu``, microsecond resolution), each per operation, median over the blocks. The comparison with
a page run comes later, with the UI that calls this store (bench/live.py measures page runs).

    .venv/bin/python bench/polls.py                      # about 20 s
    .venv/bin/python bench/polls.py --class-size 500     # a full poll (Limits.max_answers)
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from attnviz.classroom.polls import (  # noqa: E402
    Answered,
    Choice,
    Limits,
    MemoryPollStore,
    PollQuestion,
    PollStore,
    PresenterView,
    StudentView,
)
from attnviz.classroom.redis_store import RedisPollStore  # noqa: E402
from bench.support.redis_server import RedisServer  # noqa: E402

OPTIONS = tuple(f"{i}: token" for i in range(8))


def question() -> PollQuestion:
    return PollQuestion(
        payload={"kind": "argmax", "query": 3, "prompt": "Which key does query 3 weigh most?"},
        settings={"text": "Your journey starts with one step", "d_in": 8, "d_out": 8},
        answer=Choice(OPTIONS),
        key=1,
        misconceptions={"reading a column instead of a row": 2},
    )


class Meter:
    """CPU of this thread and of the Redis server (if any) over a block of operations."""

    def __init__(self, store: PollStore | None) -> None:
        self.client = store.client if isinstance(store, RedisPollStore) else None

    def server_cpu(self) -> float:
        if self.client is None:
            return 0.0
        info = self.client.info("cpu")
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])

    def run(self, op: Callable[[int], object], ops: int) -> tuple[float, float, float]:
        """(app CPU, server CPU, wall) per operation, in microseconds."""
        server0 = self.server_cpu()
        wall0, cpu0 = time.perf_counter(), time.thread_time()
        for i in range(ops):
            op(i)
        cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
        server = self.server_cpu() - server0
        return cpu / ops * 1e6, server / ops * 1e6, wall / ops * 1e6


def workloads(store: PollStore, class_size: int) -> dict[str, Callable[[int], object]]:
    poll = store.create(question())
    assert not hasattr(poll, "reason"), poll
    code, secret = poll.code, poll.secret  # type: ignore[union-attr]
    sessions = [f"session-{i:04d}-{os.urandom(8).hex()}" for i in range(class_size)]
    for i, s in enumerate(sessions):
        assert isinstance(store.answer(code, s, 1, i % len(OPTIONS)), Answered)

    def answer(i: int) -> object:
        result = store.answer(code, sessions[i % class_size], 1, (i * 7) % len(OPTIONS))
        assert isinstance(result, Answered) and result.replaced, result
        return result

    def tally(i: int) -> object:
        view = store.presenter_view(code, secret)
        assert isinstance(view, PresenterView) and view.rounds[0].answered == class_size
        return view

    def phone(i: int) -> object:
        view = store.student_view(code, sessions[i % class_size])
        assert isinstance(view, StudentView) and view.your_answer is not None
        return view

    return {"answer": answer, "tally read": tally, "phone view": phone}


def trivial(class_size: int) -> Callable[[int], object]:
    """The comparison: one dict entry replaced under a lock."""
    lock = threading.Lock()
    answers: dict[str, int] = {}
    sessions = [f"session-{i:04d}" for i in range(class_size)]

    def update(i: int) -> object:
        with lock:
            answers[sessions[i % class_size]] = (i * 7) % len(OPTIONS)
        return None

    return update


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--class-size", type=int, default=50)
    parser.add_argument("--ops", type=int, default=2000, help="answers per block")
    parser.add_argument("--reads", type=int, default=500, help="tally and phone reads per block")
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "polls-results.md")
    args = parser.parse_args()

    # What a store costs, not what it refuses: the class's pace and each browser's sends a
    # minute are lifted (a block changes thousands of answers in a few seconds).
    limits = Limits(join_burst=10**9, joins_per_minute=10**9, sends_per_minute=10**9)
    with RedisServer() as server:
        stores: dict[str, PollStore] = {
            "in process": MemoryPollStore(limits),
            "Redis (loopback)": RedisPollStore.from_url(server.url, limits),
        }
        loads = {name: workloads(store, args.class_size) for name, store in stores.items()}
        meters = {name: Meter(store) for name, store in stores.items()}
        baseline = trivial(args.class_size)
        samples: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
        load_start = os.getloadavg()[0]
        for block in range(args.blocks):
            # Alternate the order block by block so neither backend always runs first.
            names = list(stores) if block % 2 == 0 else list(reversed(stores))
            samples.setdefault(("dict update under a lock", "answer"), []).append(
                Meter(None).run(baseline, args.ops)
            )
            for name in names:
                for what, op in loads[name].items():
                    ops = args.ops if what == "answer" else args.reads
                    samples.setdefault((name, what), []).append(meters[name].run(op, ops))
        load_end = os.getloadavg()[0]
        redis_version = stores["Redis (loopback)"].client.info("server")["redis_version"]  # type: ignore[attr-defined]

    def median(key: tuple[str, str], i: int) -> float:
        return statistics.median(s[i] for s in samples[key])

    lines = [
        f"# Class polls: CPU per operation ({datetime.datetime.now():%Y-%m-%d %H:%M})",
        "",
        f"`bench/polls.py --class-size {args.class_size} --ops {args.ops} --reads {args.reads}"
        f" --blocks {args.blocks}`; Python {platform.python_version()}, redis-server"
        f" {redis_version}; load average {load_start:.1f} at the start, {load_end:.1f} at the end."
        f" A class of {args.class_size}: every tally read counts {args.class_size} answers."
        " Median of the blocks, microseconds per operation.",
        "",
        "| store | operation | app CPU (µs) | Redis CPU (µs) | wall (µs) | app CPU / dict update |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    base = median(("dict update under a lock", "answer"), 0)
    for key in samples:
        app, srv, wall = (median(key, i) for i in range(3))
        store, what = key
        redis_cell = f"{srv:.1f}" if store.startswith("Redis") else "–"
        lines.append(
            f"| {store} | {what} | {app:.1f} | {redis_cell} | {wall:.1f} | {app / base:,.0f}× |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text)
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
