"""A student's phone, 390×844 in Chromium (issue 36, points 8-10):

- on every page (the pass pages also with a 13-token text, every closed part open, a bug turned
  on and a cell explained), nothing is cut at the screen's right edge unless it sits in a box
  that scrolls sideways, and no text is under 11 px (a heatmap's cell numbers that would be are
  not drawn: a tap on the cell shows its value); the wide tables that scroll (the break-it
  table, the "Explain a cell" grid) say so over them;
- a presenter link opened on a phone shows the page's phone layout, and one note says why (on a
  laptop it still presents);
- a ``cell=`` link opens with its derivation on the screen;
- pass 1's jump line reaches the weights map in one tap, and its last link opens pass 2 on the
  same text and settings;
- a paste over 2,000 characters is noticed once, by its box (never as "the link's text").

Screenshots land in ``test-artifacts/screens/`` (``phone-*.png``).
"""

from __future__ import annotations

import time
import urllib.parse

import pytest

from attnviz.teach import bugs
from bench.support.browser import settle
from bench.support.pages import app_pages
from ui import render, style
from ui.teach import explain, narrow

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(1800)]

PHONE = {"width": 390, "height": 844}
LONG_TEXT = "The+cat+sat+on+the+mat+and+the+dog+sat+on+the+rug"  # 13 tokens: a wide grid
# Each pass page with its closed parts open and its first classic bug turned on.
PASS_PAGES = {
    "simplified-attention": ("simplified", ""),
    "trainable-attention": ("trainable", "&scaling=true&v1v2=true"),
    "causal-attention": ("causal", "&train=true&dropout=0.5&lab=true&batch=true"),
    "multi-head-attention": ("multihead", "&reshape=true&wrapper=true"),
}


def opened(path: str) -> str:
    kind, parts = PASS_PAGES[path]
    bug = urllib.parse.quote_plus(bugs.bugs_for(kind)[0].title)
    return f"/{path}?text={LONG_TEXT}&cell=q4k2{parts}&bug_{kind}={bug}"


# What a phone would show wrong, read in one evaluate: elements past the right edge that no
# box scrolling sideways holds, and text set under 11 px. Shadow roots (the "Explain a cell"
# grid is a component's) are searched too. Elements clipped to nothing (a visually hidden
# input, KaTeX's MathML) and zero-width spaces are not text a student sees; an SVG text's size
# is the size it is drawn at (a diagram scaled to its column shrinks its words).
MEASURE = """(minPx) => {
  const W = document.documentElement.clientWidth;
  const main = document.querySelector("[data-testid='stMain']");
  const up = (n) => n.parentElement || (n.getRootNode && n.getRootNode().host) || null;
  const unseen = (e) => {
    for (let n = e; n && n !== document.documentElement; n = up(n)) {
      const s = getComputedStyle(n);
      if (s.display === 'none' || s.visibility === 'hidden' || +s.opacity === 0) return true;
      if (['hidden', 'clip'].includes(s.overflowX) || ['hidden', 'clip'].includes(s.overflow)) {
        const r = n.getBoundingClientRect();
        if (r.width <= 1 || r.height <= 1) return true;
      }
    }
    return false;
  };
  const scroller = (e) => {
    for (let n = up(e); n && n !== main; n = up(n)) {
      const o = getComputedStyle(n).overflowX;
      if ((o === 'auto' || o === 'scroll') && n.scrollWidth > n.clientWidth + 1) return n;
    }
    return null;
  };
  const all = [];
  const walk = (root) => { for (const e of root.querySelectorAll('*')) {
    all.push(e); if (e.shadowRoot) walk(e.shadowRoot); } };
  walk(main);
  const name = (e) => (e.closest && e.closest('[data-testid]') ?
      e.closest('[data-testid]').dataset.testid : e.tagName) + ' ' +
      (e.textContent || '').replace(/\\s+/g, ' ').trim().slice(0, 40);
  const cut = [];
  for (const e of all) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.right <= W + 1 || unseen(e)) continue;
    const box = scroller(e);
    if (box && box.getBoundingClientRect().right <= W + 1) continue;
    cut.push(`${name(e)} (right ${Math.round(r.right)} of ${W})`);
  }
  const small = [];
  for (const e of all) {
    const own = [...e.childNodes].filter(t => t.nodeType === 3)
        .map(t => t.textContent.replace(/[\\s\\u200b]/g, '')).join('');
    if (!own) continue;
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || unseen(e)) continue;
    // an SVG text as drawn: its font size times the drawing's scale (a diagram's viewBox)
    const ctm = e instanceof SVGGraphicsElement && e.getScreenCTM ? e.getScreenCTM() : null;
    const scale = ctm ? Math.hypot(ctm.a, ctm.b) : 1;
    const px = Math.round(parseFloat(getComputedStyle(e).fontSize) * scale * 10) / 10;
    if (px < minPx - 0.01) small.push(`${px} px: ${name(e)}`);
  }
  const tables = [...main.querySelectorAll("[data-testid='stMarkdownContainer'] table")]
      .filter(t => t.scrollWidth > t.clientWidth + 1)
      .map(t => getComputedStyle(t, '::before').content);
  const grids = all.filter(e => e.classList && e.classList.contains('cells'))
      .filter(c => c.scrollWidth > c.clientWidth + 1)
      .map(c => { const h = c.parentNode.querySelector('.hint');
                  return h && !h.hidden && getComputedStyle(h).display !== 'none' ? h.textContent : ''; });
  return {cut: cut, small: small, wideTables: tables, wideGrids: grids,
          pageWidth: document.scrollingElement.scrollWidth, W: W};
}"""


def settled(page, timeout_s: float = 240) -> None:
    settle(page, timeout_ms=int(timeout_s * 1000), quiet_s=1.5, min_charts=0)


@pytest.fixture
def phone(app_in_chromium):
    context = app_in_chromium.context.browser.new_context(viewport=PHONE)
    tab = context.new_page()
    yield tab
    context.close()


def test_nothing_is_cut_at_the_right_edge_and_no_text_is_under_11_px(
    app_in_chromium, phone, artifacts
):
    shots = artifacts / "screens"
    shots.mkdir(parents=True, exist_ok=True)
    urls = [info.url for info in app_pages()]
    urls += [opened(path) for path in PASS_PAGES]
    problems, wide_tables, wide_grids = [], 0, 0
    for url in urls:
        phone.goto(app_in_chromium.url + url)
        settled(phone)
        m = phone.evaluate(MEASURE, style.MIN_TEXT_PX)
        if m["pageWidth"] > m["W"]:
            problems.append(f"{url}: the page scrolls sideways ({m['pageWidth']} > {m['W']})")
        problems += [f"{url}: cut: {c}" for c in m["cut"][:5]]
        problems += [f"{url}: small text: {s}" for s in m["small"][:5]]
        for hint in m["wideTables"]:
            wide_tables += 1
            if style.SWIPE_HINT not in hint:
                problems.append(f"{url}: a wide table without its hint ({hint})")
        for hint in m["wideGrids"]:
            wide_grids += 1
            if hint != explain.GRID_HINT:
                problems.append(f"{url}: a wide grid without its hint ({hint!r})")
        if "cell=" in url:
            name = url.split("?")[0].strip("/")
            phone.screenshot(path=str(shots / f"phone-{name}.png"))
    assert problems == [], "\n".join(problems[:40])
    # The checks ran on what they are about: the break-it tables and the 13-token grids scroll.
    assert wide_tables >= 3 and wide_grids >= 4, (wide_tables, wide_grids)


def test_a_presenter_link_on_a_phone_shows_the_phone_layout(app_in_chromium, phone):
    link = "/causal-attention?present=true&step=3&text=The+cat+sat+on+the+mat"
    phone.goto(app_in_chromium.url + link)
    deadline = time.monotonic() + 120
    while "present=true" in phone.url and time.monotonic() < deadline:
        phone.wait_for_timeout(250)
    settled(phone)
    assert "present" not in phone.url and "step=" not in phone.url, phone.url
    assert "text=The+cat+sat+on+the+mat" in phone.url
    alerts = phone.evaluate(
        "() => [...document.querySelectorAll(\"[data-testid='stAlert']\")].map(a => a.innerText)"
    )
    assert [a for a in alerts if narrow.NOTICE in a], alerts
    # the page as a phone gets it: all its charts, the settings one tap away
    assert phone.locator("[data-testid='stPlotlyChart']").count() > 3
    assert phone.locator("[data-testid='stExpandSidebarButton']").is_visible()
    # ... while a laptop opening the same link presents: one step, one chart
    laptop = app_in_chromium.context.browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        tab = laptop.new_page()
        tab.goto(app_in_chromium.url + link)
        settled(tab)
        tab.wait_for_timeout(1500)
        assert "present=true" in tab.url
        assert tab.locator("[data-testid='stPlotlyChart']").count() == 1
    finally:
        laptop.close()


def test_a_cell_link_opens_on_its_derivation(app_in_chromium, phone):
    phone.goto(app_in_chromium.url + "/causal-attention?text=The+cat+sat+on+the+mat&cell=q4k2")
    settled(phone)
    derivation = phone.locator(".st-key-explain_derivation")
    for _ in range(2):  # on the screen once the page has settled, and still there after
        phone.wait_for_timeout(1500)
        box = derivation.bounding_box()
        assert box is not None and 0 <= box["y"] <= PHONE["height"] / 3, box
    assert phone.get_by_text("Query 4: ␣the → key 2: ␣sat").is_visible()


def test_pass_1_jumps_to_its_weights_and_hands_its_settings_to_pass_2(app_in_chromium, phone):
    phone.goto(app_in_chromium.url + "/simplified-attention?text=The+cat+sat+on+the+mat&d_in=6")
    settled(phone)
    phone.get_by_role("link", name=f"{render.WEIGHTS_HEADING.lower()} ↓").click()
    phone.wait_for_timeout(1500)
    heading = phone.locator(f"[id='{render.WEIGHTS_ANCHOR}']").bounding_box()
    assert heading is not None and 0 <= heading["y"] <= 200, heading
    chart = phone.locator(".st-key-fig_p1_weights").bounding_box()
    assert chart is not None and chart["y"] < PHONE["height"], chart
    link = phone.get_by_role("link", name="Next: 2. Trainable self-attention")
    href = urllib.parse.urljoin(phone.url, link.get_attribute("href") or "")
    link.click()
    settle(phone, "2. Trainable self-attention", timeout_ms=240_000, quiet_s=1.5, min_charts=0)
    assert "/trainable-attention?" in phone.url and "d_in=6" in phone.url, phone.url
    phone.locator("[data-testid='stExpandSidebarButton']").click()
    text = phone.locator("[data-testid='stSidebar'] textarea[aria-label='Text']")
    assert text.input_value() == "The cat sat on the mat"
    # The link opened in a new tab (its own address, a new session) keeps them too.
    assert "/trainable-attention?" in href and "d_in=6" in href, href
    tab = phone.context.new_page()
    try:
        tab.goto(href)
        settle(tab, "2. Trainable self-attention", timeout_ms=240_000, quiet_s=1.5, min_charts=0)
        expand = tab.locator("[data-testid='stExpandSidebarButton']")
        if expand.is_visible():  # the browser may remember the sidebar open from the first tab
            expand.click()
        again = tab.locator("[data-testid='stSidebar'] textarea[aria-label='Text']")
        assert again.input_value() == "The cat sat on the mat"
    finally:
        tab.close()


def test_a_long_paste_is_noticed_once_by_its_box(app_in_chromium, phone):
    phone.context.grant_permissions(["clipboard-read", "clipboard-write"])
    phone.goto(app_in_chromium.url + "/simplified-attention")
    settled(phone)
    phone.locator("[data-testid='stExpandSidebarButton']").click()
    box = phone.locator("[data-testid='stSidebar'] textarea[aria-label='Text']")
    box.click()
    phone.keyboard.press("Control+a")
    pasted = ("The cat sat on the mat. " * 110)[:2500]
    phone.evaluate("t => navigator.clipboard.writeText(t)", pasted)
    phone.keyboard.press("Control+v")
    phone.keyboard.press("Control+Enter")
    deadline = time.monotonic() + 120
    while box.input_value() != pasted[:2000] and time.monotonic() < deadline:
        phone.wait_for_timeout(250)
    settled(phone)
    phone.wait_for_timeout(2000)  # a second run (the link read again) would warn by now
    alerts = phone.evaluate(
        "() => [...document.querySelectorAll(\"[data-testid='stAlert']\")].map(a => a.innerText)"
    )
    about_length = [a for a in alerts if "characters" in a]
    assert about_length == [
        "The text you gave had 2,500 characters: only its first 2,000 are kept."
    ], alerts
    assert not [a for a in alerts if "link" in a], alerts
