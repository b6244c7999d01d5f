"""ui.charts.chart sends the element st.plotly_chart sends, from JSON made once per figure.

ui.charts.send_plotly_spec builds the chart message with Streamlit internals (1.67). If a
Streamlit upgrade changes what st.plotly_chart sends (fields, identity, layout), the first test
here fails: bring send_plotly_spec up to date with st.plotly_chart before shipping the upgrade.
"""

from __future__ import annotations

import json

import pytest
from streamlit.delta_generator import DeltaGenerator
from streamlit.testing.v1 import AppTest


def _script(kind: str, height: int | None, in_column: bool) -> None:
    import json

    import plotly.graph_objects as go
    import plotly.io
    import streamlit as st
    import torch

    from attnviz.teach.panel import chart_label, draw, token_panel
    from ui import charts

    labels = ["0: Your", "1: ␣journey", "2: ␣starts"]
    panel = token_panel("x", torch.rand(3, 3), labels, "weights")
    spec = draw(panel)
    if height is not None:
        spec["layout"]["height"] = height
    fig = go.Figure(spec)
    label = chart_label(panel)
    where = st.columns(2)[1] if in_column else None
    if kind == "streamlit":
        target = where if where is not None else st
        target.plotly_chart(fig, width="stretch", config=charts.PLOT_CONFIG, key="fig_x", alt=label)
    else:  # the JSON st.plotly_chart would make of the figure, sent by our one function
        dg = where if where is not None else charts._current_dg()
        for key in ("fig_x", "fig_y"):
            charts.send_plotly_spec(
                dg,
                plotly.io.to_json(fig, validate=False),
                json.dumps(charts.PLOT_CONFIG),
                int(fig.layout.height or charts.DEFAULT_HEIGHT),
                key,
                label,
            )


def _sent(monkeypatch, kind: str, height: int | None, in_column: bool) -> list:
    sent = []
    original = DeltaGenerator._enqueue

    def recording(self, delta_type, element_proto, layout_config=None, *args, **kwargs):
        if delta_type == "plotly_chart":
            sent.append((element_proto.SerializeToString(deterministic=True), layout_config))
        return original(self, delta_type, element_proto, layout_config, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "_enqueue", recording)
    import torch

    torch.manual_seed(0)  # the same random figure in both runs
    at = AppTest.from_function(_script, args=(kind, height, in_column), default_timeout=60)
    at.run()
    assert not at.exception
    return sent


@pytest.mark.parametrize("height,in_column", [(None, False), (320, True)])
def test_the_chart_message_is_st_plotly_charts_to_the_byte(monkeypatch, height, in_column):
    ours = _sent(monkeypatch, "ours", height, in_column)
    monkeypatch.undo()
    theirs = _sent(monkeypatch, "streamlit", height, in_column)
    assert len(theirs) == 1 and len(ours) == 2
    assert ours[0][0] == theirs[0][0], (
        "ui.charts.send_plotly_spec no longer sends what st.plotly_chart sends: "
        "update it to this Streamlit version"
    )
    assert ours[0][1] == theirs[0][1]  # width "stretch", the same height
    if height is not None:
        assert ours[0][1].height == height


def test_a_figure_is_drawn_and_serialised_once(monkeypatch):
    from ui import charts

    calls = []
    real = charts._encoded
    monkeypatch.setattr(charts, "_encoded", lambda *a: calls.append(1) or real(*a))

    def script():
        import streamlit as st
        import torch

        from attnviz.teach.panel import Panel
        from ui import charts

        @st.cache_resource
        def shared():
            return Panel("a", torch.eye(2), ("0: a", "1: b"), ("0: a", "1: b"), title="t")

        charts.chart(shared(), key="a")

    at = AppTest.from_function(script)
    for _ in range(3):
        at.run()
        assert not at.exception
    assert len(calls) == 1  # three runs, one drawing and one serialisation
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert spec["layout"]["title"]["text"] == "t"
    assert at.get("plotly_chart")[0].proto.alt == "Heatmap: t, 2 × 2 (query by key)"
