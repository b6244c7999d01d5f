"""One browser, one vote, and no one jams a class: a reload (the same browser token in a new
session, on either replica) keeps its one answer; a scripted flood of new browsers is admitted
at a class's pace and the presenter sees how many were refused; one browser cannot send more
than its share; one presenter cannot hold more than her share of polls, and a closed poll frees
its place. Also: the presenter's browser holds the controls without the secret, a display view
shows no hidden counts, a poll says how long it has left, a Redis restart is named, and the CSV
keeps negative numbers as numbers."""

from __future__ import annotations

import csv
import io
import time

import pytest

from attnviz.classroom.polls import (
    Answered,
    Limits,
    PresenterView,
    Refusals,
    Refused,
    StudentView,
)
from attnviz.classroom.redis_store import RedisPollStore
from bench.support.redis_server import RedisServer

from .helpers import choice_question, created, number_question

BROWSER = "browser-token-of-one-student-0001"
PRESENTER = "browser-token-of-the-presenter-01"


def test_a_reload_or_a_failover_keeps_one_vote_and_shows_it_again(store_on, backend):
    replica_a = store_on(backend)
    # Redis: a second client on the same prefix is another replica; memory: the same store.
    replica_b = store_on(backend) if backend == "redis" else replica_a
    poll = created(replica_a.create(choice_question()))
    assert replica_a.answer(poll.code, BROWSER, 1, 2) == Answered(1, replaced=False)
    # The reloaded page is a new Streamlit session on the other replica, same browser token.
    again = replica_b.student_view(poll.code, BROWSER)
    assert isinstance(again, StudentView) and again.your_answer == 2
    assert replica_b.answer(poll.code, BROWSER, 1, 3) == Answered(1, replaced=True)
    tally = replica_a.presenter_view(poll.code, poll.secret).rounds[0]
    assert tally.answered == 1 and [n for _, n in tally.counts] == [0, 0, 0, 1]


def test_a_hundred_scripted_browsers_add_no_more_than_the_join_pace(store_on, backend, clock):
    limits = Limits()
    store = store_on(backend)
    poll = created(store.create(choice_question()))
    start = time.monotonic()
    results = [store.answer(poll.code, f"script-{i:03d}", 1, i % 4) for i in range(100)]
    elapsed = time.monotonic() - start if backend == "redis" else 0.0
    accepted = sum(isinstance(r, Answered) for r in results)
    refused = [r for r in results if isinstance(r, Refused)]
    # The burst a class arrives in, plus the pace since (on the fake clock: none).
    bound = limits.join_burst + elapsed * limits.joins_per_minute / 60
    assert limits.join_burst <= accepted <= bound, (accepted, bound)
    assert len(refused) == 100 - accepted
    assert {r.reason for r in refused} == {"crowded"}
    assert "send your answer again in a few seconds" in refused[0].message
    view = store.presenter_view(poll.code, poll.secret)
    assert view.rounds[0].answered == accepted
    assert view.refused == Refusals(crowded=100 - accepted)
    assert view.refused.total == 100 - accepted
    # A browser already in the poll is not held back by the crowd: it changes its answer.
    assert isinstance(store.answer(poll.code, "script-000", 1, 3), Answered)
    if backend == "memory":
        # At the class's pace a late student gets in: one new browser every two seconds.
        clock.now += 60 / limits.joins_per_minute
        assert store.answer(poll.code, "late-student", 1, 1) == Answered(1, replaced=False)
        assert isinstance(store.answer(poll.code, "late-script", 1, 1), Refused)


def test_a_class_of_fifty_joining_at_once_is_admitted_whole(store_on, backend):
    store = store_on(backend)
    poll = created(store.create(choice_question()))
    results = [store.answer(poll.code, f"student-{i:02d}", 1, i % 4) for i in range(50)]
    assert all(isinstance(r, Answered) for r in results)
    view = store.presenter_view(poll.code, poll.secret)
    assert view.rounds[0].answered == 50 and view.refused == Refusals()


def test_one_browser_sends_at_most_its_share_a_minute(store_on, backend, clock):
    store = store_on(backend, sends_per_minute=3)
    poll = created(store.create(choice_question()))
    results = [store.answer(poll.code, BROWSER, 1, i % 4) for i in range(5)]
    assert [isinstance(r, Answered) for r in results] == [True, True, True, False, False]
    assert results[3] == Refused(
        "too_fast",
        "This browser sent 3 answers to this poll within a minute: wait a moment, then send again.",
    )
    view = store.presenter_view(poll.code, poll.secret)
    assert view.refused == Refusals(too_fast=2)
    assert view.rounds[0].answered == 1  # still one vote: the third send's
    assert [n for _, n in view.rounds[0].counts] == [0, 0, 1, 0]
    if backend == "memory":
        clock.now += 60
        assert store.answer(poll.code, BROWSER, 1, 0) == Answered(1, replaced=True)


def test_a_full_round_is_counted_for_the_presenter(store_on, backend):
    store = store_on(backend, max_answers=2)
    poll = created(store.create(choice_question()))
    for i in range(4):
        store.answer(poll.code, f"s{i}", 1, 0)
    assert store.presenter_view(poll.code, poll.secret).refused == Refusals(full=2)


def test_one_presenter_holds_her_share_of_polls_and_stopping_one_frees_it(store_on, backend):
    store = store_on(backend, polls_per_presenter=2)
    first = created(store.create(choice_question(), owner=PRESENTER))
    created(store.create(choice_question(), owner=PRESENTER))
    third = store.create(choice_question(), owner=PRESENTER)
    assert third == Refused(
        "too_many_polls",
        "You already have 2 polls taking answers: reveal or close one to open another.",
    )
    created(store.create(choice_question(), owner="another-presenters-browser"))  # hers only
    assert store.reveal(first.code, PRESENTER).phase == "revealed"  # her browser may reveal
    second = created(store.create(choice_question(), owner=PRESENTER))
    assert isinstance(store.create(choice_question(), owner=PRESENTER), Refused)
    assert store.close(second.code, PRESENTER).phase == "closed"  # or close
    created(store.create(choice_question(), owner=PRESENTER))


def test_the_presenters_browser_holds_the_controls_without_the_secret(store_on, backend):
    store = store_on(backend)
    poll = created(store.create(choice_question(), owner=PRESENTER))
    assert isinstance(store.presenter_view(poll.code, PRESENTER), PresenterView)
    assert store.show(poll.code, PRESENTER).shown
    for other in (BROWSER, PRESENTER + "x", ""):
        assert store.reveal(poll.code, other).reason == "not_allowed"
    # As a voter her browser is someone else: its answer does not open the controls to a
    # student who learns her voter id, and the secret still works from another device.
    assert isinstance(store.answer(poll.code, PRESENTER, 1, 1), Answered)
    assert store.reveal(poll.code, poll.secret).phase == "revealed"


def test_a_display_view_needs_no_key_and_shows_no_hidden_count(store_on, backend):
    store = store_on(backend)
    poll = created(store.create(choice_question()))
    for i in range(3):
        store.answer(poll.code, f"s{i}", 1, 1)
    hidden = store.display_view(poll.code)
    assert isinstance(hidden, PresenterView)
    assert hidden.rounds[0].answered == 3 and hidden.rounds[0].counts == ()
    assert hidden.key is None and hidden.misconceptions is None
    store.show(poll.code, poll.secret)
    shown = store.display_view(poll.code)
    assert [n for _, n in shown.rounds[0].counts] == [0, 3, 0, 0] and shown.key is None
    store.reveal(poll.code, poll.secret)
    revealed = store.display_view(poll.code)
    assert revealed.key == 1 and revealed.rounds[0].right == 3


def test_a_poll_says_how_long_it_has_left(store_on, backend, clock):
    store = store_on(backend, ttl_seconds=3600)
    poll = created(store.create(choice_question()))
    first = store.presenter_view(poll.code, poll.secret).expires_in
    assert first is not None and 3590 < first <= 3600
    if backend == "memory":
        clock.now += 3000
    later = store.student_view(poll.code, BROWSER).expires_in
    assert later is not None and later <= first
    if backend == "memory":
        assert later == pytest.approx(600, abs=1)


def test_negative_numbers_go_into_the_csv_as_numbers(store_on, backend):
    store = store_on(backend)
    question = number_question()
    question = type(question)(
        question.payload, question.settings, type(question.answer)(2, -10, 10), 0.5
    )
    poll = created(store.create(question))
    store.answer(poll.code, "s0", 1, -1)
    store.answer(poll.code, "s1", 1, -0.255)
    rows = list(csv.reader(io.StringIO(store.csv(poll.code, poll.secret))))
    answers = [row[1] for row in rows[1:]]
    assert answers == ["-1.00", "-0.26"] or answers == ["-1.00", "-0.25"]
    assert all(not a.startswith("'") for a in answers)


def test_after_a_redis_restart_a_lost_poll_is_named_as_lost():
    with RedisServer() as server:
        store = RedisPollStore.from_url(server.url)
        poll = created(store.create(choice_question()))
        server.stop()
        assert store.student_view(poll.code, BROWSER).reason == "unavailable"
        server.start()
        assert store.available() is True
        lost = store.student_view(poll.code, BROWSER)
        assert isinstance(lost, Refused) and lost.reason == "unknown"
        assert "The poll store restarted less than a minute ago" in lost.message
        assert "polls opened before then were lost" in lost.message
        assert store.presenter_view(poll.code, poll.secret).message == lost.message
        store.client.close()


def test_one_network_address_opens_its_share_of_polls_an_hour(store_on, backend, clock):
    store = store_on(backend, polls_per_address_hour=3)
    for i in range(3):  # a new browser token each time: a script making them up
        created(store.create(choice_question(), owner=f"made-up-token-{i:04d}", address="10.0.0.7"))
    fourth = store.create(choice_question(), owner="made-up-token-9999", address="10.0.0.7")
    assert fourth == Refused(
        "too_many_polls",
        "3 polls were opened from this network address within the last hour, the most this "
        "server takes from one address: try again later.",
    )
    created(store.create(choice_question(), address="10.0.0.8"))  # another address
    created(store.create(choice_question()))  # no address known (a laptop's own presenter)
    if backend == "memory":
        clock.now += 3600
        created(store.create(choice_question(), address="10.0.0.7"))
