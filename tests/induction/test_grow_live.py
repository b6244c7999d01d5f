"""Page 8's live runs on a real server (websocket sessions, bench/loadtest.py's client): while
one student's model grows, another's waits its turn; when the first student's session goes
away (the tab is closed), its run stops and the waiting one starts at once."""

from __future__ import annotations

import asyncio
import time

import pytest

from bench import live, loadtest
from bench.loadtest import BackMsg, ForwardMsg
from bench.support import aio

pytestmark = [pytest.mark.slow, pytest.mark.serial]

PAGE = "grow-induction-heads"


def step(query: str) -> loadtest.Step:
    return loadtest.Step(query, query, PAGE, PAGE)


async def _press(session: loadtest.Session, query: str) -> None:
    """Click Grow on the page shown, as a browser sends it: the clicked button and the URL the
    page is at (not a history navigation, so the page's own widgets keep the link's values)."""
    shown = await session.rerun(step(query))
    msg = BackMsg()
    msg.rerun_script.query_string = query
    msg.rerun_script.page_name = PAGE
    clicked = msg.rerun_script.widget_states.widgets.add()
    clicked.id, clicked.trigger_value = shown.buttons["Grow"], True
    await session.ws.send(msg.SerializeToString())


async def _finished(session: loadtest.Session, timeout: float) -> None:
    """Read the session's messages until its run finishes."""
    deadline = time.perf_counter() + timeout
    while True:
        raw = await asyncio.wait_for(session.ws.recv(), deadline - time.perf_counter())
        fm = ForwardMsg()
        fm.ParseFromString(raw)
        if fm.WhichOneof("type") == "script_finished":
            if fm.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
                return


async def _press_and_leave(url: str, query: str, seconds: float, pressed: asyncio.Event):
    """Open page 8, press Grow (a long run), and close the tab ``seconds`` later."""
    session = loadtest.Session(url, timeout=180)
    await session.connect()
    try:
        await _press(session, query)
        pressed.set()
        await asyncio.sleep(seconds)
    finally:
        await session.close()  # the student leaves mid-run


async def _press_and_wait(url: str, query: str, after: float, pressed: asyncio.Event) -> float:
    """Open page 8 ``after`` seconds after the other student pressed Grow, press Grow (a short
    run) and wait for the page to finish; the seconds from the press to the end."""
    await pressed.wait()
    await asyncio.sleep(after)
    session = loadtest.Session(url, timeout=240)
    await session.connect()
    try:
        await _press(session, query)
        start = time.perf_counter()
        await _finished(session, 240)
        return time.perf_counter() - start
    finally:
        await session.close()


async def _both(url: str) -> float:
    pressed = asyncio.Event()
    leaver = _press_and_leave(url, "gseed=11&gsteps=4000", LEAVES, pressed)
    waiter = _press_and_wait(url, "gseed=12&gsteps=25", JOINS, pressed)
    _, waited = await asyncio.gather(leaver, waiter)
    return waited


# Seconds after the first student's press: it leaves, the second student opens the page.
LEAVES, JOINS = 10.0, 3.0


def test_a_session_that_leaves_frees_its_turn_for_the_next_in_the_queue():
    with live.attnviz_server() as app:
        waited = aio.run(_both(app.url))
    print(f"the second student waited {waited:.1f} s from the press to the end of its run")
    # The second student opened the page 3 s after the first pressed, pressed (its page load
    # takes up to a few seconds), waited for the first to leave (10 s after its press), then
    # grew 25 steps. Had the first run gone on, its 4,000 steps take minutes here.
    assert LEAVES - JOINS - 3.0 <= waited <= 45.0, waited
