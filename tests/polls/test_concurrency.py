"""Answers at once: 50 students answering and changing their answers in 50 threads, on both
backends, and on Redis through two store clients as two replicas would. The tally must equal
the answers submitted exactly: 0 lost, 0 counted twice."""

from __future__ import annotations

import random
import threading
from collections import Counter

from attnviz.classroom.polls import Answered, PollState, Refused

from .helpers import OPTIONS, choice_question, created

STUDENTS = 50


def class_answers(seed: int) -> dict[str, list[int]]:
    """Each student's answers in order: a first pick, then one to three changes of mind."""
    rng = random.Random(seed)
    return {
        f"student-{i:02d}": [rng.randrange(len(OPTIONS)) for _ in range(rng.randint(2, 4))]
        for i in range(STUDENTS)
    }


def answer_all_at_once(stores, code: str, plan: dict[str, list[int]], round_: int = 1):
    """One thread per student, all released together; student i uses stores[i % len(stores)].
    Returns every result each student got, in order."""
    start = threading.Barrier(len(plan))
    results: dict[str, list] = {}

    def student(i: int, session: str, picks: list[int]) -> None:
        store = stores[i % len(stores)]
        start.wait()
        results[session] = [store.answer(code, session, round_, pick) for pick in picks]

    threads = [
        threading.Thread(target=student, args=(i, s, p)) for i, (s, p) in enumerate(plan.items())
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    return results


def expected_counts(plan: dict[str, list[int]]) -> list[int]:
    final = Counter(picks[-1] for picks in plan.values())
    return [final[i] for i in range(len(OPTIONS))]


def check_exact(view, plan, results, round_: int = 1) -> None:
    for session, picks in plan.items():
        got = results[session]
        assert len(got) == len(picks)
        assert got[0] == Answered(round_, replaced=False), (session, got)
        assert all(r == Answered(round_, replaced=True) for r in got[1:]), (session, got)
    tally = view.rounds[round_ - 1]
    assert tally.answered == STUDENTS  # 0 lost, 0 counted twice
    assert [n for _, n in tally.counts] == expected_counts(plan)


def test_fifty_students_answering_and_changing_at_once_are_counted_exactly(store_on, backend):
    store = store_on(backend)
    poll = created(store.create(choice_question()))
    plan = class_answers(seed=1)
    results = answer_all_at_once([store], poll.code, plan)
    check_exact(store.presenter_view(poll.code, poll.secret), plan, results)


def test_two_replicas_on_one_redis_count_exactly(store_on):
    replica_a = store_on("redis")
    replica_b = store_on("redis")  # same Redis, same prefix: a second process's client
    poll = created(replica_a.create(choice_question()))
    plan = class_answers(seed=2)
    results = answer_all_at_once([replica_a, replica_b], poll.code, plan)
    for replica in (replica_a, replica_b):
        check_exact(replica.presenter_view(poll.code, poll.secret), plan, results)
    # Round 2 opened on one replica is seen by the other, and counted exactly there too.
    assert replica_b.reask(poll.code, poll.secret) == PollState("open", 2, False)
    plan2 = class_answers(seed=3)
    results2 = answer_all_at_once([replica_b, replica_a], poll.code, plan2, round_=2)
    check_exact(replica_a.presenter_view(poll.code, poll.secret), plan2, results2, round_=2)
    check_exact(replica_a.presenter_view(poll.code, poll.secret), plan, results, round_=1)


def test_answers_racing_the_reask_are_each_counted_once_or_refused(store_on, backend):
    """Students answer round 1 while the presenter opens round 2: every answer the store
    accepted is in the tally, every other got "wrong_round", none is in both."""
    store = store_on(backend)
    poll = created(store.create(choice_question()))
    plan = {f"student-{i:02d}": [i % len(OPTIONS)] for i in range(STUDENTS)}
    start = threading.Barrier(STUDENTS + 1)
    results: dict[str, object] = {}

    def student(session: str, pick: int) -> None:
        start.wait()
        results[session] = store.answer(poll.code, session, 1, pick)

    threads = [threading.Thread(target=student, args=(s, p[0])) for s, p in plan.items()]
    for t in threads:
        t.start()
    start.wait()
    assert store.reask(poll.code, poll.secret) == PollState("open", 2, False)
    for t in threads:
        t.join(60)
    accepted = [s for s, r in results.items() if isinstance(r, Answered)]
    refused = [s for s, r in results.items() if isinstance(r, Refused)]
    assert len(accepted) + len(refused) == STUDENTS
    assert all(results[s].reason == "wrong_round" for s in refused)
    tally = store.presenter_view(poll.code, poll.secret).rounds[0]
    assert tally.answered == len(accepted)
    want = Counter(plan[s][0] for s in accepted)
    assert [n for _, n in tally.counts] == [want[i] for i in range(len(OPTIONS))]
