"""Memory stays bounded without Streamlit's post-run collection (the short soak; the full one,
5,000 page runs, is `bench/soak.py`, results in bench/soak-results.md)."""

from __future__ import annotations

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
def test_short_soak_rss_levels_off():
    # Every page under eight settings, the Train button and page 6's button, three sessions:
    # caches fill in the first quarter; over the last half RSS must stay under the bound.
    result = soak.run(runs=800, sessions=3, every=40, pool_size=8, seed=3, book_button=False)
    assert not result.errors, result.errors[:5]
    assert result.done >= 800
    assert result.presses.get("Train", 0) > 0
    assert result.presses.get("Measure at these settings", 0) > 0
    slope = soak.slope_mb_per_1000(result.samples, result.runs)
    assert slope <= soak.BOUND_MB_PER_1000, (slope, result.samples)
    assert not soak.growing_own_types(result.censuses)
