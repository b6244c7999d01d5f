"""Nothing personal is stored: a browser is kept as an HMAC of its token under the poll's own
salt, so one student has unrelated ids in two polls, and the raw token is written nowhere (every
Redis key and value is read back to check). The presenter's secret is stored only as a digest,
her browser's token as an HMAC and a digest."""

from __future__ import annotations

import hashlib
import hmac

from attnviz.classroom.polls import _salted, owner_id

from .helpers import choice_question, created

SESSION = "5f0c1a2e-streamlit-session-id-7d3b"
PRESENTER = "a3f9e1-the-presenters-browser-token-0c2d"


def everything_in_redis(client) -> str:
    """Every key and every value in the database, as one text."""
    parts = []
    for key in client.scan_iter("*"):
        kind = client.type(key)
        parts.append(key)
        if kind == "hash":
            for field, value in client.hgetall(key).items():
                parts += [field, value]
        elif kind == "zset":
            parts += [str(m) for m in client.zrange(key, 0, -1, withscores=True)]
        elif kind == "string":
            parts.append(client.get(key))
        else:
            raise AssertionError(f"unexpected {kind} at {key}")
    return "\n".join(parts)


def test_the_raw_session_id_and_the_secret_are_never_written_to_redis(store_on, redis_client):
    store = store_on("redis")
    polls = [created(store.create(choice_question(), owner=PRESENTER)) for _ in range(2)]
    for poll in polls:
        store.answer(poll.code, SESSION, 1, 1)
        store.reask(poll.code, poll.secret)
        store.answer(poll.code, SESSION, 2, 2)
        store.student_view(poll.code, SESSION)
        store.reveal(poll.code, poll.secret)
    dump = everything_in_redis(redis_client)
    assert SESSION not in dump and PRESENTER not in dump
    for poll in polls:
        assert poll.secret not in dump
        assert hashlib.sha256(poll.secret.encode()).hexdigest() in dump  # only its digest
    # The stored fields: the question, its sealed key, the salt, the secret's digest, the
    # presenter's browser as an HMAC and a digest, the state, the limits and the join pace's
    # bucket; nothing about a person.
    fields = redis_client.hgetall(store.key(polls[0].code))
    assert set(fields) == {
        "version",
        "question",
        "sealed",
        "salt",
        "secret_sha256",
        "owner_mac",
        "owner_id",
        "phase",
        "round",
        "shown",
        "max_answers",
        "join_burst",
        "joins_per_minute",
        "sends_per_minute",
        "join_tokens",
        "join_at_ms",
        "expires_ms",
    }
    assert fields["owner_mac"] == _salted(fields["salt"], "presenter:" + PRESENTER)
    assert fields["owner_id"] == owner_id(PRESENTER) != fields["owner_mac"]


def test_the_same_session_has_unrelated_ids_in_two_polls(store_on, redis_client):
    store = store_on("redis")
    first, second = (created(store.create(choice_question())) for _ in range(2))
    ids = []
    for poll in (first, second):
        store.answer(poll.code, SESSION, 1, 1)
        (stored,) = redis_client.hkeys(store.round_key(poll.code, 1))
        salt = redis_client.hget(store.key(poll.code), "salt")
        # The stored id is the HMAC of the session id under this poll's salt, and nothing else.
        expected = hmac.new(bytes.fromhex(salt), SESSION.encode(), hashlib.sha256).hexdigest()
        assert stored == expected[:32] == _salted(salt, SESSION)
        ids.append(stored)
    assert ids[0] != ids[1]
    salts = [redis_client.hget(store.key(p.code), "salt") for p in (first, second)]
    assert salts[0] != salts[1] and len(bytes.fromhex(salts[0])) == 16


def test_the_in_process_store_keeps_no_raw_session_id_either(store_on):
    store = store_on("memory")
    poll = created(store.create(choice_question()))
    store.answer(poll.code, SESSION, 1, 1)
    held = repr(store._polls)
    assert SESSION not in held and poll.secret not in held
    assert _salted(store._polls[poll.code].fields["salt"], SESSION) in held
