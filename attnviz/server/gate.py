"""Page turns: one page run at a time in a server process, the others waiting their turn.

Streamlit runs each session's script in a thread of its own, and one process runs Python code on
one core at a time. When a class clicks at once, 50 page runs interleave on that one interpreter
lock: each is sliced into 5 ms turns among all the others, so every run takes as long as the
whole queue, and the switching itself costs CPU. Measured on the live server with the
own-sentence class of 50 (bench/live.py, bench/live-class-results.md), letting one page run go
at a time cut the server CPU per page run by about a quarter and halved the slowest answers:
each run then finishes in its own ~50 ms and the next one starts.

So ``app.py`` runs each page inside :func:`page_turn`. A run that is about to wait, or to start
long work with a limit of its own (a heavy trace's slot, GPT-2's forwards, a model growing on
page 8, another session's computation it shares), first :func:`gives up <give_up>` its turn: the
queue moves on, and the long work is bounded by its own slots as before. Nothing is refused
here: a run that waited :data:`WAIT_SECONDS` without its turn runs anyway, as every run did
before this gate. Fragment reruns (the poll's live tally) do not run ``app.py`` and never wait.

``ATTNVIZ_PAGE_TURNS`` sets how many page runs go at once (default 1; 0 turns the gate off).
Scale a class out with replicas, one per core (bench/README.md, "Page turns"), not with more turns.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

ENV = "ATTNVIZ_PAGE_TURNS"
DEFAULT_TURNS = 1
MAX_TURNS = 64
WAIT_SECONDS = 10.0  # then the run goes anyway: a gate slows nothing down for long


def turns_from_env(value: str | None) -> int:
    """The number of page runs at once that ``ATTNVIZ_PAGE_TURNS`` asks for: a whole number
    from 0 (no gate) to :data:`MAX_TURNS`; anything else (unset, empty, nonsense) is the
    default. A setting must never stop the server from starting."""
    try:
        turns = int(str(value).strip())
    except ValueError:
        return DEFAULT_TURNS
    return turns if 0 <= turns <= MAX_TURNS else DEFAULT_TURNS


class Gate:
    """``turns`` page runs at a time; a thread holds at most one turn."""

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self._free = threading.BoundedSemaphore(turns) if turns > 0 else None
        self._held = threading.local()

    @contextmanager
    def page_turn(self, wait: float = WAIT_SECONDS) -> Iterator[bool]:
        """Run the block in a turn of its own, waiting up to ``wait`` seconds for one; yields
        whether it got one. The turn is given back when the block ends, however it ends (a
        finished run, st.stop, a rerun or a session that went away)."""
        got = False
        if self._free is not None and not self.holds():
            got = self._free.acquire(timeout=wait)
            self._held.turn = got
        try:
            yield got
        finally:
            if got:
                self.give_up()

    def give_up(self) -> None:
        """Let the next page run go before a wait or long work (idempotent; nothing without a
        turn). The rest of this run goes on without one."""
        if getattr(self._held, "turn", False):
            self._held.turn = False
            assert self._free is not None
            self._free.release()

    def holds(self) -> bool:
        """Whether this thread's page run holds a turn now."""
        return bool(getattr(self._held, "turn", False))


GATE = Gate(turns_from_env(os.environ.get(ENV)))
page_turn = GATE.page_turn
give_up = GATE.give_up
holds = GATE.holds
