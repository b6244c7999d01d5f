"""The recorded runs shipped in attnviz/models/bottleneck/data/: the targets of issue 38, the
files' hashes and sizes, and a short retraining that must give the recorded fingerprint."""

from __future__ import annotations

import json

import pytest
import torch

from attnviz.models import recording
from attnviz.models.bottleneck import bottleneck_run as R
from attnviz.models.bottleneck import bottleneck_training as T
from attnviz.models.bottleneck import encoder_decoder as ED
from attnviz.models.bottleneck import toy_language as L


@pytest.fixture(scope="module")
def rec() -> R.Recorded:
    return R.recorded()


def test_the_files_are_the_ones_listed_and_small():
    sums = R.SHIPPED.read_sums()
    assert set(sums) == set(R.HASHED)
    for name in R.HASHED:
        assert recording.sha256_of(R.DATA / name) == sums[name], name
    total = sum((R.DATA / name).stat().st_size for name in R.HASHED)
    assert total <= 2 * 1024 * 1024


def test_same_width_and_parameters(rec):
    b, a = rec.bottleneck, rec.attention
    assert b.config.model.hidden == a.config.model.hidden == 64
    assert b.parameters == ED.parameter_count(b.model)
    assert a.parameters == ED.parameter_count(a.model)
    assert abs(a.parameters - b.parameters) <= 0.1 * b.parameters
    assert not b.config.model.attention and a.config.model.attention
    assert {k: v for k, v in vars(b.config).items() if k != "model"} == {
        k: v for k, v in vars(a.config).items() if k != "model"
    }


def test_the_recorded_accuracies_meet_the_targets(rec):
    lengths = list(range(5, 41))
    assert sorted(rec.attention.accuracy) == sorted(rec.bottleneck.accuracy) == lengths
    low = {n: a for n, a in rec.attention.accuracy.items() if a < 0.95}
    assert not low, f"attention under 0.95 at {low}"
    assert rec.bottleneck.accuracy[5] >= 0.9
    high = {n: a for n, a in rec.bottleneck.accuracy.items() if n >= 20 and a > 0.5}
    assert not high, f"the bottleneck over 0.5 at {high}"
    assert rec.attention.alignment_hits is not None and rec.attention.alignment_hits >= 0.9


@pytest.mark.parametrize("length", [5, 20, 40])
def test_the_shipped_weights_give_the_recorded_accuracy(rec, length):
    for run in (rec.bottleneck, rec.attention):
        got = T.token_accuracy(run.model, L.held_out(length, rec.final_size))
        assert round(got, 6) == run.accuracy[length], (run.kind, length)


def test_the_alignment_follows_the_source_word(rec):
    """Recomputed from the shipped model on held-out sentences: ≥ 90 % of argmaxes are right."""
    hits = T.alignment_hits(rec.attention.model, (5, 12, 25, 40), 32)
    assert hits >= 0.9


def test_the_curves_are_logged_from_step_zero(rec):
    for run in (rec.bottleneck, rec.attention):
        steps = [p.step for p in run.curve]
        assert steps[0] == 0 and steps[-1] == run.config.steps
        assert steps == sorted(set(steps))
        assert all(set(p.accuracy) == set(T.CURVE_LENGTHS) for p in run.curve)


def test_a_short_retraining_gives_the_recorded_fingerprint(rec):
    """The first steps of each run, retrained from the seed on one thread, give the weights whose
    SHA-256 the JSON records (the whole run: scripts/train-bottleneck --check, or the slow test)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for run in (rec.bottleneck, rec.attention):
            assert run.fingerprint_steps == R.FINGERPRINT_STEPS
            assert R.early_fingerprint(run.config) == run.fingerprint, run.kind
    finally:
        torch.set_num_threads(threads)


def test_the_fingerprint_can_fail(rec):
    cfg = rec.attention.config
    other = T.TrainConfig(model=cfg.model, steps=cfg.steps, seed=cfg.seed + 1)
    assert R.early_fingerprint(other, 2) != R.early_fingerprint(cfg, 2)


def test_the_json_is_the_configs_the_script_trains():
    data = json.loads((R.DATA / R.RUNS_JSON).read_text(encoding="utf-8"))
    for kind, cfg in R.CONFIGS.items():
        assert R._config_from(data["runs"][kind]["config"]) == cfg
