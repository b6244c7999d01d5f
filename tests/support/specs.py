"""Reading the app's figure specs in tests: Plotly's own validation, off the request path.

The app builds every figure as a plain plotly.js spec (``attnviz.figures``); ``as_figure``
hands one to ``plotly.graph_objects.Figure``, which validates every property (a misspelt one
raises) and gives the tests Plotly's attribute access (``fig.data[0].z``, ``fig.layout``).
"""

from __future__ import annotations

import copy

import numpy as np
import plotly.graph_objects as go

from attnviz import figures
from attnviz.teach.panel import Panel, draw


def spec_of(item, look: figures.Look = figures.NORMAL) -> dict:
    """The spec of a Panel (drawn at ``look``), a Chart, or a spec given as is."""
    if isinstance(item, Panel):
        return draw(item, look)
    if isinstance(item, figures.Chart):
        return item.spec
    return item


def as_figure(item, look: figures.Look = figures.NORMAL) -> go.Figure:
    """A validated Plotly figure of ``item`` (its typed arrays unpacked to numpy, as Plotly
    accepts them), so a misspelt property or a bad value fails the test."""
    spec = copy.deepcopy(spec_of(item, look))
    for trace in spec["data"]:
        for name in ("z", "x", "y", "customdata"):
            if isinstance(trace.get(name), dict) and "bdata" in trace[name]:
                trace[name] = figures.unpacked(trace[name])
        error = trace.get("error_x")
        if isinstance(error, dict):
            for name in ("array", "arrayminus"):
                if isinstance(error.get(name), dict):
                    error[name] = figures.unpacked(error[name])
    return go.Figure(spec)


def z_of(item, trace: int = 0) -> np.ndarray:
    """The numbers a heatmap trace draws, as float32."""
    return np.asarray(figures.unpacked(spec_of(item)["data"][trace]["z"]))


def subtitle_of(item) -> str:
    """A figure's subtitle (a note such as "tokens 3–9 of 40"), or ""."""
    spec = spec_of(item)
    return spec.get("layout", {}).get("title", {}).get("subtitle", {}).get("text", "")


def words_of(item) -> str:
    """A figure's title as a reader takes it in: the title on one line, then its subtitle (a
    note such as "after dropout, scale 0 to 2") in brackets when it has one."""
    spec = spec_of(item)
    title, note = figures.title_of(spec), subtitle_of(spec)
    return f"{title} ({note})" if note else title
