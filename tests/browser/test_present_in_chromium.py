"""Presenter mode in a real browser at a projector's 1920×1080: the stepper shows, the sidebar
and the download buttons do not, nothing is cut off sideways, the Right key moves to step 2, and
the toggle leaves for the normal page. Screenshot: ``test-artifacts/screens/present-causal.png``."""

from __future__ import annotations

import pytest

from bench.support.browser import settle, wait_for_app

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

LINK = "/causal-attention?present=true&text=The+cat+sat+on+the+mat"
TITLE = "3. Causal attention and dropout"


def step_counter(page) -> str:
    return page.get_by_text("Step ", exact=False).filter(has_text=" of 6").first.inner_text()


def test_presenter_mode_at_1920x1080(page, app_in_chromium, artifacts):
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.goto(app_in_chromium.url + LINK)
    assert settle(page, TITLE, charts=1) == 1
    assert step_counter(page) == "Step 1 of 6"
    # The text box sits on the stepper, with the link's text.
    box = page.locator("[data-testid='stMain'] textarea[aria-label='Text']")
    assert box.input_value() == "The cat sat on the mat"
    facts = page.evaluate(
        """() => {
            const bar = document.querySelector("[data-testid='stSidebar']");
            const shown = el => !!el && el.getBoundingClientRect().width > 0
                && getComputedStyle(el).display !== 'none';
            return {
                sidebar: shown(bar),
                downloads: document.querySelectorAll("[data-testid='stDownloadButton']").length,
                scrollWidth: document.documentElement.scrollWidth,
                innerWidth: window.innerWidth,
                title: document.querySelector("[data-testid='stPlotlyChart'] .gtitle")
                    ?.textContent,
            };
        }"""
    )
    assert facts["sidebar"] is False
    assert facts["downloads"] == 0
    assert facts["scrollWidth"] <= facts["innerWidth"], facts
    print(f"presenter at 1920x1080: {facts}")
    assert facts["title"].startswith("Scores Q Kᵀ (before the mask)"), facts
    shots = artifacts / "screens"
    shots.mkdir(exist_ok=True)
    page.screenshot(path=str(shots / "present-causal.png"))

    # The Right key is Next's shortcut (focus on the page, not in the text box).
    page.locator("h1", has_text=TITLE).first.click()
    page.keyboard.press("ArrowRight")
    page.get_by_text("Step 2 of 6").first.wait_for(timeout=30_000)
    wait_for_app(page)
    assert "step=2" in page.url
    page.locator(
        "[data-testid='stPlotlyChart'] .gtitle", has_text="Masked scores (blank = −∞)"
    ).first.wait_for(timeout=30_000)

    # The one visible control leaves: the normal page and its sidebar come back, and the URL
    # no longer says present or step.
    page.get_by_text("Presenter mode").first.click()
    page.locator("h2", has_text="The mask is a buffer").first.wait_for(timeout=60_000)
    wait_for_app(page)
    assert page.locator("[data-testid='stSidebar']").first.is_visible()
    assert "present=" not in page.url and "step=" not in page.url, page.url
    assert "text=The+cat+sat+on+the+mat" in page.url or "text=The%20cat" in page.url, page.url
    widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    print(f"normal page after leaving: scrollWidth, innerWidth = {widths}")
