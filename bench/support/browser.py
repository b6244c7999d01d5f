"""Playwright for Python driving Debian's Chromium, with the blackhole as its proxy."""

from __future__ import annotations

import atexit
import shutil
import threading
import time
from contextlib import contextmanager

CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage")
SILENCED_SERVICES = ("component-updater=url-source", "gaia-url", "autofill-server-url")
CHART = "[data-testid='stPlotlyChart']"


def chromium_path() -> str:
    path = shutil.which("chromium")
    if not path:
        raise RuntimeError("chromium is not on PATH: apt-get install -y chromium")
    return path


_PLAYWRIGHT = None
_PLAYWRIGHT_LOCK = threading.Lock()


def _playwright():
    """One Playwright driver per process: its sync API cannot be started while another sync
    instance is running, and a test session opens browsers from several fixtures at once."""
    global _PLAYWRIGHT
    with _PLAYWRIGHT_LOCK:
        if _PLAYWRIGHT is None:
            from playwright.sync_api import sync_playwright

            _PLAYWRIGHT = sync_playwright().start()
            atexit.register(_PLAYWRIGHT.stop)
        return _PLAYWRIGHT


@contextmanager
def chromium(proxy_port: int):
    """Yield a Playwright Browser. Chromium calls Google's servers on its own, so all its
    traffic goes to the blackhole; loopback pages bypass the proxy and still load."""
    p = _playwright()
    browser = p.chromium.launch(
        executable_path=chromium_path(),
        headless=True,
        args=[
            *CHROMIUM_ARGS,
            f"--proxy-server=http://127.0.0.1:{proxy_port}",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            # Chromium still calls its component updater, Google accounts and the autofill
            # server on its own (seen in the blackhole): point them at a closed loopback
            # port, so that whatever reaches the blackhole came from the app.
            *(f"--{switch}=http://127.0.0.1:9" for switch in SILENCED_SERVICES),
        ],
    )
    try:
        yield browser
    finally:
        browser.close()


def wait_for_app(page, timeout_ms: int = 60_000) -> None:
    """Wait until Streamlit is connected and its script has finished running."""
    page.locator("[data-testid='stApp'][data-test-connection-state='CONNECTED']").wait_for(
        state="attached", timeout=timeout_ms
    )
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(
        state="attached", timeout=timeout_ms
    )


# What a page shows, read in one call: (charts, charts drawn to the end, element containers in
# the main area, data-grid canvases, Streamlit's script state, stale elements: those a rerun
# has not drawn again yet, which Streamlit shows faded; and placeholders of elements whose code
# is still loading). Plotly makes a chart's ``.main-svg`` first and its axes' drag layer and
# titles after, so a chart with cartesian axes counts as drawn only once its drag layer is there.
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
          document.querySelectorAll("[data-stale='true']").length,
          document.querySelectorAll("[data-testid='stSkeleton']").length];
}""".replace("CHART", CHART)


def page_state(page) -> tuple:
    return tuple(page.evaluate(PAGE_STATE))


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
    tables, run state, nothing faded or loading) for ``quiet_s`` seconds: Plotly's and the data
    grid's code load lazily after the run has ended, and leaving before then can abort them."""
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
        count, drawn, run, stale, loading = now[0], now[1], now[4], now[5], now[6]
        enough = count == charts if charts is not None else count >= min_charts
        if enough and count == drawn and run == "notRunning" and stale == loading == 0:
            if time.monotonic() - stable_since >= quiet_s:
                return count
        page.wait_for_timeout(200)
    expected = charts if charts is not None else f"at least {min_charts}"
    raise AssertionError(
        f"{heading or page.url!r}: (charts, drawn, elements, grids, run, stale, loading) = {last}, "
        f"expected {expected} charts"
    )
