"""A 256-token text in Chromium: the token window labels every token it shows, and the heads
grid past its budget draws the heads picked. Screenshots land in ``test-artifacts/screens/``."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from attnviz.core.tokens import tokenize
from bench.support.browser import CHART, settle
from bench.support.server import ROOT

from .conftest import wait_count

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

SENTENCE = "The quick brown fox jumps over the lazy dog while the cat sleeps. "
N = 256
HEADING = "4. Multi-head attention"
# Chromium draws several 256×256 heatmaps per run: on a busy 2-core machine a run took 12 s and
# the first visit 35 s.
SLOW = 300_000


def long_text() -> str:
    text = b"".join(tokenize(SENTENCE * 30, cap=N).pieces).decode("utf-8")
    assert len(tokenize(text)) == N
    return text


def thumb(page, which: str):
    """The window slider's "start" or "end" thumb (react-aria: a hidden range input each)."""
    return page.locator(f"input[aria-label='Show tokens i to j — {which}']")


def move(page, which: str, target: int) -> None:
    """Move a thumb to ``target`` with the arrow keys. A key pressed while the page reruns can
    be lost, so press the keys still missing until the thumb is there."""
    field = thumb(page, which)
    for _ in range(10):
        now = int(field.input_value())
        if now == target:
            return
        field.focus()
        for _ in range(abs(target - now)):
            field.press("ArrowRight" if target > now else "ArrowLeft")
        settle(page, HEADING, timeout_ms=SLOW)
    raise AssertionError(f"the {which} thumb is at {field.input_value()}, not {target}")


def title_of(chart) -> str:
    """A chart's title on one line: a wrapped title's lines (figures.wrap_title) joined by the
    spaces they replaced, then its subtitle (the note, "tokens 10–40 of 256"), which Plotly
    draws as an element of its own."""
    lines = chart.locator(".gtitle .line").all_text_contents()
    title = " ".join(lines) if lines else chart.locator(".gtitle").text_content()
    subtitle = chart.locator(".gtitle-subtitle")
    return f"{title} {subtitle.text_content()}" if subtitle.count() else title


def y_ticks(chart) -> list[str]:
    return chart.locator(".yaxislayer-above .ytick text").all_text_contents()


def test_a_window_at_256_tokens_labels_every_token_shown(app_in_chromium, page):
    text = long_text()
    # The window, tokens 10 to 38, from the link (each arrow key on the slider reruns the page at
    # 256 tokens, so the link sets most of it), then the slider's end thumb moved to 40.
    query = urlencode(
        {"text": text, "ctx": "256", "d_out": "16", "heads": "8", "tokens": ["10", "38"]},
        doseq=True,
    )
    page.goto(f"{app_in_chromium.url}/multi-head-attention?{query}")
    settle(page, HEADING, timeout_ms=SLOW)
    assert (thumb(page, "start").input_value(), thumb(page, "end").input_value()) == ("10", "38")
    move(page, "end", 40)
    assert thumb(page, "start").input_value() == "10"
    weights = page.locator(CHART).filter(has=page.locator(".gtitle", has_text="Weights of head 0"))
    wait_count(weights, 1)
    title = title_of(weights)
    assert "tokens 10–40 of 256" in title
    labels = list(tokenize(text).labels)[10:41]
    shown = y_ticks(weights)
    assert len(shown) == 31
    assert [s.replace("\u00a0", " ") for s in shown] == [
        lab[:17] + "…" if len(lab) > 18 else lab for lab in labels
    ]
    grid = page.locator(CHART).filter(has=page.locator(".gtitle", has_text="Attention weights"))
    assert "tokens 10–40 of 256" in title_of(grid)
    shots = ROOT / "test-artifacts" / "screens"
    shots.mkdir(parents=True, exist_ok=True)
    weights.screenshot(path=str(shots / "long-text-window-weights.png"))
    grid.screenshot(path=str(shots / "long-text-window-grid.png"))
    # the colour switch: every weights heatmap relative to an even share
    page.get_by_text("relative to an even share (log)", exact=True).click()
    settle(page, HEADING, timeout_ms=SLOW)
    title = title_of(weights)
    assert "tokens 10–40 of 256, relative to an even share" in title
    weights.screenshot(path=str(shots / "long-text-window-relative.png"))
