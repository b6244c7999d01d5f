"""The "Trained heads" page through AppTest: with a small GPT-2 folder, without one, and with a
broken one. Only the page's own rules are tested here; the numbers come from the engine."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from attnviz.core.tokens import tokenize
from attnviz.models import detectors as D
from attnviz.models import gpt2
from tests.app.conftest import APP, chart, chart_specs, chart_title, spec_array, unescape
from ui.models import trained

PAGE = "pages/trained-heads.py"
TEXT = "Your journey starts with one step"


@pytest.fixture(autouse=True)
def _cold(monkeypatch):
    monkeypatch.delenv(gpt2.ENV, raising=False)
    yield
    from ui.memo import clear_all

    clear_all()


def open_page(text: str = TEXT, state: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["text"] = text
    at.run()
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.switch_page(PAGE).run()
    assert not at.exception, [e.message for e in at.exception]
    assert [t.value for t in at.title] == ["Trained heads: GPT-2's weights in your module"]
    return at


def ids_of(text: str) -> list[int]:
    return list(tokenize(text).ids)


def drawn(folder: str, text: str = TEXT) -> torch.Tensor:
    """The weights the page drew: its cached view (a hit after the page ran)."""
    return trained.view(folder, tuple(ids_of(text))).weights


def instructor_box(at: AppTest) -> str:
    """The text of the one expander that holds the set-up steps."""
    (box,) = [e for e in at.expander if e.label == trained.INSTRUCTOR_TITLE]
    return "\n".join(unescape(m.value) for m in box.markdown)


def test_without_weights_students_get_one_sentence_and_a_picture_and_no_trained_head():
    at = open_page()
    # One sentence for the student: what the page shows once an instructor adds the weights.
    infos = [unescape(i.value) for i in at.info]
    assert infos == [trained.NOT_YET]
    assert infos[0].count(". ") == 0 and "instructor" in infos[0]
    # ... and a picture of it, labelled as an illustration.
    (image,) = at.get("image")
    (shown,) = image.proto.imgs
    assert shown.caption == trained.ILLUSTRATION_CAPTION
    assert shown.caption.startswith("An illustration, not GPT-2's numbers")
    svg = base64.b64decode(shown.url.removeprefix("data:image/svg+xml;base64,")).decode()
    assert svg == trained.illustration() and "ILLUSTRATION, not GPT-2's numbers" in svg
    # The set-up steps wait in the instructor's expander, and only there.
    steps = instructor_box(at)
    assert steps.startswith("`ATTNVIZ_GPT2_DIR` is not set, so this server has no GPT-2 weights.")
    assert "scripts/fetch-gpt2 FOLDER" in steps and "ATTNVIZ_GPT2_DIR=FOLDER" in steps
    outside = [unescape(str(m.value)) for m in at.markdown] + infos
    assert not [t for t in outside if "fetch-gpt2" in t and t not in steps]
    titles = [chart_title(s) for s in chart_specs(at)]
    assert titles == ["Random head 0 (untrained)"]  # the chapter's own random head, named so
    z = spec_array(chart_specs(at)[0]["data"][0]["z"])
    assert z.shape == (6, 6)
    np.testing.assert_allclose(np.nansum(z, axis=1), 1.0, atol=1e-5)


def test_a_folder_without_the_weights_file_is_named(tmp_path, monkeypatch):
    (tmp_path / "config.json").write_text("{}")
    monkeypatch.setenv(gpt2.ENV, str(tmp_path))
    at = open_page()
    assert "lacks model.safetensors" in instructor_box(at)
    assert not any(chart_title(s).startswith("GPT-2") for s in chart_specs(at))


def test_broken_weights_get_a_message_not_a_traceback(tmp_path, monkeypatch, page_folder):
    import shutil

    folder = tmp_path / "broken"
    shutil.copytree(page_folder, folder)
    config = json.loads((folder / "config.json").read_text())
    config["n_embd"] = 48
    (folder / "config.json").write_text(json.dumps(config))
    monkeypatch.setenv(gpt2.ENV, str(folder))
    at = open_page()
    errors = [unescape(e.value) for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("The weights in `ATTNVIZ_GPT2_DIR` could not")
    assert "does not match" in errors[0] or "has shape" in errors[0]
    assert chart_specs(at) == []


def test_the_page_draws_every_head_of_every_layer_from_the_engine(monkeypatch, page_folder):
    monkeypatch.setenv(gpt2.ENV, page_folder)
    at = open_page()
    weights = drawn(page_folder)  # (2, 4, 6, 6)
    # The cached view is the engine's own output (to float32 round-off: thread counts differ).
    engine = gpt2.attention_weights(page_folder, ids_of(TEXT))
    torch.testing.assert_close(weights, engine, atol=1e-6, rtol=1e-5)
    grid = chart(at, "All 8 heads")
    z = spec_array(grid["data"][0]["z"])
    assert z.shape == (2 * 7 - 1, 4 * 7 - 1)  # 6 x 6 thumbnails, one blank line between
    for layer in range(2):
        for head in range(4):
            tile = z[layer * 7 : layer * 7 + 6, head * 7 : head * 7 + 6]
            np.testing.assert_allclose(tile, weights[layer, head].numpy(), atol=1e-7)
    assert grid["layout"]["xaxis"]["ticktext"] == [f"head {h}" for h in range(4)]
    assert grid["layout"]["yaxis"]["ticktext"] == ["layer 0", "layer 1"]
    # The open head (the first) in detail, with token labels and its exact weights.
    detail = chart(at, "GPT-2 layer 0, head 0")
    np.testing.assert_allclose(spec_array(detail["data"][0]["z"]), weights[0, 0].numpy())
    labels = [lab for lab in tokenize(TEXT).labels]
    assert detail["data"][0]["y"] == labels
    random = chart(at, "Random head 0, same width, same text")
    assert spec_array(random["data"][0]["z"]).shape == (6, 6)
    tables = [t.value for t in at.dataframe]
    criteria = tables[0]
    assert list(criteria["type"]) == list(gpt2.HEAD_TYPES)
    counts = gpt2.head_types(gpt2.head_measures(weights))
    assert list(criteria["heads"]) == [int(counts[t].sum()) for t in gpt2.HEAD_TYPES]
    measured = tables[1]
    assert float(measured.iloc[0, 1]) == pytest.approx(
        float(weights[0, 0, torch.arange(1, 6), torch.arange(0, 5)].mean())
    )
    # One set of detectors: the open head's scores on the probe (random tokens repeated), the
    # measurement that names every head in the "Open a head" list, as on page 8.
    probe = tables[2]
    scores = gpt2.probe_scores(page_folder, length=(64 - 1) // 2)  # the test model's context: 64
    assert list(probe["detector"]) == [
        "previous-token",
        "current-token",
        "first-token",
        "induction",
    ]
    np.testing.assert_allclose(
        probe.iloc[:, 2].to_numpy(), [scores.scores[k][0, 0] for k in D.DETECTORS], atol=1e-9
    )
    options = at.selectbox(key="t_open").options
    for layer in range(2):
        for head in range(4):
            name = D.name_of({k: float(v[layer, head]) for k, v in scores.scores.items()})
            label = options[layer * 4 + head]
            assert label.startswith(f"layer {layer}, head {head}: {name or 'no detector names it'}")
    shapes = tables[3]
    assert list(shapes["shape"])[4] == "(1, 4, 6, 6)"
    codes = [c.value for c in at.code]
    assert any("linear.weight.copy_(w.T)" in c for c in codes)


def test_opening_a_head_and_the_log_scale(monkeypatch, page_folder):
    monkeypatch.setenv(gpt2.ENV, page_folder)
    at = open_page(state={"t_open": (1, 2), "t_scale": "relative to an even share (log scale)"})
    weights = drawn(page_folder)
    detail = chart(at, "GPT-2 layer 1, head 2")
    ratio = spec_array(detail["data"][0]["z"])
    visible = np.arange(1, 7)[:, None]
    expected = np.where(np.tri(6) > 0, weights[1, 2].numpy() * visible, np.nan)
    np.testing.assert_allclose(ratio, expected, rtol=1e-6)
    bar = detail["data"][1]["marker"]["colorbar"]["ticktext"]
    assert "even share" in bar
    assert chart(at, "All 8 heads")["layout"]["shapes"][0]["name"] == "selected head"


def test_the_filter_keeps_the_heads_that_meet_the_criterion(monkeypatch, page_folder):
    monkeypatch.setenv(gpt2.ENV, page_folder)
    weights = drawn(page_folder)
    types = gpt2.head_types(gpt2.head_measures(weights))
    kind = max(gpt2.HEAD_TYPES, key=lambda t: int(types[t].sum()))
    count = int(types[kind].sum())
    assert 0 < count < 8, "the test model must give a type some heads but not all"
    at = open_page(state={"t_types": [kind]})
    grid = chart(at, f"{count} of 8 heads: {kind}")
    z = spec_array(grid["data"][0]["z"])
    for layer in range(2):
        for head in range(4):
            tile = z[layer * 7 : layer * 7 + 6, head * 7 : head * 7 + 6]
            assert np.isnan(tile).all() != bool(types[kind][layer, head])
    options = at.selectbox(key="t_open").options
    assert len(options) == count and all(kind in o for o in options)


def test_a_text_longer_than_the_context_is_cut(monkeypatch, page_folder):
    monkeypatch.setenv(gpt2.ENV, page_folder)
    at = open_page(text="one two " * 50)
    captions = [unescape(c.value) for c in at.caption]
    assert "GPT-2's context is 64 tokens: the first 64 are used." in captions
    z = spec_array(chart(at, "GPT-2 layer 0, head 0")["data"][0]["z"])
    assert z.shape == (64, 64)
    grid = spec_array(chart(at, "All 8 heads")["data"][0]["z"])
    assert grid.shape == (2 * 17 - 1, 4 * 17 - 1)  # 16 x 16 thumbnails


def test_the_attention_cache_is_capped_in_bytes():
    assert trained._attention.max_bytes == trained.ATTENTION_BYTES == 128 * 2**20


def test_at_most_two_texts_run_through_gpt2_at_once(monkeypatch, page_folder):
    import threading
    import time

    running, most = [0], [0]
    lock = threading.Lock()
    real = gpt2.attention_weights

    def slow(folder, ids):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.2)
        with lock:
            running[0] -= 1
        return real(folder, ids)

    monkeypatch.setattr(gpt2, "attention_weights", slow)
    threads = [
        threading.Thread(target=trained.view, args=(page_folder, (1, 2, 3 + i))) for i in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == trained.FORWARD_SLOTS == 2
    assert len(trained._attention) == 6


def test_the_illustration_is_the_one_its_script_draws():
    """ui/models/trained-heads-illustration.svg is committed: it must be what the script draws now."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "draw_trained_heads_illustration.py"
    spec = importlib.util.spec_from_file_location("draw_illustration", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.svg() == trained.illustration()
    assert module.OUT == trained.ILLUSTRATION
