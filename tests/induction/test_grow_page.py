"""Page 8, "Grow an induction head", as a student sees it (AppTest): the slider moves the step
and every number and mark follows it, the maps are the engine's maps at that step, the ablation
numbers are the engine's, every sentence about a head holds for the map it names, and a live run
reports its progress and waits its turn behind another."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from attnviz import figures
from attnviz.core.tokens import tokenize
from attnviz.models import detectors as D
from attnviz.models.induction import api, mechanism
from attnviz.models.induction.passes import map_tokens
from attnviz.teach.lessons import grow as G
from tests.app.conftest import APP, chart, spec_array, unescape
from ui.models import growing

PAGE = "pages/grow-induction-heads.py"
TEXT = "Your journey starts with one step"


def open_page(query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=300)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.message for e in at.exception]
    assert [t.value for t in at.title] == ["8. Grow an induction head"]
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def marks(spec: dict) -> list[float]:
    return [s["x0"] for s in spec["layout"].get("shapes", [])]


def series(spec: dict) -> dict[str, np.ndarray]:
    return {t["name"]: spec_array(t["y"]) for t in spec["data"]}


def captions(at: AppTest) -> list[str]:
    """Each caption's paragraphs, unescaped: a panel's sentences share one caption."""
    return [p for c in at.caption for p in unescape(c.value).split("\n\n")]


def test_the_slider_moves_the_step_and_the_numbers_and_marks_follow():
    at = open_page({"gstep": "1500", "text": TEXT})
    for step in (1500, 3000):
        if step != 1500:
            at.select_slider(key="gstep").set_value(step).run()
            assert not at.exception
        m = api.at_step(step)
        shown = metrics(at)
        assert shown["Step"] == f"{step:,} of 4,000"
        assert shown["Loss, repeat"] == f"{m.loss_repeat:.2f}"
        assert shown["Loss, first copy (chance 4.16)"] == f"{m.loss_first:.2f}"
        assert shown["Best induction score, layer 1"] == f"{api.layer_induction(m):.2f}"
        for title in ("Loss on held-out", "Previous-token score", "Induction score of every"):
            assert marks(chart(at, title)) == [step], title
        # the curves are the whole recorded run, whatever the step
        c = api.curves()
        lines = series(chart(at, "Induction score of every"))
        np.testing.assert_allclose(lines["head 1.2"], c.scores["induction"][:, 1, 2], atol=1e-6)
        loss = series(chart(at, "Loss on held-out"))
        np.testing.assert_allclose(loss["chance, ln 64"], np.log(64), atol=1e-6)
        assert [t.value for t in at.title] == ["8. Grow an induction head"]
        roles = mechanism.roles_at(step)
        named = [unescape(m.value) for m in at.markdown if "Head 1.2" in unescape(m.value)]
        assert named and f"Head 1.2: {roles[6].label()}" in named[0]
        # the intro says layer 1 reads the token before only through layer 0: the page names
        # the layer-0 head with the highest previous-token score, inside or before the repeat
        previous = {
            (r.scores[part]["previous"], r.head, part)
            for r in roles
            if r.layer == 0
            for part in mechanism.PARTS
        }
        top, head, part = max(previous)
        said = [
            unescape(x.value)
            for x in at.markdown
            if "previous-token score in layer 0" in unescape(x.value)
            or "Layer 0's highest previous-token" in unescape(x.value)
        ]
        assert len(said) == 1, said
        assert f"{top:.2f} (head 0.{head}, {mechanism.PART_WORDS[part]})" in said[0]
        assert ("No layer-0 head" in said[0]) == (top < D.NAMED_AT)
        assert "weaker patterns" not in said[0]


def test_the_two_score_charts_side_by_side_keep_the_same_room_for_their_legends():
    # 8 heads beside 8 heads and the control: both plots start at the height the longer
    # legend needs (they stood 24 px apart), and each legend still fits its room.
    view = G.run_view(1500)
    prev, ind = view.previous.spec, view.induction.spec
    assert len(prev["data"]) == len(ind["data"]) - 1
    assert prev["layout"]["margin"]["t"] == ind["layout"]["margin"]["t"]
    alone = figures.lines(  # as many series, drawn alone: the room of its own legend
        [0, 1],
        {f"head {i}": [0.0, 1.0] for i in range(len(prev["data"]))},
        title="Previous-token score of every head",
        x_name="step",
        y_name="score",
    )
    assert alone.spec["layout"]["margin"]["t"] < prev["layout"]["margin"]["t"]


def test_a_step_that_is_no_checkpoint_gets_the_link_warning():
    at = open_page({"gstep": "1550"})
    warned = [unescape(w.value) for w in at.warning]
    assert any("gstep (no checkpoint there (every 100 steps))" in w for w in warned), warned
    assert metrics(at)["Step"] == "4,000 of 4,000"  # the default, the last checkpoint


def _heads_of(spec: dict) -> np.ndarray:
    return np.stack([spec_array(t["z"]) for t in spec["data"] if t["type"] == "heatmap"])


def test_the_maps_at_a_step_are_the_engines_and_so_is_the_control():
    step = 2000
    at = open_page({"gstep": str(step), "text": TEXT})
    tokens = tokenize(TEXT)
    laid = api.probe(map_tokens(tokens.ids).ids, tokens.displays)
    ref = api.maps_at(step, laid.ids, laid.repeat)
    for layer in (0, 1):
        drawn = _heads_of(chart(at, f"Layer {layer}, all 4 heads, at step 2,000"))
        np.testing.assert_allclose(drawn, ref.weights[layer].numpy(), atol=1e-6)
    control = api.maps_at(2000, laid.ids, laid.repeat, name="control")
    drawn = _heads_of(chart(at, "One-layer control, all 4 heads, at step 2,000"))
    np.testing.assert_allclose(drawn, control.weights[0].numpy(), atol=1e-6)
    labels = chart(at, "Layer 1")["data"][0]["y"]
    assert labels[12] == "12: Your" and labels[18] == "18: Your" and labels[0] == "0: ·"


def test_every_sentence_about_a_head_holds_for_the_map_it_names():
    tokens = tokenize(TEXT)
    laid = api.probe(map_tokens(tokens.ids).ids, tokens.displays)
    keys = G._probe_keys(len(laid.ids), laid.repeat)
    for step in (0, 1200, 1500, 4000):
        view = G.maps_view(step, tokens.ids, tokens.displays)
        assert view.claims
        for claim in view.claims:
            assert claim.holds(view.panels), (step, claim.text)
        # a head is named only when its score in the part the sentence names reaches 0.5, and
        # after its highest score there
        ref = api.maps_at(step, laid.ids, laid.repeat)
        for claim in view.claims:
            if claim.prop != "named_by_score" or claim.panel == "p8_control":
                continue
            layer = int(claim.panel[-1])
            part = "inside" if "inside the repeat" in claim.text else "before"
            w = ref.weights[layer, claim.head]
            scores = {
                k: float(D.expected_key_score(w, torch.tensor(v))) for k, v in keys[part].items()
            }
            assert D.name_of(scores) is not None and max(scores.values()) >= D.NAMED_AT
            assert D.name_of(scores) in claim.text
    # at step 0 nothing is named; at the end layer 1's heads are induction heads on this text
    first = G.maps_view(0, tokens.ids, tokens.displays)
    assert not [c for c in first.claims if c.prop == "named_by_score"]
    last = G.maps_view(4000, tokens.ids, tokens.displays)
    induction = [c for c in last.claims if "induction head" in c.text and c.panel == "p8_layer1"]
    assert len(induction) == 4
    assert all("inside the repeat" in c.text for c in induction)
    # issue 37: head 0.2 is a duplicate-token head inside the repeat, a current-token head
    # before it, never "a current-token head" from its average alone
    head2 = [c.text for c in last.claims if c.text.startswith("Head 0.2,")]
    assert len(head2) == 2
    assert head2[0].startswith("Head 0.2, inside the repeat, is a duplicate-token head (score ")
    assert head2[1].startswith("Head 0.2, before the repeat, is a current-token head (score ")
    # the claims can fail: a wrong score, or a name on the wrong head
    wrong = [c for c in last.claims if c.prop == "named_by_score"][0]
    from dataclasses import replace

    assert not replace(wrong, arg=round(wrong.arg - 0.1, 2)).holds(last.panels)
    assert not replace(wrong, head=(wrong.head + 1) % 4).holds(last.panels) or wrong.panel == (
        "p8_layer1"  # layer 1's four heads are all induction heads: any of them holds
    )


def test_the_page_shows_the_sentences_of_its_maps():
    at = open_page({"gstep": "4000", "text": TEXT})
    tokens = tokenize(TEXT)
    view = G.maps_view(4000, tokens.ids, tokens.displays)
    shown = captions(at)
    for claim in view.claims:
        assert claim.text in shown, claim.text


def test_ablation_numbers_are_the_engines():
    step = 3000
    at = open_page({"gstep": str(step), "gablate": "true", "ghead": "2"})
    ab = api.ablation_at(step)
    h = ab.heads[2]
    text = " ".join(unescape(m.value) for m in at.markdown)
    assert f"from {ab.base:.2f} to {h.induction:.2f}" in text
    assert f"({h.drop:.0%} of it lost)" in text
    bars = chart(at, "Layer 1's induction score at step 3,000")["data"][0]
    values = spec_array(bars["y"])
    np.testing.assert_allclose(values, [ab.base, *(x.induction for x in ab.heads)], atol=1e-6)
    assert bars["marker"]["color"].index("#fde725") == 3  # the zeroed head stands out
    assert h.drop >= 0.7  # the reference run's layer-0 head 2 carries what layer 1 needs
    said = [unescape(m.value) for m in at.markdown]
    for sentence in G.ablation_view(step).mechanism:
        assert any(sentence in m for m in said), sentence
    at.radio(key="ghead").set_value(0).run()
    text = " ".join(unescape(m.value) for m in at.markdown)
    assert f"to {ab.heads[0].induction:.2f}" in text.split("Zeroing head 0.0", 1)[1][:120]


@pytest.fixture
def clean_runs():
    growing.runs.clear()
    yield
    growing.runs.clear()


def test_grow_reports_progress_and_waits_its_turn_behind_another_run(clean_runs):
    at = open_page({"gseed": "3", "gsteps": "25"})
    assert "Press Grow to train" in " ".join(unescape(i.value) for i in at.info)
    ahead = growing.TURNS.join()  # another student's run holds the turn for two seconds
    threading.Timer(2.0, ahead.leave).start()
    at.button(key="ggrow").click().run()
    assert not at.exception, [e.message for e in at.exception]
    reports = growing.finished_run(3, 25)
    assert reports is not None and reports[0].step == 0 and reports[-1].step == 25
    assert len(growing.TURNS) == 0  # the turn was given up
    note = [c for c in captions(at) if "in the queue" in c]
    assert len(note) == 1 and "behind 1 other run" in note[0], captions(at)
    waited = float(note[0].split("waited ")[1].split(" s")[0])
    assert waited >= 1.5
    gap = float(note[0].split("at most ")[1].split(" s")[0])
    assert gap <= 2.0  # a liveness bound (the page reports every 0.4 s of training)
    bar = [p.proto.text for p in at.get("progress")]
    assert bar == [f"Grown: 25 steps in {reports[-1].seconds:.0f} s"]
    summary = [unescape(m.value) for m in at.markdown if m.value.startswith("Seed 3")]
    m = reports[-1].measures
    assert summary and f"layer 1's best induction score {api.layer_induction(m):.2f}" in summary[0]
    grown = chart(at, "Your run: seed 3")
    assert series(grown)["loss on the repeat (nats)"][-1] == pytest.approx(m.loss_repeat, 1e-6)
    # the same seed and steps again: shown from the shared runs, nothing trains
    at.button(key="ggrow").click().run()
    assert "Already grown" in " ".join(captions(at))
    assert growing.finished_run(3, 25) is reports


def test_the_queue_is_first_come_first_served_and_leaving_frees_the_turn():
    from attnviz.server.turns import Turns

    turns = Turns(1)
    a, b, c = turns.join(), turns.join(), turns.join()
    assert (a.place(), b.place(), c.place()) == (0, 1, 2)
    assert (a.ahead(), b.ahead(), c.ahead()) == (0, 1, 2)
    assert not c.wait(0.05)
    got = []
    waiter = threading.Thread(target=lambda: got.append(c.wait(5.0)))
    waiter.start()
    b.leave()  # a student in the queue leaves: the one behind moves up
    assert c.place() == 1
    with a:  # the running one finishes (or its session goes): the next one's turn
        pass
    waiter.join(5.0)
    assert got == [True] and c.place() == 0 and len(turns) == 1
    a.leave()  # leaving twice is harmless
    with pytest.raises(ValueError, match="left the line"):
        a.place()
    with pytest.raises(RuntimeError), turns.join() as d:  # an error in the run still frees it
        assert d.place() == 1
        raise RuntimeError("cancelled")
    assert len(turns) == 1
    c.leave()
    assert len(turns) == 0


def test_a_grown_run_is_small_enough_for_its_cache():
    reports = list(api.grow(seed=1, steps=50))
    from attnviz.server.budget import CACHE_BYTES, size_of

    per_report = size_of(tuple(reports)) / len(reports)
    # a 4,000-step run: one report every 25 steps, and one per 0.4 s of training (a minute at
    # most here): under 1 MB, so the cap keeps at least 8 of the longest runs
    longest = (api.GROW_STEPS // 25 + 1 + 60 / api.REPORT_SECONDS) * per_report
    assert longest <= 2**20 and 8 * longest <= CACHE_BYTES["grown runs"], longest
    assert all(torch.isfinite(torch.tensor(p.measures.loss_repeat)) for p in reports)
