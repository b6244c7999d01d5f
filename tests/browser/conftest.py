"""One ``streamlit run app.py`` and one headless Chromium for the whole browser suite.

Both send anything non-loopback to the blackhole. On a fresh server the first session that
opens a non-root page gets Streamlit's "Page not found" (its legacy ``pages/`` lookup runs once
per process), so the server is warmed up through the root URL, down to a drawn chart, first.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass

import pytest
from playwright.sync_api import expect

from bench.support.browser import chromium, wait_for_app
from bench.support.network import proxy_env
from bench.support.server import running_app

VIEWPORT = {"width": 1400, "height": 3000}
CHART = "[data-testid='stPlotlyChart']"


@dataclass
class App:
    url: str
    context: object  # the Playwright BrowserContext every test opens its tab in
    network_before: list[str]


# What a page shows, read in one call: (charts, charts drawn to the end, element containers in
# the main area, data-grid canvases, Streamlit's script state, stale elements: those a rerun
# has not drawn again yet, which Streamlit shows faded). Plotly makes a chart's
# ``.main-svg`` first and its axes' drag layer and titles after, so a chart with cartesian axes
# counts as drawn only once its drag layer is there.
PAGE_STATE = """() => {
  const charts = [...document.querySelectorAll("CHART")];
  const drawn = (c) => {
    const plot = c.querySelector('.js-plotly-plot');
    if (!plot || !plot.querySelector('.main-svg') || !plot._fullLayout) return false;
    const cartesian = (plot._fullData || []).some(t => t.xaxis);
    return !cartesian || plot.querySelector('.draglayer .nsewdrag') !== null;
  };
  const app = document.querySelector("[data-testid='stApp']");
  return [charts.length, charts.filter(drawn).length,
          document.querySelectorAll("[data-testid='stMain'] [data-testid='stElementContainer']")
            .length,
          document.querySelectorAll("[data-testid='stDataFrame'] canvas").length,
          app ? app.getAttribute('data-test-script-state') : null,
          document.querySelectorAll("[data-stale='true']").length];
}""".replace("CHART", CHART)


def page_state(page) -> tuple:
    return tuple(page.evaluate(PAGE_STATE))


def drawn_charts(page) -> tuple[int, int]:
    """(chart elements, charts drawn to the end)."""
    count, drawn = page_state(page)[:2]
    return count, drawn


def wait_count(locator, count: int, timeout_ms: int = 30_000):
    """Wait until ``locator`` matches exactly ``count`` elements (a page drawn a moment late
    on a busy machine is not a failure); return it."""
    expect(locator).to_have_count(count, timeout=timeout_ms)
    return locator


def settle(
    page,
    heading: str | None = None,
    charts: int | None = None,
    timeout_ms: int = 90_000,
    quiet_s: float = 1.0,
    min_charts: int = 1,
) -> int:
    """Wait for the page's title (``heading``, else the main area's first heading), the end of
    its run, and every chart drawn; return the number of charts. ``charts``: how many to wait
    for (else at least ``min_charts``). The page must then stay unchanged (charts, elements,
    tables, run state, nothing faded) for ``quiet_s`` seconds: Plotly's and the data grid's
    code load lazily after the run has ended, and leaving before then can abort them."""
    if heading:
        title = page.locator("h1", has_text=heading)
    else:
        title = page.locator("[data-testid='stMain'] h1")
    title.first.wait_for(timeout=timeout_ms)
    wait_for_app(page, timeout_ms)
    deadline = time.monotonic() + timeout_ms / 1000
    last, stable_since = None, time.monotonic()
    while time.monotonic() < deadline:
        now = page_state(page)
        if now != last:
            last, stable_since = now, time.monotonic()
        count, drawn, run, stale = now[0], now[1], now[4], now[5]
        enough = count == charts if charts is not None else count >= min_charts
        if enough and count == drawn and run == "notRunning" and stale == 0:
            if time.monotonic() - stable_since >= quiet_s:
                return count
        page.wait_for_timeout(200)
    expected = charts if charts is not None else f"at least {min_charts}"
    raise AssertionError(
        f"{heading or page.url!r}: (charts, drawn, elements, grids, run, stale) = {last}, "
        f"expected {expected} charts"
    )


@pytest.fixture(scope="session")
def app_in_chromium(blackhole):
    if shutil.which("chromium") is None:
        pytest.fail("chromium is not on PATH: the browser tests need Debian's chromium package")
    before = blackhole.snapshot()
    env = dict(proxy_env(blackhole))
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        env["TIKTOKEN_CACHE_DIR"] = os.environ["TIKTOKEN_CACHE_DIR"]
    with running_app(env=env) as (url, _proc), chromium(blackhole.port) as browser:
        # One context: its HTTP cache keeps Streamlit's and Plotly's scripts between tests;
        # every tab is still a session of its own.
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        page.goto(url + "/")
        settle(page, "Attention, step by step")
        page.close()
        yield App(url, context, before)
        context.close()


@pytest.fixture
def page(app_in_chromium):
    tab = app_in_chromium.context.new_page()
    yield tab
    tab.close()
