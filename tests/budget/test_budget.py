"""Bounded cost: the engine predicts one request's memory, and heavy requests queue."""

import dataclasses
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from attnviz import figures
from attnviz.core import trace as tracing
from attnviz.core.settings import Settings, request_bytes
from attnviz.server import budget
from attnviz.teach import prepare as lesson
from bench.support.pages import app_pages
from ui.memo import Memo

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


SIDEBAR_PAGES = [p.url_path for p in app_pages() if p.draws_sidebar_text]


@pytest.mark.parametrize("url_path", SIDEBAR_PAGES)
def test_worst_request_stays_within_one_and_a_half_times_the_prediction(url_path):
    """Each page, run as a student's request at the largest allowed sizes (training, dropout,
    biases, two long texts) on cold caches, in a fresh process."""
    out = subprocess.run(
        [sys.executable, str(HERE / "worst_request.py"), url_path],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "2"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    growth, predicted, tokens = (int(v) for v in out.stdout.split()[-3:])
    assert tokens == 256  # the app's token cap
    assert predicted == request_bytes(budget.worst_settings(), 256)["total"]
    assert growth > 0
    assert growth <= budget.PREDICTION_MARGIN * predicted, (
        f"{url_path}: peak growth {growth / 2**20:.0f} MB exceeds "
        f"{budget.PREDICTION_MARGIN}x the prediction {predicted / 2**20:.0f} MB"
    )


def test_the_worst_settings_are_the_largest_allowed():
    s = budget.worst_settings()
    assert (s.d_in, s.d_out, s.context_length) == (1600, 1600, 1024)
    assert s.num_heads == 32 and s.d_out % s.num_heads == 0
    assert s.training and s.qkv_bias and s.dropout > 0


def test_the_server_bound_adds_every_cache_cap_and_the_heavy_slots():
    bound = budget.server_bound()
    caps = {k: v for k, v in bound.items() if k.startswith("cache: ")}
    assert caps == {f"cache: {k}": v for k, v in budget.CACHE_BYTES.items()}
    worst = request_bytes(budget.worst_settings(), 256)["total"]
    assert bound["heavy requests"] == int(budget.HEAVY_SLOTS * budget.PREDICTION_MARGIN * worst)
    assert bound["total"] == sum(v for k, v in bound.items() if k != "total")
    # What the deployment guide tells instructors to budget for.
    guide = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    assert f"{bound['total'] / 2**20:,.0f} MB" in guide


def test_size_of_counts_tensor_storage_once_and_the_objects_around_it():
    t = torch.zeros(1000)  # 4,000 bytes
    assert 4000 <= budget.size_of(t) < 4200
    assert budget.size_of([t, t[:10], t.view(10, 100)]) < 4300  # views share one storage
    assert budget.size_of([t, torch.zeros(1000)]) >= 8000
    assert budget.size_of(np.zeros((100, 100), dtype=np.float32)) >= 40_000
    assert budget.size_of({"a": "x" * 10_000}) >= 10_000
    frame = pd.DataFrame({"v": np.zeros(5000)})
    assert budget.size_of(frame) >= 40_000


def test_size_of_a_trace_is_its_tensors():
    trace = lesson.multihead(lesson.prepare("the cat sat on the mat " * 4, Settings()), Settings())
    storage = sum(t.untyped_storage().nbytes() for t in tracing.tensors_of(trace))
    assert storage <= budget.size_of(trace) <= storage + 64_000


def test_size_of_a_drawn_figure_is_its_json():
    from ui import charts

    z = np.random.default_rng(0).random((256, 256)).astype(np.float32)
    labels = [f"{i}: tok" for i in range(256)]
    encoded = charts._encoded(figures.heatmap(z, labels, labels, title="t"), "label")
    size = budget.size_of(encoded)  # what the chart cache holds: the JSON, height and label
    assert len(encoded[0]) < size < len(encoded[0]) + 1_000
    assert len(encoded[0]) > z.nbytes  # the numbers travel as base64 (4/3 of their bytes)


def test_size_of_a_tuple_of_labels_counts_every_label():
    labels = tuple(f"{i}: tok" * 10 for i in range(100))
    assert budget.size_of(labels) >= sum(len(label) for label in labels)
    nested = (labels, [labels, "x" * 5000])
    assert budget.size_of(nested) >= budget.size_of(labels) + 5000


def _plain_size(value, seen=None) -> int:
    """The reference: each container's own size plus its items' (a dataclass's fields, an
    object's attribute dict), each object once."""
    seen = set() if seen is None else seen
    if isinstance(value, (str, int, float, bool, type(None))):
        return sys.getsizeof(value)
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, dict):
        items = [x for pair in value.items() for x in pair]
    elif dataclasses.is_dataclass(value):
        items = [getattr(value, f.name) for f in dataclasses.fields(value)]
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
    else:
        return sys.getsizeof(value) + _plain_size(vars(value), seen)
    return sys.getsizeof(value) + sum(_plain_size(x, seen) for x in items)


@dataclasses.dataclass(frozen=True)
class _Labelled:
    title: str
    labels: tuple
    extra: object


class _Plain:
    def __init__(self, note: str, parts: list) -> None:
        self.note, self.parts = note, parts


def test_size_of_a_chart_spec_counts_every_dict_list_and_atom_once():
    # A spec like a line chart's: dicts of atoms, dicts holding lists, lists of dicts, one
    # shared sub-dict, tuple keys and non-string keys; and around it a dataclass, a plain
    # object and sets, as a lesson holds them.
    shared = {"size": 12, "color": "#333"}
    spec = {
        "data": [
            {"type": "scatter", "x": [0, 1, 2, 3], "y": [0.1, 0.2, None, 0.4], "name": f"q{i}"}
            for i in range(6)
        ],
        "layout": {"font": shared, "title": {"text": "t", "font": shared}, 3: (1.5, "x")},
        ("a", 1): [shared, [True, False, None]],
    }
    assert budget.size_of(spec) == _plain_size(spec)
    assert budget.size_of([spec, spec]) == _plain_size([spec, spec])  # counted once
    held = _Labelled(
        "t", ("0: a", "1: b"), _Plain("n", [spec, {1, 2}, frozenset({"x", shared["color"]})])
    )
    assert budget.size_of(held) == _plain_size(held)
    assert budget.size_of((held, held, spec)) == _plain_size((held, held, spec))


def test_a_memo_stays_within_its_byte_cap_and_drops_the_oldest_first():
    memo = Memo(max_entries=100, max_bytes=50_000)
    make = memo(lambda i: torch.zeros(2500))  # 10 kB each
    kept = [make(i) for i in range(12)]
    assert memo.nbytes <= 50_000 and len(memo) == 4
    assert (memo_key(memo, 11)) and not memo_key(memo, 0)
    assert make(11) is kept[11]  # still cached: the same object
    assert make(0) is not kept[0]  # dropped, computed again


def test_a_memo_keeps_no_value_larger_than_its_cap_and_counts_entries_too():
    memo = Memo(max_entries=3, max_bytes=50_000)
    big = memo(lambda: torch.zeros(100_000))
    assert big().numel() == 100_000 and len(memo) == 0 and memo.nbytes == 0
    small = memo(lambda i: i)
    for i in range(5):
        small(i)
    assert len(memo) == 3


def test_a_memo_computes_each_key_once_for_concurrent_callers():
    memo = Memo(max_entries=10, max_bytes=10**6)
    calls = []

    @memo
    def slow(i):
        calls.append(i)
        time.sleep(0.1)
        return torch.zeros(10)

    results = []
    threads = [threading.Thread(target=lambda: results.append(slow(1))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert calls == [1] and len(results) == 6 and all(r is results[0] for r in results)


def test_a_failed_computation_is_not_kept_and_can_be_retried():
    memo = Memo(max_entries=10, max_bytes=10**6)
    attempts = []

    @memo
    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            raise ValueError("first call fails")
        return "ok"

    with pytest.raises(ValueError):
        flaky()
    assert flaky() == "ok" and len(attempts) == 2


def memo_key(memo: Memo, i: int) -> bool:
    return any(key[1] == (i,) for key in memo._values)


def test_prediction_grows_with_every_size():
    base = request_bytes(Settings(), 16)["total"]
    assert request_bytes(Settings(), 64)["total"] > base
    assert request_bytes(Settings(d_in=64), 16)["total"] > base
    assert request_bytes(Settings(d_out=64), 16)["total"] > base
    assert request_bytes(Settings(num_heads=4), 16)["total"] > base
    assert request_bytes(Settings(context_length=256), 16)["total"] > base


def test_default_settings_are_light_and_gpt2_xl_is_heavy():
    assert not budget.is_heavy(Settings(), 6)
    xl = Settings(d_in=1600, d_out=1600, num_heads=25, context_length=1024)
    assert budget.is_heavy(xl, 256)


def test_at_most_two_heavy_requests_run_at_once():
    xl = Settings(d_in=1600, d_out=1600, num_heads=25, context_length=1024)
    running, peak = 0, 0
    lock = threading.Lock()

    def request():
        nonlocal running, peak
        with budget.heavy_slot(xl, 256):
            with lock:
                running += 1
                peak = max(peak, running)
            time.sleep(0.05)
            with lock:
                running -= 1

    threads = [threading.Thread(target=request) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert peak == budget.HEAVY_SLOTS == 2


def test_light_requests_never_wait_for_a_slot():
    xl = Settings(d_in=1600, d_out=1600, num_heads=25, context_length=1024)
    held = [budget.heavy_slot(xl, 256) for _ in range(budget.HEAVY_SLOTS)]
    for slot in held:
        slot.__enter__()
    try:
        start = time.monotonic()
        with budget.heavy_slot(Settings(), 6) as took_slot:
            assert took_slot is False
        assert time.monotonic() - start < 5  # liveness: no queueing behind the heavy ones
    finally:
        for slot in held:
            slot.__exit__(None, None, None)


def test_traces_and_batch_traces_go_to_the_cache_their_predicted_cost_picks(monkeypatch):
    """Light requests fill the light-trace cache; heavy ones (here: everything, with the
    threshold at 0) the heavy one, batch traces included, so a large batch cannot push out
    every small trace."""
    from ui import cache

    key = Settings()
    cache.clear_all()
    try:
        cache.trace("causal", "the cat sat", key, False)
        cache.batch_trace("the cat sat", "on the mat", key, False)
        assert len(cache._light) == 2 and len(cache._heavy) == 0
        monkeypatch.setattr(budget, "HEAVY_BYTES", 0)
        cache.trace("causal", "a dog ran", key, False)
        cache.batch_trace("a dog ran", "far away", key, False)
        assert len(cache._light) == 2 and len(cache._heavy) == 2
        assert cache._heavy.nbytes > 0 and cache._light.nbytes > 0
    finally:
        cache.clear_all()
