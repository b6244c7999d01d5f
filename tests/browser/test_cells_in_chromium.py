"""Explain a cell and the slide downloads in a real browser.

- The keyboard alone reaches every cell of page 1's 6×6 grid: Tab into it, the arrow keys to a
  cell, Enter; each of the 36 opens its own derivation (the URL names the cell, the derivation
  names its query and key) and the focus stays on the cell through the rerun.
- A mouse click on a cell of the weights heatmap opens that cell.
- The "SVG" and "PNG" buttons of an opened Numbers box save files made in the browser: the SVG
  parses and holds the figure's title and token labels, the PNG decodes and is 1920 px wide.
- Screenshots of the page with a derivation open at 1400 px and 390 px land in
  ``test-artifacts/screens/`` (nothing scrolls sideways on the phone).
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET

import pytest
from PIL import Image

from bench.support.browser import settle, wait_for_app

from .conftest import wait_count

pytestmark = [pytest.mark.browser, pytest.mark.timeout(1200)]

PAGE = "/simplified-attention"
TITLE = "1. Simplified self-attention"
LABELS = ["0: Your", "1: ␣journey", "2: ␣starts", "3: ␣with", "4: ␣one", "5: ␣step"]
GRID = ".st-key-explain_grid"
# The grid's focused cell (the component's shadow root holds it), as [row, column].
FOCUSED = """() => {
  const host = [...document.querySelectorAll('.st-key-explain_grid *')].find(e => e.shadowRoot);
  const cell = host && host.shadowRoot.activeElement;
  return cell && cell.dataset.r !== undefined ? [+cell.dataset.r, +cell.dataset.c] : null;
}"""


def heading(page) -> str:
    """The open derivation's first line ("Query 2: ␣starts → key 1: ␣journey: weight ...")."""
    found = page.locator("[data-testid='stText']").filter(has_text=re.compile(r"^Query \d+"))
    return found.first.inner_text() if found.count() else ""


def wait_for_cell(page, query: int, key: int, timeout_s: float = 90) -> None:
    """Until the URL names the cell and its derivation shows it, the run over."""
    want = f"Query {LABELS[query]} → key {LABELS[key]}:"
    deadline = timeout_s * 1000
    page.wait_for_function(
        "([cell, want]) => location.search.includes('cell=' + cell) && [...document"
        ".querySelectorAll(\"[data-testid='stText']\")].some(e => e.innerText.startsWith(want))",
        arg=[f"q{query}k{key}", want],
        timeout=deadline,
    )
    wait_for_app(page, deadline)
    assert heading(page).startswith(want)


def tab_into_grid(page) -> None:
    """Focus the control just before the block (the line view's Numbers box), then Tab until a
    grid cell has the focus."""
    page.locator(".st-key-numbers_lines_p1 summary").first.focus()
    for _ in range(12):
        page.keyboard.press("Tab")
        if page.evaluate(FOCUSED) is not None:
            return
    raise AssertionError("Tab never reached the grid")


# The cells Enter opens: the diagonal, both far corners and one cell off both (9 of 36).
OPENED = {(i, i) for i in range(6)} | {(0, 5), (5, 0), (2, 4)}


def test_the_keyboard_reaches_every_cell_of_a_6x6_grid_and_enter_opens_it(page, app_in_chromium):
    page.goto(app_in_chromium.url + PAGE)
    settle(page, TITLE)
    wait_count(page.locator(f"{GRID} td[role=gridcell]"), 36)
    tab_into_grid(page)
    assert page.evaluate(FOCUSED) == [0, 0]
    at = (0, 0)
    for query in range(6):
        # a snake: left to right, then right to left, so every move is one arrow key
        keys = range(6) if query % 2 == 0 else range(5, -1, -1)
        for key in keys:
            while at[0] < query:
                page.keyboard.press("ArrowDown")
                at = (at[0] + 1, at[1])
            while at[1] < key:
                page.keyboard.press("ArrowRight")
                at = (at[0], at[1] + 1)
            while at[1] > key:
                page.keyboard.press("ArrowLeft")
                at = (at[0], at[1] - 1)
            assert page.evaluate(FOCUSED) == [query, key]
            if (query, key) not in OPENED:
                continue  # every cell is reached; a sample of them is opened (each a rerun)
            page.keyboard.press("Enter")
            wait_for_cell(page, query, key)
            assert page.evaluate(FOCUSED) == [query, key], "the focus left the grid"
            selected = page.locator(f"{GRID} td[aria-selected=true]")
            assert selected.count() == 1
            assert selected.get_attribute("aria-label").startswith(
                f"query {LABELS[query]}, key {LABELS[key]}: weight 0."
            )


def test_a_click_on_a_heatmap_cell_opens_its_derivation(page, app_in_chromium):
    page.goto(app_in_chromium.url + PAGE)
    settle(page, TITLE)
    plot = page.locator(".st-key-fig_p1_weights .nsewdrag").first
    plot.scroll_into_view_if_needed()
    box = plot.bounding_box()
    # query 4 (the fifth row from the top), key 2 (the third column)
    page.mouse.click(box["x"] + box["width"] * 2.5 / 6, box["y"] + box["height"] * 4.5 / 6)
    wait_for_cell(page, 4, 2)


def test_a_click_on_one_head_of_the_heads_grid_opens_that_heads_cell(page, app_in_chromium):
    page.goto(app_in_chromium.url + "/multi-head-attention?d_out=16&heads=4")
    settle(page, "4. Multi-head attention")
    plots = page.locator(".st-key-fig_p4_grid .nsewdrag")
    wait_count(plots, 4)  # one plot per head, heads 0 to 3 in order
    head_2 = plots.nth(2)
    head_2.scroll_into_view_if_needed()
    box = head_2.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 1.5 / 6, box["y"] + box["height"] * 4.5 / 6)
    page.wait_for_function("() => location.search.includes('cell=h2q4k1')", timeout=90_000)
    wait_for_app(page, 90_000)
    assert heading(page).startswith(f"Query {LABELS[4]} → key {LABELS[1]}, head 2: weight ")


def test_svg_and_png_downloads_hold_the_figure_and_are_1920_px_wide(
    page, app_in_chromium, tmp_path
):
    page.goto(app_in_chromium.url + PAGE)
    settle(page, TITLE)
    page.locator(".st-key-numbers_p1_weights summary").first.click()
    svg_button = page.locator(".st-key-export_fig_p1_weights button[data-format=svg]")
    svg_button.wait_for(timeout=60_000)
    wait_for_app(page)
    with page.expect_download(timeout=60_000) as saved:
        svg_button.click()
    assert saved.value.suggested_filename == "p1_weights.svg"
    svg_path = tmp_path / "figure.svg"
    saved.value.save_as(svg_path)
    root = ET.parse(svg_path).getroot()  # a well-formed SVG
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("width") == "960"
    texts = ["".join(e.itertext()) for e in root.iter("{http://www.w3.org/2000/svg}text")]
    assert any(t.startswith("Weights A = softmax(Ω)") for t in texts), texts[:20]
    for label in LABELS:
        assert label in texts, label  # every token's tick label, as drawn

    png_button = page.locator(".st-key-export_fig_p1_weights button[data-format=png]")
    with page.expect_download(timeout=60_000) as saved:
        png_button.click()
    assert saved.value.suggested_filename == "p1_weights.png"
    png_path = tmp_path / "figure.png"
    saved.value.save_as(png_path)
    image = Image.open(io.BytesIO(png_path.read_bytes()))
    image.load()  # decodes every pixel
    assert image.format == "PNG"
    assert image.width == 1920
    height = float(root.get("height"))
    assert image.height == round(2 * height)
    colours = image.convert("RGB").resize((96, 64)).getcolors(96 * 64)
    assert colours is not None and len(colours) > 20  # a drawn figure, not a blank page


@pytest.mark.parametrize("width", [1400, 390])
def test_screenshot_of_an_open_derivation(page, app_in_chromium, artifacts, width):
    page.set_viewport_size({"width": width, "height": 1400 if width > 800 else 844})
    page.goto(app_in_chromium.url + "/causal-attention?cell=q4k2")
    settle(page, "3. Causal attention and dropout")
    wait_for_cell(page, 4, 2)
    block = page.locator(".st-key-explain_derivation")
    block.scroll_into_view_if_needed()
    page.wait_for_timeout(1000)
    shots = artifacts / "screens"
    shots.mkdir(exist_ok=True)
    page.screenshot(path=str(shots / f"explain-cell-{width}.png"))
    wide = page.evaluate("() => document.documentElement.scrollWidth")
    assert wide <= width  # nothing scrolls the page sideways
