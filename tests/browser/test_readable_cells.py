"""Readable in front of a class, measured in Chromium (issue 23), on a laptop (1400 px) and a
phone (390 px), every page (the pass pages with their numbers tables open, page 3 in training
mode so that dropped rows are outlined): no two heatmap cell numbers overlap, every row and
column of a heatmap up to 24 tokens has its label (the outlined rows included), every number in
a numbers table reads whole, and no table is cut. (The projector, contrast and copied-link
checks are in test_readable.py: two modules, so that CI's serial workers can run them at once.)

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

import pytest

from tests.browser.test_readable import PAGES, PASS_PAGES, QUERY, SIZES, TEXT, settled

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(1800)]


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
