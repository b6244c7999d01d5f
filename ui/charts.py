"""Charts to the browser: every figure drawn once from its data, serialised once, sent as is.

A :class:`attnviz.teach.panel.Panel` (a matrix, as data) is drawn by :func:`attnviz.teach.panel.draw` at a
:class:`attnviz.figures.Look` (the page's, or the projector's) into a plain plotly.js spec; an
:class:`attnviz.figures.Chart` (a bar or line chart) already holds its spec. Either way the
JSON is made once per panel (or chart) and look, kept in the shared, byte-capped ``derived``
cache, and handed to the browser through :func:`send_plotly_spec`: no ``graph_objects``, no
validation, no copy on the request path.
"""

from __future__ import annotations

import json
from typing import Any, cast

import streamlit as st

from attnviz import figures
from attnviz.teach.panel import Panel, chart_label, draw

# No Plotly toolbar: its eight buttons per chart were Tab stops (the keyboard reached the first
# page control after 35 of them) and sat over the chart titles on a phone. Zoom by dragging and
# reset by double-click still work; a matrix's exact numbers are in its "Numbers and CSV" box.
PLOT_CONFIG = {"displaylogo": False, "scrollZoom": False, "displayModeBar": False}
PLOT_CONFIG_JSON = json.dumps(PLOT_CONFIG)
DEFAULT_HEIGHT = 450


def _encoded(spec: figures.Spec, label: str) -> tuple[str, int, str]:
    """(the spec's JSON, its height in px, its accessible label)."""
    height = spec.get("layout", {}).get("height")
    return (
        json.dumps(spec, separators=(",", ":"), allow_nan=False),
        int(height) if isinstance(height, (int, float)) and height > 0 else DEFAULT_HEIGHT,
        label,
    )


def encoded(
    item: Panel | figures.Chart, look: figures.Look = figures.NORMAL
) -> tuple[str, int, str]:
    """The JSON, height and label of ``item`` drawn at ``look``: built once per item (its
    serial number, never reused) and look, and shared by every session."""
    from ui import cache

    if isinstance(item, Panel):
        key = ("chart json", "panel", item.serial, look.name)
        return cache.derived.get(key, lambda: _encoded(draw(item, look), chart_label(item)))
    key = ("chart json", "chart", item.serial, look.name)
    return cache.derived.get(key, lambda: _encoded(item.spec, item.label))


def chart(
    item: Panel | figures.Chart, *, key: str | None = None, container=None, look=figures.NORMAL
) -> None:
    """Draw a panel's figure or a chart as ``st.plotly_chart(spec, width="stretch",
    config=PLOT_CONFIG, alt=label)`` would (full width, no toolbar, a text label naming what it
    shows and its shape), from JSON made once (:func:`encoded`). ``container``: a column or
    other container to draw in (default: where ``st`` draws now)."""
    spec, height, label = encoded(item, look)
    target = container if container is not None else _current_dg()
    send_plotly_spec(target, spec, PLOT_CONFIG_JSON, height, key, label)


def encode(spec: figures.Spec, label: str) -> tuple[str, int, str]:
    """The JSON, height and label of a spec made for one run (a class's live tally), for
    :func:`send`: not kept in the shared cache, which holds what many sessions draw again."""
    return _encoded(spec, label)


def send(encoded_chart: tuple[str, int, str], *, key: str | None = None, container=None) -> None:
    """Draw a chart already encoded (:func:`encode`) as :func:`chart` draws one."""
    spec, height, label = encoded_chart
    target = container if container is not None else _current_dg()
    send_plotly_spec(target, spec, PLOT_CONFIG_JSON, height, key, label)


def _current_dg() -> Any:
    """Where ``st.*`` draws now (the main area, a column, a sidebar block in a ``with``): the
    delta generator that ``st.plotly_chart`` is bound to."""
    return cast(Any, st.plotly_chart).__self__


def send_plotly_spec(
    dg, spec: str, config: str, height: int, key: str | None, alt: str | None = None
) -> None:
    """The app's one use of Streamlit internals (1.67), fenced here: the element
    st.plotly_chart sends for
    a figure without selections, ``width="stretch"``, ``height="content"``, the Streamlit
    theme, from JSON made beforehand. tests/bench/test_chart_message.py fails loudly when a
    Streamlit upgrade changes what st.plotly_chart sends, so this must be brought up to date."""
    from streamlit.elements.lib.form_utils import current_form_id
    from streamlit.elements.lib.layout_utils import LayoutConfig
    from streamlit.elements.lib.utils import compute_and_register_element_id
    from streamlit.proto.PlotlyChart_pb2 import PlotlyChart

    proto = PlotlyChart()
    proto.theme = "streamlit"
    proto.form_id = current_form_id(dg)
    proto.spec = spec
    proto.config = config
    if alt:
        proto.alt = alt  # the chart's accessible name, on its own field as st.plotly_chart does
    # The same identity st.plotly_chart computes, so the frontend keeps or remounts the chart
    # exactly as it would (and a duplicate key fails the same way).
    proto.id = compute_and_register_element_id(
        "plotly_chart",
        user_key=key,
        key_as_main_identity=False,
        dg=dg,
        plotly_spec=spec,
        plotly_config=config,
        selection_mode=("points", "box", "lasso"),
        is_selection_activated=False,
        theme="streamlit",
        width="stretch",
        height="content",
        alt=alt or None,
    )
    dg._enqueue("plotly_chart", proto, layout_config=LayoutConfig(width="stretch", height=height))
