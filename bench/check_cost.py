"""What the live checks of pages 3, 4 and 6 cost, in one process per code base, side by side.

    .venv/bin/python bench/check_cost.py                      # this checkout alone
    .venv/bin/python bench/check_cost.py /path/to/before .    # two checkouts, side by side

Each checkout is measured in a child process of its own (its ``attnviz`` on ``sys.path``, one
torch thread as the server uses), in alternating rounds so that a busy moment of the machine hits both alike; the table gives the
median of every round's median. Times, from traces already computed (a cached page run):

- ``checks``: the checks alone, figures excluded. Page 3: the causal lesson's checks (masking
  routes, no future leak, SDPA, eval ignores dropout, the batch). Page 4: the five live checks
  and the wrapper equivalence. Page 6: the side-by-side comparison (ours, SDPA and
  nn.MultiheadAttention, with their checks).
- ``lesson``: the whole lesson object as the page builds it (figures included).
- ``references``: where the checkout has them (``implementations.references``), the independent
  computations pages 4 and 6 share, run once per setting and cached like the trace: a cold page
  run pays them once, on top of ``checks``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
TEXT = "Your journey starts with one step"
TEXT2 = "Every effort moves you forward"
LONG = " ".join(["Every effort moves you forward, and every step counts."] * 6)  # 66 tokens
CASES = ("defaults", "training", "gpt2 small")


def _case(name: str):
    from attnviz.core.settings import GPT2_SMALL, Settings

    if name == "defaults":
        return TEXT, Settings()
    if name == "training":
        return TEXT, Settings(training=True, dropout=0.5)
    return LONG, Settings(**GPT2_SMALL)


def _median_s(fn, repeats: int) -> float:
    fn()  # warm: allocations, kernel choice, compiled bug code
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure(repeats: int) -> dict[str, float]:
    """One round in this process: milliseconds per (case, page, what)."""
    import torch

    torch.set_num_threads(1)  # as the server runs (attnviz/server/runtime.py: DEFAULT_THREADS)

    from attnviz.core import trace as T
    from attnviz.models import implementations as impl
    from attnviz.teach import checks as C
    from attnviz.teach import prepare as lesson
    from attnviz.teach.lessons import causal as CL
    from attnviz.teach.lessons import multihead as ML
    from attnviz.teach.lessons import pytorch as PL

    new = hasattr(impl, "references")
    out: dict[str, float] = {}
    for case in CASES:
        text, s = _case(case)
        prep, _ = lesson.within_context(lesson.prepare(text, s), s.context_length)
        causal = lesson.causal(prep, s)
        batch = lesson.prepare_batch(text, TEXT2, s)
        bt = lesson.causal_batch(batch, s)

        def page3_checks(causal=causal, bt=bt):
            CL._checks(causal, False)
            C.masking_routes_agree(
                T.renormalized_weights(causal), causal.attn_weights, causal.scaled_scores
            )
            C.no_future_leak(causal.spec.build().eval(), causal.inputs)
            C.batch_rows_independent(bt.spec.build().eval(), bt.inputs)

        def page3_lesson(causal=causal, bt=bt, batch=batch, s=s):
            CL.causal_lesson(causal, None, bt, batch.labels, settings=s, book=False)

        trace = lesson.multihead(prep, s)
        if new:
            checked = ML.eval_trace(trace)
            refs = impl.references(checked)

            def page4_checks(checked=checked, refs=refs):
                ML._checks(checked, refs)
                impl.wrapper_check(checked, refs)

            def page4_lesson(trace=trace, refs=refs, checked=checked):
                ML.build(trace, None, False, refs, checked)

            def page6_checks(checked=checked, refs=refs):
                return impl.side_from(checked, refs)

            def references(checked=checked):
                impl.references(checked)

            out[f"{case}|4+6|references"] = _median_s(references, repeats) * 1e3
        else:
            checked = trace

            def page4_checks(trace=trace):
                ML._checks(trace)
                C.wrapper_equals_split(trace.spec.build(), trace.inputs)

            def page4_lesson(trace=trace):
                ML.build(trace, None, False)

            def page6_checks(trace=trace):
                return impl.side_by_side(trace.spec.build(), trace.inputs)

        side = page6_checks()

        def page6_lesson(checked=checked, side=side, s=s):
            PL.lesson(checked, side, training=s.training)

        for page, what, fn in (
            ("3", "checks", page3_checks),
            ("3", "lesson", page3_lesson),
            ("4", "checks", page4_checks),
            ("4", "lesson", page4_lesson),
            ("6", "checks", page6_checks),
            ("6", "lesson", page6_lesson),
        ):
            out[f"{case}|{page}|{what}"] = _median_s(fn, repeats) * 1e3
    return out


def _child(root: Path, repeats: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.setdefault("TIKTOKEN_CACHE_DIR", str(root.parent / "shared" / "tiktoken_cache"))
    done = subprocess.run(
        [sys.executable, str(HERE), "--measure", "--repeats", str(repeats)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="*", default=["."], help="checkouts to compare")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per round")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        sys.path.insert(0, os.getcwd())
        print(json.dumps(measure(args.repeats)))
        return
    roots = [Path(r).resolve() for r in args.roots]
    rounds: dict[Path, list[dict[str, float]]] = {root: [] for root in roots}
    for _ in range(args.rounds):
        for root in roots:  # alternating: a busy moment hits every checkout alike
            rounds[root].append(_child(root, args.repeats))
    keys = sorted({k for results in rounds.values() for r in results for k in r})
    head = " | ".join(root.name or str(root) for root in roots)
    print(f"| case | page | what | {head} (ms) |")
    print("|---|---|---|" + "---|" * len(roots))
    for key in keys:
        case, page, what = key.split("|")
        cells = []
        for root in roots:
            values = [r[key] for r in rounds[root] if key in r]
            cells.append(f"{statistics.median(values):.1f}" if values else "–")
        print(f"| {case} | {page} | {what} | " + " | ".join(cells) + " |")
    print(
        f"\n{args.rounds} rounds per checkout, each the median of {args.repeats} timed calls; "
        f"torch {_torch_version()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}."
    )


def _torch_version() -> str:
    import torch

    return torch.__version__


if __name__ == "__main__":
    main()
