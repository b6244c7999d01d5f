"""Ready means warm, on a live server started as the image runs it (its ENV turns Streamlit's
script health check on): the readiness check that HAProxy, the image's HEALTHCHECK and
Kubernetes ask says "not ready" on a fresh server, starts the warm-up, and says "ready" once
every page has run once; a student who comes meanwhile gets the page they asked for."""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request

import pytest

from bench import live, loadtest
from bench.measure import app_text_step
from bench.support import aio
from bench.support.network import Blackhole, proxy_env
from bench.support.pages import app_pages
from bench.support.server import READY, running_app

pytestmark = [pytest.mark.slow, pytest.mark.serial]

STRAIGHT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
# A liveness bound, not a timing: the warm-up takes 10-20 s on this two-core machine alone.
WARM_WITHIN = 240


def check(url: str) -> tuple[int, str]:
    try:
        with STRAIGHT.open(url + READY, timeout=75) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


async def student_run(url: str, step: loadtest.Step) -> loadtest.RunResult:
    session = loadtest.Session(url, 120)
    assert await session.load_page("/" + step.page_name) == 200
    await session.connect()
    try:
        return await session.rerun(step)
    finally:
        await session.close()


@pytest.fixture(scope="module")
def image_env() -> dict[str, str]:
    env = live.deployed_env()
    assert env.get("STREAMLIT_SERVER_SCRIPT_HEALTH_CHECK_ENABLED") == "true"
    return env


def test_the_check_says_not_ready_until_every_page_has_run_then_ready(image_env, artifacts):
    hole = Blackhole()
    log = artifacts / "readiness-server.log"
    causal = next(p for p in app_pages() if p.url_path == "causal-attention")
    step = app_text_step(causal, {}, "defaults")
    try:
        with running_app(env={**image_env, **proxy_env(hole)}, log_path=log) as (url, _proc):
            # The server answers (liveness) but has run nothing: the first check runs one page
            # and says not ready.
            assert check(url) == (503, "error")
            # A student who comes while the server warms itself up gets their page.
            during = aio.run(student_run(url, step))
            assert during.errors == [] and during.charts
            deadline = time.monotonic() + WARM_WITHIN
            answers = []
            while time.monotonic() < deadline:
                answers.append(check(url))
                if answers[-1] == (200, "ok"):
                    break
                time.sleep(0.5)
            assert answers[-1] == (200, "ok"), answers[-5:]
            # Ready stays ready: every later check runs the home page, warm.
            assert [check(url) for _ in range(3)] == [(200, "ok")] * 3
            # The same page again, on the warm server: the same figures (so the student's run
            # during the warm-up was the causal page at its defaults, not a page the warm-up
            # chose).
            after = aio.run(student_run(url, step))
            assert after.errors == [] and after.charts == during.charts
    finally:
        hole.close()
    text = re.sub(r"\x1b\[[0-9;]*m", "", log.read_text(errors="replace"))  # rich's colours
    runs = 2 * len(app_pages())  # every page at its defaults, then with the class's changes
    assert re.search(rf"attnviz is warm: {runs} page runs made in [\d.]+ s", text), text[-3000:]
    # Each check before ready said why, with how far the warm-up was.
    assert re.search(rf"warming up: \d+ of {runs} page runs made", text)
    # Every traceback in the log is a check's NotReady (after a page that stopped itself, with
    # Streamlit's StopException before it): no warm-up run raised anything else.
    raised = set(re.findall(r"^\s*(\w+(?:Error|Exception))\b", text, re.M))
    assert raised <= {"StopException"}, raised
    assert hole.snapshot() == [], "the server reached for the network"


def test_without_the_check_turned_on_there_is_no_readiness_endpoint_and_no_warm_up(artifacts):
    """A laptop's `streamlit run app.py`: the script health check is off, so nothing warms
    the server up and app.py runs as it always did."""
    hole = Blackhole()
    log = artifacts / "readiness-laptop.log"
    try:
        with running_app(env=proxy_env(hole), log_path=log) as (url, _proc):
            # Streamlit's page (its app shell) answers any unknown path, never "ok" or 503.
            status, body = check(url)
            assert status == 200 and '<div id="root">' in body, body[:80]
            first = aio.run(student_run(url, app_text_step(app_pages()[0], {}, "defaults")))
            assert first.errors == [] and first.charts
    finally:
        hole.close()
    assert "warm" not in log.read_text(errors="replace").lower()
