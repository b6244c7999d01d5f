"""One computation per key (single flight): sessions that miss the same key at the same moment
wait for one computation, on the shared memo (ui/memo.py) and on ui/cache.py's trace path."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
import torch
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

from attnviz.core.settings import Settings
from attnviz.models import implementations as impl
from attnviz.teach import prepare as lesson
from ui import cache
from ui.memo import Memo

SESSIONS = 16


def together(ask: Callable[[], object], sessions: int = SESSIONS) -> list:
    """``ask()`` in ``sessions`` threads released at once by a barrier: what each got (its
    value, or the exception it raised), in no particular order."""
    barrier = threading.Barrier(sessions)
    got: list = []

    def session():
        barrier.wait()
        try:
            got.append(ask())
        except BaseException as err:  # a stopped session is a result here too
            got.append(err)

    threads = [threading.Thread(target=session) for _ in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    return got


class Slow:
    """A computation that sleeps long enough for every session to arrive, counting its calls;
    ``outcomes``: what call i does (a value to return or an exception to raise), the last one
    repeated."""

    def __init__(self, *outcomes) -> None:
        self.outcomes = outcomes or ("value",)
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self):
        with self._lock:
            i, self.calls = self.calls, self.calls + 1
        time.sleep(0.3)
        outcome = self.outcomes[min(i, len(self.outcomes) - 1)]
        if isinstance(outcome, BaseException):
            raise outcome
        return [outcome, i]  # a new object per computation


def test_sixteen_sessions_missing_one_key_share_one_computation():
    memo, slow = Memo(8, 10**6), Slow()
    got = together(lambda: memo.get("key", slow))
    assert slow.calls == 1
    assert len(got) == SESSIONS and all(r is got[0] for r in got)
    assert got[0] == ["value", 0] and memo.computing == 0
    assert memo.get("key", slow) is got[0] and slow.calls == 1  # and later callers read it


def test_an_error_reaches_every_waiting_session_and_the_next_call_computes_again():
    failure = ValueError("the computation failed")
    memo, slow = Memo(8, 10**6), Slow(failure, "value")
    got = together(lambda: memo.get("key", slow))
    assert slow.calls == 1  # one failing computation, not one per session
    assert len(got) == SESSIONS and all(r is failure for r in got)
    assert "key" not in memo and memo.computing == 0  # a failure is not kept
    assert memo.get("key", slow) == ["value", 1] and slow.calls == 2


def test_a_stopped_session_leaves_the_key_to_the_sessions_waiting_for_it():
    """Streamlit stops a session's run by raising StopException (a BaseException) in its thread:
    only that session ends; one of the waiting sessions computes the key again."""
    memo, slow = Memo(8, 10**6), Slow(StopException(), "value")
    got = together(lambda: memo.get("key", slow))
    stopped = [r for r in got if isinstance(r, StopException)]
    values = [r for r in got if not isinstance(r, BaseException)]
    assert len(stopped) == 1 and len(values) == SESSIONS - 1
    assert slow.calls == 2 and all(v is values[0] for v in values) and values[0][1] == 1


def test_a_value_too_large_to_keep_still_reaches_every_waiting_session_once():
    memo = Memo(8, max_bytes=1_000)
    calls = []

    def large():
        calls.append(1)
        time.sleep(0.3)
        return torch.zeros(10_000)  # 40 kB: handed back, never kept

    got = together(lambda: memo.get("key", large))
    assert len(calls) == 1 and all(r is got[0] for r in got)
    assert len(memo) == 0


def test_sessions_missing_one_trace_share_one_forward_and_one_reference_run(monkeypatch):
    cache.clear_all()
    counts = {"prepare": 0, "multihead": 0, "references": 0}

    def counted(name, fn):
        def run(*args, **kwargs):
            counts[name] += 1
            time.sleep(0.2)  # long enough for every session to miss the key meanwhile
            return fn(*args, **kwargs)

        return run

    monkeypatch.setattr(lesson, "prepare", counted("prepare", lesson.prepare))
    monkeypatch.setattr(lesson, "multihead", counted("multihead", lesson.multihead))
    monkeypatch.setattr(impl, "references", counted("references", impl.references))
    args = ("A sentence no other test types, asked by a whole class", Settings(), False)
    traces = together(lambda: cache.trace("multihead", *args))
    assert counts == {"prepare": 1, "multihead": 1, "references": 0}
    assert all(t is traces[0] for t in traces) and traces[0].num_tokens == 12
    refs = together(lambda: cache.references(*args))
    assert counts == {"prepare": 1, "multihead": 1, "references": 1}
    assert all(r is refs[0] for r in refs)
    assert refs[0].spec == traces[0].spec
    cache.clear_all()


@pytest.fixture(autouse=True)
def _no_thread_left():
    before = threading.active_count()
    yield
    assert threading.active_count() <= before
