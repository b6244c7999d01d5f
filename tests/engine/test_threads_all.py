"""Many students at once: every public engine and figure function, called from many threads
together (beside a thread that builds unseeded modules), returns exactly what it returns alone."""

from __future__ import annotations

import dataclasses
import math
import random
import threading

import plotly.graph_objects as go
import torch
import torch.nn as nn

from attnviz.seeding import seeded
from attnviz.trace import ModuleSpec

from .test_seeding import ENGINE_CALLS


def same(a, b) -> bool:
    """Deep, bit-for-bit equality (NaN equals NaN) over the engine's result types."""
    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor)
            and a.shape == b.shape
            and torch.equal(torch.nan_to_num(a, nan=12345.0), torch.nan_to_num(b, nan=12345.0))
        )
    if isinstance(a, nn.Module):
        sa, sb = a.state_dict(), b.state_dict()
        return sa.keys() == sb.keys() and all(same(sa[k], sb[k]) for k in sa)
    if isinstance(a, go.Figure):
        return a.to_json() == b.to_json()
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(
            same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
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
    assert not same(
        ENGINE_CALLS["trace_simplified"](), ENGINE_CALLS["trace_causal[train, p=0.5]"]()
    )


def test_every_engine_and_figure_function_gives_the_same_result_under_concurrency():
    names = list(ENGINE_CALLS)
    alone = {name: ENGINE_CALLS[name]() for name in names}
    results: dict[str, list] = {name: [] for name in names}
    errors: list[BaseException] = []
    lock = threading.Lock()
    stop = threading.Event()

    def worker(seed: int) -> None:
        order = names * 2
        random.Random(seed).shuffle(order)
        try:
            for name in order:
                value = ENGINE_CALLS[name]()
                with lock:
                    results[name].append(value)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    def unseeded_builder() -> None:
        while not stop.is_set():
            with seeded(None):
                ModuleSpec("mha", 16, 8, 32, 0.5, 2, False, None).build()

    noise = threading.Thread(target=unseeded_builder)
    noise.start()
    threads = [threading.Thread(target=worker, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    stop.set()
    noise.join(timeout=60)
    assert not errors, errors
    for name in names:
        assert len(results[name]) == 12
        assert all(same(alone[name], got) for got in results[name]), name
