"""The recorded run shipped in attnviz/models/induction/data/: its hashes, its scores, its targets."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnviz.models import recording
from attnviz.models.induction import recorded
from attnviz.models.induction.train import SCORES, held_out, measure

CHANCE = math.log(64)


def test_the_shipped_files_match_their_sha256sums():
    sums = recorded.SHIPPED.read_sums()
    assert set(sums) == set(recorded.HASHED)
    for name, digest in sums.items():
        assert recording.sha256_of(recorded.DATA / name) == digest, name


def test_the_shipped_files_are_a_few_megabytes_at_most():
    total = sum((recorded.DATA / name).stat().st_size for name in recorded.HASHED)
    assert total < 5 * 2**20, total


def test_the_final_checkpoint_reproduces_its_recorded_scores():
    ref = recorded.recorded().reference
    last = ref.steps[-1]
    again = measure(ref.model(last), held_out(ref.config))
    kept = ref.checkpoint_measures[last]  # from the stored float16 weights, when written
    logged = ref.entry(last).measures  # from the float32 weights, during training
    for name in SCORES:
        np.testing.assert_allclose(again.scores[name], kept.scores[name], atol=1e-6)
        np.testing.assert_allclose(again.scores[name], logged.scores[name], atol=0.01)
    assert again.loss_repeat == pytest.approx(kept.loss_repeat, abs=1e-6)
    assert again.loss_first == pytest.approx(kept.loss_first, abs=1e-6)
    assert again.loss_repeat == pytest.approx(logged.loss_repeat, abs=0.01)
    assert again.induction == pytest.approx(logged.induction, abs=0.01)


def test_float16_storage_moves_no_checkpoints_score_by_more_than_0_01():
    for run in (recorded.recorded().reference, recorded.recorded().control):
        for step, kept in run.checkpoint_measures.items():
            logged = run.entry(step).measures
            for name in SCORES:
                assert np.abs(kept.scores[name] - logged.scores[name]).max() < 0.01, (step, name)
            assert abs(kept.loss_repeat - logged.loss_repeat) < 0.01


def test_the_run_is_logged_every_25_steps_with_a_checkpoint_every_100():
    rec = recorded.recorded()
    assert rec.reference.log_steps == tuple(range(0, 4001, 25))
    assert rec.reference.steps == tuple(range(0, 4001, 100))
    assert rec.control.steps == (0, 1000, 2000, 3000, 4000)
    assert rec.control.log_steps == tuple(range(0, 4001, 25))
    assert rec.reference.config == recorded.REFERENCE and rec.control.config == recorded.CONTROL
    assert rec.reference.config.model.layers == 2 and rec.control.config.model.layers == 1


def test_the_reference_grows_an_induction_head_and_the_control_does_not():
    ref = recorded.recorded().reference.log[-1].measures
    control = recorded.recorded().control.log[-1].measures
    assert ref.induction >= 0.5
    assert ref.loss_repeat <= 0.25 * CHANCE
    assert ref.loss_first >= 0.8 * CHANCE
    assert control.induction <= 0.15
    start = recorded.recorded().reference.log[0].measures
    assert start.induction < 0.1 and start.loss_repeat > 0.9 * CHANCE


def test_the_shipped_models_are_read_once_frozen_and_in_eval_mode():
    rec = recorded.recorded()
    assert recorded.recorded() is rec
    model = rec.reference.model(rec.reference.steps[-1])
    assert not model.training
    assert not any(p.requires_grad for p in model.parameters())
    for array in rec.reference.log[-1].measures.scores.values():
        with pytest.raises(ValueError):
            array[0, 0] = 1.0
    with pytest.raises(KeyError, match="no checkpoint at step 150"):
        rec.reference.model(150)
    assert isinstance(model.tok_emb.weight, torch.Tensor)
