"""Presenter mode: one pass, one step at a time, large, for a projector.

``present=true`` in the URL (or the toggle at the top of every pass page) swaps a page's long
layout for a stepper over the same engine-built panels the page shows: the lesson object's
``steps``, in the book's order. Each step is one big figure, its formula and one sentence;
Previous / Next (also the Left / Right and PageUp / PageDown keys, which presentation clickers
send) walk the steps, and ``step=N`` in the URL opens a given step (1-based, as a teacher counts).
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
import streamlit as st

from attnviz.panel import Panel

from . import panels
from .text import md_escape

STEP_KEY = "step"

# Presenter mode: no sidebar (its values still apply), larger type, no per-matrix chrome.
_CSS = """
<style>
section[data-testid="stSidebar"], div[data-testid="stSidebarCollapsedControl"],
button[data-testid="stExpandSidebarButton"] { display: none !important; }
div[data-testid="stMainBlockContainer"] { max-width: 100%; padding-top: 1.5rem; }
div[data-testid="stMainBlockContainer"] p, div[data-testid="stMainBlockContainer"] li {
  font-size: 1.45rem; line-height: 1.5; }
div[data-testid="stMainBlockContainer"] .katex { font-size: 1.6em; }
div[data-testid="stMainBlockContainer"] h1 { font-size: 2.4rem; }
</style>
"""


def style() -> None:
    st.html(_CSS)


def _big(fig: go.Figure) -> go.Figure:
    """A larger copy of a shared figure (built once per figure: the cached one is never changed)."""
    big = getattr(fig, "_attnviz_present", None)
    if big is None:
        big = go.Figure(fig)
        height = fig.layout.height if isinstance(fig.layout.height, (int, float)) else 450
        big.update_layout(height=max(560, int(height * 1.5)), font={"size": 18})
        fig._attnviz_present = big
    return big


def step_from_url(count: int) -> int:
    """The 0-based step the URL asks for (``step`` is 1-based), clamped to the steps there are."""
    raw = st.query_params.get(STEP_KEY, "1")
    try:
        wanted = int(raw)
    except ValueError:
        wanted = 1
    return min(max(wanted, 1), max(count, 1)) - 1


def stepper(steps: Sequence[Panel], *, checks_line: str = "") -> int:
    """Show one step of ``steps`` with Previous / Next; returns the 0-based step shown."""
    if not steps:
        st.info("This page has no steps to present.")
        return 0
    index = step_from_url(len(steps))
    left, middle, right = st.columns([1, 4, 1], vertical_alignment="center")
    with left:
        back = st.button(
            "◀ Previous", key="present_prev", shortcut="Left", disabled=index == 0, width="stretch"
        )
    with right:
        forward = st.button(
            "Next ▶",
            key="present_next",
            shortcut="Right",
            disabled=index == len(steps) - 1,
            width="stretch",
            type="primary",
        )
    if back or forward:
        index = index - 1 if back else index + 1
        st.query_params[STEP_KEY] = str(index + 1)
    step = steps[index]
    with middle:
        st.markdown(f"**Step {index + 1} of {len(steps)}**")
        st.progress((index + 1) / len(steps))
    if step.formula:
        st.latex(step.formula)
    if step.sentence:
        st.write(md_escape(step.sentence))
    panels.chart(_big(step.figure), key=f"present_{step.key}")
    st.caption(
        md_escape(f"{step.figure.layout.title.text or step.key}: shape {tuple(step.values.shape)}")
    )
    if checks_line:
        st.caption(md_escape(checks_line))
    return index


def checks_summary(results) -> str:
    """Every live check of the page in one line: "Live checks: 5 pass, 1 n/a"."""
    counts: dict[str, int] = {}
    for result in results:
        counts[result.status] = counts.get(result.status, 0) + 1
    if not counts:
        return ""
    failed = [r.title for r in results if r.status == "fail"]
    line = "Live checks: " + ", ".join(f"{n} {status}" for status, n in counts.items())
    return line + (f" (failing: {', '.join(failed)})" if failed else "")
