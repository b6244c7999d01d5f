"""Why divide by √d_k (attnviz/teach/scaling.py): unscaled, the softmax of wider dot products
saturates (entropy and gradient fall); divided by √d_k, both stay where they were at d_k = 1."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnviz.teach.scaling import D_KS, scaling_study


@pytest.fixture(scope="module")
def study():
    return scaling_study()


def test_the_study_covers_every_width_once_per_series(study):
    assert study.d_ks == D_KS == (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
    assert study.n_keys == 16
    assert study.uniform_entropy == pytest.approx(4.0)  # log2(16 keys)
    for name in (
        "entropy_scaled",
        "entropy_unscaled",
        "max_weight_scaled",
        "max_weight_unscaled",
        "grad_norm_scaled",
        "grad_norm_unscaled",
    ):
        assert len(getattr(study, name)) == len(D_KS), name


def test_at_width_one_scaling_changes_nothing(study):
    # √1 = 1: the two scores are the same tensor, so every statistic is identical.
    assert study.entropy_scaled[0] == study.entropy_unscaled[0]
    assert study.max_weight_scaled[0] == study.max_weight_unscaled[0]
    assert study.grad_norm_scaled[0] == study.grad_norm_unscaled[0]


def test_unscaled_entropy_falls_steeply_as_d_k_grows(study):
    entropy = np.array(study.entropy_unscaled)
    assert entropy[0] > 3.0
    assert np.all(np.diff(entropy) < 0), entropy  # every doubling of d_k sharpens the rows
    assert entropy[D_KS.index(128)] < 0.5
    assert entropy[-1] < 0.2
    assert np.all(entropy < study.uniform_entropy)


def test_scaled_entropy_stays_near_constant_below_uniform(study):
    entropy = np.array(study.entropy_scaled)
    assert np.all((entropy > 3.2) & (entropy < study.uniform_entropy)), entropy
    assert entropy.max() - entropy.min() < 0.25
    # At d_k = 1024 scaling keeps the rows over 3 bits more spread out than not scaling.
    assert entropy[-1] - study.entropy_unscaled[-1] > 3.0


def test_unscaled_rows_become_one_hot_and_scaled_rows_do_not(study):
    assert study.max_weight_unscaled[-1] > 0.9
    assert study.max_weight_scaled[-1] < 0.35
    assert np.all(np.diff(study.max_weight_unscaled) > 0)


def test_unscaled_gradient_vanishes_while_scaled_gradient_holds(study):
    scaled = np.array(study.grad_norm_scaled)
    unscaled = np.array(study.grad_norm_unscaled)
    # Scaled: within 15% of its mean at every width.
    assert np.all(np.abs(scaled / scaled.mean() - 1) < 0.15), scaled
    # Unscaled: from d_k = 8 on, each doubling shrinks it, down to under a quarter of scaled.
    tail = unscaled[D_KS.index(8) :]
    assert np.all(np.diff(tail) < 0), unscaled
    assert unscaled[-1] < 0.25 * scaled[-1]
    assert unscaled[-1] < 0.1


@pytest.mark.parametrize("seed", [1, 2])
def test_the_trend_does_not_depend_on_the_seed(seed):
    other = scaling_study(d_ks=(1, 64, 1024), seed=seed)
    assert other.entropy_unscaled[0] > 3.0 and other.entropy_unscaled[-1] < 0.5
    assert max(other.entropy_scaled) - min(other.entropy_scaled) < 0.3
    assert other.grad_norm_unscaled[-1] < 0.25 * other.grad_norm_scaled[-1]


def test_the_same_seed_gives_the_same_study():
    a = scaling_study(d_ks=(4, 16), n_keys=8, rows=32, seed=5)
    b = scaling_study(d_ks=(4, 16), n_keys=8, rows=32, seed=5)
    assert a == b
    assert a.uniform_entropy == pytest.approx(math.log2(8))
