"""The wrapper against the weight split, timed: same arithmetic, 3H small matmuls against 3.

Page 4 runs this only when a student presses its button, and caches the result per process
and shape (everything below that changes the work, ``qkv_bias`` included).
"""

from __future__ import annotations

import functools
import time

import torch

from attnviz.core.trace import ModuleSpec
from attnviz.server import gate

WARM_UP = 3
BUDGET_S = 2.0  # keep timing interleaved pairs for this long ...
MIN_RUNS = 5  # ... but at least this many ...
MAX_RUNS = 200  # ... and at most this many


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
    calls = {name: functools.partial(module, x) for name, module in modules.items()}
    calls.update(_parts(modules["wrapper"], modules["weight split"], x, num_heads))
    runs: dict[str, list[float]] = {name: [] for name in calls}
    with torch.inference_mode():
        for _ in range(WARM_UP):
            for call in calls.values():
                call()
        deadline = time.perf_counter() + BUDGET_S
        while len(runs["wrapper"]) < MAX_RUNS and (
            time.perf_counter() < deadline or len(runs["wrapper"]) < MIN_RUNS
        ):
            for name, call in calls.items():
                start = time.perf_counter()
                call()
                runs[name].append(time.perf_counter() - start)
    median = {name: sorted(times)[len(times) // 2] for name, times in runs.items()}
    return {
        "median": {name: median[name] for name in modules},
        "runs": len(runs["wrapper"]),
        "parts": {name: median[name] for name in PARTS},
    }


# The pieces timed beside the two forwards: where the two modules' work differs.
PARTS = (
    "wrapper projections",  # 3 per head: num_heads * 3 small (d_in, d_out / H) matmuls
    "split projections",  # 3 large (d_in, d_out) matmuls
    "split merge",  # context.transpose(1, 2).contiguous(): the copy that merges the heads
    "split out_proj",  # the output projection the wrapper does not have
)


def _parts(wrapper, split, x: torch.Tensor, num_heads: int) -> dict:
    """Calls that run each of :data:`PARTS` alone, on tensors of the forward's shapes."""
    b, T, _ = x.shape
    merged = torch.zeros(b, T, split.d_out)
    heads = torch.zeros(b, num_heads, T, split.head_dim)  # the context as attention leaves it
    return {
        "wrapper projections": lambda: [
            (head.W_query(x), head.W_key(x), head.W_value(x)) for head in wrapper.heads
        ],
        "split projections": lambda: (split.W_query(x), split.W_key(x), split.W_value(x)),
        "split merge": lambda: heads.transpose(1, 2).contiguous(),
        "split out_proj": lambda: split.out_proj(merged),
    }
