"""The guard's deliberate regression (``bench/guard.py --regress``): never on a real server.

Python imports this module at start-up when its folder is on ``PYTHONPATH``; the guard puts it
there for the attnviz server it starts with ``--regress``. It brings back what issue 22 took off
the request path: on every page run, each chart goes through ``plotly.graph_objects.Figure``
(Plotly's property validation) and its ``to_json`` again, as ``st.plotly_chart(figure)`` does,
instead of reusing the JSON made once (ui/charts.py ``encoded``). Both a page's first run with a
new text and its warm reruns pay for it; the guard must fail on it.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import plotly.graph_objects as go  # noqa: E402

from ui import charts  # noqa: E402

_encoded = charts.encoded


def _validated_every_run(item, look=charts.figures.NORMAL):
    spec, height, label = _encoded(item, look)
    go.Figure(json.loads(spec)).to_json()  # built, validated and serialised on every run
    return spec, height, label


charts.encoded = _validated_every_run
