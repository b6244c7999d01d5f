"""Page 5 in AppTest: it never trains on load, trains on the button, and shows the result."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attnviz.models import toy_tasks
from ui.models import watch as ui_learn

ROOT = Path(__file__).resolve().parents[2]
PAGE = "pages/watch-attention-learn.py"
PROMPT = "Press **Train**"
SIDEBAR_NOTE = "book mode and the text and settings in the sidebar do not apply here"


@pytest.fixture
def train_calls(monkeypatch):
    """Count calls of the engine's training function (the page reaches it through ui.models.watch)."""
    calls = []
    real = toy_tasks.train

    def counting(config, on_progress=None):
        calls.append(config)
        return real(config, on_progress)

    monkeypatch.setattr(toy_tasks, "train", counting)
    ui_learn.runs.clear()  # no run left over from another test
    yield calls
    ui_learn.runs.clear()


def open_page(query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def spec_array(obj) -> np.ndarray:
    if isinstance(obj, dict) and "bdata" in obj:
        a = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=np.dtype(obj["dtype"]))
        return a.reshape([int(s) for s in str(obj.get("shape", a.size)).split(",")])
    return np.asarray(obj)


def specs(at: AppTest) -> dict[str, dict]:
    """Every chart on the page by its title."""
    out = {}
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        out[spec["layout"]["title"]["text"].replace("<br>", " ")] = spec  # wrapped at spaces
    return out


def assert_sidebar_present(at: AppTest) -> None:
    for key in ("d_in", "d_out", "heads", "ctx"):
        assert at.sidebar.number_input(key=key) is not None
    for key in ui_learn.PAGE_KEYS:  # the page's controls are on the page, not the sidebar
        assert not [w for w in at.sidebar if getattr(w, "key", None) == key]


def test_page_loads_with_a_prompt_and_never_trains_on_load(train_calls):
    at = open_page()
    assert at.title[0].value == "5. Watch attention learn"
    infos = [i.value for i in at.info]
    assert any(SIDEBAR_NOTE in i for i in infos)
    assert any(i.startswith(PROMPT) for i in infos)
    assert not at.get("plotly_chart")
    at.run()  # a rerun (any widget change) does not train either
    assert train_calls == []
    assert_sidebar_present(at)
    assert f"learning rate **{toy_tasks.DEFAULT_LR}**" in " ".join(c.value for c in at.caption)
    assert at.button(key="ltrain").label == "Train"


def test_pressing_train_trains_once_and_shows_curves_snapshots_and_accuracy(train_calls):
    at = open_page({"steps": "6", "lseed": "7"})
    assert at.number_input(key="steps").value == 6
    at.button(key="ltrain").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert len(train_calls) == 1
    assert train_calls[0] == toy_tasks.LearnConfig(steps=6, seed=7)
    result = ui_learn.existing_run(train_calls[0])
    assert result is not None

    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Held-out accuracy"] == f"{result.held_out_accuracy:.1%}"
    assert metrics["Steps"] == "6"
    assert at.get("progress")[0].value == 100

    charts = specs(at)
    loss = charts["Loss on each training batch"]["data"][0]
    assert spec_array(loss["y"]) == pytest.approx(np.array(result.loss, dtype=np.float32))
    assert list(spec_array(loss["x"])) == [1, 2, 3, 4, 5, 6]
    assert "Accuracy on each training batch" in charts
    expected = charts["Expected: the key that solves the task"]["data"][0]
    assert np.array_equal(spec_array(expected["z"]), result.expected.numpy())
    assert expected["y"] == list(result.labels)
    assert "Learned: head 0 after 6 steps" in charts

    (snapshot_slider,) = [s for s in at.select_slider if s.key.startswith("lsnap")]
    assert [int(o) for o in snapshot_slider.options] == [s.step for s in result.snapshots]
    assert snapshot_slider.value == 6
    assert "Head 0, step 6" in charts and "Expected (for comparison)" in charts
    share = toy_tasks.pattern_share(result.final_weights, result.expected)[0]
    assert any(f"this example: head 0 {share:.2f}." in c.value for c in at.caption)
    badges = [m.value for m in at.markdown if "badge[" in str(m.value)]
    assert any(f"Head 0: {result.head_share[0]:.3f}" in b for b in badges)

    # Scrub back to the untrained layer: only the snapshot changes, nothing retrains.
    snapshot_slider.set_value(0).run()
    charts = specs(at)
    step0 = charts["Head 0, step 0"]["data"][0]
    assert np.allclose(spec_array(step0["z"]), result.snapshots[0].weights[0].numpy())
    assert len(train_calls) == 1
    assert_sidebar_present(at)


def test_a_run_that_exists_is_shown_to_another_student_without_training(train_calls):
    first = open_page({"task": "marked", "steps": "4"})
    first.button(key="ltrain").click().run()
    assert len(train_calls) == 1
    second = open_page({"task": "marked", "steps": "4"})  # a new session, same settings
    assert "Held-out accuracy" in [m.label for m in second.metric]
    assert not any(i.value.startswith(PROMPT) for i in second.info)
    second.button(key="ltrain").click().run()  # pressing again reuses the run
    assert len(train_calls) == 1
    assert "Already trained" in second.get("progress")[0].proto.text


def test_page_values_in_the_link_are_read_and_not_called_unknown(train_calls):
    at = open_page(
        {"task": "marked", "lheads": "2", "lr": "0.1", "steps": "5", "lseed": "9", "k": "3"}
    )
    assert not at.warning, [w.value for w in at.warning]
    assert at.radio(key="task").value == "marked"
    assert at.radio(key="lheads").value == 2
    assert at.select_slider(key="lr").value == 0.1
    assert at.number_input(key="steps").value == 5
    assert at.number_input(key="lseed").value == 9
    assert at.number_input(key="k").disabled  # k belongs to the shift task
    at.button(key="ltrain").click().run()
    assert train_calls == [
        toy_tasks.LearnConfig(task="marked", num_heads=2, lr=0.1, steps=5, seed=9)
    ]
    assert "Learned: head 1 after 5 steps" in specs(at)


def test_bad_page_values_in_the_link_are_named_and_replaced_by_defaults(train_calls):
    at = open_page({"steps": "5000", "lr": "0.07", "lheads": "3", "task": "copy", "k": "2.5"})
    (warning,) = [w.value for w in at.warning]
    for name in ("steps", "lr", "lheads", "task", "k"):
        assert name in warning
    assert at.number_input(key="steps").value == toy_tasks.DEFAULT_STEPS
    assert at.select_slider(key="lr").value == toy_tasks.DEFAULT_LR
    assert at.radio(key="lheads").value == 1 and at.radio(key="task").value == "shift"
    assert at.number_input(key="k").value == 2
    assert train_calls == []


def test_the_lessons_claims_are_on_the_page_after_training(train_calls):
    from attnviz.teach.lessons import watch_learn as lessons

    at = open_page({"steps": "8", "lheads": "2"})
    at.button(key="ltrain").click().run()
    assert not at.exception, [e.message for e in at.exception]
    result = ui_learn.existing_run(train_calls[0])
    shown = " ".join(str(e.value).replace("\\", "") for e in [*at.markdown, *at.caption])
    claims = lessons.lesson(result).claims
    assert len(claims) == 4
    for claim in claims:
        assert claim.text in shown
    assert "nearly uniform, as in the chapter" not in shown
