"""Page 6's engine code never draws from (or moves) torch's global generator: every module with
parameters is built inside ``seeded`` (the same property tests/engine/test_seeding.py asserts for
the rest of the engine)."""

from __future__ import annotations

import pytest
import torch

from attnviz import checks as C
from attnviz import figures as F
from attnviz.seeding import rng_lock_held_by_me
from bench import implementations as impl

from .helpers import mha, random_x

SQUARE, WIDE = mha(8, 8, 2, 6, seed=1, dropout=0.5), mha(6, 8, 2, 6, seed=1, dropout=0.5)
X8, X6 = random_x((1, 5, 8), 0), random_x((1, 5, 6), 0)

CALLS = {
    "check.same_output_as_mha": lambda: C.same_output_as_mha(SQUARE, X8, SQUARE(X8), "t"),
    "check.torch_mha_weights_match": lambda: C.torch_mha_weights_match(SQUARE, X8),
    "check.torch_mha_weights_match[n/a]": lambda: C.torch_mha_weights_match(WIDE, X6),
    "check.torch_mha_forward": lambda: C.torch_mha_forward(SQUARE, X8),
    "figures.timing_bars": lambda: F.timing_bars(
        ["a", "b"], [1.0, 2.0], [1.0, 2.0], title="t", low_ms=[0.9, 1.5], high_ms=[1.1, 2.5]
    ),
    "bench.build_variants": lambda: impl.build_variants(SQUARE),
    "bench.side_by_side": lambda: impl.side_by_side(SQUARE, X8),
    "bench.benchmark": lambda: impl.benchmark((1, 4, 8, 8, 2, True), seconds_per_impl=0.01),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_page_6_engine_code_leaves_the_global_generator_unchanged(name):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(2024)
        torch.rand(5)  # a caller in the middle of its own stream
        before = torch.random.get_rng_state()
        CALLS[name]()
        assert torch.equal(torch.random.get_rng_state(), before), name
        assert not rng_lock_held_by_me()


def test_the_benchmark_builds_the_same_module_every_time():
    a = impl.benchmark((1, 4, 8, 8, 2, False), seconds_per_impl=0.01)
    b = impl.benchmark((1, 4, 8, 8, 2, False), seconds_per_impl=0.01)
    assert [t.check.max_diff for t in a.timings] == [t.check.max_diff for t in b.timings]
