"""A redis-server for the concept check's class tests, on this test run's own ports
(6380-6389: the first one free), and a fresh store on either backend."""

from __future__ import annotations

import itertools
import os
import socket

import pytest

from attnviz.classroom.polls import MemoryPollStore, PollStore
from attnviz.classroom.redis_store import RedisPollStore
from bench.support.redis_server import RedisServer

PORTS = range(6380, 6390)
_prefixes = itertools.count()


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def redis_server():
    """One redis-server per test process: each xdist worker starts at its own port, and a port
    another process took between the check and the start is passed over."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    first = int(worker) * 3 % len(PORTS) if worker.isdigit() else 0
    for port in [*PORTS[first:], *PORTS[:first]]:
        if not _free(port):
            continue
        server = RedisServer(port)
        try:
            server.start()
        except RuntimeError:
            server.close()
            continue
        try:
            yield server
        finally:
            server.close()
        return
    pytest.skip("no free port in 6380-6389 for redis-server")


@pytest.fixture
def concept_store(request):
    """``concept_store(backend)``: a new, empty store (Redis: a key prefix of its own)."""
    made: list[PollStore] = []

    def make(backend: str) -> PollStore:
        if backend == "memory":
            store: PollStore = MemoryPollStore()
        else:
            server = request.getfixturevalue("redis_server")
            store = RedisPollStore.from_url(server.url, prefix=f"concept{next(_prefixes)}")
        made.append(store)
        return store

    yield make
    for store in made:
        if isinstance(store, RedisPollStore):
            store.client.close()
