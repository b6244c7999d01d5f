"""Page 5 in a real browser: its controls write their own names into the link (AppTest cannot
see URL writes), and Train draws every chart."""

from __future__ import annotations

import pytest

from bench.support.browser import CHART, chromium, settle, wait_for_app
from bench.support.server import running_app

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

PAGE = "/watch-attention-learn"


@pytest.fixture(scope="module")
def browser_page(blackhole):
    with running_app() as (url, _proc), chromium(blackhole.port) as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 3000})
        # A fresh server's first session takes Streamlit's legacy pages/ lookup: open the root.
        page.goto(url)
        wait_for_app(page)
        page.locator(CHART).first.locator(".main-svg").first.wait_for(timeout=60_000)
        yield url, page


def all_charts_drawn(page, count: int, timeout_s: float = 60) -> None:
    """Wait for the run's end and exactly ``count`` charts drawn (bench/support/browser.settle)."""
    settle(page, charts=count, timeout_ms=int(timeout_s * 1000))


def test_controls_go_into_the_link_and_train_draws_every_chart(browser_page):
    url, page = browser_page
    page.goto(f"{url}{PAGE}?steps=8&lseed=3")
    page.get_by_text("Press Train to train the layer").wait_for(timeout=60_000)
    wait_for_app(page)
    assert page.locator(CHART).count() == 0  # nothing trained on load

    page.get_by_test_id("stRadio").filter(has_text="Heads").get_by_text("2", exact=True).click()
    page.wait_for_function("() => location.search.includes('lheads=2')", timeout=30_000)
    assert "steps=8" in page.url and "lseed=3" in page.url
    wait_for_app(page)

    page.get_by_role("button", name="Train", exact=True).click()
    page.get_by_text("Held-out accuracy").wait_for(timeout=120_000)
    wait_for_app(page)
    # loss, accuracy, one snapshot per head, the expected pattern, one learnt map per head
    all_charts_drawn(page, 2 + 2 + 1 + 2)
    assert page.locator("[data-testid='stException']").count() == 0
