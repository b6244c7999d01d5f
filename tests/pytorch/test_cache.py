"""The speed comparison is computed once per process and shape, even when a class presses the
button at the same moment (st.cache_resource's per-key compute lock)."""

from __future__ import annotations

import threading
import time

import pytest

from attnviz.models import implementations as impl
from ui.models import comparison

SHAPE = (1, 6, 16, 16, 2, False)
OTHER = (1, 7, 16, 16, 2, False)


@pytest.fixture
def counted(monkeypatch):
    """Replace the benchmark with a slow stand-in that counts its calls; empty the cache."""
    calls = []

    def slow_benchmark(shape):
        calls.append(shape)
        time.sleep(0.5)  # long enough for every thread to arrive while it runs
        return object()  # a distinct value per computation

    monkeypatch.setattr(impl, "benchmark", slow_benchmark)
    comparison.measured.clear()
    yield calls
    comparison.measured.clear()


def _press_together(shape, sessions: int) -> list:
    barrier = threading.Barrier(sessions)
    results = []

    def press():
        barrier.wait()
        results.append(comparison.measured(shape))

    threads = [threading.Thread(target=press) for _ in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


def test_a_class_pressing_the_button_together_runs_the_benchmark_once(counted):
    results = _press_together(SHAPE, sessions=6)
    assert counted == [SHAPE]
    assert len(results) == 6 and all(r is results[0] for r in results)  # one shared result


def test_each_shape_is_measured_once_per_process(counted):
    first = comparison.measured(SHAPE)
    assert comparison.measured(SHAPE) is first
    other = _press_together(OTHER, sessions=3)
    assert counted == [SHAPE, OTHER]
    assert all(r is other[0] for r in other) and other[0] is not first
