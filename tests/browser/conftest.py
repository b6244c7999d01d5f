"""One ``streamlit run app.py`` and one headless Chromium for the whole browser suite.

Both send anything non-loopback to the blackhole. On a fresh server the first session that
opens a non-root page gets Streamlit's "Page not found" (its legacy ``pages/`` lookup runs once
per process), so the server is warmed up through the root URL, down to a drawn chart, first.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

import pytest
from playwright.sync_api import expect

from bench.support.browser import chromium, settle
from bench.support.network import proxy_env
from bench.support.server import running_app

VIEWPORT = {"width": 1400, "height": 3000}


@dataclass
class App:
    url: str
    context: object  # the Playwright BrowserContext every test opens its tab in
    network_before: list[str]


def wait_count(locator, count: int, timeout_ms: int = 30_000):
    """Wait until ``locator`` matches exactly ``count`` elements (a page drawn a moment late
    on a busy machine is not a failure); return it."""
    expect(locator).to_have_count(count, timeout=timeout_ms)
    return locator


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
