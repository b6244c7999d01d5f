"""The run store behind page 5: shows what exists, trains once per settings."""

from __future__ import annotations

import threading
import time

from ui.learn import RunStore


def test_peek_never_computes():
    store = RunStore()
    assert store.peek(("a",)) is None
    assert len(store) == 0


def test_two_students_with_the_same_settings_share_one_computation():
    store = RunStore()
    calls = []
    started = threading.Event()

    def compute():
        calls.append(1)
        started.set()
        time.sleep(0.3)  # long enough for the second student to arrive meanwhile
        return "result"

    results = []
    first = threading.Thread(target=lambda: results.append(store.get_or_train(("k",), compute)))
    first.start()
    assert started.wait(5)
    second = threading.Thread(target=lambda: results.append(store.get_or_train(("k",), compute)))
    second.start()
    first.join(5)
    second.join(5)
    assert results == ["result", "result"]
    assert len(calls) == 1
    assert store.peek(("k",)) == "result"


def test_different_settings_are_different_entries_and_the_oldest_is_dropped():
    store = RunStore(max_entries=2)
    for key in ("a", "b", "c"):
        store.get_or_train((key,), lambda key=key: key.upper())
    assert store.peek(("a",)) is None
    assert store.peek(("b",)) == "B" and store.peek(("c",)) == "C"


def test_a_failed_run_is_not_stored_and_can_be_retried():
    store = RunStore()

    def boom():
        raise RuntimeError("no")

    try:
        store.get_or_train(("x",), boom)
    except RuntimeError:
        pass
    assert store.peek(("x",)) is None
    assert store.get_or_train(("x",), lambda: "ok") == "ok"
