"""A small shared memo for values pages derive from traces, and for the traces themselves.

``st.cache_resource`` hashes a function's source every time the decorator runs, and a page
script runs its decorators on every rerun; this memo keys on the function's code object
instead, so decorating costs nothing. Like ``st.cache_resource`` it holds one shared,
read-only value per key (plain arguments only). Unlike it, it is bounded in bytes as well as in
entries: each value is measured (:func:`attnviz.server.budget.size_of`) when stored, and the least
recently used values leave until the memo fits ``max_bytes``. A value larger than the whole cap
is handed back but not kept.

One computation per key (single flight): the first caller to miss a key computes it; every
caller that misses the same key meanwhile waits for that computation and gets its value, even
one too large to keep. If the computation raises an ``Exception``, every caller waiting on it
gets that exception, and the next caller after it computes again (a failure is not cached). If
the computing session is stopped instead (Streamlit stops or reruns a script by raising a
``BaseException`` that is not an ``Exception`` in its thread), the callers waiting on it try
again and one of them computes: one student's click never ends another's run.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict

from attnviz.server import gate
from attnviz.server.budget import size_of

_ALL: weakref.WeakSet = weakref.WeakSet()


class _Flight:
    """One computation of one key, which every caller that missed the key meanwhile waits for."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value = None
        self.error: Exception | None = None
        self.finished = False  # False when done: the computing session was stopped


class Memo:
    def __init__(
        self,
        max_entries: int,
        max_bytes: int | None = None,
        name: str = "",
        *,
        long_work: bool = False,
    ) -> None:
        """``long_work``: a computation here can take seconds (training, GPT-2, a heavy trace),
        so the page run that starts one first gives its page turn up (attnviz/server/gate.py)."""
        self.long_work = long_work
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.name = name
        self._values: OrderedDict = OrderedDict()
        self._sizes: dict = {}
        self._bytes = 0
        self._computing: dict[object, _Flight] = {}  # key -> its flight, while computed
        self._lock = threading.Lock()
        _ALL.add(self)

    def __call__(self, fn):
        code = fn.__code__
        ident = (code.co_filename, code.co_firstlineno, fn.__qualname__, hash(code.co_code))

        @functools.wraps(fn)
        def memoized(*args):
            return self.get((ident, args), fn, args)

        return memoized

    def get(self, key, fn, args=()):
        """The value stored under ``key``, computing ``fn(*args)`` once if it is missing."""
        while True:
            with self._lock:
                if key in self._values:
                    self._values.move_to_end(key)
                    return self._values[key]
                flight = self._computing.get(key)
                leads = flight is None
                if flight is None:
                    flight = self._computing[key] = _Flight()
            if leads:
                if self.long_work:
                    gate.give_up()
                return self._compute(key, flight, fn, args)
            gate.give_up()  # another session computes it: let the next page run go meanwhile
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            if flight.finished:
                return flight.value
            # The computing session was stopped before it finished: try again.

    def _compute(self, key, flight: _Flight, fn, args):
        try:
            value = fn(*args)
        except Exception as err:
            flight.error = err  # for every caller waiting on this computation
            raise
        else:
            flight.value, flight.finished = value, True
            self._store(key, value)
            return value
        finally:
            with self._lock:
                self._computing.pop(key, None)
            flight.done.set()

    def _store(self, key, value) -> None:
        size = size_of(value) if self.max_bytes is not None else 0
        with self._lock:
            if self.max_bytes is None or size <= self.max_bytes:
                self._values[key] = value
                self._sizes[key] = size
                self._bytes += size
                self._evict()

    def _evict(self) -> None:
        while len(self._values) > self.max_entries or (
            self.max_bytes is not None and self._bytes > self.max_bytes
        ):
            key, _ = self._values.popitem(last=False)
            self._bytes -= self._sizes.pop(key)

    def peek(self, key):
        """The value stored under ``key``, or None. Never computes."""
        with self._lock:
            if key not in self._values:
                return None
            self._values.move_to_end(key)
            return self._values[key]

    @property
    def computing(self) -> int:
        """Keys being computed now (each has a flight that later callers wait on)."""
        with self._lock:
            return len(self._computing)

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self._values

    @property
    def nbytes(self) -> int:
        """Bytes held now, as measured when each value was stored."""
        return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._sizes.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._values)


def clear_all() -> None:
    """Empty every memo in this process (tests that need a cold cache)."""
    for memo in list(_ALL):
        memo.clear()
