"""Playwright for Python driving Debian's Chromium, with the blackhole as its proxy."""

from __future__ import annotations

import atexit
import shutil
import threading
from contextlib import contextmanager

CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage")
SILENCED_SERVICES = ("component-updater=url-source", "gaia-url", "autofill-server-url")


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
