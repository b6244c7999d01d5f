"""A small shared memo for values pages derive from traces (figures, check results).

``st.cache_resource`` hashes a function's source every time the decorator runs, and a page
script runs its decorators on every rerun; this memo keys on the function's code object
instead, so decorating costs nothing. Like ``st.cache_resource`` it holds one shared,
read-only value per key (plain arguments only), computes each key once even when many sessions
ask at the same moment, and keeps at most ``max_entries`` values (least recently used first out).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict


class Memo:
    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._values: OrderedDict = OrderedDict()
        self._computing: dict = {}
        self._lock = threading.Lock()

    def __call__(self, fn):
        code = fn.__code__
        ident = (code.co_filename, code.co_firstlineno, fn.__qualname__, hash(code.co_code))

        @functools.wraps(fn)
        def memoized(*args):
            key = (ident, args)
            with self._lock:
                if key in self._values:
                    self._values.move_to_end(key)
                    return self._values[key]
                key_lock = self._computing.setdefault(key, threading.Lock())
            with key_lock:  # one computation per key; the others wait for it
                with self._lock:
                    if key in self._values:
                        return self._values[key]
                value = fn(*args)
                with self._lock:
                    self._values[key] = value
                    while len(self._values) > self.max_entries:
                        self._values.popitem(last=False)
                    self._computing.pop(key, None)
            return value

        return memoized

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def __len__(self) -> int:
        return len(self._values)
