"""Readable in front of a class, measured in Chromium (issue 23):

- a projector (1920×1080, presenter mode, every step of the four pass pages): the step's figure
  is whole on the screen and takes at least half its height, cell numbers are at least 28 px
  and tick labels at least 22 px as rendered, the text box's type at least 20 px, the status
  line (shape and live checks) at least 18 px and 4.5:1;
- a laptop (1400 px) and a phone (390 px), every page (the pass pages with their numbers
  tables open, page 3 in training mode so that dropped rows are outlined): no two heatmap cell
  numbers overlap, every row and column of a heatmap up to 24 tokens has its label (the
  outlined rows included), every number in a numbers table reads whole, and no table is cut;
- every text element on every page and in presenter mode meets WCAG 2.1 AA contrast;
- a copied "link to this view" opens the same view in a fresh browser.

How "reads whole" is verified: Streamlit's tables (Glide data grid) draw on a canvas, and their
accessibility DOM holds the raw values, not the text drawn. So the test reads the canvas's
pixels: it finds the grid's cell borders (the light grey lines that run the whole height or
width) and, in every cell whose borders are both on screen, the text's leftmost and rightmost
dark pixels. A cell's text is whole when it keeps a gap to both borders; a number cut by its
column (the old "6445138" for 0.6445138) touches the left border. A column only partly on
screen (a wide table scrolls inside itself) is left out: it is not cut but scrolled.

Screenshots land in ``test-artifacts/screens/`` (``readable-*.png``).
"""

from __future__ import annotations

import time

import pytest

from bench.support.browser import settle
from bench.support.pages import app_pages
from tests.support.contrast import TEXT_CONTRAST

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(1800)]

PAGES = app_pages()
PASS_PAGES = (
    "simplified-attention",
    "trainable-attention",
    "causal-attention",
    "multi-head-attention",
)
PROJECTOR = {"width": 1920, "height": 1080}
SIZES = {"laptop": 1400, "phone": 390}
TEXT = "The+cat+sat+on+the+mat"
# Page 3 in training mode at dropout 0.7: rows 0, 1 and 4 of the dropped weights are zero and
# outlined (seed 123), in a half-width chart at 1400 px.
QUERY = {"causal-attention": "&train=true&dropout=0.7"}


def settled(page, timeout_s: float = 180) -> None:
    """Wait for the run to end and for the charts and tables to be drawn and unchanged for
    2 s (Plotly's and the grid's code load after the run); a page may have no chart."""
    settle(page, timeout_ms=int(timeout_s * 1000), quiet_s=2.0, min_charts=0)


# --- the projector ------------------------------------------------------------------------------
PROJECTOR_FACTS = """() => {
  const chart = document.querySelector("[data-testid='stPlotlyChart']");
  const box = chart.getBoundingClientRect();
  const size = (e) => parseFloat(getComputedStyle(e).fontSize);
  const cells = [...chart.querySelectorAll('g.heatmap-label text')];
  const ticks = [...chart.querySelectorAll('.xtick text, .ytick text')];
  const area = document.querySelector("[data-testid='stMain'] textarea");
  const status = [...document.querySelectorAll("[data-testid='stCaptionContainer']")]
      .filter(e => e.textContent.startsWith('shape '));
  const counter = [...document.querySelectorAll("[data-testid='stMarkdownContainer'] p")]
      .map(e => e.textContent).filter(t => /^Step \\d+ of \\d+$/.test(t));
  return {
    top: box.top, bottom: box.bottom, height: box.height, inner: innerHeight,
    title: (chart.querySelector('.gtitle') || {}).textContent || '',
    cells: cells.length,
    cellSize: cells.length ? Math.min(...cells.map(size)) : null,
    // as drawn: the height of the text's own box, in the page's pixels
    cellDrawn: cells.length ? Math.min(...cells.map(e => e.getBBox().height)) : null,
    ticks: ticks.length,
    tickSize: ticks.length ? Math.min(...ticks.map(size)) : null,
    tickDrawn: ticks.length ? Math.min(...ticks.map(e => e.getBBox().height)) : null,
    textBox: area ? size(area) : null,
    status: status.map(e => [e.textContent, size(e.querySelector('p') || e)]),
    counter: counter,
  };
}"""


def test_every_presenter_step_fits_a_projector_in_large_type(app_in_chromium, artifacts):
    context = app_in_chromium.context.browser.new_context(viewport=PROJECTOR)
    page = context.new_page()
    shots = artifacts / "screens"
    shots.mkdir(parents=True, exist_ok=True)
    report, problems = [], []
    try:
        for path in PASS_PAGES:
            page.goto(f"{app_in_chromium.url}/{path}?present=true&text={TEXT}")
            settled(page)
            page.screenshot(path=str(shots / f"readable-present-{path}.png"))
            step, count, cells_seen = 1, None, 0
            while True:
                facts = page.evaluate(PROJECTOR_FACTS)
                where = f"{path} step {step}"
                report.append((where, facts))
                assert facts["counter"], (where, facts)
                count = int(facts["counter"][0].split()[-1])
                assert facts["counter"] == [f"Step {step} of {count}"], (where, facts)
                if facts["height"] < 0.5 * facts["inner"]:
                    problems.append(f"{where}: the figure is {facts['height']:.0f} px tall")
                if facts["top"] < 0 or facts["bottom"] > facts["inner"] + 1:
                    problems.append(
                        f"{where}: the figure runs {facts['top']:.0f}–{facts['bottom']:.0f} px "
                        f"on a {facts['inner']} px screen"
                    )
                if facts["cells"]:
                    cells_seen += 1
                    if facts["cellSize"] < 28 or facts["cellDrawn"] < 28:
                        problems.append(f"{where}: cell numbers {facts['cellSize']} px")
                if not facts["ticks"] or facts["tickSize"] < 22 or facts["tickDrawn"] < 22:
                    problems.append(f"{where}: tick labels {facts['tickSize']} px")
                if facts["textBox"] is None or facts["textBox"] < 20:
                    problems.append(f"{where}: the text box's type is {facts['textBox']} px")
                if len(facts["status"]) != 1 or facts["status"][0][1] < 18:
                    problems.append(f"{where}: status line {facts['status']}")
                readable = [
                    r
                    for r in page.evaluate(TEXT_CONTRAST)
                    if r["text"].startswith("shape ") and "ratio" in r
                ]
                if not readable or min(r["ratio"] for r in readable) < 4.5:
                    problems.append(f"{where}: status line contrast {readable}")
                if step == count:
                    break
                before = facts["title"]
                page.get_by_role("button", name="Next ▶").click()
                page.get_by_text(f"Step {step + 1} of {count}").first.wait_for(timeout=90_000)
                settled(page)
                step += 1
                assert f"step={step}" in page.url, page.url
                assert page.evaluate(PROJECTOR_FACTS)["title"] != before or step > 1
            # The pass 4 steps are heads grids (no cell numbers); every other pass has some.
            assert cells_seen >= 1 or path == "multi-head-attention", f"{path}: no cell numbers"
    finally:
        context.close()
        (artifacts / "readable-projector.txt").write_text(
            "\n".join(f"{w}: {f}" for w, f in report) + "\n\n" + "\n".join(problems) + "\n"
        )
    assert problems == [], "\n".join(problems)
    assert len(report) >= 4 * 5  # every step of the four passes was measured


# --- laptop and phone -------------------------------------------------------------------------
HEATMAPS = """() => [...document.querySelectorAll("[data-testid='stPlotlyChart']")].map(c => {
  const gd = c.querySelector('.js-plotly-plot');
  const heat = gd && gd._fullData ? gd._fullData.filter(t => t.type === 'heatmap') : [];
  if (heat.length !== 1) return null;  // a heads grid labels rows at its left only
  const z = heat[0].z;
  const box = (e) => { const b = e.getBoundingClientRect();
      return {l: b.left, r: b.right, t: b.top, b: b.bottom, text: e.textContent}; };
  const texts = [...c.querySelectorAll('g.heatmap-label text')].map(box);
  let overlaps = [];
  for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
    const a = texts[i], b = texts[j];
    if (a.l < b.r - 0.5 && b.l < a.r - 0.5 && a.t < b.b - 0.5 && b.t < a.b - 0.5)
      overlaps.push([a.text, b.text]);
  }
  const shapes = (gd._fullLayout.shapes || []).map(s => Math.round((s.y0 + s.y1) / 2));
  const yticks = [...c.querySelectorAll('.ytick text')].map(e => e.textContent);
  const xticks = [...c.querySelectorAll('.xtick text')].map(e => e.textContent);
  return {
    title: gd._fullLayout.title.text, width: c.getBoundingClientRect().width,
    rows: z.length, cols: z[0] ? z[0].length : 0,
    labels: texts.length, overlaps: overlaps.slice(0, 3), overlapCount: overlaps.length,
    fontSize: texts.length ? parseFloat(getComputedStyle(c.querySelector('g.heatmap-label text')).fontSize) : null,
    yticks: yticks, xticks: xticks.length, outlined: shapes,
    rowLabels: heat[0].y, // the labels of the rows, in order
  };
}).filter(Boolean)"""

# Cell text touching its cell's border (see the module's docstring).
GRID_CUTS = """() => {
  const grey = (p) => p[3] > 0 && Math.max(p[0], p[1], p[2]) < 250 &&
      Math.min(p[0], p[1], p[2]) > 185;
  const ink = (p) => p[3] > 0 && (0.3 * p[0] + 0.59 * p[1] + 0.11 * p[2]) < 150;
  const out = [];
  for (const d of document.querySelectorAll("[data-testid='stDataFrame']")) {
    const c = [...d.querySelectorAll('canvas')]
        .sort((a, b) => b.width * b.height - a.width * a.height)[0];
    if (!c || !c.width || !c.height) continue;
    const W = c.width, H = c.height;
    const img = c.getContext('2d').getImageData(0, 0, W, H).data;
    const px = (x, y) => { const i = 4 * (y * W + x); return [img[i], img[i + 1], img[i + 2], img[i + 3]]; };
    const lines = (n, m, at) => { const found = [];
      for (let i = 0; i < n; i++) { let g = 0;
        for (let j = 0; j < m; j++) if (grey(at(i, j))) g++;
        if (g >= 0.6 * m) found.push(i); }
      return found.filter((v, k, a) => k === 0 || v > a[k - 1] + 1); };
    const xs = lines(W, H, (x, y) => px(x, y));
    const ys = lines(H, W, (y, x) => px(x, y));
    const cells = [];
    for (let r = 1; r + 1 < ys.length; r++) for (let k = 1; k + 1 < xs.length; k++) {
      const [x0, x1, y0, y1] = [xs[k], xs[k + 1], ys[r], ys[r + 1]];
      let left = Infinity, right = -Infinity;
      for (let y = y0 + 2; y < y1 - 1; y++) for (let x = x0 + 1; x < x1; x++)
        if (ink(px(x, y))) { left = Math.min(left, x); right = Math.max(right, x); }
      if (left !== Infinity) cells.push({col: k, row: r, gapLeft: left - x0, gapRight: x1 - right});
    }
    const box = d.getBoundingClientRect();
    const scroller = d.querySelector('.dvn-scroller');
    out.push({
      cells: cells.length,
      cut: cells.filter(c => c.gapLeft < 4 || c.gapRight < 3).slice(0, 5),
      left: box.left, right: box.right,
      wide: scroller ? scroller.scrollWidth > scroller.clientWidth + 1 : false,
      scrolls: scroller ? ['auto', 'scroll'].includes(getComputedStyle(scroller).overflowX) : false,
    });
  }
  return {grids: out, pageWidth: document.scrollingElement.scrollWidth, inner: innerWidth};
}"""


def page_url(info) -> str:
    if info.url_path in PASS_PAGES:
        return f"{info.url}?numbers=true&text={TEXT}{QUERY.get(info.url_path, '')}"
    return info.url


@pytest.mark.parametrize("size", list(SIZES))
def test_cell_numbers_never_overlap_every_row_is_labelled_and_tables_read_whole(
    app_in_chromium, artifacts, size
):
    width = SIZES[size]
    context = app_in_chromium.context.browser.new_context(viewport={"width": width, "height": 1000})
    page = context.new_page()
    problems, report = [], []
    heatmaps = outlined = cells_read = tables = 0
    try:
        for info in PAGES:
            page.goto(app_in_chromium.url + page_url(info))
            settled(page)
            for m in page.evaluate(HEATMAPS):
                heatmaps += 1
                where = f"{info.url_path} {size}: {m['title'][:40]!r} ({m['width']:.0f} px)"
                report.append((where, {k: m[k] for k in ("labels", "fontSize", "overlapCount")}))
                if m["overlapCount"]:
                    problems.append(f"{where}: {m['overlapCount']} overlapping: {m['overlaps']}")
                if m["rows"] <= 24 and len(m["yticks"]) != m["rows"]:
                    problems.append(f"{where}: {len(m['yticks'])} row labels for {m['rows']}")
                if m["cols"] <= 24 and m["xticks"] != m["cols"]:
                    problems.append(f"{where}: {m['xticks']} column labels for {m['cols']}")
                for row in m["outlined"]:
                    outlined += 1
                    if m["rowLabels"][row] not in m["yticks"]:
                        problems.append(f"{where}: outlined row {row} has no label")
            grids = page.evaluate(GRID_CUTS)
            if grids["pageWidth"] > grids["inner"]:
                problems.append(f"{info.url_path} {size}: the page scrolls sideways")
            for g in grids["grids"]:
                tables += 1
                cells_read += g["cells"]
                if g["cut"]:
                    problems.append(f"{info.url_path} {size}: cell text cut: {g['cut']}")
                if g["left"] < -1 or g["right"] > grids["inner"] + 1:
                    problems.append(f"{info.url_path} {size}: a table leaves the screen: {g}")
                if g["wide"] and not g["scrolls"]:
                    problems.append(f"{info.url_path} {size}: a wide table does not scroll")
            if info.url_path in ("causal-attention", "multi-head-attention"):
                page.screenshot(path=str(artifacts / "screens" / f"readable-{size}-top.png"))
    finally:
        context.close()
        (artifacts / f"readable-{size}.txt").write_text(
            "\n".join(f"{w}: {r}" for w, r in report) + "\n\n" + "\n".join(problems) + "\n"
        )
    assert problems == [], "\n".join(problems[:30])
    # The checks ran on real content: heatmaps with numbers, outlined rows, tables read.
    assert heatmaps >= 20 and outlined >= 3 and tables >= 10 and cells_read >= 200, (
        heatmaps,
        outlined,
        tables,
        cells_read,
    )


# --- contrast -----------------------------------------------------------------------------------
def test_every_text_on_every_page_and_the_presenter_meets_wcag_aa(app_in_chromium, artifacts):
    context = app_in_chromium.context.browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    failures, lines, measured = [], [], 0
    urls = [info.url for info in PAGES] + ["/causal-attention?present=true"]
    try:
        for url in urls:
            page.goto(app_in_chromium.url + url)
            settled(page)
            records = page.evaluate(TEXT_CONTRAST)
            judged = [r for r in records if "ratio" in r]
            measured += len(judged)
            low = [r for r in judged if r["ratio"] < r["need"]]
            unknown = sorted({r["unknown"] for r in records if "unknown" in r})
            lines.append(
                f"{url}: {len(judged)} texts judged, {len(low)} below; not judged: {unknown}"
            )
            failures += [f"{url}: {r}" for r in low]
    finally:
        context.close()
        (artifacts / "readable-contrast.txt").write_text("\n".join(lines + failures) + "\n")
    assert failures == [], "\n".join(failures[:30])
    assert measured >= 1000, lines  # the walk read the pages' texts


# --- the link round trip --------------------------------------------------------------------------
# Streamlit's chart theme wraps a title in <b> each time it draws a chart it kept from the run
# before once more ("<b><b>Scores</b></b>" after a few reruns; the same bold text on screen): the
# view compares a title's words, not its <b> tags.
VIEW = """() => ({
  charts: [...document.querySelectorAll('.js-plotly-plot')].map(gd => ({
    title: gd._fullLayout.title.text.replace(/<\\/?b>/g, ''),
    subtitle: (gd._fullLayout.title.subtitle || {}).text || '',
    z: gd._fullData.filter(t => t.type === 'heatmap')
        .map(t => Array.from(t.z, r => Array.from(r, v => (v === undefined ? null : v)))),
  })),
  counter: [...document.querySelectorAll("[data-testid='stMarkdownContainer'] p")]
      .map(e => e.textContent).filter(t => /^Step \\d+ of \\d+$/.test(t)),
})"""


def same_count(page, before: dict, timeout_s: float = 180) -> dict:
    """The view of ``page`` once it has settled with as many charts as ``before``: a fresh
    session can rest between two runs (a component's first value reruns the page) for longer
    than :func:`settled`'s two quiet seconds on a busy machine."""
    deadline = time.monotonic() + timeout_s
    while True:
        settled(page, timeout_s)
        view = page.evaluate(VIEW)
        if len(view["charts"]) == len(before["charts"]) or time.monotonic() > deadline:
            return view
        page.wait_for_timeout(1000)


def copy_link(page) -> str:
    button = page.get_by_role("button", name="Copy link to this view")
    assert button.count() == 1
    button.scroll_into_view_if_needed()
    button.click()
    page.get_by_text("Copied: paste it anywhere").first.wait_for(timeout=10_000)
    return page.evaluate("() => navigator.clipboard.readText()")


def pick(page, box_label: str, option: str) -> None:
    box = page.locator("[data-testid='stSelectbox']").filter(has_text=box_label)
    box.scroll_into_view_if_needed()
    box.click()
    page.get_by_role("option", name=option).click()
    settled(page)


def test_a_copied_link_opens_the_same_view_in_a_fresh_browser(app_in_chromium):
    browser = app_in_chromium.context.browser
    url = app_in_chromium.url
    context = browser.new_context(viewport={"width": 1400, "height": 1400})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
    page = context.new_page()
    fresh = browser.new_context(viewport={"width": 1400, "height": 1400})
    try:
        # Page 1: a text, the relative colour scale, another query token, a bug.
        page.goto(f"{url}/simplified-attention?text={TEXT}")
        settled(page)
        page.get_by_text("relative to an even share (log)").first.click()
        settled(page)
        pick(page, "Query token", "4: ␣the")
        pick(page, "Turn on a bug", "Dividing by the sum instead of softmax")
        before = page.evaluate(VIEW)
        link = copy_link(page)
        for part in ("colour=relative", "query=4", "bug_simplified=Dividing", "text=The"):
            assert part in link, link
        other = fresh.new_page()
        other.goto(link)
        after = same_count(other, before)
        assert [c["title"] for c in after["charts"]] == [c["title"] for c in before["charts"]]
        assert after == before
        assert any(c["subtitle"] == "relative to an even share" for c in after["charts"])
        assert any("With the bug" in c["title"] for c in after["charts"])
        other.close()

        # Presenter mode, step 3 of pass 3.
        page.goto(f"{url}/causal-attention?present=true&text={TEXT}")
        settled(page)
        for step in (2, 3):
            page.get_by_role("button", name="Next ▶").click()
            page.get_by_text(f"Step {step} of 6").first.wait_for(timeout=90_000)
            settled(page)
        before = page.evaluate(VIEW)
        link = copy_link(page)
        assert "present=true" in link and "step=3" in link, link
        other = fresh.new_page()
        other.goto(link)
        after = same_count(other, before)
        assert after["counter"] == ["Step 3 of 6"] and after == before
    finally:
        fresh.close()
        context.close()
