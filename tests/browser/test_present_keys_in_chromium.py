"""The presenter's keys work from the first moment (issue 36): on a freshly loaded presenter page
a → pressed 100 ms after the first chart is visible moves exactly one step, once; PageDown (what
a clicker sends) and ← move too, and the focus on the "Presenter mode" toggle does not stop them.

Measured in Chromium at a projector's 1920×1080: the step counter, the URL's ``step`` and the
figure's title, read again after the page has settled, so a press counted twice would show."""

from __future__ import annotations

import pytest

from bench.support.browser import settle

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

LINK = "/causal-attention?present=true&text=The+cat+sat+on+the+mat+and+looked"
TITLE = "3. Causal attention and dropout"
FIGURE = "[data-testid='stPlotlyChart'] .nsewdrag"
COUNTER = """() => [...document.querySelectorAll("[data-testid='stMarkdownContainer'] p")]
    .map(e => e.textContent).filter(t => /^Step \\d+ of \\d+$/.test(t))"""
TITLES = """() => [...document.querySelectorAll("[data-testid='stPlotlyChart'] .gtitle")]
    .map(e => e.textContent)"""


def shown(page) -> tuple[list[str], list[str], str]:
    """(the step counter, the figures' titles, the URL's query) once the page has settled."""
    settle(page, TITLE, charts=1, timeout_ms=120_000, quiet_s=1.5)
    return page.evaluate(COUNTER), page.evaluate(TITLES), page.url.split("?", 1)[1]


def test_a_right_arrow_100_ms_after_the_first_chart_moves_one_step_once(page, app_in_chromium):
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.goto(app_in_chromium.url + LINK)
    page.locator(FIGURE).first.wait_for(state="visible", timeout=120_000)
    # Something listens as soon as the figure shows: the presenter's key catcher, or (while its
    # code still loads) the Next button with its own shortcut.
    listening = page.evaluate(
        """() => [document.documentElement.dataset.presenterKeys || null,
                  !!document.querySelector('.st-key-present_next button')]"""
    )
    assert listening[0] == "on" or listening[1], listening
    page.wait_for_timeout(100)
    page.keyboard.press("ArrowRight")
    page.get_by_text("Step 2 of 6").first.wait_for(timeout=60_000)
    page.wait_for_timeout(3000)  # a press counted twice would have gone on to step 3 by now
    counter, titles, query = shown(page)
    assert counter == ["Step 2 of 6"], (counter, query)
    assert "step=2" in query.split("&"), query
    assert titles[0].startswith("Masked scores (blank = −∞)"), titles


def test_page_down_and_the_left_arrow_move_one_step_each(page, app_in_chromium):
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.goto(app_in_chromium.url + LINK + "&step=2")
    assert shown(page)[0] == ["Step 2 of 6"]
    page.keyboard.press("PageDown")  # a presentation clicker's "next"
    page.get_by_text("Step 3 of 6").first.wait_for(timeout=60_000)
    counter, titles, query = shown(page)
    assert counter == ["Step 3 of 6"] and "step=3" in query.split("&"), (counter, query)
    assert titles[0].startswith("Masked scores ÷ √d_k"), titles
    page.keyboard.press("ArrowLeft")
    page.get_by_text("Step 2 of 6").first.wait_for(timeout=60_000)
    counter, _, query = shown(page)
    assert counter == ["Step 2 of 6"] and "step=2" in query.split("&"), (counter, query)


def test_keys_move_while_the_toggle_has_the_focus(page, app_in_chromium):
    """Streamlit's own shortcuts ignore keys while a checkbox (a toggle) has the focus: the
    lecturer's first click is often on "Presenter mode" itself."""
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.goto(app_in_chromium.url + "/causal-attention?text=The+cat+sat+on+the+mat")
    settle(page, TITLE, timeout_ms=120_000)
    page.get_by_text("Presenter mode").first.click()
    page.get_by_text("Step 1 of 6").first.wait_for(timeout=60_000)
    settle(page, TITLE, charts=1, timeout_ms=120_000)
    page.locator("input[aria-label='Presenter mode']").focus()
    focused = page.evaluate("() => document.activeElement && document.activeElement.type")
    assert focused == "checkbox"
    page.keyboard.press("ArrowRight")
    page.get_by_text("Step 2 of 6").first.wait_for(timeout=60_000)
    counter, _, query = shown(page)
    assert counter == ["Step 2 of 6"] and "step=2" in query.split("&"), (counter, query, focused)


VISIBILITY = """() => [...document.querySelectorAll("[data-testid='stPlotlyChart']")]
    .map(e => getComputedStyle(e).visibility)"""


def test_figures_stay_hidden_while_nothing_listens_for_the_keys(page, app_in_chromium):
    """A figure shown before anything catches → would invite a press that goes nowhere: the
    charts stay hidden until the key catcher (or the Next button with its own shortcut) is
    there. Both are taken away here by hand, and the charts hide; the catcher's mark put back,
    they show again."""
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.goto(app_in_chromium.url + LINK)
    settle(page, TITLE, charts=1, timeout_ms=120_000, quiet_s=1.5)
    assert set(page.evaluate(VISIBILITY)) == {"visible"}
    hidden = page.evaluate(
        """() => {
            delete document.documentElement.dataset.presenterKeys;
            document.querySelectorAll('.st-key-present_next button').forEach(b => b.remove());
            return [...document.querySelectorAll("[data-testid='stPlotlyChart']")]
                .map(e => getComputedStyle(e).visibility);
        }"""
    )
    assert hidden and set(hidden) == {"hidden"}, hidden
    shown_again = page.evaluate(
        """() => {
            document.documentElement.dataset.presenterKeys = "on";
            return [...document.querySelectorAll("[data-testid='stPlotlyChart']")]
                .map(e => getComputedStyle(e).visibility);
        }"""
    )
    assert set(shown_again) == {"visible"}, shown_again
