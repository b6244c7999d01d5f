"""Memory stays bounded without Streamlit's post-run collection (the short soak; the full one,
5,000 page runs, is `bench/soak.py`, results in bench/soak-results.md)."""

from __future__ import annotations

import os

import pytest

from bench import soak

MB = 2**20


def test_the_slope_is_read_over_the_last_half_only():
    # 100 MB of warm-up growth, then flat: the verdict sees only the flat half.
    samples = [(n, (400 + min(n, 500) / 5) * MB) for n in range(0, 2001, 100)]
    assert soak.slope_mb_per_1000(samples, 2000) == pytest.approx(0.0, abs=1e-9)


def test_a_steady_leak_is_measured_per_thousand_runs():
    samples = [(n, (400 + 0.008 * n) * MB) for n in range(0, 2001, 100)]  # 8 kB a run
    assert soak.slope_mb_per_1000(samples, 2000) == pytest.approx(8.0)
    assert soak.slope_mb_per_1000(samples, 2000) > soak.BOUND_MB_PER_1000


def test_an_own_type_that_keeps_growing_is_named():
    def census(n):
        return {"own": {"attnviz.trace.Trace": n, "ui.memo.Memo": 5}}

    growing = soak.growing_own_types(
        {"quarter": census(100), "half": census(180), "end": census(260)}
    )
    assert growing == {"attnviz.trace.Trace": (100, 180, 260)}
    assert not soak.growing_own_types(
        {"quarter": census(100), "half": census(120), "end": census(110)}
    )


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("ATTNVIZ_SOAK") != "1",
    reason="set ATTNVIZ_SOAK=1: at 800 runs RSS was still climbing (18-25 MB per 1,000 runs over "
    "the last half, twice); the full soak levels off only after ~800 runs, so this form now runs "
    "1,600 and is not yet proven green (bench/soak.py --runs 5000 is)",
)
def test_short_soak_rss_levels_off():
    # Every page under eight settings, the Train button (six training settings) and page 6's
    # button, three sessions: the caches fill in the first half (the learn page's store keeps
    # 64 runs, so a free choice of training settings would still be filling it at 800 runs);
    # over the last half RSS must stay under the bound.
    result = soak.run(
        runs=1600, sessions=3, every=80, pool_size=8, seed=3, book_button=False, learn_pool=6
    )
    assert not result.errors, result.errors[:5]
    assert result.done >= 1600
    assert result.presses.get("Train", 0) > 0
    assert result.presses.get("Measure at these settings", 0) > 0
    slope = soak.slope_mb_per_1000(result.samples, result.runs)
    assert slope <= soak.BOUND_MB_PER_1000, (slope, result.samples)
    assert not soak.growing_own_types(result.censuses)


def test_cycles_only_waiting_for_the_collector_are_not_a_leak():
    def census(live, in_use):
        return {"own": {"ui.state.Config": live}, "reachable own": {"ui.state.Config": in_use}}

    censuses = {"quarter": census(58, 40), "half": census(152, 41), "end": census(187, 40)}
    assert not soak.growing_own_types(censuses)
