"""Every page at a phone's, a tablet's and a laptop's size (390×844, 820×1180, 1400×1000):
nothing scrolls the page sideways, formulas and code fit or scroll inside themselves, no chart
title, tick label or axis title is cut at its chart's edge and no title runs into its plot, no
chart toolbar sits in the Tab order or over a title, every chart has a text label naming it and
its shape, chart text is at least 4.5:1 against its background, columns stack on the phone (and
columns of charts on the tablet) and the settings open in one tap; no page shows an exception
or an error box and each names the tokenizer once; presenter mode (the four pass pages) shows
no sidebar and no download button and passes the same checks (on the tablet and the laptop:
a phone gets the page's own layout). One server
(the suite's), one browser context per size, the pages in a loop; screenshots of pages 3 and 4
at each size land in ``test-artifacts/screens/``.
"""

from __future__ import annotations

import re
import time

import pytest
from streamlit.testing.v1 import AppTest

from bench.support.browser import CHART, settle
from bench.support.pages import app_pages
from bench.support.server import ROOT

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

VIEWPORTS = {"phone": (390, 844), "tablet": (820, 1180), "laptop": (1400, 1000)}
PAGES = app_pages()
SCREENSHOT_PAGES = ("causal-attention", "multi-head-attention")
# The four pass pages have a presenter mode: one step, one chart, no sidebar, no downloads.
PRESENT_PAGES = (
    "simplified-attention",
    "trainable-attention",
    "causal-attention",
    "multi-head-attention",
)
PRESENT_FACTS = """() => {
  const bar = document.querySelector("[data-testid='stSidebar']");
  const shown = (e) => !!e && e.getBoundingClientRect().width > 0 &&
      e.getBoundingClientRect().right > 0 && getComputedStyle(e).display !== 'none';
  return {sidebar: shown(bar),
          downloads: document.querySelectorAll("[data-testid='stDownloadButton']").length};
}"""
MIN_CONTRAST = 4.5
# A chart's label names its shape: "6 × 6", "3 heads of 6 × 6", "6 bars", "40 points".
SHAPE = re.compile(r"\d+ × \d+|\d+ bars|\d+ points")

# Everything measured in one evaluate per page (the page is settled by then).
MEASURE = """() => {
  const px = (v) => parseFloat(v) || 0;
  const visible = (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
  const scrolls = (e) => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
  const overflowing = (sel) => [...document.querySelectorAll(sel)].filter(visible)
      .map(e => ({w: e.scrollWidth, c: e.clientWidth, scrolls: scrolls(e),
                  text: (e.innerText || '').replace(/\\s+/g, ' ').slice(0, 50)}))
      .filter(m => m.w > m.c + 1);
  const count = (sel) => [...document.querySelectorAll(sel)].filter(visible).length;

  // The colour a text is drawn on: the first opaque background at or above it.
  const rgba = (s) => { const m = s.match(/[\\d.]+/g) || []; return m.length < 3 ? null :
      [+m[0], +m[1], +m[2], m.length > 3 ? +m[3] : 1]; };
  const backgroundOf = (e) => {
    for (let n = e; n; n = n.parentElement) {
      // A slider's value floats above its thumb, on the page: the thumb is not its background.
      if (n.dataset && n.dataset.testid === 'stSliderThumbValue') {
        n = n.closest("[data-testid='stSlider'], [data-testid='stSelectSlider']") || n;
      }
      const svgBg = n.tagName === 'svg' ? rgba(n.style.background || '') : null;
      if (svgBg && svgBg[3] > 0.99) return svgBg;
      const c = rgba(getComputedStyle(n).backgroundColor);
      if (c && c[3] > 0.99) return c;
    }
    return [255, 255, 255, 1];
  };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const contrast = (e, colour) => {
    const bg = backgroundOf(e);
    const fg = rgba(colour);
    const a = fg[3] * px(getComputedStyle(e).fillOpacity || 1) || fg[3];
    const mixed = [0, 1, 2].map(i => fg[i] * a + bg[i] * (1 - a));
    const [hi, lo] = [lum(mixed), lum(bg)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  };
  const chartText = [...document.querySelectorAll(
      `CHART .xtick text, CHART .ytick text, CHART .g-xtitle text, ` +
      `CHART .g-ytitle text, CHART .gtitle, CHART .cbaxis text, ` +
      `CHART .annotation-text`)].filter(visible).filter(e => e.textContent.trim());
  const pageText = [...document.querySelectorAll(
      "[data-testid='stMain'] [data-testid='stCaptionContainer'], " +
      "[data-testid='stMain'] [data-testid='stMarkdownContainer'] p, " +
      "[data-testid='stMain'] [data-testid='stWidgetLabel'] p")].filter(visible)
      .filter(e => e.textContent.trim())
      // WCAG 1.4.3 exempts inactive controls: a disabled button (the presenter's "Previous" on
      // step 1) is drawn faint on purpose.
      .filter(e => !e.closest('button:disabled, [aria-disabled="true"]'));
  const lowContrast = [
      ...chartText.map(e => [e, getComputedStyle(e).fill]),
      ...pageText.map(e => [e, getComputedStyle(e).color])]
    .map(([e, c]) => ({text: e.textContent.trim().slice(0, 40), colour: c, ratio: contrast(e, c)}))
    .filter(m => m.ratio < %(min)s);
  const worst = (list) => list.length ? Math.min(...list.map(e => contrast(e,
      e instanceof SVGElement ? getComputedStyle(e).fill : getComputedStyle(e).color))) : null;

  const charts = [...document.querySelectorAll("CHART")].filter(visible);
  const tabbable = 'a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])';
  const chartTabStops = charts.flatMap(c => [...c.querySelectorAll(tabbable)])
      .filter(e => !e.disabled && e.tabIndex >= 0).length;
  // A text is cut when its box leaves its chart's drawing (the svg clips it there).
  const outside = (e, frame) => { const b = e.getBoundingClientRect();
      return b.left < frame.left - 1 || b.right > frame.right + 1 ||
             b.top < frame.top - 1 || b.bottom > frame.bottom + 1; };
  const frameOf = (c) => (c.querySelector('.main-svg') || c).getBoundingClientRect();
  const titlesCut = charts.flatMap(c => [...c.querySelectorAll('.gtitle')]
      .filter(t => outside(t, frameOf(c))).map(t => t.textContent));
  const ticksCut = charts.flatMap(c => [...c.querySelectorAll(
      '.xtick text, .ytick text, .g-xtitle text, .g-ytitle text, .cbaxis text')]
      .filter(visible).filter(t => t.textContent.trim() && outside(t, frameOf(c)))
      .map(t => t.textContent));
  // A title that runs into the plot area (the drag rectangles cover it exactly) hides data.
  const titlesOverPlot = charts.flatMap(c => {
      const t = c.querySelector('.gtitle'); if (!t) return [];
      const plots = [...c.querySelectorAll('.nsewdrag')].map(r => r.getBoundingClientRect().top);
      return plots.length && t.getBoundingClientRect().bottom > Math.min(...plots) + 1
          ? [t.textContent] : [];
    });
  const titleLines = charts.map(c => c.querySelectorAll('.gtitle .line').length ||
      (c.querySelector('.gtitle') ? 1 : 0));

  const main = document.querySelector("[data-testid='stMain']");
  const block = document.querySelector("[data-testid='stMainBlockContainer']");
  const columns = [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stColumn']")]
      .filter(visible).map(c => c.getBoundingClientRect().width);
  const chartColumns = [...document.querySelectorAll(
      "[data-testid='stMain'] [data-testid='stColumn']")].filter(visible)
      .filter(c => c.querySelector("CHART")).map(c => c.getBoundingClientRect().width);
  return {
    innerWidth: innerWidth,
    pageWidth: document.scrollingElement.scrollWidth,
    main: [main.scrollWidth, main.clientWidth],
    block: [block.scrollWidth, block.clientWidth],
    formulas: count('.katex-display'),
    formulasOver: overflowing("[data-testid='stMain'] .katex-display"),
    code: count("[data-testid='stMain'] [data-testid='stCode'] pre"),
    codeOver: overflowing("[data-testid='stMain'] [data-testid='stCode'] pre"),
    tablesOver: overflowing("[data-testid='stMain'] [data-testid='stMarkdownContainer'] table"),
    charts: charts.length,
    labels: charts.map(c => [c.getAttribute('role'), c.getAttribute('aria-label')]),
    modebars: count("CHART .modebar"),
    chartTabStops: chartTabStops,
    titlesCut: titlesCut,
    titlesOverPlot: titlesOverPlot,
    ticksCut: ticksCut.slice(0, 5),
    ticksCutCount: ticksCut.length,
    titles: charts.filter(c => c.querySelector('.gtitle')).length,
    wrappedTitles: titleLines.filter(n => n > 1).length,
    chartTexts: chartText.length,
    worstChartContrast: worst(chartText),
    worstPageContrast: worst(pageText),
    lowContrast: lowContrast.slice(0, 5),
    columns: columns,
    chartColumns: chartColumns,
    blockWidth: block.clientWidth - px(getComputedStyle(block).paddingLeft)
        - px(getComputedStyle(block).paddingRight),
  };
}""".replace("CHART", CHART.replace('"', "'")).replace("%(min)s", str(MIN_CONTRAST))


@pytest.fixture(scope="module")
def chart_counts() -> dict[str, int]:
    """How many charts each page sends at the default settings, from the same script run
    headless (AppTest): the browser waits for exactly that many."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    counts = {}
    for info in PAGES:
        at.switch_page(info.path).run()
        counts[info.url] = len(at.get("plotly_chart"))
    return counts


RUN_FACTS = """() => ({
  exceptions: document.querySelectorAll("[data-testid='stException']").length,
  errors: [...document.querySelectorAll("[data-testid='stAlert']")]
      .filter(a => a.querySelector("[data-testid='stAlertContentError']"))
      .map(a => a.innerText),
  tokenizer: [...document.querySelectorAll("[data-testid='stCaptionContainer']")]
      .map(c => c.innerText).filter(t => t.startsWith("Tokenizer:")),
})"""


def run_problems(page) -> list[str]:
    """What a page's run must not show: an exception, an error box; and the sidebar's one
    tokenizer caption, naming GPT-2's BPE (the shared vocabulary is in use)."""
    facts = page.evaluate(RUN_FACTS)
    found = []
    if facts["exceptions"] or facts["errors"]:
        found.append(f"{facts['exceptions']} exceptions, error boxes {facts['errors']}")
    if len(facts["tokenizer"]) != 1 or not facts["tokenizer"][0].startswith(
        "Tokenizer: GPT-2 BPE (tiktoken) · "
    ):
        found.append(f"tokenizer captions {facts['tokenizer']}")
    return found


def settle_any(page, charts: int, timeout_s: float = 120) -> None:
    """Wait for the page's first heading, the end of its run, its ``charts`` charts drawn, and
    all of it unchanged for 1.5 s (Plotly's chunk loads lazily, after the run ends)."""
    settle(page, charts=charts, timeout_ms=int(timeout_s * 1000), quiet_s=1.5, min_charts=0)


def problems_of(m: dict, size: str) -> list[str]:
    """What a student at this size would see wrong, in words; empty when nothing is."""
    found = []
    if m["pageWidth"] > m["innerWidth"]:
        found.append(f"the page scrolls sideways ({m['pageWidth']} px > {m['innerWidth']})")
    for name in ("main", "block"):
        wide, box = m[name]
        if wide > box + 1:
            found.append(f"the {name} block scrolls sideways ({wide} px > {box})")
    # A formula or a code block wider than its column must scroll inside itself (by design);
    # on the phone, code must wrap instead (nothing hidden behind a scroll).
    for what in ("formulasOver", "codeOver", "tablesOver"):
        cut = [o for o in m[what] if not o["scrolls"]]
        if cut:
            found.append(f"{what}: cut off, not scrollable: {cut[:2]}")
    if size == "phone" and m["codeOver"]:
        found.append(f"code does not wrap on the phone: {m['codeOver'][:2]}")
    unlabelled = [lab for role, lab in m["labels"] if role != "figure" or not lab]
    if unlabelled:
        found.append(f"{len(unlabelled)} of {m['charts']} charts have no text label")
    shapeless = [lab for _, lab in m["labels"] if lab and not SHAPE.search(lab)]
    if shapeless:
        found.append(f"chart labels that name no shape: {shapeless[:2]}")
    if m["modebars"] or m["chartTabStops"]:
        found.append(f"chart toolbars: {m['modebars']}, Tab stops in charts: {m['chartTabStops']}")
    # A long title wraps at spaces (figures.readable), so every line fits its chart at every size.
    if m["titlesCut"]:
        found.append(f"chart titles cut at the chart's edge: {m['titlesCut'][:2]}")
    if m["titlesOverPlot"]:
        found.append(f"chart titles over the plot: {m['titlesOverPlot'][:2]}")
    if m["ticksCutCount"]:
        found.append(f"{m['ticksCutCount']} tick labels or axis titles cut: {m['ticksCut'][:3]}")
    if m["lowContrast"]:
        found.append(f"text below {MIN_CONTRAST}:1: {m['lowContrast']}")
    if size == "phone":
        narrow = [w for w in m["columns"] if w < 0.9 * m["blockWidth"]]
        if narrow:
            found.append(f"columns not stacked: widths {narrow[:4]} of {m['blockWidth']:.0f}")
    if size == "tablet":  # a matrix in half a tablet's block is too small to read (ui/style.py)
        narrow = [w for w in m["chartColumns"] if w < 0.9 * m["blockWidth"]]
        if narrow:
            found.append(f"chart columns not stacked: {narrow[:4]} of {m['blockWidth']:.0f}")
    return found


def whole_page_screenshot(page, path) -> None:
    """Streamlit scrolls its main block, not the document, so a "full page" screenshot is one
    screen: stretch the window to the main block's height for the shot, then put it back."""
    size = page.viewport_size
    tall = page.evaluate("() => document.querySelector(\"[data-testid='stMain']\").scrollHeight")
    page.set_viewport_size({"width": size["width"], "height": min(int(tall), 12_000)})
    page.wait_for_timeout(800)
    page.screenshot(path=str(path))
    page.set_viewport_size(size)
    page.wait_for_timeout(300)


def check_settings_open_in_one_tap(page) -> None:
    """On a phone the sidebar starts closed; its open control is visible, labelled and large
    enough to tap, and one tap shows the settings."""
    control = page.locator("[data-testid='stExpandSidebarButton']")
    assert control.is_visible()
    assert control.get_attribute("aria-label") == "Expand sidebar"
    assert "Settings" in control.evaluate("e => getComputedStyle(e, '::after').content")
    box = control.bounding_box()
    assert box["width"] >= 44 and box["height"] >= 44, box
    text = page.locator("[data-testid='stSidebar'] textarea[aria-label='Text']")
    closed = text.bounding_box()
    assert closed is None or closed["x"] + closed["width"] <= 0, closed  # off screen
    control.click()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        box = text.bounding_box()
        if box and box["x"] >= 0 and box["x"] + box["width"] <= page.viewport_size["width"]:
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"one tap did not bring the settings on screen: {text.bounding_box()}")


@pytest.mark.parametrize("size", list(VIEWPORTS))
def test_every_page_fits_the_screen_and_reads_clearly(
    app_in_chromium, artifacts, chart_counts, size
):
    width, height = VIEWPORTS[size]
    browser = app_in_chromium.context.browser
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    shots = artifacts / "screens"
    shots.mkdir(parents=True, exist_ok=True)
    report, failures = [], {}
    try:
        for info in PAGES:
            page.goto(app_in_chromium.url + info.url)
            settle_any(page, chart_counts[info.url])
            measured = page.evaluate(MEASURE)
            report.append((info.url, measured))
            found = problems_of(measured, size) + run_problems(page)
            # A page's formulas are short equations one under the other (panels.formula): each
            # fits the column at every size, so none needs a scroll bar. (KaTeX's italic
            # overhang makes every formula box 2 px wider than its content box: not a cut.)
            wide = [o for o in measured["formulasOver"] if o["w"] > o["c"] + 4]
            if wide:
                found.append(f"formulas wider than the page: {wide[:2]}")
            if found:
                failures[info.url] = found
            if info.url_path in SCREENSHOT_PAGES:
                whole_page_screenshot(page, shots / f"{size}-{info.url_path}.png")
        if size == "phone":
            check_settings_open_in_one_tap(page)
        # A presenter link opened on a phone shows the page's phone layout, measured above
        # (tests/browser/test_phone_in_chromium.py checks the switch).
        for path in PRESENT_PAGES if size != "phone" else ():
            url = f"/{path}?present=true"
            page.goto(app_in_chromium.url + url)
            settle_any(page, 1)
            measured = page.evaluate(MEASURE)
            report.append((url, measured))
            found = problems_of(measured, size)
            facts = page.evaluate(PRESENT_FACTS)
            if facts["sidebar"] or facts["downloads"]:
                found.append(f"presenter mode shows the sidebar or downloads: {facts}")
            if found:
                failures[url] = found
    finally:
        context.close()
        write_summary(artifacts / f"viewport-{size}.txt", report, failures)
    assert failures == {}, f"{size} {width}×{height}:\n" + "\n".join(
        f"{url}: {p}" for url, ps in failures.items() for p in ps
    )
    # The checks above ran on real content: every page was measured, and chart text was read.
    assert len(report) == len(PAGES) + (len(PRESENT_PAGES) if size != "phone" else 0)
    assert sum(m["chartTexts"] for _, m in report) > 0
    assert all(m["worstChartContrast"] >= MIN_CONTRAST for _, m in report if m["chartTexts"])


def write_summary(path, report, failures) -> None:
    """What each page measured, and what was wrong, for the reader of a failed run."""
    summary = "\n".join(
        f"{url}: charts {m['charts']}, formulas {m['formulas']} ({len(m['formulasOver'])} "
        f"scroll), code {m['code']} ({len(m['codeOver'])} scroll), worst contrast chart "
        f"{m['worstChartContrast']}, page {m['worstPageContrast']}, titles {m['titles']} "
        f"({m['wrappedTitles']} wrapped, cut {m['titlesCut']}), tick labels cut "
        f"{m['ticksCutCount']}"
        for url, m in report
    )
    wrong = "\n".join(f"{url}: {p}" for url, ps in failures.items() for p in ps)
    path.write_text(summary + "\n\n" + (wrong or "no problems") + "\n", encoding="utf-8")
