"""The home page's toy sentence in a real browser: a link opens the sentence it names, moving a
control writes its value into the address bar (so "Copy link" and a reload keep the sentence),
and a bad value in a link is named and replaced by its default.

Screenshots of the section at 1400×1000 and 390×844 land in ``test-artifacts/screens/``.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from attnviz.models.bottleneck import toy_language as L
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


def test_a_link_opens_its_sentence_and_moved_controls_write_the_url(page, app_in_chromium):
    url = app_in_chromium.url
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

    # The address as it stands (what "Copy link" would copy) opens the same sentence.
    link = page.url
    other = page.context.new_page()
    try:
        other.goto(link)
        settle(other, TITLE)
        english(other, ("big", "red", "fox", "sees", "small", "cat"))
        assert other.locator(".st-key-why_text input").input_value() == (
            "Big red fox sees small cat"
        )
    finally:
        other.close()


def test_a_bad_link_value_is_named_and_the_default_sentence_shown(page, app_in_chromium):
    open_home(page, app_in_chromium.url, "?why_text=%3Cb%3Ethe%3C%2Fb%3E+%F0%9F%A6%8A&why_seed=x")
    english(page, L.seeded_sentence(0, 20))
    wait_for_app(page)
    warning = page.locator("[data-testid='stAlert']").filter(has_text="not understood")
    text = warning.first.inner_text()
    assert "why_text (no toy word “b”" in text and "why_seed (not a whole number)" in text
    assert "why_text" not in query(page) and "why_seed" not in query(page)
    assert not page.locator("[data-testid='stException']").count()


@pytest.mark.parametrize(("name", "size"), [("laptop", (1400, 1000)), ("phone", (390, 844))])
def test_screenshots_of_the_section(page, app_in_chromium, name, size):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_home(page, app_in_chromium.url, "?why_words=8&why_seed=4")
    english(page, L.seeded_sentence(4, 8))
    page.get_by_text(SECTION).first.scroll_into_view_if_needed()
    page.evaluate("() => window.scrollBy(0, -40)")
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENS / f"why-align-{name}.png"))
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= size[0] + 1, f"the page scrolls sideways on the {name}: {width} px"
