"""Bounded cost: the engine predicts one request's memory, and heavy requests queue."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from attnviz import budget
from attnviz.settings import Settings, request_bytes

HERE = Path(__file__).resolve().parent


def test_worst_request_stays_within_one_and_a_half_times_the_prediction():
    out = subprocess.run(
        [sys.executable, str(HERE / "worst_request.py")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "2"},
    )
    assert out.returncode == 0, out.stderr
    growth, predicted, tokens = (int(v) for v in out.stdout.split()[:3])
    assert tokens == 256  # the app's token cap
    assert growth > 0
    assert growth <= 1.5 * predicted, (
        f"peak growth {growth / 2**20:.0f} MB exceeds 1.5x the prediction {predicted / 2**20:.0f} MB"
    )


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
