"""A small shared memo for values pages derive from traces, and for the traces themselves.

``st.cache_resource`` hashes a function's source every time the decorator runs, and a page
script runs its decorators on every rerun; this memo keys on the function's code object
instead, so decorating costs nothing. Like ``st.cache_resource`` it holds one shared,
read-only value per key (plain arguments only) and computes each key once even when many
sessions ask at the same moment. Unlike it, it is bounded in bytes as well as in entries: each
value is measured (:func:`attnviz.budget.size_of`) when stored, and the least recently used
values leave until the memo fits ``max_bytes``. A value larger than the whole cap is handed
back but not kept.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict

from attnviz.budget import size_of

_ALL: weakref.WeakSet = weakref.WeakSet()


class Memo:
    def __init__(self, max_entries: int, max_bytes: int | None = None, name: str = "") -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.name = name
        self._values: OrderedDict = OrderedDict()
        self._sizes: dict = {}
        self._bytes = 0
        self._computing: dict = {}
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
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
            key_lock = self._computing.setdefault(key, threading.Lock())
        with key_lock:  # one computation per key; the others wait for it
            with self._lock:
                if key in self._values:
                    return self._values[key]
            try:
                value = fn(*args)
            except BaseException:
                with self._lock:
                    self._computing.pop(key, None)
                raise
            size = size_of(value) if self.max_bytes is not None else 0
            with self._lock:
                self._computing.pop(key, None)
                if self.max_bytes is None or size <= self.max_bytes:
                    self._values[key] = value
                    self._sizes[key] = size
                    self._bytes += size
                    self._evict()
        return value

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
        """Keys being computed now (each has a lock that later callers wait on)."""
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
