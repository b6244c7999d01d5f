"""Hand a script run's messages to the event loop in batches, not one wake-up each.

Streamlit hands every message a script run produces (each element, each widget) from the
script's thread to the server's event loop with its own ``call_soon_threadsafe``: a write to the
loop's wake-up socket, a wake-up of the loop's thread, and a hand-over of the interpreter lock
between the two threads, about 100 times a page run here; the loop then wakes itself once more
per message to tell the runtime a message waits. On a busy server that ping-pong is a large share
of a run's cost (futex calls and context switches, the kernel time of the process).

:func:`install` makes each session queue its script-runner events in order and wake the loop
once per batch. A message waits for a timer set WINDOW_SECONDS after the batch's first message
(plus however long the busy loop takes to set it); any other event (a run's start or end, a
shutdown) is delivered at once, with every message queued before it. The loop handles the batch
in the order queued with Streamlit's own handler and tells the runtime once at the end. Before
the loop handles a rerun request or shuts a session down it delivers what is queued, so those
see the same events, in the same order, as without batching. ``ATTNVIZ_BATCHED_HANDOVER=0``
leaves Streamlit's own hand-over (for comparison: bench/handover.py).

This replaces three methods of Streamlit's ``AppSession`` (``_on_scriptrunner_event``,
``request_rerun``, ``shutdown``) and uses three of its private attributes;
tests/app/test_handover.py fails loudly if an upgrade changes what it relies on.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
from typing import Any

from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner.script_runner import ScriptRunnerEvent

from ui.switches import Install

ENV = "ATTNVIZ_BATCHED_HANDOVER"
_LOGGER = logging.getLogger(__name__)

_original = AppSession._on_scriptrunner_event
_original_request_rerun = AppSession.request_rerun
_original_shutdown = AppSession.shutdown

WINDOW_SECONDS = 0.05  # how long a batch of messages waits for more before the loop sends it
_MESSAGE = ScriptRunnerEvent.ENQUEUE_FORWARD_MSG


class _Outbox:
    """One session's events waiting for its event loop, and which delivery is on its way:
    None, "later" (a timer, for messages) or "now" (for the end of a run and other events).
    ``timer``: the pending timer's handle; ``delivering``: a delivery is running (both touched
    on the loop's thread only)."""

    __slots__ = ("coming", "delivering", "events", "lock", "timer")

    def __init__(self) -> None:
        self.events: collections.deque[tuple[tuple[Any, ...], dict[str, Any]]] = collections.deque()
        self.lock = threading.Lock()
        self.coming: str | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.delivering = False


def _outbox(session: AppSession) -> _Outbox:
    box = session.__dict__.get("_attnviz_outbox")
    if box is None:
        # setdefault: two threads that both miss keep the same box.
        box = session.__dict__.setdefault("_attnviz_outbox", _Outbox())
    return box


def _on_scriptrunner_event(self: AppSession, *args: Any, **kwargs: Any) -> None:
    event = kwargs.get("event", args[1] if len(args) > 1 else None)
    box = _outbox(self)
    with box.lock:
        box.events.append((args, kwargs))
        if event is _MESSAGE:
            if box.coming is not None:
                return  # the delivery on its way takes this message too
            box.coming = "later"
        else:
            if box.coming == "now":
                return
            box.coming = "now"
    if event is _MESSAGE:
        # One wake-up of the loop to set a timer; the messages that follow within the window
        # wake nothing. The run's end (or any other event) delivers at once.
        self._call_soon_on_event_loop(lambda: _set_timer(self, box))
    else:
        self._call_soon_on_event_loop(lambda: _deliver(self, box))


def _set_timer(session: AppSession, box: _Outbox) -> None:
    """On the loop: the batch's timer, unless a delivery already took the batch (or will)."""
    with box.lock:
        if box.coming != "later":
            return
    box.timer = session._event_loop.call_later(WINDOW_SECONDS, _deliver, session, box)


def _deliver(session: AppSession, box: _Outbox) -> None:
    """On the event loop: handle every queued event in order, until none is left, then tell
    the runtime once that messages wait to be sent (Streamlit tells it after each message: a
    wake-up of the loop each). An event that raises is logged and the rest go on, as they did
    when each was a loop callback of its own."""
    tell = session._message_enqueued_callback
    session._message_enqueued_callback = None
    handled, emptied = 0, False
    box.delivering = True
    try:
        while True:
            with box.lock:
                if not box.events:
                    box.coming, emptied = None, True
                    break
                args, kwargs = box.events.popleft()
            handled += 1
            try:
                session._handle_scriptrunner_event_on_event_loop(*args, **kwargs)
            except Exception:  # one event's failure must not drop the events after it
                _LOGGER.exception("A script-runner event failed on the event loop")
    finally:
        box.delivering = False
        session._message_enqueued_callback = tell
        if box.timer is not None and emptied:
            box.timer.cancel()  # its batch went with this delivery
            box.timer = None
        if handled and tell is not None:
            tell()
        if not emptied:
            # Left by something stronger than an Exception (a cancellation): what is still
            # queued must not wait for an event that will never schedule it.
            with box.lock:
                box.coming = "now"
            session._call_soon_on_event_loop(lambda: _deliver(session, box))


def _drain_here(session: AppSession) -> None:
    """Deliver the session's queued events now, when called on its event loop's thread (a
    rerun request and a shutdown are; elsewhere the queued delivery stays as it is)."""
    box = session.__dict__.get("_attnviz_outbox")
    if box is None or not box.events or box.delivering:
        return
    try:
        on_loop = asyncio.get_running_loop() is session._event_loop
    except RuntimeError:
        on_loop = False
    if on_loop:
        _deliver(session, box)


def _request_rerun(self: AppSession, *args: Any, **kwargs: Any) -> None:
    _drain_here(self)
    _original_request_rerun(self, *args, **kwargs)


def _shutdown(self: AppSession, *args: Any, **kwargs: Any) -> None:
    _drain_here(self)
    _original_shutdown(self, *args, **kwargs)


def _apply() -> None:
    AppSession._on_scriptrunner_event = _on_scriptrunner_event  # type: ignore[method-assign]
    AppSession.request_rerun = _request_rerun  # type: ignore[method-assign]
    AppSession.shutdown = _shutdown  # type: ignore[method-assign]


# Batch the hand-over for every session from now on (once per process); False when switched off
# by ``ATTNVIZ_BATCHED_HANDOVER=0``. (A session whose run is going while this is installed keeps
# Streamlit's hand-over for that run: its runner is already connected.)
install = Install(ENV, _apply)
