"""How well and how fast the "Watch attention learn" defaults train, over many seeds.

    python -m bench.learn_defaults [seeds] [threads]

For each task: the lowest held-out accuracy and attention share on the expected key over seeds
0..seeds-1, and the wall time of one default run (median, min, max). The first run in a process
also imports ``torch._dynamo`` (the optimizer's first use), which is timed separately.
"""

from __future__ import annotations

import statistics
import sys
import time

import torch

from attnviz.models import toy_tasks


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    torch.set_num_threads(threads)
    started = time.perf_counter()
    toy_tasks.train(toy_tasks.LearnConfig(steps=1))
    print(
        f"threads={threads}; first run in the process (1 step): "
        f"{time.perf_counter() - started:.2f} s"
    )
    defaults = toy_tasks.LearnConfig()
    print(
        f"defaults: lr={defaults.lr}, steps={defaults.steps}, heads={defaults.num_heads}, "
        f"batch={defaults.batch_size}, d_out={defaults.d_out}"
    )
    for task in toy_tasks.TASKS:
        results = [toy_tasks.train(toy_tasks.LearnConfig(task=task, seed=s)) for s in range(seeds)]
        seconds = [r.seconds for r in results]
        print(
            f"{task:>6}: accuracy min {min(r.held_out_accuracy for r in results):.4f}, "
            f"share min {min(r.head_share[0] for r in results):.3f} "
            f"mean {statistics.mean(r.head_share[0] for r in results):.3f} "
            f"over {seeds} seeds; run {statistics.median(seconds):.2f} s median "
            f"({min(seconds):.2f}–{max(seconds):.2f})"
        )


if __name__ == "__main__":
    main()
