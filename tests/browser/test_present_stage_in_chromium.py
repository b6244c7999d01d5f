"""A presenter matrix the back row reads (issue 36), measured in Chromium at 1920×1080 on every
step of passes 3 and 4, with 6 and 12 tokens and with 10 long words, and on the projectors
classrooms have (1600×900, 1366×768, 1280×800, 1280×720: the same layout at the screen's scale,
figures.screen_scale):

- the matrix's drawn plot area (Plotly's drag layer, one per head) is at least 55 % of the
  screen's height at 1920×1080 (50 % on the smaller projectors), its cells square within 10 %,
  and the whole figure on the screen;
- every cell number is drawn at 30 px or more at 1920×1080 (30 px at the screen's scale on the
  others, and 24 px or more for 6 tokens from 1280 px wide), and fits its cell's width (a
  single matrix of up to 12 tokens always carries them; a grid of heads where they fit);
- the header (title, text box, Previous, the counter, Next, the switches, "Copy link") is one
  line (its box no taller than the 68 px line at the screen's scale, and 1.25 times that),
  above the figure, its parts side by side without overlapping, the page no wider than the
  window.

At 1024×768 (scale 0.5, the smallest) the same holds with a plot of 45 % of the height and the
numbers at 15 px or more. Screenshots: ``test-artifacts/screens/present-stage-*.png``."""

from __future__ import annotations

import pytest

from attnviz import figures
from bench.support.browser import settle

pytestmark = [pytest.mark.browser, pytest.mark.timeout(1200)]

PROJECTOR = {"width": 1920, "height": 1080}
HEADER_LINE_PX = 68  # the header line's height at 1920×1080
# The step's figure drawn for this window: within its stage's height (the page's first run lays
# it out for 1920×1080, taller than any smaller screen's stage, until the window's size is in).
LAID_OUT = """(stage) => {
  const gd = document.querySelector("[data-testid='stPlotlyChart'] .js-plotly-plot");
  return !!(gd && gd._fullLayout && gd._fullLayout.height <= stage);
}"""
# 6 and 12 tokens, and 10 long words (their labels take room under the plot)
TEXTS = {
    "6 tokens": "The+cat+sat+on+the+mat",
    "12 tokens": "The+cat+sat+on+the+mat+and+looked+at+the+dog+again",
    "10 long words": "Students+quickly+understood+attention+after+reading+chapter+three+carefully+today",
}
PASSES = {"causal-attention": "3. Causal attention", "multi-head-attention": "4. Multi-head"}
# Each screen, the texts walked on it, and what it must reach: the plot's share of the window's
# height, the smallest cell number in px, and the smallest for 6 tokens.
SCREENS = {
    "1920x1080": (list(TEXTS), 0.55, 30, 30),
    "1600x900": (["6 tokens", "12 tokens"], 0.50, 24, 24),
    "1366x768": (["6 tokens", "12 tokens"], 0.50, 21, 24),
    "1280x800": (["6 tokens", "12 tokens"], 0.50, 20, 24),
    "1280x720": (list(TEXTS), 0.50, 20, 24),
    "1024x768": (["12 tokens"], 0.45, 15, 15),
}
CASES = [
    pytest.param(screen, path, tokens, id=f"{screen}-{path}-{tokens.split()[0]}")
    for screen, (texts, *_) in SCREENS.items()
    for path in PASSES
    for tokens in texts
]

# Each drawn heatmap: its plot area (the drag layer of its subplot), its rows and columns; the
# cell numbers' sizes and widths; the header's parts; the figure's box.
FACTS = """() => {
  const chart = document.querySelector("[data-testid='stPlotlyChart']");
  const gd = chart.querySelector('.js-plotly-plot');
  const box = chart.getBoundingClientRect();
  const rect = (e) => { const r = e.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, width: r.width,
            height: r.height}; };
  const plots = gd._fullData.filter(t => t.type === 'heatmap').map(t => {
    const id = (t.xaxis || 'x') + (t.yaxis || 'y');
    const drag = chart.querySelector(`.nsewdrag[data-subplot='${id}']`);
    return {id, rows: t.y.length, cols: t.x.length, area: drag ? rect(drag) : null};
  });
  const cells = [...chart.querySelectorAll('g.heatmap-label text')].map(e => ({
    size: parseFloat(getComputedStyle(e).fontSize), width: e.getBBox().width,
    text: e.textContent}));
  const main = document.querySelector("[data-testid='stMain']");
  const find = (sel) => { const e = main.querySelector(sel); return e ? rect(e) : null; };
  const counter = [...main.querySelectorAll("[data-testid='stMarkdownContainer'] p")]
    .filter(e => /^Step \\d+ of \\d+$/.test(e.textContent));
  const h1 = main.querySelector('h1');
  let titleLines = 0;
  if (h1) {  // the lines its words take (not the heading's hidden link icon)
    const walk = document.createTreeWalker(h1, NodeFilter.SHOW_TEXT);
    const tops = new Set();
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      if (!n.textContent.trim()) continue;
      const range = document.createRange(); range.selectNodeContents(n);
      for (const r of range.getClientRects()) if (r.width > 0) tops.add(Math.round(r.top));
    }
    titleLines = tops.size;
  }
  const line = document.querySelector('.st-key-present_header');
  const zoom = getComputedStyle(main).getPropertyValue('--present-zoom').trim();
  return {
    inner: innerHeight, innerWidth, scrollWidth: document.documentElement.scrollWidth,
    zoom: zoom ? parseFloat(zoom) : 1, line: line ? rect(line) : null,
    figure: rect(chart), plots, cells,
    counter: counter.map(e => e.textContent),
    header: {
      title: h1 ? rect(h1) : null, titleLines,
      text: find("textarea[aria-label='Text']"),
      previous: find('.st-key-present_prev button'), next: find('.st-key-present_next button'),
      counter: counter.length ? rect(counter[0]) : null,
      presenter: find('.st-key-present'), predict: find('.st-key-predict'),
      link: find('.st-key-copy_link_present'),
    },
  };
}"""


def problems_of(
    facts: dict, where: str, single: bool, share: float = 0.55, least: int = 30
) -> list[str]:
    """What falls short on one step: ``share`` of the window's height for the plot, ``least`` px
    for the cell numbers."""
    found = []
    inner = facts["inner"]
    figure = facts["figure"]
    if figure["top"] < 0 or figure["bottom"] > inner + 1:
        found.append(f"{where}: the figure runs {figure['top']:.0f}–{figure['bottom']:.0f} px")
    if figure["left"] < 0 or figure["right"] > facts["innerWidth"] + 1:
        found.append(
            f"{where}: the figure runs {figure['left']:.0f}–{figure['right']:.0f} px across"
        )
    if facts["scrollWidth"] > facts["innerWidth"]:
        found.append(f"{where}: the page is {facts['scrollWidth']} px wide")
    assert facts["plots"], (where, facts)
    widths = []
    for plot in facts["plots"]:
        area = plot["area"]
        assert area is not None, (where, plot)
        if area["height"] < share * inner:
            found.append(f"{where} {plot['id']}: plot {area['height']:.0f} px tall")
        cell_w, cell_h = area["width"] / plot["cols"], area["height"] / plot["rows"]
        widths.append(cell_w)
        if not 1 / 1.1 <= cell_w / cell_h <= 1.1:
            found.append(f"{where} {plot['id']}: cells {cell_w:.1f} × {cell_h:.1f} px")
    cells = facts["cells"]
    if single and not cells:
        found.append(f"{where}: no cell numbers")
    small = [c for c in cells if c["size"] < least]
    if small:
        found.append(f"{where}: cell numbers at {min(c['size'] for c in small)} px")
    wide = [c for c in cells if c["width"] > min(widths) - 4]
    if wide:
        found.append(f"{where}: {wide[0]['text']!r} is {wide[0]['width']:.0f} px in a cell")
    header = facts["header"]
    parts = {k: v for k, v in header.items() if k != "titleLines"}
    missing = [k for k, v in parts.items() if v is None]
    if missing:
        found.append(f"{where}: header parts missing: {missing}")
    else:
        top = min(v["top"] for v in parts.values())
        bottom = max(v["bottom"] for v in parts.values())
        zoom = facts["zoom"]
        if bottom - top > 80 * zoom or top < 0:
            found.append(f"{where}: the header spans {top:.0f}–{bottom:.0f} px")
        line = facts["line"]
        lines = line["height"] / (HEADER_LINE_PX * zoom)
        if lines > 1.25:
            found.append(f"{where}: the header is {line['height']:.0f} px tall: {lines:.2f} lines")
        boxes = sorted(parts.items(), key=lambda kv: kv[1]["left"])
        for i, (name, a) in enumerate(boxes):
            for other, b in boxes[i + 1 :]:
                if (
                    min(a["right"], b["right"]) - max(a["left"], b["left"]) > 1
                    and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 1
                ):
                    found.append(f"{where}: the header's {name} and {other} overlap")
        if bottom > figure["top"] + 1:
            found.append(f"{where}: the header reaches {bottom:.0f} px, the figure starts higher")
        if header["titleLines"] != 1:
            found.append(f"{where}: the title takes {header['titleLines']} lines")
    return found


@pytest.mark.parametrize(("screen", "path", "tokens"), CASES)
def test_the_presenter_matrix_fills_the_screen_with_square_cells_and_large_numbers(
    app_in_chromium, artifacts, screen, path, tokens
):
    width, height = map(int, screen.split("x"))
    _, share, least, least_six = SCREENS[screen]
    if tokens == "6 tokens":
        least = least_six
    context = app_in_chromium.context.browser.new_context(
        viewport={"width": width, "height": height}
    )
    page = context.new_page()
    shots = artifacts / "screens"
    shots.mkdir(parents=True, exist_ok=True)
    problems, report = [], []
    tag = "" if screen == "1920x1080" else f"{screen}-"
    try:
        page.goto(f"{app_in_chromium.url}/{path}?present=true&text={TEXTS[tokens]}")
        step = 1
        while True:
            settle(page, PASSES[path], charts=1, timeout_ms=180_000)
            if step == 1:  # laid out for this window (its size reported, the page drawn again)
                page.wait_for_function(
                    LAID_OUT,
                    arg=figures.presenter_look(width, height).stage_height,
                    timeout=90_000,
                )
                settle(page, PASSES[path], charts=1, timeout_ms=180_000)
            facts = page.evaluate(FACTS)
            where = f"{screen}, {path}, {tokens}, step {step}"
            assert facts["zoom"] == figures.screen_scale(width, height), (where, facts["zoom"])
            report.append((where, facts["plots"], facts["figure"]))
            assert facts["counter"] and facts["counter"][0].startswith(f"Step {step} of "), (
                where,
                facts["counter"],
            )
            # The single matrices (one heatmap) of up to 12 tokens all carry their numbers.
            problems += problems_of(
                facts, where, single=len(facts["plots"]) == 1, share=share, least=least
            )
            if step == 1 or (path == "multi-head-attention" and step == 3):
                name = f"present-stage-{tag}{path}-{tokens.split()[0]}-{step}.png"
                page.screenshot(path=str(shots / name))
            count = int(facts["counter"][0].split()[-1])
            if step == count:
                break
            page.get_by_role("button", name="Next ▶").click()
            step += 1
            page.get_by_text(f"Step {step} of {count}").first.wait_for(timeout=90_000)
    finally:
        context.close()
        (artifacts / f"present-stage-{tag}{path}-{tokens.split()[0]}.txt").write_text(
            "\n".join(f"{w}: {p} {f}" for w, p, f in report) + "\n\n" + "\n".join(problems)
        )
    assert problems == [], "\n".join(problems)
    assert step == 6  # every step of the pass was measured
