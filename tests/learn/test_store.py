"""The finished runs behind page 5 (``ui.models.watch.runs``, a :class:`ui.memo.Memo`): shows what
exists without training, trains once per settings, and forgets a run that failed."""

from __future__ import annotations

import threading
import time

import pytest

from attnviz.models import toy_tasks
from attnviz.models.toy_tasks import LearnConfig
from ui.memo import Memo
from ui.models import watch as ui_learn

TINY = LearnConfig(steps=2)


@pytest.fixture
def runs():
    ui_learn.runs.clear()
    yield ui_learn.runs
    ui_learn.runs.clear()


def test_an_existing_run_is_looked_up_without_training(runs, monkeypatch):
    calls = []
    monkeypatch.setattr(toy_tasks, "train", lambda config, on_progress=None: calls.append(config))
    assert ui_learn.existing_run(TINY) is None
    assert calls == [] and len(runs) == 0


def test_a_run_is_trained_once_per_settings(runs, monkeypatch):
    calls = []

    def fake(config, on_progress=None):
        calls.append(config)
        return f"run {config.steps}"

    monkeypatch.setattr(toy_tasks, "train", fake)
    assert ui_learn.train(TINY) == "run 2"
    assert ui_learn.train(LearnConfig(steps=2)) == "run 2"  # equal settings: the same run
    assert ui_learn.existing_run(TINY) == "run 2"
    assert ui_learn.train(LearnConfig(steps=3)) == "run 3"
    assert calls == [TINY, LearnConfig(steps=3)]


def test_a_run_that_raises_leaves_nothing_behind_and_the_next_press_trains_again(runs, monkeypatch):
    calls = []

    def failing_then_working(config, on_progress=None):
        calls.append(config)
        if len(calls) == 1:
            raise RuntimeError("training failed")
        return "trained"

    monkeypatch.setattr(toy_tasks, "train", failing_then_working)
    with pytest.raises(RuntimeError, match="training failed"):
        ui_learn.train(TINY)
    assert ui_learn.existing_run(TINY) is None
    assert len(runs) == 0
    assert runs.computing == 0  # no in-progress entry left behind
    assert ui_learn.train(TINY) == "trained"
    assert len(calls) == 2
    assert runs.computing == 0


def test_two_students_with_the_same_settings_share_one_computation():
    memo = Memo(4)
    calls = []
    started = threading.Event()

    def compute():
        calls.append(1)
        started.set()
        time.sleep(0.3)  # long enough for the second student to arrive meanwhile
        return "result"

    results = []
    first = threading.Thread(target=lambda: results.append(memo.get("k", compute)))
    first.start()
    assert started.wait(5)
    assert memo.computing == 1
    second = threading.Thread(target=lambda: results.append(memo.get("k", compute)))
    second.start()
    first.join(5)
    second.join(5)
    assert results == ["result", "result"]
    assert len(calls) == 1
    assert memo.peek("k") == "result" and memo.computing == 0


def test_different_settings_are_different_entries_and_the_oldest_is_dropped():
    memo = Memo(2)
    for key in ("a", "b", "c"):
        memo.get(key, str.upper, (key,))
    assert memo.peek("a") is None
    assert memo.peek("b") == "B" and memo.peek("c") == "C"
