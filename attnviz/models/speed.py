"""The app's one timing harness (:func:`race`), and page 4's timing of the wrapper against the
weight split: same arithmetic, 3H small matmuls against 3.

:func:`race` times callables interleaved, round after round; page 1's loop against ``X @ X.T``
(``attnviz.teach.lessons.simplified.time_loop``), page 4 (:func:`wrapper_against_split`) and
page 6 (``attnviz.models.implementations.benchmark``) all time with it. Page 4 runs its
timing only when a student presses its button, and caches the result per process and shape
(everything below that changes the work, ``qkv_bias`` included).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping

import torch

from attnviz.core.trace import ModuleSpec
from attnviz.server import gate

# Page 4's timing.
WARM_UP = 3
BUDGET_S = 2.0  # keep timing interleaved rounds for this long ...
MIN_RUNS = 5  # ... but at least this many (within twice the budget) ...
MAX_RUNS = 200  # ... and at most this many

# The race: unless told, each sample runs a call ``number`` times, so a sample lasts at least
# this long (timer resolution and one-off hiccups matter less), up to this many calls per sample.
# Calls quicker than CHEAP_CALL_S are timed a few times to find that number.
MIN_SAMPLE_S = 2e-3
MAX_CALLS_PER_SAMPLE = 200
CHEAP_CALL_S = 0.05


def race(
    calls: Mapping[str, Callable[[torch.Tensor], object]],
    x: torch.Tensor,
    budget_s: float,
    min_rounds: int,
    max_rounds: int,
    number: int | None = None,
) -> tuple[dict[str, list[float]], int, int]:
    """Round-robin: each round times every call on ``x`` once, starting each round with the
    next one, so a slow moment of the machine hits all of them alike. Each call should have
    run once already (allocations, kernel choice). Rounds go on until ``budget_s`` has passed
    and ``min_rounds`` are done, or ``max_rounds`` are, or twice the budget has passed.

    ``number``: calls per sample; by default found from the quickest call (every sample then
    lasts at least MIN_SAMPLE_S). Returns the per-call seconds of every sample, the number of
    rounds and the calls per sample."""
    keys = list(calls)
    if number is None:
        one_call = {}
        for key in keys:
            times = []
            for _ in range(4):
                start = time.perf_counter()
                calls[key](x)
                times.append(time.perf_counter() - start)
                if times[0] >= CHEAP_CALL_S:
                    break  # one call per sample anyway: a second look costs too much
            one_call[key] = min(times)  # the quickest, so one hiccup does not set the pace
        quickest = max(min(one_call.values()), 1e-9)
        number = min(MAX_CALLS_PER_SAMPLE, max(1, math.ceil(MIN_SAMPLE_S / quickest)))
    samples: dict[str, list[float]] = {key: [] for key in keys}
    rounds, start_all = 0, time.perf_counter()
    hard_cap_s = 2 * budget_s  # a machine far slower than expected still stops
    while rounds < max_rounds:
        shift = rounds % len(keys)
        for key in keys[shift:] + keys[:shift]:
            call = calls[key]
            start = time.perf_counter()
            for _ in range(number):
                call(x)
            samples[key].append((time.perf_counter() - start) / number)
        rounds += 1
        elapsed = time.perf_counter() - start_all
        if (rounds >= min_rounds and elapsed >= budget_s) or elapsed >= hard_cap_s:
            break
    return samples, rounds, number


def wrapper_against_split(
    batch: int,
    tokens: int,
    d_in: int,
    d_out: int,
    num_heads: int,
    context_length: int,
    qkv_bias: bool,
) -> dict:
    """Median forward time (seconds) of MultiHeadAttentionWrapper (``d_out // num_heads`` per
    head) and MultiHeadAttention at one shape, in eval mode, runs interleaved so that both see
    the same machine load. Returns ``{"median": {"wrapper": s, "weight split": s}, "runs": n,
    "parts": {part: s}}``: ``parts`` times, in the same loop, the pieces where the two differ
    (see :data:`PARTS`), so a page can say why one was faster from what was measured.
    """
    gate.give_up()  # seconds of timing: the other sessions' page runs go meanwhile
    head_width = d_out // num_heads
    wrapper = ModuleSpec("wrapper", d_in, head_width, context_length, 0.0, num_heads, qkv_bias, 0)
    split = ModuleSpec("mha", d_in, d_out, context_length, 0.0, num_heads, qkv_bias, 0)
    modules = {"wrapper": wrapper.build().eval(), "weight split": split.build().eval()}
    x = torch.randn(batch, tokens, d_in, generator=torch.Generator().manual_seed(0))
    calls: dict[str, Callable[[torch.Tensor], object]] = dict(modules)
    calls.update(_parts(modules["wrapper"], modules["weight split"], num_heads, x.shape))
    with torch.inference_mode():
        for _ in range(WARM_UP):
            for call in calls.values():
                call(x)
        # One call per sample: the parts take microseconds, the forwards up to seconds.
        runs, rounds, _ = race(calls, x, BUDGET_S, MIN_RUNS, MAX_RUNS, number=1)
    median = {name: statistics.median(times) for name, times in runs.items()}
    return {
        "median": {name: median[name] for name in modules},
        "runs": rounds,
        "parts": {name: median[name] for name in PARTS},
    }


# The pieces timed beside the two forwards: where the two modules' work differs.
PARTS = (
    "wrapper projections",  # 3 per head: num_heads * 3 small (d_in, d_out / H) matmuls
    "split projections",  # 3 large (d_in, d_out) matmuls
    "split merge",  # context.transpose(1, 2).contiguous(): the copy that merges the heads
    "split out_proj",  # the output projection the wrapper does not have
)


def _parts(wrapper, split, num_heads: int, shape: torch.Size) -> dict:
    """Calls (each given the forward's input) that run each of :data:`PARTS` alone, on tensors
    of the forward's shapes."""
    b, T, _ = shape
    merged = torch.zeros(b, T, split.d_out)
    heads = torch.zeros(b, num_heads, T, split.head_dim)  # the context as attention leaves it
    return {
        "wrapper projections": lambda x: [
            (head.W_query(x), head.W_key(x), head.W_value(x)) for head in wrapper.heads
        ],
        "split projections": lambda x: (split.W_query(x), split.W_key(x), split.W_value(x)),
        "split merge": lambda x: heads.transpose(1, 2).contiguous(),
        "split out_proj": lambda x: split.out_proj(merged),
    }
