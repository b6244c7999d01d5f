"""The one way attnviz draws from torch's global random generator.

Streamlit serves every student from one process, one thread per session, and
``torch.manual_seed`` is process-wide. Two students seeding at the same moment would silently
get each other's weights and dropout masks. So every draw from the global generator in the app
(building a module with parameters, ``nn.Dropout`` in training mode, any ``torch.rand*`` without
``generator=``) happens inside :func:`seeded`, which

1. takes one process-wide lock, so no other draw can interleave,
2. forks the generator state (``torch.random.fork_rng``), so the caller's stream is untouched,
3. seeds it (or leaves it as forked when ``seed`` is ``None``), runs the block, and restores.

A student's own draws (the first "Predict first" question and "Spot the bug" mystery of her
session, the order of a question's options) start from :func:`session_seed`, a fresh seed per
session from the operating system's generator: no two students share a first question because
the page asked for seed 0, and torch's generator is never touched. A shuffle that must repeat
(the concept check's options, per student and round) comes from :func:`permutation`, on a
generator of its own named by a string.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch

# Reentrant so that a seeded block may build a helper that seeds again (the inner block forks
# and restores inside the outer one, which keeps its own stream).
_RNG_LOCK = threading.RLock()
# How deep the calling thread is inside seeded() (RLock has no public "held by me" query).
_HELD = threading.local()


@contextmanager
def seeded(seed: int | None) -> Iterator[None]:
    """Run a block with torch's global CPU generator seeded to ``seed``, safely for threads.

    ``seed=None`` still locks and forks: use it for draws that need no particular seed (a module
    whose weights are overwritten right after construction) so they cannot disturb a seeded
    block running in another thread, nor advance the process's own stream.
    """
    with _RNG_LOCK:
        _HELD.depth = getattr(_HELD, "depth", 0) + 1
        try:
            with torch.random.fork_rng(devices=[]):
                if seed is not None:
                    # The CPU generator alone: what torch.manual_seed seeds for CPU draws, without
                    # the lazy CUDA/MPS/XPU seeding it also queues (a stack trace each, ~0.8 ms).
                    torch.default_generator.manual_seed(int(seed))
                yield
        finally:
            _HELD.depth -= 1


def rng_lock_held_by_me() -> bool:
    """True when the calling thread is inside :func:`seeded` (used by tests and assertions)."""
    return getattr(_HELD, "depth", 0) > 0


SESSION_SEEDS = 2**31  # a session's seed is one of 0 .. SESSION_SEEDS - 1
FIXED_SESSION_SEED = "ATTNVIZ_SESSION_SEED"  # set: every session starts from this seed


def session_seed() -> int:
    """A new seed for one student's session (what her questions and mysteries start from),
    from the operating system's generator: independent of torch's and of every other session.
    With ``ATTNVIZ_SESSION_SEED`` set (a live-server test), that seed instead."""
    fixed = os.environ.get(FIXED_SESSION_SEED, "").strip()
    if fixed:
        return int(fixed)
    return random.SystemRandom().randrange(SESSION_SEEDS)


def permutation(n: int, name: str) -> tuple[int, ...]:
    """A shuffle of ``range(n)`` fixed by ``name`` (e.g. a student, a round and a question):
    the same name gives the same order in every process and replica, and different names
    independent orders. It draws from a generator of its own, seeded from a SHA-256 of the
    name, so it needs no lock and leaves the global generator alone."""
    seed = int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "little")
    generator = torch.Generator().manual_seed(seed)
    return tuple(int(i) for i in torch.randperm(n, generator=generator))
