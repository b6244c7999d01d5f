"""Fixtures of the poll tests: a redis-server per test module, and a fresh store on either
backend (``store_on``), the in-process one on a clock the test moves by hand."""

from __future__ import annotations

import itertools

import pytest
import redis

from attnviz.classroom.polls import Limits, MemoryPollStore, PollStore
from attnviz.classroom.redis_store import RedisPollStore
from bench.support.redis_server import RedisServer

BACKENDS = ("memory", "redis")
_prefixes = itertools.count()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def redis_server():
    with RedisServer() as server:
        yield server


@pytest.fixture
def redis_client(redis_server):
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store_on(request, clock):
    """``store_on(backend, **limits)``: a new, empty store. Redis stores of one test share a
    key prefix of their own (two stores made with ``prefix=`` alike act as two replicas)."""
    made: list[PollStore] = []
    prefix = f"t{next(_prefixes)}"

    def make(backend: str, **limits) -> PollStore:
        chosen = Limits(**limits)
        if backend == "memory":
            store: PollStore = MemoryPollStore(chosen, clock=clock)
        else:
            server = request.getfixturevalue("redis_server")
            store = RedisPollStore.from_url(server.url, chosen, prefix=prefix)
        made.append(store)
        return store

    yield make
    for store in made:
        if isinstance(store, RedisPollStore):
            store.client.close()


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param
