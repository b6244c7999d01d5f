"""Many students at once: every public engine and figure function, called from many threads
together (beside a thread that builds unseeded modules), returns exactly what it returns alone."""

from __future__ import annotations

import dataclasses
import math
import random
import threading

import numpy as np
import plotly.graph_objects as go
import torch
import torch.nn as nn

from attnviz.seeding import seeded
from attnviz.trace import ModuleSpec

from .engine_calls import ENGINE_CALLS

# Every call of tests/engine/engine_calls.py (tests/engine/test_engine_coverage.py checks that
# it covers every public engine and figure function).
THREAD_CALLS = ENGINE_CALLS
WORKERS = 4
REPEATS = 3  # each worker runs every call this many times, in its own shuffled order


def same(a, b) -> bool:
    """Deep, bit-for-bit equality (NaN equals NaN) over the engine's result types."""
    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor)
            and a.shape == b.shape
            and torch.equal(torch.nan_to_num(a, nan=12345.0), torch.nan_to_num(b, nan=12345.0))
        )
    if isinstance(a, np.ndarray):
        return (
            isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        )
    if isinstance(a, nn.Module):
        sa, sb = a.state_dict(), b.state_dict()
        return sa.keys() == sb.keys() and all(same(sa[k], sb[k]) for k in sa)
    if isinstance(a, go.Figure):
        return a.to_json() == b.to_json()
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(
            same(getattr(a, f.name), getattr(b, f.name))
            for f in dataclasses.fields(a)
            if f.compare  # e.g. a training run's wall time
        )
    if isinstance(a, dict) or hasattr(a, "keys"):
        return set(a.keys()) == set(b.keys()) and all(same(a[k], b[k]) for k in a.keys())
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


def test_the_equality_helper_can_tell_results_apart():
    assert same(torch.tensor([1.0, float("nan")]), torch.tensor([1.0, float("nan")]))
    assert not same(torch.tensor([1.0]), torch.tensor([1.0 + 1e-7]))
    assert same(np.array([1.0, np.nan]), np.array([1.0, np.nan]))
    assert not same(np.array([1.0, 2.0]), np.array([1.0, 2.5]))
    assert not same(
        THREAD_CALLS["trace.trace_simplified"](), THREAD_CALLS["trace.trace_causal[train, p=0.5]"]()
    )
    # A second run of the same seeded training is equal, though its wall time differs.
    assert same(THREAD_CALLS["learn.train"](), THREAD_CALLS["learn.train"]())


def test_every_engine_and_figure_function_gives_the_same_result_under_concurrency():
    names = list(THREAD_CALLS)
    alone = {name: THREAD_CALLS[name]() for name in names}
    results: dict[str, list] = {name: [] for name in names}
    errors: list[BaseException] = []
    lock = threading.Lock()
    stop = threading.Event()

    def worker(seed: int) -> None:
        order = names * REPEATS
        random.Random(seed).shuffle(order)
        try:
            for name in order:
                value = THREAD_CALLS[name]()
                with lock:
                    results[name].append(value)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    noise_runs = [0]

    def unseeded_builder() -> None:
        while not stop.is_set():
            with seeded(None):
                ModuleSpec("mha", 16, 8, 32, 0.5, 2, False, None).build()
                torch.rand(16)  # an unseeded draw too, as a module's init would make
            noise_runs[0] += 1

    noise = threading.Thread(target=unseeded_builder)
    noise.start()
    threads = [threading.Thread(target=worker, args=(s,)) for s in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    stop.set()
    noise.join(timeout=60)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    assert noise_runs[0] > 0  # the unseeded builder really ran alongside
    differs = [
        name
        for name in names
        if len(results[name]) != WORKERS * REPEATS
        or not all(same(alone[name], got) for got in results[name])
    ]
    assert differs == []
