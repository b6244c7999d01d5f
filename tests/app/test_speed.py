"""Work, not time: a view control recomputes nothing, and figures stay within their budget at
GPT-2 sizes (small and XL). (Wall-clock speed is measured by the benchmark, not asserted here.)"""

from __future__ import annotations

import collections
import json

import numpy as np
import pytest
import streamlit as st

from attnviz.core import trace as tracing
from attnviz.core.tokens import tokenize
from attnviz.teach import prepare as lesson
from ui import cache

from .conftest import PAGES, TITLES, charts, exceptions, go, open_app, spec_array

FIGURE_BUDGET_BYTES = 5_000_000
MAX_CELLS = 256 * 256


@pytest.fixture
def engine_calls(monkeypatch):
    """Count every call into the engine's passes (what the caches call), from a cold cache."""
    calls: collections.Counter[str] = collections.Counter()

    def counting(module, name):
        original = getattr(module, name)

        def wrapper(*args, **kwargs):
            calls[name] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    for name in ("prepare", "simplified", "trainable", "causal", "multihead", "wrapper"):
        counting(lesson, name)
    for name in ("trace_simplified", "trace_trainable", "trace_causal", "trace_multihead"):
        counting(tracing, name)
    st.cache_resource.clear()
    cache.clear_all()
    yield calls
    st.cache_resource.clear()
    cache.clear_all()


def test_page_1_view_controls_recompute_nothing(engine_calls):
    at = open_app({"text": "the cat sat on the mat"}, page="simplified")
    # The counters are wired: the cold first run traced pass 1 exactly once.
    assert engine_calls["simplified"] == 1 and engine_calls["trace_simplified"] == 1
    before = dict(engine_calls)
    at.selectbox(key="query").set_value(4).run()
    assert at.selectbox(key="query").value == 4
    at.toggle(key="numbers").set_value(not at.toggle(key="numbers").value).run()
    at.select_slider(key="stretch").set_value(10).run()
    at.select_slider(key="shift").set_value(-100).run()
    assert not exceptions(at)
    assert any(t.value == TITLES["simplified"] for t in at.title)
    assert dict(engine_calls) == before


def test_page_4_head_choice_recomputes_nothing(engine_calls):
    at = open_app({"d_out": "12", "heads": "4"}, page="multihead")
    assert engine_calls["multihead"] == 1 and engine_calls["trace_multihead"] == 1
    before = dict(engine_calls)
    for head in (3, 1):
        at.selectbox(key="head").set_value(head).run()
        assert any(
            json.loads(c.proto.spec)["layout"]["title"]["text"] == f"Weights of head {head}"
            for c in charts(at)
        )
    at.toggle(key="numbers").set_value(True).run()
    assert not exceptions(at)
    assert dict(engine_calls) == before


def test_a_new_setting_does_recompute(engine_calls):
    """The counters above do see a recomputation: a changed d_out traces pass 4 again."""
    at = open_app(page="multihead")
    assert engine_calls["trace_multihead"] == 1
    at.sidebar.number_input(key="d_out").set_value(12).run()
    assert engine_calls["trace_multihead"] == 2


def test_switching_back_to_a_page_recomputes_nothing(engine_calls):
    at = open_app(page="causal")
    go(at, "simplified")
    before = dict(engine_calls)
    go(at, "causal")
    go(at, "simplified")
    assert dict(engine_calls) == before


# --- figure budget --------------------------------------------------------------------------
SIZES = {
    "gpt2-small": {"d_in": "768", "d_out": "768", "heads": "12", "ctx": "1024"},
    # The widest the sidebar allows (the "GPT-2 XL" preset).
    "gpt2-xl": {"d_in": "1600", "d_out": "1600", "heads": "25", "ctx": "1024"},
}


def text_of_256_tokens() -> str:
    sentence = "The quick brown fox jumps over the lazy dog while the cat sleeps. "
    pieces = tokenize(sentence * 30, cap=256).pieces
    text = b"".join(pieces).decode("utf-8")
    assert len(tokenize(text)) == 256
    return text


def heatmap_cells(spec: dict) -> list[int]:
    return [
        int(np.prod(spec_array(trace["z"]).shape))
        for trace in spec["data"]
        if trace.get("type") == "heatmap"
    ]


@pytest.mark.parametrize("size", list(SIZES))
def test_figures_stay_within_budget_at_gpt2_sizes(size):
    at = open_app({**SIZES[size], "text": text_of_256_tokens()})
    sizes = {}
    for page in PAGES:
        go(at, page)
        assert not exceptions(at), page
        specs = [c.proto.spec for c in charts(at)]
        assert specs, page
        sizes[page] = (len(specs), sum(len(s) for s in specs), max(len(s) for s in specs))
        for raw in specs:
            spec = json.loads(raw)
            title = spec["layout"].get("title", {}).get("text", "")
            assert all(cells <= MAX_CELLS for cells in heatmap_cells(spec)), title
    print(f"\nfigure JSON at {size}, 256 tokens (charts, total bytes, largest):")
    for page, (count, total, largest) in sizes.items():
        print(
            f"  {page:10s} {count:3d} charts {total / 1e6:6.2f} MB (largest {largest / 1e6:.2f} MB)"
        )
    over = {page: total for page, (_, total, _) in sizes.items() if total > FIGURE_BUDGET_BYTES}
    assert over == {}, f"pages over {FIGURE_BUDGET_BYTES:,} bytes of figure JSON: {over}"


def test_settings_a_pass_does_not_read_recompute_nothing_on_its_page(engine_calls):
    """Dropout, heads and the weight seed do not enter pass 1: moving them on page 1 (or on
    the home page) traces nothing again; pass 2 ignores dropout and heads."""
    at = open_app({"text": "the cat sat on the mat"}, page="simplified")
    before = dict(engine_calls)
    at.sidebar.slider(key="dropout").set_value(0.3).run()
    at.sidebar.number_input(key="heads").set_value(4).run()
    at.sidebar.number_input(key="wseed").set_value(7).run()
    at.sidebar.toggle(key="train").set_value(True).run()
    assert not exceptions(at)
    assert dict(engine_calls) == before
    go(at, "trainable")
    traced = dict(engine_calls)
    at.sidebar.slider(key="dropout").set_value(0.5).run()
    at.sidebar.number_input(key="heads").set_value(1).run()
    assert not exceptions(at)
    assert dict(engine_calls) == traced
    # ... while d_in, which pass 1 reads, does trace it again.
    go(at, "simplified")
    at.sidebar.number_input(key="d_in").set_value(4).run()
    assert engine_calls["trace_simplified"] == before["trace_simplified"] + 1
