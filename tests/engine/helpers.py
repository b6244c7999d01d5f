"""Small builders shared by the engine tests (plain values in, tensors out)."""

from __future__ import annotations

from contextlib import contextmanager

import torch

from attnviz.core.inputs import embed

# Two different six-token texts (token ids), as the app's batch of two would hold.
IDS_A = (7120, 7002, 4940, 351, 530, 2239)
IDS_B = (464, 2068, 7586, 21831, 18045, 625)


def typed_batch(d_in: int = 16, seed: int = 123, n: int = 6) -> torch.Tensor:
    """A (2, n, d_in) batch embedded the app's way from two different token sequences."""
    return torch.cat([embed(IDS_A[:n], d_in, seed), embed(IDS_B[:n], d_in, seed)], dim=0)


def random_x(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """N(0, 1) inputs from a private generator (never the global one)."""
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def labels(n: int) -> tuple[str, ...]:
    return tuple(f"{i}: t{i}" for i in range(n))


@contextmanager
def book_seed(seed: int):
    """``torch.manual_seed(seed)`` exactly as the chapter calls it, without leaking the state."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
