"""Run one function in many threads at once, for tests of what sessions share."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def from_threads(make: Callable[[], T], count: int) -> list[T]:
    """``make()`` called in ``count`` threads started together; what each returned, once all
    have finished. An exception in any thread is raised here (a thread would only print it)."""
    results: list[T] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(count)

    def run() -> None:
        try:
            start.wait()
            made = make()
        except BaseException as err:  # handed to the test's thread below
            with lock:
                errors.append(err)
            return
        with lock:
            results.append(made)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
