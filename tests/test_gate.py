"""Page turns (attnviz/server/gate.py): one page run at a time, given up before waits and long work,
never refusing a run, always given back."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from attnviz.core.settings import Settings
from attnviz.server import budget, gate
from attnviz.server.gate import Gate, turns_from_env
from ui.memo import Memo

ROOT = Path(__file__).resolve().parents[1]


def run_threads(*targets, timeout: float = 20) -> None:
    """Run each target in a thread of its own, join them all, and raise the first exception
    any of them raised (a failed assert or a ValueError from a double release would otherwise
    only be printed by the thread)."""
    errors: list[BaseException] = []

    def wrapped(target):
        def run():
            try:
                target()
            except BaseException as err:
                errors.append(err)

        return run

    threads = [threading.Thread(target=wrapped(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread is still waiting"
    if errors:
        raise errors[0]


@pytest.fixture
def one_turn(monkeypatch) -> Gate:
    """The module's functions on a gate of one turn, whatever ATTNVIZ_PAGE_TURNS says."""
    fresh = Gate(1)
    monkeypatch.setattr(gate, "GATE", fresh)
    monkeypatch.setattr(gate, "page_turn", fresh.page_turn)
    monkeypatch.setattr(gate, "give_up", fresh.give_up)
    monkeypatch.setattr(gate, "holds", fresh.holds)
    return fresh


@pytest.mark.parametrize(
    ("value", "turns"),
    [(None, 1), ("", 1), ("two", 1), ("-1", 1), ("65", 1), ("1.5", 1), ("0", 0), (" 3 ", 3)],
)
def test_the_number_of_turns_comes_from_the_environment_or_the_default(value, turns):
    assert turns_from_env(value) == turns


def _free(g: Gate) -> int:
    assert g._free is not None
    return g._free._value  # the turns nobody holds


def test_a_second_run_waits_until_the_first_gives_its_turn_back():
    g = Gate(1)
    order: list[str] = []
    first_in, first_go = threading.Event(), threading.Event()

    def first():
        with g.page_turn() as got:
            order.append(f"first in {got}")
            first_in.set()
            first_go.wait(10)
            order.append("first out")

    def second():
        first_in.wait(10)
        with g.page_turn() as got:
            order.append(f"second in {got}")

    def check():
        first_in.wait(10)
        time.sleep(0.2)
        waiting = list(order)
        first_go.set()
        assert waiting == ["first in True"]  # the second is still waiting

    run_threads(first, second, check)
    assert order == ["first in True", "first out", "second in True"]
    assert _free(g) == 1


def test_giving_up_lets_the_next_run_go_and_the_rest_of_the_run_goes_on_without_a_turn():
    g = Gate(1)
    gave_up, second_ran = threading.Event(), threading.Event()
    seen: list[bool] = []

    def first():
        with g.page_turn():
            seen.append(g.holds())
            g.give_up()
            g.give_up()  # idempotent
            seen.append(g.holds())
            gave_up.set()
            second_ran.wait(10)

    def second():
        gave_up.wait(10)
        with g.page_turn(wait=5) as got:
            seen.append(got)
        second_ran.set()

    run_threads(first, second)  # a second release would raise ValueError in its thread
    assert seen == [True, False, True]
    assert _free(g) == 1


def test_a_run_that_waited_too_long_runs_anyway_and_gives_back_nothing():
    g = Gate(1)
    with g.page_turn() as got:
        assert got
        result: list[tuple[bool, float]] = []

        def late():
            start = time.monotonic()
            with g.page_turn(wait=0.3) as late_got:
                result.append((late_got, time.monotonic() - start))

        run_threads(late)
        late_got, waited = result[0]
        assert late_got is False and 0.25 <= waited < 5
        assert _free(g) == 0  # the first run still holds its turn
    assert _free(g) == 1


def test_the_turn_is_given_back_when_a_run_is_stopped():
    class StopRun(BaseException):  # what Streamlit raises in a script thread to stop or rerun
        pass

    g = Gate(1)
    with pytest.raises(StopRun), g.page_turn():
        raise StopRun
    assert _free(g) == 1 and not g.holds()


def test_no_gate_with_zero_turns():
    g = Gate(0)
    with g.page_turn() as got, g.page_turn() as again:
        assert got is False and again is False and not g.holds()


def test_a_run_waiting_for_another_sessions_computation_lets_a_third_run_go(one_turn):
    """Session B computes a key; session A, in its page turn, asks for the same key and waits
    for it. Meanwhile session C's page run must not wait for A's turn."""
    memo = Memo(8, 10**6, "gate test")
    computing, release = threading.Event(), threading.Event()
    third: list[tuple[bool, float]] = []
    a_result: list[object] = []

    def slow():
        computing.set()
        release.wait(10)
        return "value"

    def session_b():  # a fragment rerun, say: no page turn
        memo.get("k", slow)

    def session_a():
        computing.wait(10)
        with gate.page_turn():
            a_result.append(memo.get("k", slow))
            a_result.append(gate.holds())

    def session_c():
        start = time.monotonic()
        with gate.page_turn(wait=5) as got:
            third.append((got, time.monotonic() - start))
        release.set()

    def late_c():
        computing.wait(10)
        time.sleep(0.2)  # A is waiting on B's computation now
        session_c()

    run_threads(session_b, session_a, late_c)
    assert third and third[0][0] is True and third[0][1] < 2
    assert a_result == ["value", False]  # A got the value, without its turn
    assert _free(one_turn) == 1


def test_long_work_and_heavy_slots_give_the_turn_up_first(one_turn):
    long_memo = Memo(8, 10**6, "long", long_work=True)
    short_memo = Memo(8, 10**6, "short")
    inside: list[bool] = []
    with gate.page_turn():
        short_memo.get("k", lambda: inside.append(gate.holds()))
        long_memo.get("k", lambda: inside.append(gate.holds()))
    light = Settings()
    heavy = budget.worst_settings()
    with gate.page_turn():
        with budget.heavy_slot(light, 6):
            inside.append(gate.holds())
        with budget.heavy_slot(heavy, heavy.context_length):
            inside.append(gate.holds())
    with gate.page_turn(), budget.heavy_work():
        inside.append(gate.holds())
    assert inside == [True, False, True, False, False]
    assert _free(one_turn) == 1


@pytest.mark.parametrize(
    "query",
    [
        {},  # a full page run
        {"present": "true"},  # presenter mode: the page ends in st.stop
        {"d_out": "7", "heads": "2"},  # a setting the page refuses, with a message
    ],
)
def test_every_page_run_takes_a_turn_and_gives_it_back(query, one_turn, monkeypatch):
    from streamlit.testing.v1 import AppTest

    taken: list[bool] = []
    real_turn = one_turn.page_turn

    @contextmanager
    def recorded(*args, **kwargs):
        with real_turn(*args, **kwargs) as got:
            taken.append(got and one_turn.holds())
            yield got

    monkeypatch.setattr(gate, "page_turn", recorded)

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    at.switch_page("pages/multi-head-attention.py").run()
    assert not at.exception
    assert taken and all(taken), taken  # every run of app.py held the turn
    assert _free(one_turn) == 1


def test_timings_and_loads_give_the_turn_up(one_turn, monkeypatch, tmp_path):
    """Work that takes seconds on a page (page 1's loop timing, page 4's and page 6's timings,
    loading GPT-2) lets the next page run go first."""
    from attnviz.models import gpt2 as pretrained
    from attnviz.models import implementations as impl
    from attnviz.models import speed
    from attnviz.teach import prepare as lesson
    from attnviz.teach.lessons import simplified

    held: list[bool] = []
    with one_turn.page_turn():
        simplified.time_loop(lesson.simplified(lesson.prepare("a b c", Settings())), repeat=1)
        held.append(one_turn.holds())
    monkeypatch.setattr(speed, "BUDGET_S", 0.0)
    monkeypatch.setattr(speed, "MIN_RUNS", 1)
    with one_turn.page_turn():
        speed.wrapper_against_split(1, 4, 8, 8, 2, 8, False)
        held.append(one_turn.holds())
    with one_turn.page_turn():
        impl.benchmark((1, 4, 8, 8, 2, False), seconds_per_impl=0.001, min_rounds=1, max_rounds=1)
        held.append(one_turn.holds())
    monkeypatch.setattr(pretrained, "_build", lambda folder: folder)
    pretrained.clear_loaded()
    with one_turn.page_turn():
        pretrained.load(str(tmp_path))  # a first load: gives the turn up
        held.append(one_turn.holds())
    with one_turn.page_turn():
        pretrained.load(str(tmp_path))  # loaded already: keeps it
        held.append(one_turn.holds())
    pretrained.clear_loaded()
    assert held == [False, False, False, False, True]
    assert _free(one_turn) == 1
