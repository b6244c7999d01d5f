"""Hand a script run's messages to the event loop in batches, not one wake-up each.

Streamlit hands every message a script run produces (each element, each widget) from the
script's thread to the server's event loop with its own ``call_soon_threadsafe``: a write to the
loop's wake-up socket, a wake-up of the loop's thread, and a hand-over of the interpreter lock
between the two threads, about 100 times a page run here. On a busy server that ping-pong is a
large share of a run's cost (futex calls and context switches, the kernel time of the process).

:func:`install` makes each session queue its script-runner events in order and wake the loop
once for all the events queued since it last woke: the loop then handles them in the order they
were queued, exactly as before, one after the other. Nothing else changes: the same events, the
same order, the same handler. ``ATTNVIZ_BATCHED_HANDOVER=0`` leaves Streamlit's own hand-over
(for comparison: bench/handover.py).

This uses one private method of Streamlit's ``AppSession``; tests/app/test_handover.py fails
loudly if an upgrade changes what it relies on.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
from typing import Any

from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner.script_runner import ScriptRunnerEvent

ENV = "ATTNVIZ_BATCHED_HANDOVER"
_LOGGER = logging.getLogger(__name__)

_original = AppSession._on_scriptrunner_event
_installed = False
_install_lock = threading.Lock()


WINDOW_SECONDS = 0.05  # a run's messages wait at most this long before the loop sends them
_MESSAGE = ScriptRunnerEvent.ENQUEUE_FORWARD_MSG


class _Outbox:
    """One session's events waiting for its event loop, and which delivery is on its way:
    None, "later" (a timer, for messages) or "now" (for the end of a run and other events)."""

    __slots__ = ("coming", "events", "lock")

    def __init__(self) -> None:
        self.events: collections.deque[tuple[tuple[Any, ...], dict[str, Any]]] = collections.deque()
        self.lock = threading.Lock()
        self.coming: str | None = None


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
        loop = self._event_loop

        def set_timer() -> None:
            loop.call_later(WINDOW_SECONDS, _deliver, self, box)

        self._call_soon_on_event_loop(set_timer)
    else:
        self._call_soon_on_event_loop(lambda: _deliver(self, box))


def _deliver(session: AppSession, box: _Outbox) -> None:
    """On the event loop: handle every queued event in order, until none is left, then tell
    the runtime once that messages wait to be sent (Streamlit tells it after each message: a
    wake-up of the loop each). A timer that fires after an earlier delivery emptied the box
    finds nothing to do."""
    tell = session._message_enqueued_callback
    session._message_enqueued_callback = None
    handled = 0
    try:
        while True:
            with box.lock:
                if not box.events:
                    box.coming = None
                    return
                args, kwargs = box.events.popleft()
            handled += 1
            try:
                session._handle_scriptrunner_event_on_event_loop(*args, **kwargs)
            except Exception:  # one event's failure must not drop the events after it
                _LOGGER.exception("A script-runner event failed on the event loop")
    finally:
        session._message_enqueued_callback = tell
        if handled and tell is not None:
            tell()


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def install() -> bool:
    """Batch the hand-over for every session from now on (once per process); False when
    switched off by ``ATTNVIZ_BATCHED_HANDOVER=0``."""
    global _installed
    if not enabled():
        return False
    with _install_lock:
        if not _installed:
            AppSession._on_scriptrunner_event = _on_scriptrunner_event  # type: ignore[method-assign]
            _installed = True
    return True
