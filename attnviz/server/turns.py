"""Turns: first come, first served, a fixed number at a time, each waiting caller told its place.

The growing page (page 8) trains a model live only when a student asks, and one server serves a
whole class: :data:`attnviz.models.induction` runs go through one :class:`Turns` with room for one, so
a class pressing "Grow" at once queues, and each student sees how many runs are ahead of theirs.

A :class:`Ticket` is a place in the line. It is the caller's turn while it is among the first
``capacity`` tickets; :meth:`Ticket.leave` (or leaving its ``with`` block) gives the place up,
whether the run finished, was cancelled, or its session went away, and the next ticket's turn
comes at once. Nothing here knows about Streamlit.
"""

from __future__ import annotations

import threading
import time
from itertools import count


class Turns:
    """A line of tickets: the first ``capacity`` have their turn, the rest wait in order."""

    def __init__(self, capacity: int = 1) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._cond = threading.Condition()
        self._line: list[Ticket] = []
        self._numbers = count()

    def join(self) -> Ticket:
        """A new ticket at the end of the line."""
        with self._cond:
            ticket = Ticket(self, next(self._numbers))
            self._line.append(ticket)
            return ticket

    def __len__(self) -> int:
        """Tickets in the line, those whose turn it is included."""
        with self._cond:
            return len(self._line)

    def _ahead(self, ticket: Ticket) -> int:
        with self._cond:
            if ticket not in self._line:
                raise ValueError("this ticket has left the line")
            return self._line.index(ticket)

    def _leave(self, ticket: Ticket) -> None:
        with self._cond:
            if ticket in self._line:
                self._line.remove(ticket)
                self._cond.notify_all()

    def _wait(self, ticket: Ticket, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._line.index(ticket) >= self.capacity:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True


class Ticket:
    """One place in a :class:`Turns` line."""

    def __init__(self, turns: Turns, number: int) -> None:
        self._turns = turns
        self.number = number  # in the order tickets were given out

    def ahead(self) -> int:
        """Tickets before this one in the line (those whose turn it is included)."""
        return self._turns._ahead(self)

    def place(self) -> int:
        """0 when it is this ticket's turn, else its place in the queue of those waiting:
        1 for the next to go."""
        return max(0, self.ahead() - self._turns.capacity + 1)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: for ever) for this ticket's turn; whether it
        came."""
        return self._turns._wait(self, timeout)

    def leave(self) -> None:
        """Give the place up (its turn or its wait); the next ticket moves up. Idempotent."""
        self._turns._leave(self)

    def __enter__(self) -> Ticket:
        return self

    def __exit__(self, *exc) -> None:
        self.leave()
