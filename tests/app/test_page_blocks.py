"""The page building blocks in ui/render.py: page_top(), beside() and pick_head().

Each runs in a small AppTest script of its own, so what it draws is checked without a page.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from bench.support.pages import ROOT, app_pages
from ui import render as panels


def _top(page: str, present: bool) -> None:
    from ui import render as panels

    panels.page_top(f"/somewhere/pages/{page}.py", present=present)


@pytest.mark.parametrize("page", sorted(panels.INTROS))
def test_page_top_draws_the_title_paragraph_and_formula(page):
    intro = panels.INTROS[page]
    at = AppTest.from_function(_top, args=(page, False)).run()
    assert not at.exception
    assert [t.value for t in at.title] == [intro["title"]]
    assert [m.value for m in at.markdown] == [intro["text"]]
    latex = [f.value for f in at.latex]  # st.latex sends the formula in $$ … $$
    assert len(latex) == (1 if "formula" in intro else 0)
    if latex:  # every equation of the intro's formula, one a line (panels.formula)
        lines = panels.formula_lines(intro["formula"])
        assert len(lines) >= 2 and latex[0].count(r"\\[4pt]") == len(lines) - 1
        assert all(line in latex[0] for line in lines) and r"\qquad" not in latex[0]


def test_page_top_in_presenter_mode_draws_only_the_title():
    at = AppTest.from_function(_top, args=("causal-attention", True)).run()
    assert [t.value for t in at.title] == ["3. Causal attention and dropout"]
    assert list(at.markdown) == [] and list(at.latex) == []


def test_every_intro_belongs_to_a_registered_page_and_carries_its_title():
    registered = {p.url_path: p.title for p in app_pages()}
    for page, intro in panels.INTROS.items():
        assert (ROOT / "pages" / f"{page}.py").exists(), page
        assert page in registered, page
        # The pass pages show their sidebar title; home has a heading of its own.
        if page != "why-attention":
            assert intro["title"] == registered[page], page
    # The chapter's formulas, joined from their pieces: one formula per pass page.
    assert "\\qquad A = \\mathrm{dropout}" in panels.INTROS["causal-attention"]["formula"]
    assert "formula" not in panels.INTROS["why-attention"]


def _side_by_side(count: int, with_figure: bool) -> None:
    import streamlit as st
    import torch

    from attnviz import figures
    from attnviz.teach.panel import Panel
    from ui import render as panels

    def panel(key: str) -> Panel:
        values = torch.arange(4.0).reshape(2, 2)
        return Panel(key, values, ("a", "b"), ("x", "y"), title=key)

    items: list = [panel(f"p{i}") for i in range(count)]
    if with_figure:
        items.append(figures.bars([1, 2], ["0: a", "1: b"], title="bars"))
    panels.beside(*items, numbers=False, below=lambda p: st.caption(f"under {p.key}"))


def _columns(at: AppTest) -> list:
    return list(at.get("column"))


def _titles(node) -> list[str]:
    import json

    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in node.get("plotly_chart")]


def test_beside_puts_each_panel_in_its_own_column_with_what_goes_below_it():
    at = AppTest.from_function(_side_by_side, args=(2, True)).run()
    assert not at.exception
    columns = _columns(at)
    assert len(columns) == 3
    assert [_titles(c) for c in columns] == [["p0"], ["p1"], ["bars"]]
    assert [[x.value for x in c.caption] for c in columns] == [["under p0"], ["under p1"], []]
    # Each panel keeps its own numbers expander and CSV button, named by its key.
    assert [e.key for e in at.get("expander")] == ["numbers_p0", "numbers_p1"]


def test_beside_draws_a_single_panel_in_place():
    at = AppTest.from_function(_side_by_side, args=(1, False)).run()
    assert not at.exception
    assert _columns(at) == []
    assert _titles(at) == ["p0"]
    assert [c.value for c in at.caption] == ["under p0"]


def _pick(num_heads: int) -> None:
    import streamlit as st

    from ui import render as panels

    st.write(f"head {panels.pick_head(num_heads, key='h')}")


def test_pick_head_offers_every_head_and_returns_the_choice():
    at = AppTest.from_function(_pick, args=(3,)).run()
    assert at.selectbox(key="h").options == ["0", "1", "2"]
    assert [m.value for m in at.markdown] == ["head 0"]
    at.selectbox(key="h").set_value(2).run()
    assert [m.value for m in at.markdown] == ["head 2"]


def test_pick_head_shows_no_box_for_one_head():
    at = AppTest.from_function(_pick, args=(1,)).run()
    assert list(at.selectbox) == []
    assert [m.value for m in at.markdown] == ["head 0"]


def test_a_formula_written_side_by_side_stands_one_part_a_line():
    from ui import render as panels

    causal = panels.INTROS["causal-attention"]["formula"]
    lines = panels.formula_lines(causal)
    assert len(lines) == 3
    assert lines[0].startswith(r"\omega^{\text{masked}}_{ij}") and lines[0].endswith(r"\end{cases}")
    assert lines[1].startswith(r"A = \mathrm{dropout}") and lines[2] == "Z = AV"
    assert panels.formula_lines(r"A = s,\quad B = t") == ["A = s", "B = t"]
    assert panels.formula_lines("Z = AV") == ["Z = AV"]
