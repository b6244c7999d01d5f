"""Redis going away in the middle of a class: every operation gives the "unavailable" result
quickly (no exception, no hang), and once Redis is back a new poll runs. Also: the one setting
that picks the backend, and a setting that cannot be used."""

from __future__ import annotations

import time

import pytest

from attnviz.classroom.polls import (
    UNAVAILABLE_MESSAGE,
    Answered,
    Created,
    MemoryPollStore,
    Refused,
    StudentView,
    store_from_env,
)
from attnviz.classroom.redis_store import RedisPollStore
from bench.support.network import free_port
from bench.support.redis_server import RedisServer

from .helpers import choice_question, created

# A liveness bound, not a speed test: the store's socket timeouts are 0.5 s with one retry,
# so a frozen Redis costs about 1 s; 5 s leaves room for a loaded machine.
BOUND_SECONDS = 5.0


def every_operation(store, code: str, secret: str):
    """(name, call) for each thing a page can ask of the store."""
    return [
        ("create", lambda: store.create(choice_question())),
        ("student_view", lambda: store.student_view(code, "s")),
        ("answer", lambda: store.answer(code, "s", 1, 1)),
        ("presenter_view", lambda: store.presenter_view(code, secret)),
        ("show", lambda: store.show(code, secret)),
        ("reask", lambda: store.reask(code, secret)),
        ("reveal", lambda: store.reveal(code, secret)),
        ("close", lambda: store.close(code, secret)),
        ("csv", lambda: store.csv(code, secret)),
    ]


def assert_unavailable_quickly(store, code, secret, message=UNAVAILABLE_MESSAGE):
    for name, call in every_operation(store, code, secret):
        start = time.monotonic()
        result = call()
        took = time.monotonic() - start
        assert result == Refused("unavailable", message), (name, result)
        assert took < BOUND_SECONDS, (name, took)
    start = time.monotonic()
    assert store.available() is False
    assert time.monotonic() - start < BOUND_SECONDS


@pytest.fixture
def own_redis():
    """A Redis of this test's own, which it may stop, freeze and restart."""
    server = RedisServer().start()
    yield server
    server.close()


def test_redis_stopped_mid_poll_gives_unavailable_then_a_new_poll_runs_after_restart(own_redis):
    store = RedisPollStore.from_url(own_redis.url)
    replica_b = RedisPollStore.from_url(own_redis.url)
    poll = created(store.create(choice_question()))
    assert isinstance(store.answer(poll.code, "s0", 1, 1), Answered)
    assert isinstance(replica_b.student_view(poll.code), StudentView)  # pooled connections
    own_redis.stop()
    assert_unavailable_quickly(store, poll.code, poll.secret)
    assert_unavailable_quickly(replica_b, poll.code, poll.secret)
    own_redis.start()  # same port, empty (nothing was saved): the old poll is gone
    assert store.available() is True
    assert store.student_view(poll.code).reason == "unknown"
    fresh = created(store.create(choice_question()))
    assert store.answer(fresh.code, "s0", 1, 2) == Answered(1, replaced=False)
    # The other replica tries Redis again at its next ping (or a second after its last failure).
    assert replica_b.available() is True
    assert replica_b.answer(fresh.code, "s1", 1, 2) == Answered(1, replaced=False)
    view = replica_b.presenter_view(fresh.code, fresh.secret)
    assert view.rounds[0].answered == 2


def test_a_frozen_redis_times_out_instead_of_hanging_the_page(own_redis):
    store = RedisPollStore.from_url(own_redis.url)
    poll = created(store.create(choice_question()))
    own_redis.pause()  # connections stay open, nothing answers
    try:
        assert_unavailable_quickly(store, poll.code, poll.secret)
    finally:
        own_redis.resume()
    # Thawed: once the store answers a ping, the same poll answers again, as it was.
    assert store.available() is True
    assert store.answer(poll.code, "s0", 1, 1) == Answered(1, replaced=False)


def test_after_a_failure_the_store_waits_a_moment_before_trying_again(own_redis):
    """A frozen Redis costs one socket timeout, then a second of immediate answers, instead of
    a timeout for every student's every operation."""
    store = RedisPollStore.from_url(own_redis.url)
    poll = created(store.create(choice_question()))
    own_redis.pause()
    try:
        start = time.monotonic()
        first = store.student_view(poll.code)
        first_took = time.monotonic() - start
        start = time.monotonic()
        rest = [store.student_view(poll.code) for _ in range(50)]
        rest_took = time.monotonic() - start
    finally:
        own_redis.resume()
    assert first.reason == "unavailable" and all(r.reason == "unavailable" for r in rest)
    # The first waited for its timeouts (0.5 s, one retry); the next 50 did not ask Redis.
    assert first_took >= 0.5 and rest_took < first_took / 2, (first_took, rest_took)


def test_no_setting_means_polls_in_process():
    store = store_from_env({})
    assert isinstance(store, MemoryPollStore) and store.backend == "memory"
    assert store_from_env({"ATTNVIZ_REDIS_URL": "  "}).backend == "memory"


def test_the_setting_picks_redis_and_replicas_share_polls(own_redis):
    env = {"ATTNVIZ_REDIS_URL": own_redis.url}
    replica_a, replica_b = store_from_env(env), store_from_env(env)
    assert replica_a.backend == replica_b.backend == "redis"
    poll = created(replica_a.create(choice_question()))
    assert isinstance(replica_b.answer(poll.code, "s", 1, 1), Answered)
    assert replica_a.presenter_view(poll.code, poll.secret).rounds[0].answered == 1


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:6379", "redis.example.edu:6379", "redis://:p4ss@h:notaport/0"]
)
def test_a_setting_that_is_not_a_redis_url_turns_polls_off_with_a_message(url):
    store = store_from_env({"ATTNVIZ_REDIS_URL": url})
    assert store.backend == "unavailable"
    result = store.create(choice_question())
    assert isinstance(result, Refused) and result.reason == "unavailable"
    assert "ATTNVIZ_REDIS_URL is not a Redis URL" in result.message
    assert "p4ss" not in result.message and url not in result.message  # no password echoed
    assert_unavailable_quickly(store, "ABCDEF", "secret", result.message)


def test_a_redis_url_where_nothing_listens_is_unavailable_not_an_error():
    store = store_from_env({"ATTNVIZ_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"})
    assert store.backend == "redis"
    assert_unavailable_quickly(store, "ABCDEF", "secret")
    assert not isinstance(store.create(choice_question()), Created)
