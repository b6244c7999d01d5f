"""ui/handover.py: a session's script-runner events reach the event loop in batches, in order.

The live server's own runs go through it in every browser and websocket test; here a stand-in
session on a real asyncio loop shows the order, the batching and the prompt delivery at a run's
end, and the Streamlit internals it relies on are checked by name, so an upgrade that changes
them fails here first.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from pathlib import Path

import pytest
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner.script_runner import ScriptRunner, ScriptRunnerEvent

from tests.support.installs import (
    assert_on_by_default_once_and_off_by_switch,
    installed_in_a_fresh_process,
)
from ui import handover

ROOT = Path(__file__).resolve().parents[2]
MESSAGE = ScriptRunnerEvent.ENQUEUE_FORWARD_MSG
STOPPED = ScriptRunnerEvent.SCRIPT_STOPPED_WITH_SUCCESS


class FakeSession:
    """What handover uses of an AppSession, on a real event loop in its own thread; it records
    the events handled, the loop wake-ups asked for and the runtime notices given."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, fail_on: object = None, raise_: type = RuntimeError
    ) -> None:
        self._event_loop = loop
        self.handled: list[object] = []
        self.wakeups = 0
        self.told = 0
        self.fail_on, self.raise_ = fail_on, raise_
        self._message_enqueued_callback = self._tell

    def _tell(self) -> None:
        self.told += 1

    def _call_soon_on_event_loop(self, callback) -> None:
        self.wakeups += 1
        self._event_loop.call_soon_threadsafe(callback)

    def _handle_scriptrunner_event_on_event_loop(self, sender, event, forward_msg=None, **_):
        assert self._message_enqueued_callback is None, "notices wait for the batch's end"
        if forward_msg is not None and forward_msg == self.fail_on:
            raise self.raise_("this event fails")
        self.handled.append(forward_msg if event is MESSAGE else event)

    # the patched method, as Streamlit's blinker signal calls it: sender, then keywords
    def send(self, event, forward_msg=None) -> None:
        handover._on_scriptrunner_event(self, None, event=event, forward_msg=forward_msg)


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


def wait_for(condition, seconds: float = 10.0) -> bool:
    """Liveness only: poll until ``condition()`` holds (generous, never a speed claim)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


class Stronger(BaseException):
    """Not an Exception: what a cancelled task raises is of this kind."""


def blocked(loop):
    """Hold the loop busy until the returned event is set (its callbacks wait meanwhile)."""
    release, holding = threading.Event(), threading.Event()

    def hold() -> None:
        holding.set()
        release.wait(30)

    loop.call_soon_threadsafe(hold)
    assert holding.wait(10)
    return release


def run_in_thread(target) -> None:
    thread = threading.Thread(target=target)
    thread.start()
    thread.join(30)


def test_a_run_s_messages_arrive_in_order_with_a_few_wakeups(loop, monkeypatch):
    monkeypatch.setattr(handover, "WINDOW_SECONDS", 60.0)  # only the run's end can deliver
    session = FakeSession(loop)

    def script() -> None:
        for i in range(500):
            session.send(MESSAGE, forward_msg=i)
        session.send(STOPPED)

    run_in_thread(script)
    assert wait_for(lambda: len(session.handled) == 501 and session.told == 1)
    assert session.handled == [*range(500), STOPPED]
    # Streamlit wakes the loop once per event (501) and notifies the runtime once per message
    # (500); batched: one wake-up to set the timer, one at the run's end, and one notice.
    assert session.wakeups == 2
    assert wait_for(lambda: session._message_enqueued_callback == session._tell)
    # The run's end took the timer's batch: the timer is cancelled, and no notice follows.
    box = session.__dict__["_attnviz_outbox"]
    assert box.timer is None and box.coming is None
    time.sleep(0.1)
    assert session.told == 1


def test_messages_without_a_run_end_are_delivered_by_the_timer(loop, monkeypatch):
    monkeypatch.setattr(handover, "WINDOW_SECONDS", 0.02)
    session = FakeSession(loop)
    release = blocked(loop)  # nothing runs on the loop while the messages are sent
    run_in_thread(lambda: [session.send(MESSAGE, forward_msg=i) for i in range(50)])
    assert session.handled == [] and session.wakeups == 1
    release.set()
    assert wait_for(lambda: len(session.handled) == 50 and session.told == 1)
    assert session.handled == list(range(50))
    # Later messages start a new batch (a new timer): none is stranded.
    run_in_thread(lambda: [session.send(MESSAGE, forward_msg=i) for i in range(50, 60)])
    assert wait_for(lambda: len(session.handled) == 60)
    assert session.handled == list(range(60))


def test_a_run_end_delivers_the_messages_a_timer_was_waiting_for(loop, monkeypatch):
    monkeypatch.setattr(handover, "WINDOW_SECONDS", 60.0)
    session = FakeSession(loop)
    run_in_thread(lambda: [session.send(MESSAGE, forward_msg=i) for i in range(5)])
    box = session.__dict__["_attnviz_outbox"]
    assert wait_for(lambda: box.timer is not None)  # the batch waits for its timer
    assert box.coming == "later" and session.handled == []
    release = blocked(loop)
    run_in_thread(lambda: [session.send(STOPPED), session.send(MESSAGE, forward_msg=5)])
    assert box.coming == "now" and session.wakeups == 2  # a message behind it wakes nothing
    release.set()
    assert wait_for(lambda: len(session.handled) == 7 and session.told == 1)
    assert session.handled == [0, 1, 2, 3, 4, STOPPED, 5]
    assert box.timer is None and box.coming is None


def test_order_is_kept_against_callbacks_scheduled_after_an_event(loop):
    """Streamlit's handle_backmsg_exception sends run events, then schedules the exception's
    message in a callback of its own: it must come after them, whether or not messages of the
    run were waiting for their timer."""
    session = FakeSession(loop)

    def on_loop() -> None:
        session.send(MESSAGE, forward_msg="last message of the run")
        session.send(STOPPED)
        session.send(ScriptRunnerEvent.SCRIPT_STARTED)
        loop.call_soon(lambda: session.handled.append("exception message"))

    loop.call_soon_threadsafe(on_loop)
    assert wait_for(lambda: len(session.handled) == 4)
    assert session.handled == [
        "last message of the run",
        STOPPED,
        ScriptRunnerEvent.SCRIPT_STARTED,
        "exception message",
    ]


def test_a_rerun_request_or_a_shutdown_first_delivers_what_waits(loop, monkeypatch):
    """The loop handles a rerun request (or shuts the session down) after the events queued
    before it, as it did when each event was a callback of its own."""
    monkeypatch.setattr(handover, "WINDOW_SECONDS", 60.0)
    calls: list[str] = []
    monkeypatch.setattr(
        handover, "_original_request_rerun", lambda s, state: calls.append(f"rerun {s.handled}")
    )
    monkeypatch.setattr(handover, "_original_shutdown", lambda s: calls.append(f"stop {s.handled}"))
    session = FakeSession(loop)
    run_in_thread(lambda: [session.send(MESSAGE, forward_msg=i) for i in range(3)])
    loop.call_soon_threadsafe(lambda: handover._request_rerun(session, None))
    assert wait_for(lambda: len(calls) == 1)
    assert calls == ["rerun [0, 1, 2]"]
    run_in_thread(lambda: session.send(MESSAGE, forward_msg=3))
    loop.call_soon_threadsafe(lambda: handover._shutdown(session))
    assert wait_for(lambda: len(calls) == 2)
    assert calls[1] == "stop [0, 1, 2, 3]"
    # Off the loop's thread (a file watcher's rerun) nothing is delivered from there.
    run_in_thread(lambda: session.send(MESSAGE, forward_msg=4))
    run_in_thread(lambda: handover._request_rerun(session, None))
    assert calls[2] == "rerun [0, 1, 2, 3]"


def test_many_threads_lose_no_event_and_keep_each_thread_s_order(loop, monkeypatch):
    monkeypatch.setattr(handover, "WINDOW_SECONDS", 0.001)
    session = FakeSession(loop)
    threads = [
        threading.Thread(
            target=lambda t=t: [session.send(MESSAGE, forward_msg=(t, i)) for i in range(300)]
        )
        for t in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    session.send(STOPPED)
    assert wait_for(lambda: len(session.handled) == 1201)
    assert session.handled[-1] == STOPPED
    for t in range(4):
        assert [m[1] for m in session.handled[:-1] if m[0] == t] == list(range(300))


def test_a_failing_event_does_not_drop_the_ones_after_it(loop, monkeypatch, caplog):
    monkeypatch.setattr(handover, "WINDOW_SECONDS", 60.0)
    session = FakeSession(loop, fail_on=3)
    run_in_thread(lambda: [session.send(MESSAGE, forward_msg=i) for i in range(6)])
    session.send(STOPPED)
    assert wait_for(lambda: len(session.handled) == 6 and session.told == 1)
    assert session.handled == [0, 1, 2, 4, 5, STOPPED]
    assert wait_for(lambda: session._message_enqueued_callback == session._tell)
    assert "script-runner event failed" in caplog.text


def test_an_event_that_raises_more_than_an_exception_strands_nothing(loop, monkeypatch):
    """A handler cancelled mid-batch loses its own event, as a callback of its own would; the
    events after it, and the next run's, are still delivered."""
    monkeypatch.setattr(handover, "WINDOW_SECONDS", 60.0)
    session = FakeSession(loop, fail_on=3, raise_=Stronger)
    run_in_thread(lambda: [session.send(MESSAGE, forward_msg=i) for i in range(6)])
    session.send(STOPPED)
    assert wait_for(lambda: len(session.handled) == 6)
    assert session.handled == [0, 1, 2, 4, 5, STOPPED]
    run_in_thread(lambda: [session.send(MESSAGE, forward_msg=6), session.send(STOPPED)])
    assert wait_for(lambda: len(session.handled) == 8)
    assert session.handled[-2:] == [6, STOPPED]
    assert wait_for(lambda: session._message_enqueued_callback == session._tell)


def test_the_streamlit_internals_it_relies_on_are_still_there():
    """If an upgrade renames or reshapes these, batching would break silently: fail here."""
    params = inspect.signature(AppSession._handle_scriptrunner_event_on_event_loop).parameters
    assert list(params)[:4] == ["self", "sender", "event", "forward_msg"]
    assert callable(AppSession._call_soon_on_event_loop)
    assert "_message_enqueued_callback" in inspect.getsource(AppSession.__init__)
    assert "self._message_enqueued_callback()" in inspect.getsource(AppSession._enqueue_forward_msg)
    assert "self._event_loop" in inspect.getsource(AppSession.__init__)
    connect = inspect.getsource(AppSession._create_scriptrunner)
    assert "on_event.connect(self._on_scriptrunner_event)" in connect
    sent = inspect.getsource(ScriptRunner._enqueue_forward_msg)
    assert "event=ScriptRunnerEvent.ENQUEUE_FORWARD_MSG" in sent
    assert handover._original.__qualname__ == "AppSession._on_scriptrunner_event"
    assert handover._original_request_rerun.__qualname__ == "AppSession.request_rerun"
    # (The originals: once any AppTest has run app.py in this process, AppSession's own
    # attributes are the replacements.)
    assert list(inspect.signature(handover._original_request_rerun).parameters) == [
        "self",
        "client_state",
    ]
    assert handover._original_shutdown.__qualname__ == "AppSession.shutdown"
    assert list(inspect.signature(handover._original_shutdown).parameters) == ["self"]
    # A rerun request comes to the loop as a BackMsg, handled there by request_rerun.
    assert "self.request_rerun(client_state)" in inspect.getsource(
        AppSession._handle_rerun_script_request
    )


def test_install_is_on_by_default_once_and_off_by_switch():
    assert_on_by_default_once_and_off_by_switch(
        "handover",
        handover.ENV,
        "__import__('streamlit.runtime.app_session', fromlist=['AppSession']).AppSession"
        "._on_scriptrunner_event is m._on_scriptrunner_event",
    )
    # the other two replacements go in with the first
    check = (
        "(lambda A: A.request_rerun is m._request_rerun and A.shutdown is m._shutdown)("
        "__import__('streamlit.runtime.app_session', fromlist=['AppSession']).AppSession)"
    )
    assert installed_in_a_fresh_process("handover", handover.ENV, None, check) == "True True True"
