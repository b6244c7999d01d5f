"""The "Trained heads" page in Chromium, served with a small GPT-2 folder: every chart drawn,
the grid sent as thumbnails, opening another head redraws the detail, nothing leaves loopback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attnviz.models import gpt2
from bench.support.browser import CHART, chromium, settle, wait_for_app
from bench.support.network import proxy_env
from bench.support.server import running_app

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

HEADING = "Trained heads: GPT-2's weights in your module"
SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture(scope="module")
def browser_page(blackhole, page_folder):
    env = {**proxy_env(blackhole), gpt2.ENV: page_folder}
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        env["TIKTOKEN_CACHE_DIR"] = os.environ["TIKTOKEN_CACHE_DIR"]
    with running_app(env=env) as (url, _proc), chromium(blackhole.port) as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 3200})
        # A fresh server's first session takes Streamlit's legacy pages/ lookup: open the root.
        page.goto(url)
        wait_for_app(page)
        page.locator(CHART).first.locator(".main-svg").first.wait_for(timeout=90_000)
        yield url, page


def charts_drawn(page, count: int, timeout_s: float = 90) -> None:
    """Wait for the run's end and exactly ``count`` charts drawn (bench/support/browser.settle)."""
    settle(page, charts=count, timeout_ms=int(timeout_s * 1000))


def chart_titles(page) -> list[str]:
    return page.evaluate(
        """() => [...document.querySelectorAll("[data-testid='stPlotlyChart'] .gtitle")]
                 .map(t => t.textContent)"""
    )


def test_every_head_is_drawn_and_another_opens_in_detail(browser_page, blackhole):
    url, page = browser_page
    before = len(blackhole.snapshot())
    page.goto(f"{url}/trained-heads?text=The+cat+sat+on+the+mat")
    page.locator("h1", has_text=HEADING).wait_for(timeout=90_000)
    wait_for_app(page)
    charts_drawn(page, 3)  # the grid, the open GPT-2 head, the random head
    titles = chart_titles(page)
    assert titles[0] == "All 8 heads, layers down, heads across"
    assert titles[1].startswith("GPT-2 layer 0, head 0")
    assert titles[2].startswith("Random head 0, same width, same text")
    # The grid is one heatmap of 2 x 4 thumbnails of 6 x 6 cells (one blank line between).
    size = page.evaluate(
        """() => { const g = document.querySelectorAll("[data-testid='stPlotlyChart']")[0]
                   .querySelector('.js-plotly-plot');
                   const z = g._fullData[0].z; return [z.length, z[0].length]; }"""
    )
    assert size == [13, 27]
    # Hovering a cell names its head: layer 1, head 2 sits at row 7, column 14.
    hover = page.evaluate(
        """() => { const g = document.querySelectorAll("[data-testid='stPlotlyChart']")[0]
                   .querySelector('.js-plotly-plot');
                   return Array.from(g._fullData[0].customdata[7][14]); }"""
    )
    assert hover == [1, 2]
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "trained-heads.png"), full_page=True)

    page.get_by_test_id("stSelectbox").filter(has_text="Open a head").click()
    page.get_by_role("option", name="layer 1, head 3").first.click()
    page.wait_for_function(
        """() => [...document.querySelectorAll("[data-testid='stPlotlyChart'] .gtitle")]
                 .some(t => t.textContent.startsWith('GPT-2 layer 1, head 3'))""",
        timeout=60_000,
    )
    wait_for_app(page)
    charts_drawn(page, 3)
    assert page.locator("[data-testid='stException']").count() == 0
    assert len(blackhole.snapshot()) == before  # nothing went beyond 127.0.0.1
