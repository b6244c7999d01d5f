"""What an AppTest run sent to the student, as the leak tests search it: every chart's numbers,
every table's numbers, every text (headings, Markdown, captions, code, alerts, widget labels
and options), and the keys of the CSV buttons."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
from streamlit.testing.v1 import AppTest

from attnviz import figures
from tests.app.conftest import unescape

from .pages import Secret, found_strings, found_values


def chart_arrays(spec: dict) -> list[np.ndarray]:
    """Every number array of a plotly.js spec (z, x, y, customdata ...), decoded."""
    out: list[np.ndarray] = []

    def walk(v) -> None:
        if isinstance(v, dict):
            if "bdata" in v:
                out.append(figures.unpacked(v).astype(np.float32).reshape(-1))
                return
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            numbers = [x for x in v if isinstance(x, int | float) and not isinstance(x, bool)]
            if numbers:
                out.append(np.asarray(numbers, dtype=np.float32))
            for x in v:
                if isinstance(x, dict | list):
                    walk(x)

    for trace in spec.get("data", []):
        walk(trace)
    walk(spec.get("layout", {}).get("annotations", []))
    return out


def _texts(at: AppTest) -> list[str]:
    found: list[str] = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "code", "text", "latex"):
        found += [str(e.value) for e in getattr(at, kind)]
    for kind in ("info", "warning", "error", "success", "exception"):
        found += [
            str(getattr(e, "value", "") or getattr(e, "message", "")) for e in getattr(at, kind)
        ]
    for kind in ("radio", "selectbox", "pills", "multiselect"):
        for w in getattr(at, kind):
            found.append(str(w.label))
            found += [str(o) for o in getattr(w, "options", [])]
    for kind in ("slider", "number_input", "text_input", "toggle", "button"):
        found += [str(w.label) for w in getattr(at, kind)]
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        found.append(json.dumps(spec.get("layout", {}).get("title", {})))
        found.append(chart.proto.alt)
    return found


@dataclass
class Seen:
    charts: list[dict]
    tables: list[np.ndarray]
    text: str
    csv_keys: list[str]

    def leaks(self, secret: Secret) -> dict[str, object]:
        """Where any of the secret's values or strings occur (empty: nowhere)."""
        out: dict[str, object] = {}
        for i, spec in enumerate(self.charts):
            hits = found_values(chart_arrays(spec), secret.values)
            if hits:
                out[f"chart {i}: {figures.title_of(spec)}"] = sorted(hits)[:5]
        hits = found_values(self.tables, secret.values)
        if hits:
            out["tables"] = sorted(hits)[:5]
        hits_s = found_strings(self.text, secret.strings)
        if hits_s:
            out["text"] = sorted(hits_s)[:5]
        return out


def seen(at: AppTest) -> Seen:
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    tables = []
    for df in at.dataframe:
        frame = df.value
        numeric = frame.select_dtypes(include="number")
        if numeric.size:
            tables.append(numeric.to_numpy(dtype=np.float32).reshape(-1))
        try:
            tables.append(np.asarray(frame.index, dtype=np.float32))
        except (TypeError, ValueError):
            pass
    csv = [str(b.proto.id) for b in at.get("download_button")]
    # Markdown escapes every punctuation mark ("0\\.497"): search the text as it reads.
    return Seen(specs, tables, unescape("\n".join(_texts(at))), csv)
