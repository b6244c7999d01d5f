"""Run a coroutine to completion from synchronous code, anywhere."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)`` on a thread of its own. Plain ``asyncio.run`` refuses to start
    where an event loop already runs on the calling thread, as in a test process where
    Playwright's sync API has run; a fresh thread has no loop."""
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="aio") as pool:
        return pool.submit(asyncio.run, coroutine).result()
