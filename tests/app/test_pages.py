"""Every page, as a student sees it: the sidebar survives page switches and reruns, every page
draws its charts for awkward texts, page 1's weights are what the engine computed (rows sum to
1, one escaped category label per position), and book mode matches every printout."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest

from attnviz.core.tokens import tokenize

from .conftest import (
    BOOK_LABELS,
    OPEN_PARTS,
    PAGES,
    REGISTERED,
    SIDEBAR_DEFAULTS,
    TITLES,
    TOKENIZER_CAPTION,
    assert_sidebar,
    badges,
    chart,
    chart_specs,
    chart_title,
    charts,
    exceptions,
    go,
    header_captions,
    open_app,
    spec_array,
    values,
)

WHY_RUN_CHARTS = [
    "Token accuracy against sentence length",
    "One vector (no attention): token accuracy during training",
    "With attention: token accuracy during training",
    "Alignment: attention weights, Mirror word × English word",
]
EMPTY_INFO = "There is no text to attend over: type a sentence in the sidebar."

# Raw token displays (before escaping) of GPT-2's tokenizer for each text.
INPUTS = {
    "default": (None, ["Your", "␣journey", "␣starts", "␣with", "␣one", "␣step"]),
    "repeated": ("the the the cat", ["the", "␣the", "␣the", "␣cat"]),
    "number-like": ("1 2 3 1", ["1", "␣2", "␣3", "␣1"]),
    "html-like": (
        "<b>bold</b> & <i>x</i>",
        ["<", "b", ">", "bold", "</", "b", ">", "␣&", "␣<", "i", ">", "x", "</", "i", ">"],
    ),
    # Partial UTF-8 bytes are shown in hex; the expected labels come from the engine.
    "emoji": ("I ❤️ 🐈\u200d⬛", None),
    # One 64-character token: its label is shortened to 18 characters with "…".
    "long-token": ("=" * 64 + " end", None),
}


def expected_labels(text: str | None, displays: list[str] | None) -> list[str]:
    if displays is None:
        displays = [lab.split(": ", 1)[1] for lab in tokenize(text).labels]
    raw = [f"{i}: {d}" for i, d in enumerate(displays)]
    short = [lab if len(lab) <= 18 else lab[:17] + "…" for lab in raw]
    return [html.escape(lab, quote=False) for lab in short]


def query_for(text: str | None) -> dict[str, str]:
    return {} if text is None else {"text": text}


# --- the page-switch test -------------------------------------------------------------------
def test_the_chapter_pages_are_all_registered():
    assert {p.path for p in REGISTERED} >= set(PAGES.values())
    assert [p.path for p in REGISTERED if p.default] == [PAGES["home"]]


@pytest.mark.parametrize("page", REGISTERED, ids=[p.url_path for p in REGISTERED])
def test_switching_to_a_page_and_rerunning_it_keeps_the_shared_sidebar(page):
    at = open_app()
    assert_sidebar(at, **SIDEBAR_DEFAULTS)
    go(at, page.path)
    for rerun in range(3):
        if rerun:
            at.run()
        assert not exceptions(at), f"rerun {rerun}: {exceptions(at)}"
        assert len(at.title) == 1, f"rerun {rerun}: the page itself did not run"
        if page.path in PAGES.values():
            name = next(k for k, v in PAGES.items() if v == page.path)
            assert at.title[0].value == TITLES[name], f"rerun {rerun}"
        assert_sidebar(at, **SIDEBAR_DEFAULTS, text="Your journey starts with one step")
        assert len(header_captions(at)) == 1, f"rerun {rerun}"


def test_walking_through_every_page_twice_keeps_a_changed_setting():
    at = open_app()
    at.sidebar.number_input(key="d_out").set_value(12).run()
    for _ in range(2):
        for page in REGISTERED:
            go(at, page.path)
            at.run()
            assert not exceptions(at), page.path
            assert len(at.title) == 1, page.path
            assert_sidebar(at, d_out=12, heads=2)


# --- what a student sees --------------------------------------------------------------------
@pytest.mark.parametrize("name", list(INPUTS))
def test_every_page_draws_its_charts_for_the_text(name):
    text, _ = INPUTS[name]
    at = open_app(query_for(text))
    chapter = {path: name for name, path in PAGES.items()}
    for page in REGISTERED:
        go(at, page.path)
        where = f"{page.path} with {name} text"
        assert not exceptions(at), where
        assert values(at.error) == [], where
        assert len(at.title) == 1, where
        if page.path in chapter:  # pages added later: only that they run cleanly
            assert len(charts(at)) > 0, where
            assert at.title[0].value == TITLES[chapter[page.path]], where
        captions = header_captions(at)
        assert len(captions) == 1 and captions[0].startswith(TOKENIZER_CAPTION), captions
        assert not any("fallback" in w for w in values(at.warning)), where
        if page.path in chapter:
            # Nothing for these short texts to warn about (no link problem, no limit).
            assert values(at.warning) == [], where
        if text is not None:
            assert at.sidebar.text_area(key="text").value == text


def test_an_empty_text_stops_every_page_with_one_message():
    at = open_app({"text": ""})
    for page in PAGES:
        go(at, page)
        assert not exceptions(at), page
        assert values(at.info) == [EMPTY_INFO], page
        # The home page's "why attention, measured" reads no text: its recorded runs stay.
        drawn = [re.sub(r" \([^()]*\)$", "", chart_title(s)) for s in chart_specs(at)]
        assert drawn == (WHY_RUN_CHARTS if page == "home" else []), page
        assert values(at.error) == [], page
        assert len(header_captions(at)) == 1


@pytest.mark.parametrize("name", list(INPUTS))
def test_page_1_weights_heatmap_holds_one_row_per_token_that_sums_to_1(name):
    text, displays = INPUTS[name]
    at = open_app(query_for(text), page="simplified")
    spec = chart(at, "Weights A")
    (trace,) = spec["data"]
    labels = expected_labels(text, displays)
    n = len(labels)
    assert trace["type"] == "heatmap"
    assert trace["x"] == labels and trace["y"] == labels
    assert len(set(labels)) == n  # repeated tokens keep their own rows
    assert trace["z"]["dtype"] == "f4"
    z = spec_array(trace["z"])
    assert z.shape == (n, n)
    assert np.all(z >= 0)
    np.testing.assert_allclose(z.sum(axis=1), np.ones(n), atol=1e-5)
    layout = spec["layout"]
    assert layout["xaxis"]["type"] == "category" and layout["yaxis"]["type"] == "category"
    assert layout["title"]["text"] == f"Weights A = softmax(Ω) {(n, n)}"
    assert "%{z:.4f}" in trace["hovertemplate"]
    assert "%{x}" in trace["hovertemplate"] and "%{y}" in trace["hovertemplate"]
    assert trace["zmin"] == 0 and trace["zmax"] == 1
    assert trace["colorscale"][0][1] == "#440154" and trace["colorscale"][-1][1] == "#fde725"


def test_page_1_labels_escape_html_and_keep_number_like_tokens_as_categories():
    at = open_app({"text": "<b>bold</b> & <i>x</i>"}, page="simplified")
    labels = chart(at, "Weights A")["data"][0]["x"]
    assert labels[:4] == ["0: &lt;", "1: b", "2: &gt;", "3: bold"]
    assert "7: ␣&amp;" in labels
    assert not any("<" in lab or ">" in lab for lab in labels)
    at = open_app({"text": "1 2 3 1"}, page="simplified")
    spec = chart(at, "Weights A")
    assert spec["data"][0]["x"] == ["0: 1", "1: ␣2", "2: ␣3", "3: ␣1"]
    assert spec["layout"]["xaxis"]["type"] == "category"


def test_long_token_labels_are_shortened_to_18_characters():
    at = open_app({"text": "=" * 64 + " end"}, page="simplified")
    labels = chart(at, "Weights A")["data"][0]["x"]
    assert labels[0] == "0: " + "=" * 14 + "…"
    assert all(len(lab) <= 18 for lab in labels)


def test_every_chart_on_page_1_uses_the_same_token_labels():
    at = open_app({"text": "the the the cat"}, page="simplified")
    labels = ["0: the", "1: ␣the", "2: ␣the", "3: ␣cat"]
    for spec in chart_specs(at):
        if spec["layout"]["title"]["text"].startswith("Query "):  # the line view's keys
            assert spec["layout"]["xaxis"]["ticktext"] == labels
            continue
        for trace in spec["data"]:
            axis = trace.get("x") if trace["type"] == "bar" else trace.get("y")
            if trace["type"] == "heatmap" and spec["layout"]["title"]["text"].startswith("α_"):
                assert trace["y"] == [*labels, "z (query 1)"]
            else:
                assert axis == labels, spec["layout"]["title"]["text"]


# --- book mode ------------------------------------------------------------------------------
BOOK_BLOCKS = {"home": 0, "simplified": 7, "trainable": 6, "causal": 7, "multihead": 2}


def book_blocks(at) -> tuple[int, int]:
    """(matching, differing) ``book_beside`` blocks: each ends with its badge and a caption."""
    found = [text for colour, text in badges(at) if text.endswith("the book")]
    captions = [c for c in values(at.caption) if c.endswith("(the printout has 4 decimals)")]
    assert len(captions) == len(found), (captions, found)
    matches = found.count("Matches the book")
    differs = found.count("Differs from the book")
    assert matches + differs == len(found)
    return matches, differs


@pytest.mark.parametrize("page", list(PAGES))
def test_book_mode_matches_every_printout_on_the_page(page):
    at = open_app({"book": "true", **OPEN_PARTS}, page=page)
    assert not exceptions(at)
    assert values(at.error) == []
    assert len(charts(at)) > 0
    assert_sidebar(at, book=True)
    assert book_blocks(at) == (BOOK_BLOCKS[page], 0)
    colours = {colour for colour, text in badges(at) if text.endswith("the book")}
    assert colours <= {"green"}


def test_book_mode_uses_the_six_book_tokens_on_every_pass():
    at = open_app({"book": "true", "text": "ignored in book mode"}, page="simplified")
    assert chart(at, "Weights A")["data"][0]["x"] == BOOK_LABELS
    go(at, "causal")
    assert chart(at, "Route 2")["data"][0]["x"] == BOOK_LABELS
    go(at, "multihead")
    assert chart(at, "Weights of head 0")["data"][0]["x"] == BOOK_LABELS


def test_book_mode_page_2_version_v2_shows_its_two_printouts():
    at = open_app({"book": "true", **OPEN_PARTS}, page="trainable")
    assert at.radio(key="module").value == "v1"
    at.radio(key="module").set_value("v2").run()
    assert book_blocks(at) == (2, 0)
    assert any("sa_v2(inputs), seed 789" in m for m in values(at.markdown))


def test_book_mode_page_1_shows_the_query_walkthrough_only_for_query_1():
    at = open_app({"book": "true"}, page="simplified")
    assert at.selectbox(key="query").value == 1
    at.selectbox(key="query").set_value(0).run()
    assert book_blocks(at) == (3, 0)


def test_causal_mask_labels_each_position_once_and_marks_the_unused_ones():
    at = open_app(page="causal")
    spec = chart(at, "mask = triu(ones(32, 32), diagonal=1)")
    default = expected_labels(None, INPUTS["default"][1])
    positions = default + [f"{i} (unused)" for i in range(6, 10)]
    assert spec["data"][0]["y"] == positions
    assert spec["data"][0]["x"] == positions
    mask = spec_array(spec["data"][0]["z"])
    np.testing.assert_array_equal(mask, np.triu(np.ones((10, 10)), k=1))


# Plotly's reference for heatmap.texttemplate: "the template string has access to variables x,
# y, z and text". Anything else prints "-" in every cell (seen in Chromium: "×-").
HEATMAP_TEXT_VARIABLES = {"x", "y", "z", "text"}


def test_heatmap_cell_texts_use_only_values_plotly_gives_heatmaps():
    at = open_app()
    wrong = []
    for page in PAGES:
        go(at, page)
        for spec in chart_specs(at):
            for trace in spec["data"]:
                template = trace.get("texttemplate") if trace["type"] == "heatmap" else None
                used = set(re.findall(r"%\{(\w+)", template or ""))
                if used - HEATMAP_TEXT_VARIABLES:
                    wrong.append((page, spec["layout"]["title"]["text"], template))
    assert wrong == []


def test_the_dropout_placement_comparison_appears_on_request():
    at = open_app({"dropout": "0.5", "lab": "true"}, page="causal")
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert "Dropout on the context vectors" not in titles
    # the context the dropped weights made is always there, beside the values: Z = A·V
    assert "Dropout on the weights: context Z = A·V" in titles
    assert "Values V" in titles
    assert any("Row sums after dropout, row 0 first:" in c.value for c in at.caption)
    at.toggle(key="placement").set_value(True).run()
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert "Dropout on the context vectors" in titles
    assert "Dropout on the weights: context Z = A·V" in titles
    assert any(v.startswith("Here dropout on the context zeroes ") for v in values(at.markdown))
    assert not at.exception
