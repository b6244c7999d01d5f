"""The app in a real browser: every page draws every chart without an error, the hover names
both tokens, a shared link restores the sidebar, HTML-like text stays text, and nothing but
loopback traffic happens. Screenshots land in ``test-artifacts/screens/``."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest

from attnviz.core.settings import Settings
from attnviz.teach import prepare as lesson
from bench.support.browser import CHART, settle, wait_for_app

from .conftest import wait_count

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

BOOK_TEXT = "Your journey starts with one step"


def sidebar_value(page, label: str) -> str:
    field = page.locator(
        f"[data-testid='stSidebar'] input[aria-label='{label}'], "
        f"[data-testid='stSidebar'] textarea[aria-label='{label}']"
    )
    return field.first.input_value()


def chart_titled(page, prefix: str):
    charts = page.locator(CHART).filter(
        has=page.locator(".gtitle", has_text=re.compile("^" + re.escape(prefix)))
    )
    return wait_count(charts, 1).first


def error_alerts(page) -> list[str]:
    return page.evaluate(
        """() => [...document.querySelectorAll("[data-testid='stAlert']")]
            .filter(a => a.querySelector("[data-testid='stAlertContentError']"))
            .map(a => a.innerText)"""
    )


def test_hovering_a_page_1_weight_names_query_key_and_value(page, app_in_chromium):
    page.goto(app_in_chromium.url + "/simplified-attention")
    settle(page, "1. Simplified self-attention")
    weights = chart_titled(page, "Weights A")
    weights.scroll_into_view_if_needed()
    box = weights.locator(".nsewdrag").first.bounding_box()
    n, row, col = 6, 2, 1  # query "2: ␣starts", key "1: ␣journey"
    x = box["x"] + (col + 0.5) * box["width"] / n
    y = box["y"] + (row + 0.5) * box["height"] / n  # rows top to bottom (autorange reversed)
    page.mouse.move(x - 3, y - 3)
    page.mouse.move(x, y)
    hover = weights.locator(".hoverlayer")
    hover.locator("text").first.wait_for(timeout=10_000)
    text = hover.text_content()
    expected = lesson.simplified(lesson.prepare(BOOK_TEXT, Settings())).attn_weights[row, col]
    assert "query 2: ␣starts" in text
    assert "key 1: ␣journey" in text
    value = re.search(r"weight (\d\.\d{4})", text)
    assert value, text
    assert value.group(1) == f"{float(expected):.4f}"


def test_a_shared_link_restores_the_sidebar_and_keeps_it_through_page_links(page, app_in_chromium):
    page.goto(app_in_chromium.url + "/simplified-attention?d_out=12&heads=3&text=the+cat+sat")
    settle(page, "1. Simplified self-attention")
    assert sidebar_value(page, "d_out (total output width)") == "12"
    assert sidebar_value(page, "num_heads") == "3"
    assert sidebar_value(page, "Text") == "the cat sat"
    assert sidebar_value(page, "d_in (embedding width)") == "8"
    # Through the sidebar's page links, the values and the link stay.
    page.locator("[data-testid='stSidebarNav'] a", has_text="4. Multi-head attention").click()
    settle(page, "4. Multi-head attention")
    assert sidebar_value(page, "d_out (total output width)") == "12"
    assert sidebar_value(page, "num_heads") == "3"
    assert sidebar_value(page, "Text") == "the cat sat"
    assert re.search(r"/multi-head-attention\?", page.url)
    assert "d_out=12" in page.url and "heads=3" in page.url
    chart_titled(page, "Attention weights of all 3 heads")


def test_a_bad_link_is_named_and_replaced_by_defaults_on_the_page_it_opens(page, app_in_chromium):
    long_text = "x" * 2001
    page.goto(f"{app_in_chromium.url}/simplified-attention?heads=abc&d_in=7.5&text={long_text}")
    settle(page, "1. Simplified self-attention")
    warning = page.locator("[data-testid='stAlert']", has_text="Some values in the link")
    wait_count(warning, 1)
    said = warning.inner_text()
    for named in (
        "heads (not a whole number)",
        "d_in (not a whole number)",
        # A text past the limit is not refused: its first 2,000 characters are kept.
        "The link's text was 2,001 characters long: it was shortened to its first 2,000.",
    ):
        assert named in said
    assert sidebar_value(page, "num_heads") == "2"
    assert sidebar_value(page, "d_in (embedding width)") == "8"
    assert sidebar_value(page, "Text") == "x" * 2000
    wait_for_app(page)
    assert "heads=" not in page.url and "d_in=" not in page.url
    assert f"text={'x' * 2000}" in page.url and f"text={long_text}" not in page.url


def test_a_paste_past_the_limit_keeps_its_first_2000_characters_and_says_so(page, app_in_chromium):
    """With max_chars on the box, Chromium's Streamlit ignored such a paste without a word."""
    page.goto(f"{app_in_chromium.url}/simplified-attention")
    settle(page, "1. Simplified self-attention")
    paste = "The cat sat on the mat. " * 100  # 2,400 characters
    box = page.locator("[data-testid='stSidebar'] textarea[aria-label='Text']")
    # Typing into a text box makes Chromium fetch a spell-check dictionary from Google (the
    # blackhole would record it): not what this test is about.
    box.evaluate("el => { el.spellcheck = false; }")
    box.fill(paste)
    box.press("Control+Enter")
    notice = page.locator(
        "[data-testid='stSidebar'] [data-testid='stAlert']",
        has_text="The text you gave had 2,400 characters: only its first 2,000 are kept.",
    )
    notice.wait_for(timeout=60_000)
    wait_for_app(page)
    assert sidebar_value(page, "Text") == paste[:2000]
    assert not error_alerts(page)


def test_html_like_text_is_shown_literally_in_the_tick_labels(page, app_in_chromium):
    text = "<b>bold</b> & <img src=x>"
    page.goto(f"{app_in_chromium.url}/simplified-attention?text={quote(text)}")
    settle(page, "1. Simplified self-attention")
    weights = chart_titled(page, "Weights A")
    ticks = weights.locator(".xtick text").all_text_contents()
    expected = [
        "0: <",
        "1: b",
        "2: >",
        "3: bold",
        "4: </",
        "5: b",
        "6: >",
        "7: ␣&",
        "8: ␣<",
        "9: img",
        "10: ␣src",
        "11: =",
        "12: x",
        "13: >",
    ]
    assert ticks == expected
    categories = weights.evaluate(
        "el => el.querySelector('.js-plotly-plot')._fullLayout.xaxis._categories"
    )
    assert len(categories) == len(expected)
    # Plotly turns <b>, <i>, <a> in a label into styled <tspan>s or links: none in any tick.
    formatted = page.evaluate(
        """() => [...document.querySelectorAll('.xtick text, .ytick text')]
            .filter(t => t.children.length > 0).map(t => t.outerHTML)"""
    )
    assert formatted == []
    assert page.locator("img[src='x'], image[href='x']").count() == 0
    assert page.locator(".main-svg b, .main-svg i, .main-svg a").count() == 0
    assert sidebar_value(page, "Text") == text


def test_zz_nothing_left_loopback_during_the_browser_tests(app_in_chromium, blackhole):
    assert blackhole.snapshot() == app_in_chromium.network_before
