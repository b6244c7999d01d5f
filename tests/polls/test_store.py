"""The poll store's rules, on both backends (in process and Redis): one answer per session per
round, a changed answer moves one count, the caps, expiry, the presenter's secret, what a phone
may see when, the CSV, and clear results (never exceptions) for bad input."""

from __future__ import annotations

import time

import pytest

from attnviz.classroom.polls import (
    CODE_ALPHABET,
    CODE_LENGTH,
    Answered,
    Choice,
    PollQuestion,
    PollState,
    PresenterView,
    Refused,
    StudentView,
    clean_code,
)

from .helpers import (
    COLUMN,
    OPTIONS,
    SETTINGS,
    choice_question,
    created,
    number_question,
    sketch_question,
)


def counts(store, code, secret, round_=1) -> dict[str, int]:
    view = store.presenter_view(code, secret)
    assert isinstance(view, PresenterView), view
    return dict(view.rounds[round_ - 1].counts)


def test_a_new_poll_has_a_short_join_code_and_a_long_secret(store_on, backend):
    store = store_on(backend)
    poll = created(store.create(choice_question()))
    assert len(poll.code) == CODE_LENGTH and set(poll.code) <= set(CODE_ALPHABET)
    assert len(poll.secret) >= 32 and poll.secret != poll.code
    assert poll.secret not in repr(poll)  # kept out of logs
    view = store.student_view(poll.code)
    assert isinstance(view, StudentView)
    assert view.state == PollState("open", 1, False)
    assert view.payload["prompt"] == "Which key does query 3 weigh most?"
    assert view.settings == SETTINGS
    assert view.answer == Choice(OPTIONS)
    # Typed in lower case with spaces around, the code still finds the poll.
    assert isinstance(store.student_view(f"  {poll.code.lower()} "), StudentView)


def test_one_answer_per_session_per_round(store_on, backend):
    store = store_on(backend)
    poll = created(store.create(choice_question()))
    assert store.answer(poll.code, "session-a", 1, 0) == Answered(1, replaced=False)
    assert store.answer(poll.code, "session-a", 1, 0) == Answered(1, replaced=True)
    assert store.answer(poll.code, "session-a", 1, 0) == Answered(1, replaced=True)
    assert store.answer(poll.code, "session-b", 1, 0) == Answered(1, replaced=False)
    view = store.presenter_view(poll.code, poll.secret)
    assert view.rounds[0].answered == 2
    assert dict(view.rounds[0].counts) == {
        OPTIONS[0]: 2,
        OPTIONS[1]: 0,
        OPTIONS[2]: 0,
        OPTIONS[3]: 0,
    }


def test_a_changed_answer_moves_exactly_one_count(store_on, backend):
    store = store_on(backend)
    poll = created(store.create(choice_question()))
    for i, choice in enumerate([0, 0, 1, 2, 2, 2]):
        store.answer(poll.code, f"s{i}", 1, choice)
    before = counts(store, poll.code, poll.secret)
    assert list(before.values()) == [2, 1, 3, 0]
    assert store.answer(poll.code, "s3", 1, 3) == Answered(1, replaced=True)  # 2 -> 3
    after = counts(store, poll.code, poll.secret)
    assert list(after.values()) == [2, 1, 2, 1]
    assert sum(after.values()) == sum(before.values()) == 6


def test_a_phone_sees_its_own_answer_for_the_current_round(store_on, backend):
    store = store_on(backend)
    poll = created(store.create(choice_question()))
    assert store.student_view(poll.code, "me").your_answer is None
    store.answer(poll.code, "me", 1, 3)
    assert store.student_view(poll.code, "me").your_answer == 3
    assert store.student_view(poll.code, "someone else").your_answer is None
    store.reask(poll.code, poll.secret)
    assert store.student_view(poll.code, "me").your_answer is None  # round 2: not yet


def test_round_two_is_counted_apart_and_round_one_is_kept(store_on, backend):
    store = store_on(backend)
    poll = created(store.create(choice_question()))
    for i in range(5):
        store.answer(poll.code, f"s{i}", 1, 0)
    assert store.reask(poll.code, poll.secret) == PollState("open", 2, False)
    late = store.answer(poll.code, "s0", 1, 1)
    assert isinstance(late, Refused) and late.reason == "wrong_round"
    assert "round 2" in late.message
    for i in range(3):
        assert store.answer(poll.code, f"s{i}", 2, 1) == Answered(2, replaced=False)
    view = store.presenter_view(poll.code, poll.secret)
    assert [r.round for r in view.rounds] == [1, 2]
    assert [r.answered for r in view.rounds] == [5, 3]
    assert dict(view.rounds[0].counts)[OPTIONS[0]] == 5
    assert dict(view.rounds[1].counts)[OPTIONS[1]] == 3


def test_the_answer_cap_refuses_new_sessions_but_not_changes(store_on, backend):
    store = store_on(backend, max_answers=3)
    poll = created(store.create(choice_question()))
    for i in range(3):
        assert isinstance(store.answer(poll.code, f"s{i}", 1, 0), Answered)
    full = store.answer(poll.code, "s3", 1, 0)
    assert isinstance(full, Refused) and full.reason == "full"
    assert full.message == "This poll has reached its limit of 3 answers."
    assert store.answer(poll.code, "s1", 1, 2) == Answered(1, replaced=True)
    assert list(counts(store, poll.code, poll.secret).values()) == [2, 0, 1, 0]
    # The cap is per round: round 2 takes three again.
    store.reask(poll.code, poll.secret)
    assert isinstance(store.answer(poll.code, "s3", 2, 0), Answered)


def test_the_poll_cap_refuses_a_new_poll_until_one_stops_or_expires(store_on, backend, clock):
    store = store_on(
        backend, max_polls=2, max_stored=3, ttl_seconds=2 if backend == "redis" else 60
    )
    first = created(store.create(choice_question()))
    second = created(store.create(choice_question()))
    third = store.create(choice_question())
    assert isinstance(third, Refused) and third.reason == "too_many_polls"
    assert "2 polls taking answers" in third.message and "reveal or close one" in third.message
    # Closing frees a place, as the refusal says (the closed poll keeps its counts)...
    store.close(first.code, first.secret)
    created(store.create(choice_question()))
    assert store.presenter_view(first.code, first.secret).state.phase == "closed"
    # ...and so does revealing, up to the polls kept at all, which only expiry frees.
    assert store.reveal(second.code, second.secret).phase == "revealed"
    fourth = store.create(choice_question())
    assert isinstance(fourth, Refused) and fourth.reason == "too_many_polls"
    assert "keeps 3 polls, revealed and closed ones included" in fourth.message
    wait_expired(store, first.code, clock, 60)
    wait_expired(store, second.code, clock, 0)
    created(store.create(choice_question()))


def wait_expired(store, code: str, clock, seconds: float) -> None:
    """Let a poll's lifetime pass: the fake clock moves, or (Redis) its keys vanish."""
    if store.backend == "memory":
        clock.now += seconds
        return
    deadline = time.monotonic() + 10  # generous: Redis expires keys within milliseconds
    while store.client.exists(store.key(code)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not store.client.exists(store.key(code)), "the poll's key did not expire"


def test_polls_expire_with_their_answers(store_on, backend, clock):
    ttl = 1.0 if backend == "redis" else 4 * 3600
    store = store_on(backend, ttl_seconds=ttl)
    poll = created(store.create(choice_question()))
    store.answer(poll.code, "s0", 1, 1)
    if backend == "redis":
        client = store.client
        keys = [store.key(poll.code), store.round_key(poll.code, 1), store.index_key]
        for key in keys:
            assert 0 < client.pttl(key) <= 1000, key  # every key carries the poll's lifetime
    else:
        clock.now += ttl - 1
        assert isinstance(store.student_view(poll.code), StudentView)  # not yet
    wait_expired(store, poll.code, clock, 1 if backend == "memory" else ttl)
    for result in (
        store.student_view(poll.code),
        store.answer(poll.code, "s1", 1, 1),
        store.presenter_view(poll.code, poll.secret),
        store.reveal(poll.code, poll.secret),
        store.csv(poll.code, poll.secret),
    ):
        assert isinstance(result, Refused) and result.reason == "unknown", result
    if backend == "redis":
        assert store.client.keys(f"{store.prefix}:*") == []


@pytest.mark.parametrize("action", ["show", "reask", "reveal", "close", "presenter_view", "csv"])
def test_presenter_actions_need_the_secret_and_a_join_code_is_refused(store_on, backend, action):
    store = store_on(backend)
    poll = created(store.create(choice_question()))
    other = created(store.create(choice_question()))
    store.answer(poll.code, "s0", 1, 1)
    act = getattr(store, action)
    for wrong in (
        poll.code,
        poll.code.lower(),
        other.secret,
        "",
        poll.secret[:-1],
        poll.secret + "x",
        None,
        "x" * 10_000,
    ):
        result = act(poll.code, wrong)
        assert result == Refused("not_allowed", "Only the presenter's link can do this."), wrong
    # Nothing moved: still open, round 1, spread hidden, the answer still there.
    view = store.student_view(poll.code)
    assert view.state == PollState("open", 1, False) and view.tally is None
    assert not isinstance(act(poll.code, poll.secret), Refused)


def test_a_phone_sees_the_spread_only_when_shown_and_the_key_only_after_the_reveal(
    store_on, backend
):
    store = store_on(backend)
    poll = created(store.create(choice_question(key=1)))
    store.answer(poll.code, "a", 1, 1)
    store.answer(poll.code, "b", 1, 2)
    hidden = store.student_view(poll.code, "a")
    assert hidden.tally is None and hidden.key is None and hidden.key_label is None
    presenter = store.presenter_view(poll.code, poll.secret)
    assert presenter.key is None and presenter.rounds[0].right is None  # not even the projector
    assert store.show(poll.code, poll.secret) == PollState("open", 1, True)
    shown = store.student_view(poll.code, "a")
    assert dict(shown.tally[0].counts) == dict(zip(OPTIONS, [0, 1, 1, 0], strict=True))
    assert shown.key is None and shown.tally[0].right is None
    # Answering goes on while the spread is up, and the spread follows.
    store.answer(poll.code, "c", 1, 1)
    assert dict(store.student_view(poll.code).tally[0].counts)[OPTIONS[1]] == 2
    store.reveal(poll.code, poll.secret)
    revealed = store.student_view(poll.code, "a")
    assert (revealed.key, revealed.key_label) == (1, OPTIONS[1])
    assert revealed.tally[0].right == 2
    assert revealed.tally[0].misconception_shares == ((COLUMN, 1 / 3),)
    for view in (hidden, shown, revealed):
        assert poll.secret not in repr(view)


def test_the_state_machine(store_on, backend):
    store = store_on(backend)
    poll = created(store.create(choice_question()))
    code, secret = poll.code, poll.secret
    assert store.show(code, secret) == PollState("open", 1, True)
    assert store.show(code, secret) == PollState("open", 1, True)  # idempotent
    assert store.reask(code, secret) == PollState("open", 2, False)  # spread hidden again
    again = store.reask(code, secret)
    assert isinstance(again, Refused) and again.reason == "bad_state"
    assert store.reveal(code, secret) == PollState("revealed", 2, True)
    assert store.reveal(code, secret) == PollState("revealed", 2, True)
    late = store.answer(code, "s", 2, 1)
    assert isinstance(late, Refused) and late.reason == "revealed"
    assert isinstance(store.reask(code, secret), Refused)
    assert store.close(code, secret) == PollState("closed", 2, True)
    for result in (store.student_view(code), store.answer(code, "s", 2, 1)):
        assert result == Refused("closed", "This poll is closed.")
    for action in (store.show, store.reask, store.reveal, store.close):
        assert action(code, secret) == Refused("closed", "This poll is closed.")
    # The presenter keeps the tally, the key and the CSV after closing.
    view = store.presenter_view(code, secret)
    assert view.state.phase == "closed" and view.key == 1
    assert isinstance(store.csv(code, secret), str)


def test_the_reveal_may_skip_round_two_and_closing_before_it_keeps_the_key_sealed(
    store_on, backend
):
    store = store_on(backend)
    poll = created(store.create(choice_question()))
    assert store.reveal(poll.code, poll.secret) == PollState("revealed", 1, True)
    unrevealed = created(store.create(choice_question()))
    store.close(unrevealed.code, unrevealed.secret)
    view = store.presenter_view(unrevealed.code, unrevealed.secret)
    assert view.key is None and view.rounds[0].right is None


def test_csv_of_a_choice_before_and_after_the_reveal(store_on, backend):
    store = store_on(backend)
    poll = created(store.create(choice_question(key=1)))
    for i, choice in enumerate([1, 1, 2, 0]):
        store.answer(poll.code, f"s{i}", 1, choice)
    assert store.csv(poll.code, poll.secret) == (
        "round,answer,count,share\n"
        "1,0: Your,1,0.2500\n"
        "1,1: ␣journey,2,0.5000\n"
        "1,2: ␣starts,1,0.2500\n"
        "1,3: ␣with,0,0.0000\n"
    )
    store.reask(poll.code, poll.secret)
    for i in range(4):
        store.answer(poll.code, f"s{i}", 2, 1)
    store.reveal(poll.code, poll.secret)
    assert store.csv(poll.code, poll.secret) == (
        "round,answer,count,share,is_key,misconception\n"
        "1,0: Your,1,0.2500,,\n"
        "1,1: ␣journey,2,0.5000,yes,\n"
        f"1,2: ␣starts,1,0.2500,,{COLUMN}\n"
        "1,3: ␣with,0,0.0000,,\n"
        "2,0: Your,0,0.0000,,\n"
        "2,1: ␣journey,4,1.0000,yes,\n"
        f"2,2: ␣starts,0,0.0000,,{COLUMN}\n"
        "2,3: ␣with,0,0.0000,,\n"
    )


def test_csv_of_numbers_counts_each_rounded_value(store_on, backend):
    store = store_on(backend)
    poll = created(store.create(number_question()))
    for i, value in enumerate([0.5, 0.499, 0.25, 1, 0.501, 1.0]):
        store.answer(poll.code, f"s{i}", 1, value)
    store.reveal(poll.code, poll.secret)
    assert store.csv(poll.code, poll.secret) == (
        "round,answer,count,share,is_key,misconception\n"
        "1,0.25,1,0.1667,,expecting rows to still sum to 1\n"
        "1,0.50,3,0.5000,yes,\n"
        "1,1.00,2,0.3333,,\n"
    )


def test_a_sketched_row_gives_the_class_mean_and_spread(store_on, backend):
    store = store_on(backend)
    poll = created(store.create(sketch_question()))
    store.answer(poll.code, "a", 1, [0.2, 0.3, 0.5])  # the key
    store.answer(poll.code, "b", 1, [0.6, 0.3, 0.1])  # the column
    store.answer(poll.code, "c", 1, [0.4, 0.6, 1.0])  # the key's shape at twice the scale
    store.answer(poll.code, "d", 1, [1, 1, 1])  # uniform
    view = store.presenter_view(poll.code, poll.secret)
    tally = view.rounds[0]
    assert tally.counts == ()
    rows = [[0.2, 0.3, 0.5], [0.6, 0.3, 0.1], [0.2, 0.3, 0.5], [1 / 3, 1 / 3, 1 / 3]]
    mean = [sum(col) / 4 for col in zip(*rows, strict=True)]
    spread = [
        (sum((x - m) ** 2 for x in col) / 4) ** 0.5
        for col, m in zip(zip(*rows, strict=True), mean, strict=True)
    ]
    assert tally.mean == pytest.approx(mean, abs=1e-12)
    assert tally.spread == pytest.approx(spread, abs=1e-12)
    store.reveal(poll.code, poll.secret)
    tally = store.presenter_view(poll.code, poll.secret).rounds[0]
    assert tally.right == 2  # a, c (same proportions); uniform is 0.1667 away
    assert tally.misconceptions == ((COLUMN, 1),)
    assert store.csv(poll.code, poll.secret) == (
        "round,position,answered,mean,spread,key\n"
        f"1,0,4,{mean[0]:.4f},{spread[0]:.4f},0.2000\n"
        f"1,1,4,{mean[1]:.4f},{spread[1]:.4f},0.3000\n"
        f"1,2,4,{mean[2]:.4f},{spread[2]:.4f},0.5000\n"
    )


def test_a_label_a_spreadsheet_would_run_is_quoted_in_the_csv(store_on, backend):
    store = store_on(backend)
    question = PollQuestion({}, {}, Choice(("=1+1", "@cmd", "plain")), key=2)
    poll = created(store.create(question))
    store.answer(poll.code, "s", 1, 0)
    assert store.csv(poll.code, poll.secret).splitlines()[1:] == [
        "1,'=1+1,1,1.0000",
        "1,'@cmd,0,0.0000",
        "1,plain,0,0.0000",
    ]


@pytest.mark.parametrize(
    "question, value, message",
    [
        (choice_question(), 4, "Pick one of the 4 options."),
        (choice_question(), -1, "Pick one of the 4 options."),
        (choice_question(), True, "Pick one of the options."),
        (choice_question(), "1", "Pick one of the options."),
        (choice_question(), None, "Pick one of the options."),
        (number_question(), float("nan"), "The answer must be a finite number."),
        (number_question(), "0.5", "The answer must be a number."),
        (number_question(), 11, "The answer must be between 0 and 10."),
        (sketch_question(), [0.5, 0.5], "A sketch has 3 weights, one per key."),
        (sketch_question(), "0.2,0.3,0.5", "A sketch is one weight per key."),
        (sketch_question(), [0.5, -0.1, 0.6], "Each weight must be between 0 and 1."),
        (sketch_question(), [0, 0, 0], "Move at least one weight above 0."),
        (sketch_question(), [0.1, float("inf"), 0], "Each weight must be a finite number."),
    ],
)
def test_a_bad_answer_gets_a_message_and_counts_nothing(
    store_on, backend, question, value, message
):
    store = store_on(backend)
    poll = created(store.create(question))
    assert store.answer(poll.code, "s", 1, value) == Refused("bad_answer", message)
    assert store.presenter_view(poll.code, poll.secret).rounds[0].answered == 0


@pytest.mark.parametrize("code", ["", "ABC", "ABCDEFG", "ABCDE0", "ABCDEI", "AB CDE", None, 42])
def test_an_unknown_or_malformed_code_gets_a_clear_message(store_on, backend, code):
    store = store_on(backend)
    created(store.create(choice_question()))
    unknown = Refused(
        "unknown", "There is no poll with this code: it may have expired or been mistyped."
    )
    assert store.student_view(code) == unknown
    assert store.answer(code, "s", 1, 0) == unknown
    assert store.presenter_view(code, "secret") == unknown


def test_a_wrong_round_number_or_missing_session_is_refused(store_on, backend):
    store = store_on(backend)
    poll = created(store.create(choice_question()))
    for round_ in (0, 3, True, "1"):
        assert store.answer(poll.code, "s", round_, 0).reason == "wrong_round"
    assert store.answer(poll.code, "s", 2, 0).reason == "wrong_round"  # not asked again yet
    for session in ("", None, "x" * 257):
        assert store.answer(poll.code, session, 1, 0).reason == "bad_answer"
    assert store.presenter_view(poll.code, poll.secret).rounds[0].answered == 0


@pytest.mark.parametrize(
    "question, words",
    [
        (PollQuestion({"tokens": {1, 2}}, {}, Choice(("a", "b")), key=0), "JSON"),
        (PollQuestion({"x": float("nan")}, {}, Choice(("a", "b")), key=0), "JSON"),
        (PollQuestion({}, {}, Choice(("a", "b")), key=2), "Pick one of the 2 options."),
        (PollQuestion({}, {}, Choice(("a", "b")), key=0, misconceptions={"m": 5}), "Pick one"),
        (PollQuestion({"text": "x" * 70_000}, {}, Choice(("a", "b")), key=0), "bytes"),
    ],
)
def test_a_question_that_cannot_be_polled_is_refused_with_a_reason(
    store_on, backend, question, words
):
    store = store_on(backend)
    result = store.create(question)
    assert isinstance(result, Refused) and result.reason == "bad_question"
    assert words in result.message


def test_views_return_fresh_copies_so_no_caller_can_change_the_poll(store_on, backend):
    store = store_on(backend)
    poll = created(store.create(choice_question()))
    store.student_view(poll.code).settings["text"] = "changed by one phone"
    assert store.student_view(poll.code).settings["text"] == SETTINGS["text"]


def test_clean_code():
    assert clean_code(" ab3k9z ") == "AB3K9Z"
    assert clean_code("AB3K9") is None and clean_code("AB3K9O") is None
