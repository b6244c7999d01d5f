"""The home page's toy sentence in a real browser: a link opens the sentence it names, moving a
control writes its value into the address bar, "Copy link to this view" copies that address
and a fresh browser opens the same sentence from it, and a bad value in a link is named and
replaced by its default. A click on a cell of the alignment or of its "Explain a cell" grid
opens that cell's derivation, and its link lands on it.

Screenshots of the section at 1400×1000 and 390×844 land in ``test-artifacts/screens/``.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from attnviz.models.bottleneck import bottleneck_run as R
from attnviz.models.bottleneck import toy_language as L
from attnviz.teach.lessons import home as H
from bench.support.browser import settle, wait_for_app

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

TITLE = "Attention, step by step"
SCREENS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screens"
SECTION = "Attention aligns."


def query(page) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query)


def english(page, words) -> None:
    """Wait until the section shows the sentence ``words``."""
    page.get_by_text("English: " + " ".join(words), exact=True).wait_for(timeout=60_000)


def open_home(page, url: str, link: str = "") -> None:
    page.goto(url + "/" + link)
    settle(page, TITLE)


def test_a_link_opens_its_sentence_and_moved_controls_write_the_url(app_in_chromium):
    url = app_in_chromium.url
    browser = app_in_chromium.context.browser
    context = browser.new_context(viewport={"width": 1400, "height": 1400})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
    fresh = browser.new_context(viewport={"width": 1400, "height": 1400})
    try:
        page = context.new_page()
        open_home(page, url, "?why_words=6&why_seed=3")
        english(page, L.seeded_sentence(3, 6))
        assert page.locator(".st-key-why_seed input").input_value() == "3"

        seed = page.locator(".st-key-why_seed input")
        seed.fill("11")
        seed.press("Enter")
        english(page, L.seeded_sentence(11, 6))
        page.wait_for_function("() => location.search.includes('why_seed=11')", timeout=30_000)
        assert query(page)["why_words"] == ["6"]

        box = page.locator(".st-key-why_text input")
        box.fill("Big red fox sees small cat")
        box.press("Enter")
        english(page, ("big", "red", "fox", "sees", "small", "cat"))
        page.wait_for_function("() => location.search.includes('why_text=')", timeout=30_000)
        assert query(page)["why_text"] == ["Big red fox sees small cat"]

        # "Copy link to this view" copies that address; a fresh browser opens the same sentence.
        button = page.get_by_role("button", name="Copy link to this view")
        expect(button).to_have_count(1)
        button.click()
        page.get_by_text("Copied: paste it anywhere").first.wait_for(timeout=10_000)
        link = page.evaluate("() => navigator.clipboard.readText()")
        assert parse_qs(urlparse(link).query)["why_text"] == ["Big red fox sees small cat"]
        other = fresh.new_page()
        other.goto(link)
        settle(other, TITLE)
        english(other, ("big", "red", "fox", "sees", "small", "cat"))
        assert other.locator(".st-key-why_text input").input_value() == (
            "Big red fox sees small cat"
        )
    finally:
        context.close()
        fresh.close()


def test_a_bad_link_value_is_named_and_the_default_sentence_shown(page, app_in_chromium):
    open_home(page, app_in_chromium.url, "?why_text=%3Cb%3Ethe%3C%2Fb%3E+%F0%9F%A6%8A&why_seed=x")
    english(page, L.seeded_sentence(0, 20))
    wait_for_app(page)
    warning = page.locator("[data-testid='stAlert']").filter(has_text="not understood")
    text = warning.first.inner_text()
    assert "why_text (no toy word “b”" in text and "why_seed (not a whole number)" in text
    assert "why_text" not in query(page) and "why_seed" not in query(page)
    assert not page.locator("[data-testid='stException']").count()


def mirror_heading(page) -> str:
    found = page.locator("[data-testid='stText']").filter(has_text=re.compile(r"^Mirror word "))
    return found.first.inner_text() if found.count() else ""


def wait_for_cell(page, t: int, j: int) -> None:
    """Until the URL names cell q{t}k{j} and its derivation is drawn."""
    page.wait_for_function(
        "(cell) => location.search.includes('cell=' + cell) && [...document.querySelectorAll("
        "\"[data-testid='stText']\")].some(e => e.innerText.startsWith('Mirror word '))",
        arg=f"q{t}k{j}",
        timeout=90_000,
    )
    wait_for_app(page, 90_000)


def test_a_click_on_the_alignment_or_its_grid_opens_the_cell_s_derivation(page, app_in_chromium):
    words = L.seeded_sentence(1, 6)
    open_home(page, app_in_chromium.url, "?why_words=6&why_seed=1")
    english(page, words)
    lesson = H.align_lesson(words, R.recorded())
    panel = lesson.panels["why_align"]
    plot = page.locator(".st-key-fig_why_align .nsewdrag").first
    plot.scroll_into_view_if_needed()
    box = plot.bounding_box()
    # Mirror word 5 (the fifth row from the top), English word 2 (the second column)
    page.mouse.click(box["x"] + box["width"] * 1.5 / 6, box["y"] + box["height"] * 4.5 / 6)
    wait_for_cell(page, 5, 2)
    weight = float(panel.values[4, 1])
    assert mirror_heading(page) == (
        f"Mirror word {panel.rows[4]} → English word {panel.cols[1]}: weight {weight:.4f}"
    )
    # the grid: its cell of Mirror word 2 against English word 5, by a click
    grid = page.locator(".st-key-explain_grid td[role=gridcell]")
    expect(grid).to_have_count(36, timeout=30_000)
    grid.nth(1 * 6 + 4).click()
    wait_for_cell(page, 2, 5)
    weight = float(panel.values[1, 4])
    assert mirror_heading(page).endswith(f"weight {weight:.4f}")
    selected = page.locator(".st-key-explain_grid td[aria-selected=true]")
    assert selected.get_attribute("aria-label") == (
        f"query {panel.rows[1]}, key {panel.cols[4]}: weight {round(weight, 4):.4f}"
    )
    # the link, opened afresh, lands on the same derivation
    link = page.url
    other = page.context.new_page()
    try:
        other.goto(link)
        settle(other, TITLE)
        wait_for_cell(other, 2, 5)
        assert mirror_heading(other).endswith(f"weight {weight:.4f}")
    finally:
        other.close()


@pytest.mark.parametrize(("name", "size"), [("laptop", (1400, 1000)), ("phone", (390, 844))])
def test_screenshots_of_the_section(page, app_in_chromium, name, size):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_home(page, app_in_chromium.url, "?why_words=8&why_seed=4")
    english(page, L.seeded_sentence(4, 8))
    page.get_by_text(SECTION).first.scroll_into_view_if_needed()
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENS / f"why-align-{name}.png"))
    page.locator(".st-key-fig_why_align").scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENS / f"why-align-matrix-{name}.png"))
    open_home(page, app_in_chromium.url, "?why_words=8&why_seed=4&cell=q3k6")
    wait_for_cell(page, 3, 6)
    page.wait_for_timeout(1500)  # the derivation is brought to the top of the screen
    page.screenshot(path=str(SCREENS / f"why-derivation-{name}.png"))
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= size[0] + 1, f"the page scrolls sideways on the {name}: {width} px"
