"""Seeding: every draw goes through one locked helper that leaves the caller's stream alone."""

from __future__ import annotations

import threading

import pytest
import torch

from attnviz.core import trace as tracing
from attnviz.core.seeding import rng_lock_held_by_me, seeded
from attnviz.core.settings import Settings
from attnviz.teach import bugs, prepare
from tests.support.rng import GlobalRngTouched, check_untouched

from .helpers import labels, typed_batch


def test_seeded_reproduces_manual_seed():
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(123)
        expected = torch.rand(3)
    with seeded(123):
        got = torch.rand(3)
    assert torch.equal(got, expected)


def test_seeded_restores_the_callers_stream():
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(7)
        expected = torch.rand(4)
        torch.manual_seed(7)
        with seeded(999):
            torch.rand(100)
        assert torch.equal(torch.rand(4), expected)


def test_seeded_none_forks_without_seeding_and_restores():
    before = torch.random.get_rng_state()
    with seeded(None):
        inside = torch.random.get_rng_state()
        torch.rand(10)
    assert torch.equal(inside, before)
    assert torch.equal(torch.random.get_rng_state(), before)


def test_seeded_holds_the_lock_and_is_reentrant():
    assert not rng_lock_held_by_me()
    with seeded(1):
        assert rng_lock_held_by_me()
        with seeded(2):
            inner = torch.rand(2)
        outer_continues = torch.rand(2)
    assert not rng_lock_held_by_me()
    with seeded(2):
        assert torch.equal(inner, torch.rand(2))
    with seeded(1):
        assert torch.equal(outer_continues, torch.rand(2))


def test_only_the_thread_inside_seeded_holds_the_lock():
    seen = []
    with seeded(1):
        other = threading.Thread(target=lambda: seen.append(rng_lock_held_by_me()))
        other.start()
        other.join()
        assert rng_lock_held_by_me()
    assert seen == [False]


def test_seeded_restores_even_when_the_block_raises():
    before = torch.random.get_rng_state()
    with pytest.raises(RuntimeError), seeded(5):
        torch.rand(3)
        raise RuntimeError("boom")
    assert torch.equal(torch.random.get_rng_state(), before)
    assert not rng_lock_held_by_me()


def test_the_rng_fixture_notices_a_draw_and_a_held_lock():
    # Proves the autouse check (tests/support/rng.py) that every engine test runs can fail.
    with torch.random.fork_rng(devices=[]):
        before = torch.random.get_rng_state()
        torch.rand(1)
        with pytest.raises(GlobalRngTouched, match="generator state"):
            check_untouched(before, "a draw")
    with seeded(1):
        inside = torch.random.get_rng_state()
        with pytest.raises(GlobalRngTouched, match="lock held"):
            check_untouched(inside, "an open seeded block")
    check_untouched(torch.random.get_rng_state(), "nothing")


def test_the_dropout_bug_is_reproducible_because_its_draws_are_forked():
    bug = bugs.BUGS_BY_KEY["dropout_in_eval"]
    x = typed_batch(8, n=6)
    spec = prepare.spec_causal(Settings(dropout=0.5))
    first = bugs.run_bug(bug, x, spec).wrong.output
    second = bugs.run_bug(bug, x, spec).wrong.output
    assert torch.equal(first, second)
    assert not torch.equal(first, bugs.run_bug(bug, x, spec).right.output)


# --- threads ------------------------------------------------------------------------------
def _causal_run(seed: int, x, lab):
    spec = tracing.ModuleSpec("causal", 8, 4, 16, 0.5, 1, False, seed)
    tr = tracing.trace_causal(spec, x, lab, training=True, dropout_seed=seed + 1000)
    return tr.output, tr.weights_dropped, tr.params["W_query.weight"]


def test_concurrent_seeded_traces_are_bit_identical_to_single_threaded_runs():
    x = typed_batch(8, n=6)
    lab = labels(6)
    seeds = [1, 2, 3, 4, 5, 6]
    reference = {seed: _causal_run(seed, x, lab) for seed in seeds}
    # Sanity: different seeds really give different dropout masks and weights.
    assert not torch.equal(reference[1][1], reference[2][1])

    iterations = 30
    start = threading.Barrier(len(seeds) + 1)
    stop = threading.Event()
    mismatches: list[str] = []
    errors: list[BaseException] = []
    noise_runs = [0]

    def worker(seed):
        try:
            start.wait()
            for i in range(iterations):
                got = _causal_run(seed, x, lab)
                for name, a, b in zip(
                    ("output", "dropped", "W_query"), got, reference[seed], strict=True
                ):
                    if not torch.equal(a, b):
                        mismatches.append(f"seed {seed} iteration {i}: {name} differs")
        except BaseException as exc:  # reported below
            errors.append(exc)

    def unseeded_noise():
        try:
            start.wait()
            while not stop.is_set():
                tracing.ModuleSpec("mha", 8, 8, 16, 0.5, 2, False, None).build()
                with seeded(None):
                    torch.rand(64)
                noise_runs[0] += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s,)) for s in seeds]
    noise = threading.Thread(target=unseeded_noise)
    for t in [*threads, noise]:
        t.start()
    for t in threads:
        t.join(timeout=120)
    stop.set()
    noise.join(timeout=30)

    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    assert mismatches == []
    assert noise_runs[0] > 0  # the unseeded thread really ran alongside
