"""The sidebar says which of its controls a page does not use: they wait, still live, in one
closed "Not used on this page" box; and each pass page reads its token labels' symbols out in a
one-line legend right under its first matrix of tokens."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest

from attnviz.core.settings import PASS_FIELDS, Settings
from bench.support.pages import app_pages
from ui import state
from ui.text import token_legend

from .conftest import PAGES, PASS_PAGES, assert_sidebar, exceptions, go, open_app, values

# Every sidebar field, by URL name, and the widget list AppTest finds it in.
KINDS = {"text": "text_area", "text2": "text_input", "dropout": "slider"}
KINDS |= {f.url: "toggle" for f in state.FIELDS if f.kind == "bool"}
KINDS |= {f.url: "radio" for f in state.FIELDS if f.kind == "choice"}  # weights
KINDS |= {f.url: "number_input" for f in state.FIELDS if f.url not in KINDS}
# The pass each page draws (what Settings.for_pass keeps for it): a field outside it changes
# nothing on the page.
PASS_OF = {
    "": "simplified",
    "simplified-attention": "simplified",
    "trainable-attention": "trainable",
    "causal-attention": "causal",
    "multi-head-attention": "multihead",
    "against-pytorch": "multihead",
}


def keys_in(block) -> set[str]:
    found = set()
    for kind in set(KINDS.values()):
        found |= {w.key for w in getattr(block, kind)}
    return found


def unused_box(at):
    boxes = [e for e in at.sidebar.expander if e.label == state.NOT_USED_TITLE]
    assert len(boxes) <= 1
    return boxes[0] if boxes else None


def url_path(page) -> str:
    return "" if page.default else page.url_path


@pytest.mark.parametrize("page", app_pages(), ids=lambda p: p.url_path)
def test_the_controls_a_page_does_not_read_wait_in_one_closed_box(page):
    at = open_app()
    go(at, page.path)
    assert not exceptions(at)
    used = state.fields_used(url_path(page))
    assert used == state.PAGE_FIELDS[url_path(page)]  # every page is listed
    everything = keys_in(at.sidebar)
    assert everything == set(KINDS), everything ^ set(KINDS)  # every control still exists
    box = unused_box(at)
    boxed = keys_in(box) if box is not None else set()
    assert boxed == set(KINDS) - used
    if box is not None:
        assert box.proto.expanded is False
        assert values(box.caption) == [state.NOT_USED_NOTE]


def test_the_passes_box_exactly_the_settings_their_engine_does_not_read():
    """A control marked unused changes nothing the page computes: Settings.for_pass (what the
    caches key on) drops every field the page does not read, and keeps every one it reads."""
    by_setting = {f.setting: f.url for f in state.FIELDS if f.setting}
    for page, kind in PASS_OF.items():
        used = state.PAGE_FIELDS[page]
        for f in fields(Settings):
            url = by_setting.get(f.name)
            if url is None:
                continue  # max_tokens: not in the sidebar
            if page == "against-pytorch" and f.name == "weights":
                continue  # page 6 asks for the random weights whatever the switch says
            assert (f.name in PASS_FIELDS[kind]) == (url in used), (page, f.name)
    assert "text2" in state.PAGE_FIELDS["causal-attention"]
    assert "text2" not in state.PAGE_FIELDS["multi-head-attention"]


def test_the_learn_page_boxes_every_control_and_trained_heads_keeps_text_and_seeds():
    at = open_app()
    go(at, "pages/watch-attention-learn.py")
    assert keys_in(unused_box(at)) == set(KINDS)
    go(at, "pages/trained-heads.py")
    assert keys_in(at.sidebar) - keys_in(unused_box(at)) == {"book", "text", "eseed", "wseed"}


def test_a_value_set_on_one_page_survives_pages_that_box_it():
    at = open_app(page="causal")
    at.sidebar.number_input(key="d_out").set_value(16).run()
    at.sidebar.toggle(key="train").set_value(True).run()
    go(at, "simplified")  # d_out and train are boxed here
    assert "d_out" in keys_in(unused_box(at)) and "train" in keys_in(unused_box(at))
    assert at.sidebar.number_input(key="d_out").value == 16
    go(at, "pages/watch-attention-learn.py")
    go(at, "causal")
    assert not exceptions(at)
    assert_sidebar(at, d_out=16, train=True)
    assert "d_out" not in keys_in(unused_box(at))


def test_book_mode_on_the_learn_page_keeps_its_panel_in_the_box():
    at = open_app({"book": "true"})
    go(at, "pages/watch-attention-learn.py")
    box = unused_box(at)
    assert keys_in(box) == {"book"}
    assert any(state.BOOK_PANEL_TITLE in m for m in values(box.markdown))


# --- the token labels' legend ------------------------------------------------------------------
def top_level(at) -> list:
    return list(at.main.children.values())


def charts_in(node) -> list[dict]:
    if getattr(node, "type", "") == "plotly_chart":
        return [json.loads(node.proto.spec)]
    return [c for child in getattr(node, "children", {}).values() for c in charts_in(child)]


def has_token_axis(spec: dict) -> bool:
    """A matrix (heatmap) with a row or a column per token."""
    return any(
        trace.get("type") == "heatmap"
        and isinstance(trace.get(axis), list)
        and str(trace[axis][0]).startswith("0: ")
        for trace in spec.get("data", [])
        for axis in ("x", "y")
        if trace.get(axis)
    )


@pytest.mark.parametrize("kind", PASS_PAGES)
@pytest.mark.parametrize(
    ("text", "symbols"),
    [("Your journey starts with one step", "␣ is a space."), ("one\ntwo three", "↵ is")],
)
def test_each_pass_page_explains_its_token_labels_under_its_first_matrix(kind, text, symbols):
    at = open_app({"text": text}, page=kind)
    assert not exceptions(at)
    elements = top_level(at)
    first = next(i for i, e in enumerate(elements) if any(map(has_token_axis, charts_in(e))))
    after = [e for e in elements[first + 1 :] if type(e).__name__ != "Expander"]  # Numbers box
    legend = values([after[0]])[0]
    assert legend.startswith("Token labels read “position: token”, positions counted from 0")
    assert symbols in legend
    assert sum(v.startswith("Token labels read") for v in values(at.caption)) == 1


def test_the_legend_names_only_the_symbols_the_labels_use():
    assert token_legend(["0: Your", "1: ␣journey"]) == (
        "Token labels read “position: token”, positions counted from 0; ␣ is a space."
    )
    assert token_legend(["0: a", "1: ↵", "2: ⇥", "3: ␣b"]).endswith(
        "; ␣ is a space, ↵ is a line break, ⇥ is a tab."
    )
    assert token_legend(["0: Your"]).endswith("counted from 0.")
    assert PAGES["home"] == "pages/why-attention.py"
