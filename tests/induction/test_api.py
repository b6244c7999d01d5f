"""What the growing page will call: curves, maps, ablation, the control, the live trainer."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
import torch

from attnviz.models import detectors as D
from attnviz.models.induction import api
from attnviz.models.induction.passes import map_tokens

LAST = 4000


def test_the_slider_scrubs_every_100_steps_and_the_curves_show_the_phase_change():
    assert api.steps() == tuple(range(0, LAST + 1, 100))
    c = api.curves()
    assert c.steps == tuple(range(0, LAST + 1, 25))
    assert c.chance == pytest.approx(math.log(64))
    assert c.scores["induction"].shape == (len(c.steps), 2, 4)
    best = c.scores["induction"].max(axis=(1, 2))
    grown = int(np.argmax(best >= 0.5))
    assert best[0] < 0.1 and best[-1] >= 0.5 and 500 <= c.steps[grown] <= 3000
    # the repeat's loss falls with it; the first copy's stays near chance
    assert c.loss_repeat[grown] < c.loss_repeat[0] - 2
    assert min(c.loss_first) > 0.9 * c.chance
    assert api.at_step(c.steps[grown]).induction == best[grown]


def test_heads_are_named_only_from_their_scores():
    m = api.at_step(LAST)
    names = api.head_names(m)
    for layer in range(2):
        for head in range(4):
            scores = {k: float(m.scores[k][layer, head]) for k in m.scores}
            top = max(scores, key=lambda k: scores[k])
            if scores[top] >= 0.5:
                assert names[layer][head] == f"{D.NAMES[top]} (score {scores[top]:.2f})"
            else:
                assert names[layer][head] is None
    assert any(n and n.startswith("induction head") for n in names[1])


def test_a_probe_puts_the_students_text_twice_at_the_end_after_distinct_filler():
    text = map_tokens([7, 900, 31, 7, 12, 45]).ids  # "the" twice
    assert text == (0, 1, 2, 0, 3, 4)
    p = api.probe(text, ["␣the", "␣a", "␣b", "␣the", "␣c", "␣d"])
    assert len(p.ids) == 24 and (p.start, p.repeat) == (12, 6)
    assert p.ids[12:18] == p.ids[18:] == text
    filler = p.ids[:12]
    assert len(set(filler)) == 12 and not set(filler) & set(text)
    assert p.labels[0] == "0: ·" and p.labels[12] == "12: ␣the" and p.labels[23] == "23: ␣d"
    assert api.probe(text, ["a"] * 6).ids == p.ids  # fixed filler: the same every time
    long = api.probe(tuple(range(20)), [str(i) for i in range(20)])
    assert long.repeat == 12 and long.start == 0 and long.ids == tuple(range(12)) * 2
    assert long.messages == (
        "The text has 20 tokens; twice that must fit the model's context of 24, so its first 12 "
        "are used.",
    )


def test_maps_on_a_students_repeated_text_show_the_induction_head_only_after_training():
    p = api.probe(tuple(range(6)), [str(i) for i in range(6)])
    late, early = api.maps_at(LAST, p.ids, p.repeat), api.maps_at(0, p.ids, p.repeat)
    assert late.weights.shape == (2, 4, 24, 24)
    torch.testing.assert_close(late.weights.sum(-1), torch.ones(2, 4, 24))
    assert float(late.weights.triu(1).abs().max()) == 0.0  # causal
    assert late.scores["induction"][1].max() >= 0.5
    assert early.scores["induction"][1].max() < 0.2
    # without the filler, at the start of the context, the same heads do not fire
    bare = api.maps_at(LAST, tuple(range(6)) * 2, 6)
    assert bare.scores["induction"][1].max() < 0.2
    # the ids rule finds the same earlier occurrences here (no id repeats in the filler)
    by_ids = api.maps_at(LAST, p.ids)
    np.testing.assert_allclose(by_ids.scores["induction"], late.scores["induction"])
    with pytest.raises(ValueError, match="1–24 token ids in 0–63"):
        api.maps_at(LAST, [64])
    with pytest.raises(ValueError, match="1–24 token ids"):
        api.maps_at(LAST, [1] * 25)


def test_zeroing_one_layer0_head_removes_most_of_the_induction_score():
    a = api.ablation_at(LAST)
    assert a.base == pytest.approx(api.layer_induction(api.at_step(LAST)), abs=0.01)
    assert len(a.heads) == 4
    assert a.largest.drop >= 0.70
    for h in a.heads:
        assert h.drop == pytest.approx(1 - h.induction / a.base)
    assert api.ablation_at(LAST) is a  # computed once per step
    with pytest.raises(ValueError, match="needs a layer after it"):
        api.ablation_at(LAST, "control")


def test_the_one_layer_control_stays_low_on_the_same_budget():
    c = api.comparison()
    assert c.steps == LAST
    assert c.control.induction <= 0.15 and c.reference.induction >= 0.5
    assert api.curves("control").scores["induction"].shape[1:] == (1, 4)
    with pytest.raises(ValueError, match="run must be one of"):
        api.steps("other")


def test_grow_your_own_reports_as_it_trains_and_stops_when_cancelled():
    cancel = threading.Event()
    seen = []
    for p in api.grow(seed=5, steps=60, cancel=cancel):
        seen.append(p)
        if p.step >= 25:
            cancel.set()
    assert seen[0].step == 0 and seen[-1].step < 60
    assert [p.step for p in seen] == sorted({p.step for p in seen})
    assert seen[-1].measures.scores["induction"].shape == (2, 4)
    assert all(not math.isnan(p.train_loss) for p in seen[1:])
    # liveness, with a generous bound: reports come every REPORT_SECONDS plus one step
    gaps = [b.seconds - a.seconds for a, b in zip(seen, seen[1:], strict=False)]
    assert max(gaps) < 10 * api.REPORT_SECONDS, gaps
