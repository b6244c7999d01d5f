"""Memory stays bounded without Streamlit's post-run collection: the short soak on a live server
(about two minutes; the full one, 5,000 page runs, is `bench/soak.py`, results in
bench/soak-results.md), and the verdict's arithmetic on made-up readings."""

from __future__ import annotations

import pytest

from bench import soak
from bench.support.pages import app_pages

MB = 2**20


def readings(level, runs: int = 1600, every: int = 20) -> list[tuple[int, int]]:
    return [(n, int(level(n) * MB)) for n in range(0, runs + 1, every)]


def test_the_warm_up_is_left_out_of_the_verdict():
    # 100 MB of growth while the caches fill (first 500 runs), then flat: warm-up 400 runs
    # still holds 20 MB of it, but only in the first quarter's lowest readings.
    samples = readings(lambda n: 400 + min(n, 500) / 5)
    assert soak.growth_mb_per_1000(samples, 600) == pytest.approx(0.0, abs=1e-9)
    assert soak.growth_mb_per_1000(samples, 0) > soak.BOUND_MB_PER_1000


def test_a_steady_leak_is_measured_per_thousand_runs():
    samples = readings(lambda n: 400 + 0.008 * n)  # 8 kB a run
    assert soak.growth_mb_per_1000(samples, 400) == pytest.approx(8.0, rel=0.02)
    assert soak.slope_mb_per_1000(samples, 400) == pytest.approx(8.0)


def test_spikes_from_cycles_waiting_for_the_collector_do_not_move_the_level():
    # Flat at 500 MB, but every fifth reading comes while a batch of cycles (30 MB) waits for
    # Python's gen-2 collection, and the last three readings are the highest.
    samples = readings(lambda n: 500 + (30 if n % 100 == 0 else 0) + (60 if n >= 1560 else 0))
    assert soak.growth_mb_per_1000(samples, 400) == pytest.approx(0.0, abs=1e-9)
    assert soak.slope_mb_per_1000(samples, 400) > 5  # what the old least-squares verdict read


def heap(malloc_mb: float, blocks: int) -> dict:
    return {"python blocks": blocks, "malloc": {"in use": malloc_mb * MB}}


def test_memory_in_use_is_read_between_the_start_and_end_censuses():
    censuses = {
        "start": {"runs": 400, "heap after collection": heap(270, 1_800_000)},
        "end": {"runs": 1600, "heap after collection": heap(276, 1_800_000 + 12_000)},
    }
    # 6 MB of buffers and 12,000 blocks at 96 B (1.1 MB) over 1,200 runs.
    expected = 1000 * (6 + 12_000 * 96 / MB) / 1200
    assert soak.in_use_growth_mb_per_1000(censuses) == pytest.approx(expected)
    assert soak.in_use_growth_mb_per_1000(censuses) > soak.BOUND_MB_PER_1000


def test_a_soak_without_readings_or_censuses_fails():
    few = soak.Soak(1200, 3, 20, [], 3, False, warmup=400)
    few.samples = [(0, 500 * MB), (1600, 500 * MB)]
    few.done = 1600
    result = soak.verdict(few)
    assert not result.ok
    assert result.problems == [
        "memory in use grew +nan MB per 1,000 runs (bound 5)",
        "RSS grew +nan MB per 1,000 runs (bound 5)",
    ]


def test_an_own_type_that_keeps_growing_is_named():
    def census(n):
        return {"own": {"attnviz.core.trace.Trace": n, "ui.memo.Memo": 5}}

    growing = soak.growing_own_types(
        {"start": census(100), "half": census(180), "end": census(260)}
    )
    assert growing == {"attnviz.core.trace.Trace": (100, 180, 260)}
    assert not soak.growing_own_types(
        {"start": census(100), "half": census(120), "end": census(110)}
    )


def test_cycles_only_waiting_for_the_collector_are_not_a_leak():
    def census(live, in_use):
        return {"own": {"ui.state.Config": live}, "reachable own": {"ui.state.Config": in_use}}

    censuses = {"start": census(58, 40), "half": census(152, 41), "end": census(187, 40)}
    assert not soak.growing_own_types(censuses)


@pytest.mark.slow
def test_short_soak_rss_levels_off():
    result = soak.run(**soak.SHORT)
    verdict = soak.verdict(result, rss_bound=soak.SHORT_RSS_BOUND)
    # What it covered: every page, every setting of its pool, training and page 6's button.
    pages = {p.url_path for p in app_pages()}
    assert set(result.pages) == pages
    assert min(result.pages.values()) >= result.total // (2 * len(pages)), result.pages
    assert result.settings_seen == set(range(len(result.pool)))
    assert result.trained >= soak.SHORT["learn_pool"], result.presses
    assert result.presses.get("Measure at these settings", 0) > 0, result.presses
    assert verdict.ok, (verdict.problems, result.samples)
    print(f"in use {verdict.in_use:+.2f}, RSS {verdict.growth:+.2f} MB per 1,000 runs")
