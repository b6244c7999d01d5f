"""Small builders for page 6's tests (plain values in, modules and tensors out)."""

from __future__ import annotations

import torch

from attnviz.core import modules as M
from attnviz.core.trace import ModuleSpec


def mha(d_in, d_out, heads, tokens, bias=False, seed=0, dropout=0.0) -> M.MultiHeadAttention:
    """A seeded engine MultiHeadAttention (built inside the seeding helper), in eval mode."""
    spec = ModuleSpec("mha", d_in, d_out, tokens, dropout, heads, bias, seed)
    return spec.build().eval()


def random_x(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> torch.Tensor:
    """N(0, scale²) inputs from a private generator (never the global one)."""
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * scale
