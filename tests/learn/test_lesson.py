"""Page 5's lesson object: for both tasks and every head count, every claim holds on the weights
it speaks of, and every panel has the shape its labels say."""

from __future__ import annotations

import pytest
import torch

from attnviz.models import toy_tasks as learn
from attnviz.teach.lessons import watch_learn as lessons

CONFIGS = [
    learn.LearnConfig(task="shift", steps=40),
    learn.LearnConfig(task="marked", num_heads=2, steps=40),
    learn.LearnConfig(task="shift", k=3, num_heads=4, steps=3, lr=0.003),
]


@pytest.fixture(scope="module", params=CONFIGS, ids=lambda c: f"{c.task}-{c.num_heads}h")
def built(request):
    result = learn.train(request.param)
    return result, lessons.lesson(result)


def test_every_claim_holds_on_the_panel_it_names(built):
    result, les = built
    panels = les.panels
    assert len(les.claims) == 2 * result.config.num_heads  # step 0 and the end, per head
    for claim in les.claims:
        assert claim.holds(panels), claim.text


def test_the_step_0_claim_says_nearly_uniform_only_when_the_numbers_are(built):
    result, les = built
    for claim in les.claims:
        if claim.panel.startswith("p5_snap0_"):
            near = claim.arg is not None and claim.arg <= lessons.NEARLY_EVEN
            assert ("nearly uniform" in claim.text) == near
            assert f"within {claim.arg:.2f}" in claim.text
    weights = result.snapshots[0].weights  # (H, T, T): each seen weight near 1/(i+1)
    n = weights.shape[-1]
    even = 1.0 / torch.arange(1, n + 1)
    assert (weights.diagonal(dim1=-2, dim2=-1) - even).abs().max() < 0.1


def test_a_too_tight_bound_would_fail(built):
    result, les = built
    claim = next(c for c in les.claims if c.panel.startswith("p5_final_"))
    tighter = type(claim)(claim.text, claim.panel, claim.prop, (claim.arg or 0) - 0.02)
    assert not tighter.holds(les.panels)


def test_every_panel_has_the_shape_its_labels_say(built):
    result, les = built
    T = result.config.seq_len
    for key, panel in les.panels.items():
        assert panel.shape == (len(panel.rows), len(panel.cols)) == (T, T), key
    assert [s.step for s in les.snapshots] == [s.step for s in result.snapshots]
    assert [label for label, _ in les.metrics] == [
        "Held-out accuracy",
        "Held-out loss",
        "Steps",
        "Training time",
    ]


def test_the_largest_gap_is_stated_as_the_maps_print_it(built):
    """ "up to 0.92 away" where the map's printed weights give 0.91: the sentence now rounds the
    largest gap to the maps' 2 decimals, and its claim holds it to half of that last digit."""
    result, les = built
    for h in range(result.config.num_heads):
        claim = next(c for c in les.claims if c.panel == f"p5_final_{h}")
        gap = lessons._largest_gap_from_even(result.final_weights[h])
        assert f"up to {round(gap, 2):.2f} away from an even share" in claim.text
        assert claim.arg is not None and abs(claim.arg - round(gap, 2) - 0.005) < 1e-12
        assert claim.holds(les.panels)
