"""The pass pages' closed parts (ui/sections.py): page 3's dropout lab and batch stand in closed
boxes that compute and draw nothing until opened; a link opens them, and so does a question or
a cell that lives in one."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.predict.answer import open_predict, prompts
from tests.predict.pages import Setting, question
from ui import cache, sections, url

from .conftest import (
    APP,
    PAGES,
    URL_WARNING,
    chart_specs,
    chart_title,
    exceptions,
    open_app,
)

LAB_CHARTS = ("p3_dmask", "p3_dropped", "p3_values")
BATCH_CHARTS = ("p3_batch0", "p3_batch1")
TRAIN = {"train": "true", "dropout": "0.5", "dseed": "3"}


def chart_keys(at) -> set[str]:
    return {
        c.proto.id.rsplit("-fig_", 1)[1] for c in at.get("plotly_chart") if "-fig_" in c.proto.id
    }


@pytest.fixture
def traces(monkeypatch):
    """The variants of every trace the page asks the cache for ("train": the lab's; "batch/":
    page 3's batch of the two texts)."""
    asked: list[str] = []
    real, real_batch = cache.trace, cache.batch_trace

    def counting(kind, text, settings, book, variant=""):
        asked.append(f"{kind}/{variant}")
        return real(kind, text, settings, book, variant)

    def counting_batch(*args):
        asked.append("batch/")
        return real_batch(*args)

    monkeypatch.setattr(cache, "trace", counting)
    monkeypatch.setattr(cache, "batch_trace", counting_batch)
    return asked


def test_page_3_opens_with_the_lab_and_the_batch_closed_computing_neither(traces):
    at = open_app(TRAIN, page="causal")
    assert not exceptions(at)
    labels = [e.label for e in at.expander]
    assert sections.label(url.LAB) in labels and sections.label(url.BATCH) in labels
    assert sections.label(url.LAB).startswith("Dropout lab: ")
    assert not chart_keys(at) & {*LAB_CHARTS, *BATCH_CHARTS}
    assert "causal/train" not in traces  # the lab's trace in training mode: not computed
    assert "batch/" not in traces  # nor the batch's
    # "Break it" runs on the batch's inputs all the same, and lists every bug of the pass.
    assert "Turn on a bug" in [s.label for s in at.selectbox]
    # The page above them is whole: the mask, both routes, the lines, the live checks.
    assert {"p3_mask", "p3_masked", "p3_route1", "p3_route2", "p3_uniform"} <= chart_keys(at)
    assert any(str(m.value).startswith("**Live checks**") for m in at.markdown)


def test_opening_a_part_draws_it_and_puts_it_in_the_link(traces):
    at = open_app(TRAIN, page="causal")
    at.session_state[url.LAB] = True
    at.run()
    assert not exceptions(at)
    assert set(LAB_CHARTS) <= chart_keys(at)
    assert "causal/train" in traces
    assert not chart_keys(at) & set(BATCH_CHARTS)  # the other part stays closed
    assert "batch/" not in traces
    at.session_state[url.BATCH] = True
    at.run()
    assert set(BATCH_CHARTS) <= chart_keys(at)
    assert "batch/" in traces
    titles = [chart_title(s) for s in chart_specs(at)]
    assert any(t.startswith("Example 1") for t in titles)


def test_a_link_opens_the_parts_it_names():
    at = open_app({**TRAIN, url.LAB: "true", url.BATCH: "true"}, page="causal")
    assert not exceptions(at)
    assert {*LAB_CHARTS, *BATCH_CHARTS} <= chart_keys(at)


@pytest.mark.parametrize("raw", ["yes", "1", "<b>", ""])
def test_a_part_named_with_nonsense_in_the_link_is_dropped_and_said(raw):
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params[url.LAB] = raw
    at.switch_page(PAGES["causal"]).run()  # a link straight to page 3, as in a browser
    assert not exceptions(at)
    (warning,) = [str(w.value) for w in at.warning if URL_WARNING in str(w.value)]
    assert "lab" in warning
    assert not chart_keys(at) & set(LAB_CHARTS)


def test_a_link_to_a_cell_of_the_lab_opens_the_lab():
    at = open_app({**TRAIN, "cell": "lab.q3k1"}, page="causal")
    assert not exceptions(at)
    assert set(LAB_CHARTS) <= chart_keys(at)
    assert "Dropout lab" in [h.value for h in at.header]  # drawn as a section, not a box


def asked_at(page: str, queries, hides: str):
    """The first (setting, seed, question) among ``queries`` and question seeds 0-39 whose
    question is asked at panel ``hides``: it lives in one of the page's closed parts."""
    for query in queries:
        s = Setting.of(page, query)
        for seed in range(40):
            q = question(s, seed)
            if q is not None and q.hides == hides:
                return s, seed, q
    raise AssertionError(f"no setting found whose question is asked at {hides}")


def assert_opened_for(page: str, found, key: str) -> None:
    """The page at that setting and seed asks the question, its part drawn open under its
    title (not as a closed box)."""
    s, seed, q = found
    at = open_predict(page, s.query, seed)
    assert not exceptions(at)
    assert prompts(at) == [f"**Predict first.** {q.prompt}"]
    assert sections.TITLES[key][0] in [h.value for h in at.header]
    assert sections.label(key) not in [e.label for e in at.expander]


def test_a_question_asked_in_the_lab_opens_it_there():
    # what a surviving weight becomes after dropout: asked at the lab's dropped weights
    settings = ({**TRAIN, "dseed": str(d)} for d in range(1, 40))
    assert_opened_for("causal", asked_at("causal", settings, "p3_dropped"), url.LAB)


P2_PARTS = {"p2_entropy", "p2_gradient", "p2_unscaled_change", "p2_weights_hist"}


def closed_then_opened(page: str, *parts: str) -> tuple[AppTest, AppTest]:
    """``page`` at the defaults, its ``parts`` standing as closed boxes under their labels; then
    the same page from a link that opens them all."""
    closed = open_app(page=page)
    assert not exceptions(closed)
    labels = [e.label for e in closed.expander]
    assert all(sections.label(part) in labels for part in parts), labels
    opened = open_app(dict.fromkeys(parts, "true"), page=page)
    assert not exceptions(opened)
    return closed, opened


def test_page_2_opens_with_why_scale_and_v1_against_v2_closed():
    closed, opened = closed_then_opened("trainable", url.SCALING, url.V1_V2)
    assert not chart_keys(closed) & P2_PARTS
    assert {"p2_scores", "p2_scaled", "p2_weights", "p2_context"} <= chart_keys(closed)
    assert P2_PARTS <= chart_keys(opened)


def test_a_question_asked_in_why_scale_opens_it_there():
    found = asked_at("trainable", [{"d_out": "64"}], "p2_unscaled_change")  # a clear change
    assert_opened_for("trainable", found, url.SCALING)


def strides_tables(at: AppTest) -> list:
    return [t for t in at.dataframe if "stride" in " ".join(map(str, t.value.columns))]


def test_page_4_opens_with_the_reshape_walk_and_the_wrapper_closed():
    closed, opened = closed_then_opened("multihead", url.RESHAPE, url.WRAPPER)
    assert "p4_time" not in [b.key for b in closed.button]
    assert not strides_tables(closed)
    assert "p4_time" in [b.key for b in opened.button]
    assert strides_tables(opened)


def test_a_question_on_the_split_shape_opens_the_reshape_walk():
    found = asked_at("multihead", [{}], "p4_step_split")
    assert_opened_for("multihead", found, url.RESHAPE)
