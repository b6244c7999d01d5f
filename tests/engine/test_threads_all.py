"""Many students at once: the engine's calls a page run makes (inputs, every pass, the batch
view, a figure, the comparison with PyTorch, a training run), called from many threads together
beside a thread that builds unseeded modules, return exactly what they return alone."""

from __future__ import annotations

import dataclasses
import math
import random
import threading

import numpy as np
import plotly.graph_objects as go
import torch
import torch.nn as nn

from attnviz import figures
from attnviz.core import modules as M
from attnviz.core.seeding import seeded
from attnviz.core.settings import Settings
from attnviz.core.trace import ModuleSpec
from attnviz.models import implementations as impl
from attnviz.models import toy_tasks
from attnviz.teach import prepare

TEXT = "Your journey starts with one step"
TEXT2 = "The <b>quick</b> brown fox 🦊 jumps"


def _representative_calls() -> dict:
    """What one page run asks of the engine, at settings where dropout draws (training, 0.5)."""
    s = Settings(dropout=0.5, training=True, qkv_bias=True)
    prep, book = prepare.prepare(TEXT, s), prepare.prepare("", s, use_book=True)
    batch = prepare.prepare_batch(TEXT, TEXT2, s)
    with seeded(1):
        mha = M.MultiHeadAttention(s.d_in, s.d_out, s.context_length, 0.0, s.num_heads).eval()
    learn_cfg = toy_tasks.LearnConfig(
        steps=3, vocab=3, seq_len=4, d_out=4, batch_size=8, snapshots=2
    )
    weights = torch.softmax(prep.x[0] @ prep.x[0].T, dim=-1)
    return {
        "prepare": lambda: prepare.prepare(TEXT, s),
        "prepare[book]": lambda: prepare.prepare("", s, use_book=True),
        "simplified": lambda: prepare.simplified(prep),
        "trainable[v1]": lambda: prepare.trainable(prep, s, "v1"),
        "trainable[v2]": lambda: prepare.trainable(prep, s),
        "causal[train, p=0.5]": lambda: prepare.causal(prep, s),
        "causal[book]": lambda: prepare.causal(book, s),
        "multihead[train, p=0.5]": lambda: prepare.multihead(prep, s),
        "wrapper[train, p=0.5]": lambda: prepare.wrapper(prep, s),
        "causal_batch": lambda: prepare.causal_batch(batch, s),
        "heatmap": lambda: figures.heatmap(weights, prep.labels, prep.labels, title="w"),
        "side_by_side": lambda: impl.side_by_side(mha, prep.x),
        "learn.train": lambda: toy_tasks.train(learn_cfg),
    }


THREAD_CALLS = _representative_calls()
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
    assert not same(THREAD_CALLS["simplified"](), THREAD_CALLS["causal[train, p=0.5]"]())
    # A second run of the same seeded training is equal, though its wall time differs.
    assert same(THREAD_CALLS["learn.train"](), THREAD_CALLS["learn.train"]())


def test_a_page_runs_engine_calls_give_the_same_result_under_concurrency():
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
        except BaseException as err:  # reported below
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
