"""Pages 3 and 4 against the issue texts (every matrix's numbers and CSV: test_numbers_csv.py):
the relative-to-uniform map hovers from z, the dropout lab (factor, seed, zeroed rows
outlined, colour range), the batch of the two sidebar texts, the heads-grid budget, FLOPs, the
reshape walk, the two constructor calls, the timing button and the presets."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import streamlit as st

from attnviz.core import book
from attnviz.core.settings import GPT2_SMALL, GPT2_XL, attention_flops, mha_parameter_count
from attnviz.core.tokens import tokenize
from attnviz.models import speed
from ui import sections, url

from .conftest import (
    BOOK_TEXT,
    OPEN_PARTS,
    assert_sidebar,
    badges,
    chart,
    chart_specs,
    chart_title,
    charts,
    exceptions,
    go,
    open_app,
    spec_array,
    values,
)

HTML_TEXT = "<b>1</b> 1 <b>"  # tokens "0: <", "1: b", "2: >", "3: 1", "4: </", ...


# --- helpers ---------------------------------------------------------------------------------
def chart_by_key(at, key: str) -> dict:
    found = [c for c in charts(at) if c.proto.id.endswith(f"-fig_{key}")]
    assert len(found) == 1, f"{len(found)} charts with key fig_{key}"
    return json.loads(found[0].proto.spec)


def chart_keys(at) -> list[str]:
    return [c.proto.id.rsplit("-fig_", 1)[1] for c in charts(at) if "-fig_" in c.proto.id]


def z_of(spec: dict, trace: int = 0) -> np.ndarray:
    return spec_array(spec["data"][trace]["z"]).astype(np.float32)


def numbers_box(at, key: str):
    found = [e for e in at.expander if e.proto.id.endswith(f"-numbers_{key}")]
    assert len(found) == 1, f"{len(found)} Numbers and CSV expanders for {key}"
    return found[0]


def open_numbers(at, *keys: str):
    for key in keys:
        at.session_state[f"numbers_{key}"] = True
    return at.run()


def table_in(at, key: str) -> pd.DataFrame:
    (table,) = numbers_box(at, key).dataframe
    return table.value


def same_cells(table: np.ndarray, z: np.ndarray) -> None:
    """The table's exact values are the figure's z; −∞ (a blank cell in the figure) stays −∞
    (a table holding −∞ is text: "−∞" and the numbers to 4 decimals)."""
    if table.dtype.kind in "OU" or not np.issubdtype(table.dtype, np.number):
        text = np.vectorize(str)(table)
        assert set(text[np.isnan(z)].ravel()) <= {"−∞"}
        np.testing.assert_allclose(
            text[~np.isnan(z)].astype(np.float64), z[~np.isnan(z)], atol=5e-5, rtol=0
        )
        return
    table = np.asarray(table, dtype=np.float32)
    assert table.shape == z.shape
    blank = np.isnan(z)
    assert np.isneginf(table[blank]).all() or np.isnan(table[blank]).all()
    np.testing.assert_array_equal(table[~blank], z[~blank])


# --- 1. numbers and CSV beside every matrix: tests/app/test_numbers_csv.py --------------


# --- 2. relative to uniform: hover from z, no per-cell strings --------------------------------
def test_relative_to_uniform_hovers_the_ratio_from_z():
    at = open_app(page="causal")
    spec = chart(at, "Each weight relative to uniform")
    trace = spec["data"][0]
    assert "text" not in trace and "customdata" not in trace
    assert trace["hovertemplate"] == (
        "query %{y}<br>key %{x}<br>weight × visible keys %{z:.4f}<extra></extra>"
    )
    weights = z_of(chart(at, "Route 2"))
    n = weights.shape[0]
    expected = np.where(np.tri(n) > 0, weights * np.arange(1, n + 1)[:, None], np.nan)
    np.testing.assert_allclose(z_of(spec), expected.astype(np.float32), rtol=1e-6)
    assert z_of(spec)[0, 0] == 1.0  # row 0 sees one key: weight 1 is an even share
    ticks = spec["data"][1]["marker"]["colorbar"]["ticktext"]
    assert ticks == ["1/16×", "1/4×", "even share", "4×", "16×"]


# --- 3. dropout lab ------------------------------------------------------------------------
def lab_text(at) -> str:
    (text,) = [v for v in values(at.markdown) if v.startswith("In training mode")]
    return text


@pytest.mark.parametrize(("p", "factor", "label"), [("0.5", 2.0, "2"), ("0.2", 1.25, "1.25")])
def test_the_dropout_lab_states_its_factor_and_seed_and_colours_up_to_it(p, factor, label):
    at = open_app({"dropout": p, "dseed": "3", "lab": "true"}, page="causal")
    text = lab_text(at)
    assert f"Here p = {p} (the sidebar's dropout) and the dropout seed is 3" in text
    assert f"survivors are multiplied by 1/(1−{p}) = **{label}**" in text
    spec = chart(at, "Weights after dropout")
    assert (spec["data"][0]["zmin"], spec["data"][0]["zmax"]) == (0.0, factor)
    assert chart_title(spec) == f"Weights after dropout (scale 0 to {label})"
    dropped, weights = z_of(spec), z_of(chart(at, "Route 2"))
    kept = dropped > 0
    assert kept.any() and (dropped[np.tri(6) > 0] == 0).any()
    # every survivor is its weight times the factor
    np.testing.assert_allclose(dropped[kept], weights[kept] * factor, rtol=1e-6)


def test_rows_that_dropout_zeroes_are_outlined_in_the_figure():
    # Seed 2 at p=0.5 drops every visible weight of rows 0 and 2 of the default text.
    at = open_app({"dropout": "0.5", "dseed": "2", "lab": "true"}, page="causal")
    spec = chart(at, "Weights after dropout")
    z = z_of(spec)
    assert (z[0] == 0).all() and (z[2] == 0).all() and z[1].sum() > 0
    shapes = spec["layout"]["shapes"]
    assert [(s["y0"], s["y1"]) for s in shapes] == [(-0.5, 0.5), (1.5, 2.5)]
    assert all(s["type"] == "rect" and s["xref"] == "x domain" for s in shapes)
    assert chart_title(spec).endswith("outlined: rows dropped to zero")
    (warning,) = values(at.warning)
    assert warning.endswith(": 0: Your, 2: ␣starts")


def test_no_outline_when_no_row_drops_entirely():
    at = open_app({"dropout": "0.5", "dseed": "3", "lab": "true"}, page="causal")
    spec = chart(at, "Weights after dropout")
    assert all(row.sum() > 0 for row in z_of(spec))
    assert not spec["layout"].get("shapes")
    assert "outlined" not in chart_title(spec)
    assert not [w for w in values(at.warning) if "dropped to zero" in w]


# --- 4. the batch of the two sidebar texts -------------------------------------------------
def test_the_batch_uses_text2_for_example_1_and_says_where_it_was_cut():
    text2 = "Every effort moves you forward"
    at = open_app(page="causal")
    # The batch is a closed box: nothing of it is drawn until it is opened.
    assert not [c for c in chart_specs(at) if chart_title(c).startswith("Example ")]
    assert sections.label(url.BATCH) in [e.label for e in at.expander]
    at = open_app({"batch": "true"}, page="causal")
    assert_sidebar(at, text=BOOK_TEXT, text2=text2)
    first, second = list(tokenize(BOOK_TEXT).labels), list(tokenize(text2).labels)
    assert (len(first), len(second)) == (6, 5)
    ex0, ex1 = chart(at, "Example 0"), chart(at, "Example 1")
    assert ex1["data"][0]["y"] == second and ex1["data"][0]["x"] == second
    assert ex0["data"][0]["y"] == first[:5]
    assert (
        "The two texts have 6 and 5 tokens. The chapter's modules have no padding mask, so the "
        "batch uses the first 5 tokens of each." in values(at.info)
    )
    assert any("x.shape = (2, 5, 8)" in v for v in values(at.markdown))
    assert ("green", "Batch = each example alone: pass") in badges(at)


def test_texts_of_equal_length_are_batched_whole():
    at = open_app({"text2": "Every effort moves you forward now", "batch": "true"}, page="causal")
    assert chart(at, "Example 1")["data"][0]["y"] == [
        "0: Every",
        "1: ␣effort",
        "2: ␣moves",
        "3: ␣you",
        "4: ␣forward",
        "5: ␣now",
    ]
    assert not [v for v in values(at.info) if v.startswith("The two texts have")]
    assert ("green", "Batch = each example alone: pass") in badges(at)


# --- 5. page 4 -----------------------------------------------------------------------------
def text_of(tokens: int) -> str:
    sentence = "The quick brown fox jumps over the lazy dog while the cat sleeps. "
    text = b"".join(tokenize(sentence * 10, cap=tokens).pieces).decode("utf-8")
    assert len(tokenize(text)) == tokens
    return text


def test_the_heads_grid_past_its_budget_draws_the_heads_that_fit_and_says_how_many():
    query = {"text": text_of(100), "d_out": "32", "heads": "32", "ctx": "128"}
    at = open_app(query, page="multihead")
    assert not exceptions(at)
    assert (
        "32 heads × 100×100 = 320,000 cells is past this page's figure budget (262,144), which "
        "keeps the browser responsive: 26 of the 32 heads fit at 100 tokens. Pick the heads to "
        "draw in “Heads to show” above the grid, or narrow the token window to fit more."
        in values(at.info)
    )
    spec = chart_by_key(at, "p4_grid")
    assert chart_title(spec) == "Attention weights of the first 26 heads (one shared scale)"
    heats = [t for t in spec["data"] if t["type"] == "heatmap"]
    assert len(heats) == 26  # 262,144 // (100 * 100) = 26 heads, head 0 first
    assert all(z_of(spec, h).shape == (100, 100) for h in range(26))
    # its table holds the same heads
    open_numbers(at, "p4_grid")
    table = table_in(at, "p4_grid").to_numpy(dtype=np.float32)
    assert table.shape == (26 * 100, 100)
    np.testing.assert_array_equal(table[:100], z_of(spec, 0))
    np.testing.assert_array_equal(table[-100:], z_of(spec, 25))
    notes = [c.value for c in numbers_box(at, "p4_grid").caption if "table" in c.value]
    assert notes == ["The table shows only heads 0–25 of 32; the CSV has every value."]


def test_the_heads_grid_at_the_defaults_draws_every_head_without_a_budget_note():
    at = open_app(page="multihead")
    spec = chart_by_key(at, "p4_grid")
    assert chart_title(spec) == "Attention weights of all 2 heads (one shared scale)"
    assert not [v for v in values(at.info) if "figure budget" in v]


def test_flops_are_equal_and_the_matmul_calls_differ_3h_against_3():
    at = open_app(OPEN_PARTS, page="multihead")
    flops = attention_flops(6, 8, 8)
    # 3 projections of 6x8 by 8x8, then Q Kᵀ and A V over 6x6x8, two FLOPs per multiply-add
    assert (flops["projections"], flops["attention"], flops["total"]) == (2304, 1152, 3456)
    (text,) = [v for v in values(at.markdown) if v.startswith("Arithmetic, one example")]
    assert text == (
        "Arithmetic, one example of 6 tokens, before out_proj: **3,456 FLOPs for both** "
        "(2,304 in the projections, 1,152 in the scores and context). The wrapper calls 6 "
        "projection matmuls (3 per head), the weight-split module 3."
    )
    go(at, "multihead")
    at.sidebar.number_input(key="heads").set_value(4).run()
    assert any("The wrapper calls 12 projection matmuls" in v for v in values(at.markdown))


def test_the_reshape_walk_shows_real_shapes_strides_and_contiguity():
    at = open_app(OPEN_PARTS, page="multihead")
    (table,) = [t.value for t in at.dataframe if "stride" in t.value.columns]
    rows = list(zip(table["shape"], table["stride"], table["contiguous"], strict=True))
    assert rows == [
        ("(1, 6, 8)", "(48, 8, 1)", True),
        ("(1, 6, 2, 4)", "(48, 8, 4, 1)", True),
        ("(1, 2, 6, 4)", "(48, 4, 8, 1)", False),  # transpose: strides swapped, no copy
        ("(1, 2, 6, 6)", "(72, 36, 6, 1)", True),
        ("(1, 2, 6, 6)", "(72, 36, 6, 1)", True),
        ("(1, 2, 6, 4)", "(48, 24, 4, 1)", True),
        ("(1, 6, 2, 4)", "(48, 4, 24, 1)", False),  # hence .contiguous() before .view
        ("(1, 6, 8)", "(48, 8, 1)", True),
        ("(1, 6, 8)", "(48, 8, 1)", True),
    ]


def test_the_two_constructor_calls_print_literal_arguments_outside_book_mode():
    at = open_app(
        {"d_out": "12", "heads": "3", "wseed": "7", "bias": "true", **OPEN_PARTS}, page="multihead"
    )
    code = [c.value for c in at.code]
    assert (
        "torch.manual_seed(7)\nmha = MultiHeadAttentionWrapper(d_in=8, d_out=4, "
        "context_length=32, dropout=0.1, num_heads=3, qkv_bias=True)" in code
    )
    assert (
        "torch.manual_seed(7)\nmha = MultiHeadAttention(d_in=8, d_out=12, context_length=32, "
        "dropout=0.1, num_heads=3, qkv_bias=True)" in code
    )
    assert any(
        v.startswith("The wrapper is built with d_out // num_heads = 4 per head so both give 12 ")
        for v in values(at.markdown)
    )


@pytest.fixture
def timed(monkeypatch):
    """The timing function replaced by a spy with a fixed answer, from an empty cache."""
    calls = []

    def fake(*shape):
        calls.append(shape)
        return {"median": {"wrapper": 0.003, "weight split": 0.0015}, "runs": 9}

    monkeypatch.setattr(speed, "wrapper_against_split", fake)
    st.cache_resource.clear()
    yield calls
    st.cache_resource.clear()


RATIO_TEXT = (
    "Median of 9 interleaved runs on this server: wrapper 3.000 ms, weight split 1.500 ms: "
    "the weight split was 2.00× as fast."
)


def ratio_texts(at) -> list[str]:
    return [v for v in values(at.markdown) if v.startswith("Median of")]


def test_the_time_ratio_is_measured_on_click_once_per_process_and_shape(timed):
    at = open_app(OPEN_PARTS, page="multihead")
    assert timed == [] and ratio_texts(at) == []  # nothing timed on load
    at.button(key="p4_time").click().run()
    assert timed == [(1, 6, 8, 8, 2, 32, False)]
    (text,) = ratio_texts(at)
    assert text.startswith(RATIO_TEXT)
    # another session at the same shape reads the cached result
    other = open_app(OPEN_PARTS, page="multihead")
    other.button(key="p4_time").click().run()
    assert ratio_texts(other)[0].startswith(RATIO_TEXT)
    assert len(timed) == 1
    # qkv_bias changes the work, so it is part of the key: the old result is not shown
    other.sidebar.toggle(key="bias").set_value(True).run()
    assert ratio_texts(other) == []
    other.button(key="p4_time").click().run()
    assert timed[-1] == (1, 6, 8, 8, 2, 32, True) and len(timed) == 2


def test_the_timing_function_times_both_modules():
    result = speed.wrapper_against_split(1, 4, 8, 4, 2, 8, True)
    assert speed.MIN_RUNS <= result["runs"] <= speed.MAX_RUNS
    assert set(result["median"]) == {"wrapper", "weight split"}
    assert all(0 < t < 1 for t in result["median"].values())
    # and the parts where the two differ, timed in the same loop
    assert tuple(result["parts"]) == speed.PARTS
    assert all(0 < t < 1 for t in result["parts"].values())


# --- 6. presets ------------------------------------------------------------------------------
PRESETS = {
    "Exercise 3.2 (two heads, 2-dim output)": (dict(d_in=3, d_out=2, heads=2, ctx=6), 24),
    "Exercise 3.3 (GPT-2 small)": (
        dict(
            d_in=GPT2_SMALL["d_in"],
            d_out=GPT2_SMALL["d_out"],
            heads=GPT2_SMALL["num_heads"],
            ctx=GPT2_SMALL["context_length"],
        ),
        book.EXERCISE_3_3_PARAMETERS,
    ),
    "GPT-2 XL": (
        dict(
            d_in=GPT2_XL["d_in"],
            d_out=GPT2_XL["d_out"],
            heads=GPT2_XL["num_heads"],
            ctx=GPT2_XL["context_length"],
        ),
        # 3 projections of 1600x1600, out_proj 1600x1600 and its bias
        3 * 1600 * 1600 + 1600 * 1600 + 1600,
    ),
    # 3 projections of 8x8, out_proj 8x8 and its bias
    "Defaults": (dict(d_in=8, d_out=8, heads=2, ctx=32), 3 * 8 * 8 + 8 * 8 + 8),
}


def open_presets(at):
    """Open the closed "Presets" box (it builds nothing until opened)."""
    assert not [t for t in at.dataframe if "preset" in t.value.columns]
    at.session_state["presets"] = True
    return at.run()


def test_the_presets_table_lists_each_preset_with_its_parameter_count():
    at = open_presets(open_app(page="multihead"))
    (table,) = [t.value for t in at.dataframe if "preset" in t.value.columns]
    counts = dict(zip(table["preset"], table["parameters"], strict=True))
    assert counts == {name: f"{count:,}" for name, (_, count) in PRESETS.items()}
    for _name, (sizes, count) in PRESETS.items():
        assert mha_parameter_count(sizes["d_in"], sizes["d_out"]) == count


@pytest.mark.parametrize("name", list(PRESETS))
def test_applying_a_preset_sets_the_sidebar_and_shows_its_parameter_count(name):
    sizes, count = PRESETS[name]
    at = open_presets(open_app({"book": "true"}, page="multihead"))
    at.button(key=f"preset_{name}").click().run()
    assert not exceptions(at)
    assert_sidebar(at, book=False, **sizes)
    (caption,) = [c.value for c in at.caption if c.value.startswith("Preset in use:")]
    assert caption == (
        f"Preset in use: {name}. MultiHeadAttention({sizes['d_in']}, {sizes['d_out']}, "
        f"{sizes['ctx']}, num_heads={sizes['heads']}, qkv_bias=False) has {count:,} parameters."
    )


def test_the_exercise_3_2_preset_builds_the_two_wide_wrapper_and_its_shape_badge_passes():
    at = open_presets(open_app(page="multihead"))
    at.button(key="preset_Exercise 3.2 (two heads, 2-dim output)").click().run()
    assert ("green", "Shape (2, 6, 2): as the book says") in badges(at)
    code = [c.value for c in at.code]
    assert (
        "torch.manual_seed(123)\nmha = MultiHeadAttentionWrapper(d_in=3, d_out=1, "
        "context_length=6, dropout=0.0, num_heads=2, qkv_bias=False)\nmha(batch).shape  # "
        "(2, 6, 2)" in code
    )
    # the sidebar's wrapper at the preset is the exercise's answer: one column per head
    assert any("MultiHeadAttentionWrapper(d_in=3, d_out=1, context_length=6" in c for c in code)
    assert "This wrapper has 18 parameters: 2 heads × 3 projections of 3×1, and no out_proj." in [
        c.value for c in at.caption
    ]
    assert chart_title(chart_by_key(at, "p4_context")).startswith("Context of head 0")
    assert z_of(chart_by_key(at, "p4_context")).shape == (6, 1)
