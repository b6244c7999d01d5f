"""Way-finding on the pass pages (issue 36, point 9): passes 1 and 2 reach their weights map in
one click from the top, and every pass page ends with a link to the next one. (That the link
keeps the text and settings, that the jump scrolls and that a ``cell=`` link scrolls to its
derivation is measured in Chromium: tests/browser/test_phone_in_chromium.py.)
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest

from ui import render

from .conftest import PASS_PAGES, chart_title, exceptions, open_app

NEXT = {
    "simplified": ("trainable-attention", "Next: 2. Trainable self-attention"),
    "trainable": ("causal-attention", "Next: 3. Causal attention and dropout"),
    "causal": ("multi-head-attention", "Next: 4. Multi-head attention"),
    "multihead": ("watch-attention-learn", "Next: 5. Watch attention learn"),
}


def kinds(at) -> list[tuple[str, object]]:
    """The main area's elements in order, as (type name, element)."""
    return [(type(e).__name__, e) for e in at.main]


@pytest.mark.parametrize("page", PASS_PAGES)
def test_every_pass_page_ends_with_a_link_to_the_next_one(page):
    at = open_app({"text": "The cat sat on the mat"}, page=page)
    assert not exceptions(at)
    links = [(p.proto.page, p.proto.label) for p in at.get("page_link")]
    assert links[-1] == NEXT[page], links
    order = kinds(at)
    link_at = max(i for i, (k, e) in enumerate(order) if k == "PageLink")
    charts = [i for i, (k, e) in enumerate(order) if getattr(e, "type", "") == "plotly_chart"]
    assert charts and max(charts) < link_at  # after every figure of the page
    heading = order[link_at - 1][1]
    assert (heading.value, heading.proto.anchor) == ("Next", "next-pass")


@pytest.mark.parametrize("page", PASS_PAGES)
def test_the_next_link_s_own_address_holds_the_sidebar_values_and_nothing_else(page):
    # In its own address, so that a new tab (a middle click, "open in new tab") keeps them too.
    values = {"text": "The cat sat on the mat", "d_in": "6", "dropout": "0.3", "cell": "q1k0"}
    at = open_app(values, page=page)
    assert not exceptions(at)
    link = at.get("page_link")[-1].proto
    assert link.label == NEXT[page][1]
    carried = parse_qs(link.query_string)
    assert carried["text"] == ["The cat sat on the mat"] and carried["d_in"] == ["6"], carried
    assert carried["dropout"] == ["0.3"], carried
    assert "cell" not in carried  # a value of this page only


def test_the_next_link_of_a_page_at_its_defaults_carries_no_address():
    at = open_app(page="simplified")
    assert at.get("page_link")[-1].proto.query_string == ""


@pytest.mark.parametrize(("page", "title"), [("simplified", "Weights A"), ("trainable", "Weights")])
def test_passes_1_and_2_jump_to_their_weights_map_from_the_top(page, title):
    at = open_app(page=page)
    order = kinds(at)
    jump = [
        i
        for i, (k, e) in enumerate(order)
        if k == "Markdown" and f"(#{render.WEIGHTS_ANCHOR})" in str(e.value)
    ]
    charts = [i for i, (k, e) in enumerate(order) if getattr(e, "type", "") == "plotly_chart"]
    assert len(jump) == 1 and jump[0] < charts[0]  # above the first figure
    assert "(#explain-a-cell)" in str(order[jump[0]][1].value)
    (at_heading,) = [
        i
        for i, (k, e) in enumerate(order)
        if k == "Subheader" and e.proto.anchor == render.WEIGHTS_ANCHOR
    ]
    after = order[at_heading + 1][1]
    assert getattr(after, "type", "") == "plotly_chart"
    assert chart_title(json.loads(after.proto.spec)).startswith(title)
    # "explain a cell" names a heading the page has (Streamlit's anchor for it)
    assert [h for h in at.header if h.value == "Explain a cell"]
