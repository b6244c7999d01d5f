"""For slides and papers: every figure as SVG and PNG, every matrix as LaTeX, and a snippet
that prints it (issue 27).

Under each figure the closed "Numbers and CSV" box (``ui/numbers.py``) holds, once opened:

- two buttons that save the chart as drawn, as an SVG and as a PNG 1920 px wide, made in the
  browser by Plotly from the chart on the page (a small components.v2 component,
  ``ui/teach/figure_export.js``): no server work;
- for a matrix, its LaTeX ``bmatrix`` with the row and column labels (``attnviz.teach.export``), in a
  code block with a copy button;
- for a matrix of pages 1–4, "Reproduce": a self-contained Python script that prints exactly
  that matrix (``attnviz.teach.reproduce``) for the student's text and settings.

A closed box builds none of it. A page says once, before its panels, which computation it
draws (:func:`use`): the reproduce snippet needs the text, the settings and the module.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from attnviz.teach import export, reproduce
from attnviz.teach.panel import Panel

_HTML = (
    '<div class="row"><button type="button" data-format="svg">SVG</button>'
    '<button type="button" data-format="png">PNG, 1920 pixels wide</button>'
    '<span class="status" role="status" aria-live="polite"></span></div>'
)
_CSS = """
.row { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; font-size: 14px; }
button { font: inherit; padding: 4px 12px; border: 1px solid #c6c8d0; border-radius: 8px;
         background: #ffffff; color: #31333f; cursor: pointer; min-height: 36px; }
button:hover { border-color: #ff4b4b; color: #ff4b4b; }
button:focus-visible { outline: 3px solid #ff2b2b; outline-offset: 1px; }
.status { color: #4a4d59; }
"""
_JS = (Path(__file__).parent / "figure_export.js").read_text(encoding="utf-8")
_export = st.components.v2.component("attnviz_figure_export", html=_HTML, css=_CSS, js=_JS)


@dataclass(frozen=True)
class PageContext:
    """What the page draws: its cache arguments (text, settings, book), page 2's module, the
    head of page 4's one-head panels."""

    args: tuple
    variant: str = "v2"
    head: int = 0


def downloads(chart_key: str, name: str) -> None:
    """The SVG and PNG buttons for the chart drawn with ``chart_key``."""
    _export(key=f"export_{chart_key}", data={"chart": chart_key, "name": name}, height="content")


def latex(panel: Panel) -> None:
    """The panel's numbers as a labelled LaTeX bmatrix (one per head drawn), or why not."""
    values = panel.values
    heads = None
    if values.dim() == 3:
        heads = panel.heads if panel.heads is not None else tuple(range(values.shape[0]))
    try:
        text = "\n\n".join(export.bmatrices(values, panel.rows, panel.cols, heads=heads))
    except ValueError as err:
        st.caption(f"No LaTeX here: {err}")
        return
    st.caption("LaTeX (needs amsmath), 4 decimals, the labels outside the brackets:")
    st.code(text, language="latex")


def reproduce_box(panel: Panel, viewed: bool, context: PageContext | None) -> None:
    """The Python script that prints the panel's matrix, for the page's text and settings
    (``context``: the computation the page drew it from; None: no script)."""
    from ui import cache

    source = reproduce.PANELS.get(panel.key)
    if source is None or context is None:
        return
    text, settings, book = context.args[:3]
    if getattr(settings, "trained", False) and source.page != "simplified":
        st.caption(
            "No Reproduce script with the grown model's weights: the script rebuilds the "
            "chapter's module from its seed, and these weights come from page 8's training run."
        )
        return
    head = context.head
    if source.per_head:
        count = panel.values.shape[0] if panel.values.dim() == 3 else 1
        head = st.selectbox("Head", list(range(count)), key=f"reproduce_head_{panel.key}")
    key = ("reproduce", panel.key, context.args, context.variant, int(head))

    def write() -> str:
        prep = cache.prepared(text, settings, book)
        typed = None if book else text
        try:
            return reproduce.panel_snippet(
                panel.key, prep, settings, head=int(head), variant=context.variant, text=typed
            )
        except reproduce.ReproduceError as err:
            return f"# {err}\n"

    snippet = cache.derived.get(key, write)
    st.caption(
        "Reproduce: this script needs only torch and prints exactly this matrix"
        + (" (every token, before the page's view)" if viewed else "")
        + (f", head {int(head)}" if source.page == "multihead" else "")
        + "."
    )
    st.code(snippet, language="python")


def box(
    panel: Panel, *, chart_key: str, viewed: bool = False, context: PageContext | None = None
) -> None:
    """What a matrix's opened box holds for slides (after its table and CSV); ``context``: the
    computation the page drew the panel from, for its "Reproduce" script."""
    downloads(chart_key, panel.key)
    latex(panel)
    reproduce_box(panel, viewed, context)
