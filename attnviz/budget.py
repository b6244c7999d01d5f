"""Bounded cost: what one request may hold, and how many heavy requests run at once.

The server's memory is bounded by

    cache entries x entry size  +  (concurrent heavy requests) x one request's peak

The caches have a fixed number of entries (``ui/cache.py``); every request's peak is predicted
by :func:`attnviz.settings.request_bytes` from its settings alone; and requests predicted above
:data:`HEAVY_BYTES` take one of :data:`HEAVY_SLOTS` slots, so a class dragging every slider to its
end at once queues instead of exhausting memory.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from .settings import Settings, request_bytes

HEAVY_BYTES = 48 * 2**20  # requests predicted above this are "heavy"
HEAVY_SLOTS = 2  # one per core: heavy requests are CPU-bound too
WAIT_SECONDS = 120.0

_slots = threading.BoundedSemaphore(HEAVY_SLOTS)


class ServerBusy(RuntimeError):
    """Raised when a heavy request waited too long for a slot."""


def predicted_bytes(settings: Settings, tokens: int) -> int:
    return request_bytes(settings, tokens)["total"]


def is_heavy(settings: Settings, tokens: int) -> bool:
    return predicted_bytes(settings, tokens) > HEAVY_BYTES


@contextmanager
def heavy_slot(settings: Settings, tokens: int):
    """Run a block; if its predicted cost is heavy, first wait for one of the heavy slots."""
    if not is_heavy(settings, tokens):
        yield False
        return
    if not _slots.acquire(timeout=WAIT_SECONDS):
        raise ServerBusy(
            f"The server is busy with other large computations; waited {WAIT_SECONDS:.0f} s. "
            "Try again, or use smaller sizes."
        )
    try:
        yield True
    finally:
        _slots.release()
