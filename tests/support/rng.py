"""Every test of a package that imports this fixture checks that torch's global generator is
left as the test found it, and that the seeding lock is not left held.

One Python process serves every student, so the engine never draws from (or reseeds) torch's
process-wide generator outside :func:`attnviz.core.seeding.seeded`, which forks and restores it. Each
test starts in the middle of a stream (seed 2024, one draw), as a caller would be, and fails if
the state differs afterwards. A test that draws from the global generator on purpose says so
with ``@pytest.mark.draws_global_rng``.

A package's conftest.py switches it on:

    from tests.support.rng import global_rng_untouched  # noqa: F401
"""

from __future__ import annotations

import pytest
import torch

from attnviz.core.seeding import rng_lock_held_by_me


class GlobalRngTouched(AssertionError):
    pass


def check_untouched(before: torch.Tensor, where: str) -> None:
    """Raise if torch's global generator moved since ``before``, or the seeding lock is held."""
    if not torch.equal(torch.random.get_rng_state(), before):
        raise GlobalRngTouched(f"{where} changed torch's global generator state")
    if rng_lock_held_by_me():
        raise GlobalRngTouched(f"{where} left the seeding lock held")


@pytest.fixture(autouse=True)
def global_rng_untouched(request):
    if request.node.get_closest_marker("draws_global_rng"):
        yield
        return
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(2024)
        torch.rand(5)  # a caller in the middle of its own stream
        before = torch.random.get_rng_state()
        yield
        check_untouched(before, request.node.nodeid)
