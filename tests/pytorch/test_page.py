"""Page 6 in AppTest: loads at the defaults, in book mode and with d_in == d_out; never runs the
benchmark on load; the button draws the chart. The benchmark is the real one with a tiny budget."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attnviz.models import implementations as impl
from ui.models import comparison

APP = Path(__file__).resolve().parents[2] / "app.py"
PAGE = "pages/against-pytorch.py"
TITLE = "6. Your module against PyTorch's"
NOT_APPLICABLE = "Not applicable"


@pytest.fixture
def bench_calls(monkeypatch):
    """Count benchmark runs; keep each one short (a real run, a tiny timing budget)."""
    calls, real = [], impl.benchmark

    def counting(shape, *args, **kwargs):
        calls.append(shape)
        return real(shape, *args, **kwargs)

    monkeypatch.setattr(impl, "benchmark", counting)
    monkeypatch.setattr(impl, "seconds_per_impl_for", lambda shape: 0.02)
    comparison.measured.clear()
    yield calls
    comparison.measured.clear()


def open_page(query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.message for e in at.exception]
    assert [t.value for t in at.title] == [TITLE]
    return at


def infos(at: AppTest) -> list[str]:
    return [i.value.replace("\\", "") for i in at.info]


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def array(obj) -> np.ndarray:
    if isinstance(obj, dict) and "bdata" in obj:
        return np.frombuffer(base64.b64decode(obj["bdata"]), dtype=np.dtype(obj["dtype"]))
    return np.asarray(obj)


def badge_texts(at: AppTest) -> list[str]:
    return [m.value.replace("\\", "") for m in at.markdown if ": pass" in m.value]


def test_with_d_in_16_and_d_out_8_the_page_says_why_nn_mha_does_not_apply(bench_calls):
    at = open_page({"d_in": "16"})
    na = [m for m in infos(at) if m.startswith(NOT_APPLICABLE)]
    assert len(na) == 2  # the third output column and the weights section
    assert "needs d_in == d_out (here d_in=16, d_out=8)" in na[0]
    assert len(charts(at)) == 2  # ours and SDPA; no nn.MultiheadAttention figure
    assert bench_calls == []  # nothing is timed until a button is pressed


def test_book_mode_uses_the_chapter_module_and_says_not_applicable(bench_calls):
    at = open_page({"book": "true"})
    assert any("d_in=3, d_out=2" in m for m in infos(at) if m.startswith(NOT_APPLICABLE))
    code = " ".join(c.value for c in at.code)
    assert "MultiHeadAttention(d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=2" in code
    ours = charts(at)[0]["data"][0]
    assert ours["y"][0] == "0: Your" and len(ours["y"]) == 6
    assert bench_calls == []


def test_at_the_defaults_d_in_equals_d_out_all_three_agree_and_weights_are_drawn(bench_calls):
    at = open_page()
    assert not [m for m in infos(at) if m.startswith(NOT_APPLICABLE)]
    specs = charts(at)
    assert len(specs) == 5  # three outputs, two weight maps
    ours, sdpa, theirs = (array(s["data"][0]["z"]) for s in specs[:3])
    np.testing.assert_allclose(sdpa, ours, atol=1e-5)
    np.testing.assert_allclose(theirs, ours, atol=1e-5)
    passed = " ".join(badge_texts(at))
    for title in (
        "Matches PyTorch SDPA (causal)",
        "SDPA implementation = ours (after out_proj)",
        "Matches torch.nn.MultiheadAttention",
        "Per-head weights match nn.MultiheadAttention",
    ):
        assert f"{title}: pass" in passed
    assert bench_calls == []


def test_the_divisibility_problem_stops_the_page_with_its_message(bench_calls):
    at = open_page({"d_out": "8", "heads": "3"})
    assert any("not divisible by num_heads=3" in e.value.replace("\\", "") for e in at.error)
    assert not at.get("plotly_chart")


def test_pressing_measure_draws_the_bar_chart_once_per_shape(bench_calls):
    at = open_page({"d_in": "8"})
    before = len(charts(at))
    at.button(key="p6_measure_here").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert len(bench_calls) == 1 and bench_calls[0][2:] == (8, 8, 2, False)
    bars = charts(at)[before:]
    assert len(bars) == 1
    bar = bars[0]["data"][0]
    assert bar["type"] == "bar" and bar["orientation"] == "h"
    assert sorted(bar["y"]) == sorted(impl.LABELS.values())  # all seven, d_in == d_out
    ms = array(bar["x"])
    assert (ms > 0).all() and (np.diff(ms) >= 0).all()  # fastest first
    ratios = [a["text"] for a in bars[0]["layout"]["annotations"]]
    assert ratios[0] == "×1.00" and len(ratios) == 7 and all(r.startswith("×") for r in ratios)
    table = at.dataframe[-1].value
    assert list(table["status"]) == ["verified"] * 7
    assert any(m.value.replace("\\", "").startswith("Fastest here:") for m in at.markdown)
    # A rerun, and a new session asking for the same shape, read the one result.
    at.run()
    other = open_page({"d_in": "8"})
    other.button(key="p6_measure_here").click().run()
    assert len(bench_calls) == 1
    assert len(charts(other)) == before + 1


def test_training_mode_and_bias_are_compared_in_eval_mode_and_still_agree(bench_calls):
    at = open_page({"d_in": "8", "bias": "true", "train": "true", "dropout": "0.5"})
    assert any("compares in eval mode" in m for m in infos(at))
    passed = " ".join(badge_texts(at))
    assert "Matches torch.nn.MultiheadAttention: pass" in passed
    assert "Per-head weights match nn.MultiheadAttention: pass" in passed
    assert bench_calls == []


@pytest.mark.parametrize(
    "query", [{}, {"train": "true", "dropout": "0.5"}], ids=["eval", "training"]
)
def test_the_weights_claims_are_on_the_page_and_hold_for_the_head_shown(bench_calls, query):
    at = open_page(query)
    shown = " ".join(m.value.replace("\\", "") for m in at.markdown)
    assert "Every row of our weights sums to 1: this page runs in eval mode" in shown
    assert "Every weight above the diagonal is exactly 0" in shown
    at.selectbox(key="head").set_value(1).run()
    ours = next(s for s in charts(at) if s["layout"]["title"]["text"] == "Ours: head 1")
    z = array(ours["data"][0]["z"]).reshape(len(ours["data"][0]["y"]), -1)
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-5)
    assert np.triu(z, 1).max() == 0.0
