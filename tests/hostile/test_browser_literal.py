"""Hostile text in the URL, every page, headless Chromium: what is drawn is the literal text.

Two texts carry HTML, a Markdown image and link pointing at the loopback canary, repeated and
number-like tokens, a special token, a ZWJ emoji sequence and right-to-left script. On every
page: each Plotly axis keeps one category per position (no collapsed repeats, no numeric axis),
each drawn tick reads exactly the token's label (``<`` shown as ``<``), no link or element is
made from the student's text inside figures or Markdown, nothing in the page points at the
canary, and neither the canary nor the app's network blackhole hears from anything.
"""

from __future__ import annotations

import html
import time
import urllib.parse

import pytest
from playwright.sync_api import expect

from attnviz import figures
from attnviz.core.tokens import tokenize
from bench.support.browser import chromium, wait_for_app
from bench.support.network import Blackhole
from bench.support.pages import app_pages
from bench.support.server import running_app

from .corpus import TOKEN_CAP

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = app_pages()
CONTEXT = 64  # both texts fit, so every causal figure shows every token


def texts(canary: str) -> tuple[str, str]:
    text = (
        f"<b>bold</b> <i>x</i> ![x]({canary}/md.png) [link]({canary}/link) "
        "1 2 1 2 3 the the the <|endoftext|>"
    )
    text2 = f"<img src={canary}/img.png onerror=alert(1)> 👩‍👩‍👧‍👦 שלום עולם 1 2"
    return text, text2


def shown_labels(text: str) -> list[str]:
    """The tick labels a student must read: the escaped labels the app sends, decoded once."""
    return [html.unescape(s) for s in figures.axis_labels(tokenize(text, cap=TOKEN_CAP).labels)]


def _labels_axis(categories: list[str], labels: list[str]) -> bool:
    """The axis reads the text's tokens: its categories are the labels' first positions (a
    token window), or (page 8: filler, then the text twice) the text's first tokens, each
    "position: token", appear in order inside them."""
    if categories == labels[: len(categories)]:
        return True
    shown = [c.split(": ", 1)[-1] for c in categories]
    run = [c.split(": ", 1)[-1] for c in labels[:12]]
    return any(shown[i : i + len(run)] == run for i in range(len(shown) - len(run) + 1))


CHARTS_STATE = """() => {
  const app = document.querySelector("[data-testid='stApp']");
  const charts = [...document.querySelectorAll("[data-testid='stPlotlyChart']")];
  return {
    connected: !!app && app.getAttribute('data-test-connection-state') === 'CONNECTED',
    running: !app || app.getAttribute('data-test-script-state') !== 'notRunning',
    count: charts.length,
    drawn: charts.filter(c => c.querySelector('.main-svg')).length,
  };
}"""

PLOTS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => {
  const layout = gd._fullLayout || {};
  const axes = Object.keys(layout).filter(k => /^[xy]axis\\d*$/.test(k)).map(k => ({
    name: k, type: layout[k].type, categories: [...(layout[k]._categories || [])],
  }));
  const ticks = [...gd.querySelectorAll('.xtick text, .ytick text')].map(t => t.textContent);
  const svgLinks = gd.querySelectorAll('svg a').length;
  const styled = [...gd.querySelectorAll('.xtick tspan, .ytick tspan')]
    .filter(t => /font-weight|font-style|text-decoration/.test(t.getAttribute('style') || ''))
    .length;
  return {axes, ticks, svgLinks, styled};
})"""

MARKUP_FROM_TEXT = """(canary) => {
  const boxes = "[data-testid='stMarkdown'], [data-testid='stMarkdownContainer'], " +
    "[data-testid='stCaptionContainer'], [data-testid='stAlert'], [data-testid='stHeading']";
  const inMarkdown = [...document.querySelectorAll(boxes)]
    .flatMap(box => [...box.querySelectorAll('b, i, u, s, img, script, iframe')])
    .map(e => e.outerHTML.slice(0, 120));
  const pointing = [...document.querySelectorAll('[src], [href], [srcset], [poster]')]
    .filter(e => ['src', 'href', 'srcset', 'poster']
      .some(a => (e.getAttribute(a) || '').includes(canary)))
    .map(e => e.outerHTML.slice(0, 120));
  return {inMarkdown, pointing};
}"""


def wait_for_charts(
    page, timeout_s: float = 90.0, settle_s: float = 1.5, expect_charts: bool = True
) -> int:
    """Wait until the script has finished and every chart on the page is drawn, with nothing
    changing for ``settle_s`` (the script state can read "notRunning" before a rerun starts).
    ``expect_charts=False``: a page that may draw none. Returns the number of charts."""
    wait_for_app(page, int(timeout_s * 1000))
    deadline = time.monotonic() + timeout_s
    stable_since, last = None, None
    while time.monotonic() < deadline:
        state = page.evaluate(CHARTS_STATE)
        done = (
            state["connected"]
            and not state["running"]
            and (state["count"] > 0 or not expect_charts)
            and state["drawn"] == state["count"]
        )
        key = (state["count"], state["drawn"])
        if done and key == last:
            if time.monotonic() - stable_since >= settle_s:
                return state["count"]
        else:
            stable_since = time.monotonic()
        last = key if done else None
        time.sleep(0.25)
    raise AssertionError(f"charts not drawn within {timeout_s:.0f} s: {state}")


@pytest.fixture(scope="module")
def session(canary, blackhole):
    """One server, one browser. Chromium's own traffic (it calls Google by itself) goes to a
    blackhole of its own; the session's blackhole is what the app would use."""
    text, text2 = texts(canary.origin)
    query = urllib.parse.urlencode({"text": text, "text2": text2, "ctx": CONTEXT})
    app_before = len(blackhole.snapshot())
    browser_hole = Blackhole()
    try:
        with running_app() as (url, _proc), chromium(browser_hole.port) as browser:
            page = browser.new_page(viewport={"width": 1400, "height": 2200})
            # A fresh server's first session must start at "/" (else Streamlit's legacy pages/
            # route answers first and shows a spurious "Page not found").
            page.goto(f"{url}/?{query}")
            wait_for_charts(page)
            yield {
                "page": page,
                "url": url,
                "query": query,
                "text": text,
                "text2": text2,
                "app_before": app_before,
            }
            page.close()
    finally:
        browser_hole.close()


@pytest.mark.parametrize("info", PAGES, ids=[p.url_path for p in PAGES])
def test_page_draws_the_literal_text(session, info, canary):
    page = session["page"]
    page.goto(f"{session['url']}{info.url}?{session['query']}")
    wait_for_charts(page, expect_charts=info.draws_sidebar_text)

    # The sidebar holds the text exactly as the link gave it. (Polled: on a busy machine the box
    # can be read in the moment between its mount and the bound value reaching it.)
    box = page.get_by_test_id("stTextArea").locator("textarea")
    expect(box).to_have_value(session["text"], timeout=30_000)
    found = page.evaluate(MARKUP_FROM_TEXT, canary.origin)
    assert found["inMarkdown"] == [], found["inMarkdown"]
    assert found["pointing"] == [], found["pointing"]
    if not info.draws_sidebar_text:
        return  # a page with inputs of its own: the text is not drawn here

    want = {
        "text": shown_labels(session["text"]),
        "text2": shown_labels(session["text2"]),
    }
    plots = page.evaluate(PLOTS)
    assert plots, f"no figures on {info.url}"
    token_axes = 0
    for plot in plots:
        assert plot["svgLinks"] == 0, "a link was made inside a figure"
        assert plot["styled"] == 0, "tick text was styled by markup"
        categories = set()
        for axis in plot["axes"]:
            cats = [html.unescape(c) for c in axis["categories"]]
            categories.update(cats)
            if cats and any(_labels_axis(cats, labels) for labels in want.values()):
                token_axes += 1
                # One category per position: repeats and numbers keep their own rows.
                assert axis["type"] == "category", axis["name"]
        for tick in plot["ticks"]:
            # What is drawn is the label itself: markup not interpreted, entities decoded once.
            if categories and not tick.replace(".", "").replace("−", "").strip().isdigit():
                assert tick in categories, (tick, sorted(categories)[:8])
    assert token_axes, f"no axis on {info.url} is labelled with the text's tokens"
    every_tick = {t for plot in plots for t in plot["ticks"]}
    literal = {"0: <", "2: >", "0: <b>"} & every_tick
    if any(t for t in every_tick if ": " in t):
        assert literal, f"no tick shows '<' literally on {info.url}: {sorted(every_tick)[:10]}"
        assert "0: &lt;" not in every_tick, "an entity was shown instead of the character"


def test_nothing_was_fetched(session, canary, blackhole):
    time.sleep(1.0)  # give any stray image or prefetch time to arrive
    assert canary.snapshot() == []
    assert blackhole.snapshot()[session["app_before"] :] == []
