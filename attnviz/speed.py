"""The wrapper against the weight split, timed: same arithmetic, 3H small matmuls against 3.

Page 4 runs this only when a student presses its button, and caches the result per process
and shape (everything below that changes the work, ``qkv_bias`` included).
"""

from __future__ import annotations

import time

import torch

from .trace import ModuleSpec

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
    the same machine load. Returns ``{"median": {"wrapper": s, "weight split": s}, "runs": n}``.
    """
    head_width = d_out // num_heads
    wrapper = ModuleSpec("wrapper", d_in, head_width, context_length, 0.0, num_heads, qkv_bias, 0)
    split = ModuleSpec("mha", d_in, d_out, context_length, 0.0, num_heads, qkv_bias, 0)
    modules = {"wrapper": wrapper.build().eval(), "weight split": split.build().eval()}
    x = torch.randn(batch, tokens, d_in, generator=torch.Generator().manual_seed(0))
    runs: dict[str, list[float]] = {name: [] for name in modules}
    with torch.inference_mode():
        for _ in range(WARM_UP):
            for module in modules.values():
                module(x)
        deadline = time.perf_counter() + BUDGET_S
        while len(runs["wrapper"]) < MAX_RUNS and (
            time.perf_counter() < deadline or len(runs["wrapper"]) < MIN_RUNS
        ):
            for name, module in modules.items():
                start = time.perf_counter()
                module(x)
                runs[name].append(time.perf_counter() - start)
    median = {name: sorted(times)[len(times) // 2] for name, times in runs.items()}
    return {"median": median, "runs": len(runs["wrapper"])}
