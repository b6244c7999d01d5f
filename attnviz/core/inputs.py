"""Inputs: the book's 6x3 preset, and typed text turned into an input matrix ``X``.

Typed text gives ``X = token embedding + absolute position embedding`` ("chapter-2 style", not
chapter 2's numbers). Each token row and each position row is N(0, 1/(2 d_in)): ``randn(d_in)``
times :func:`row_scale`, so a row of ``X`` has squared length about 1 at every width. Pass 1's
scores ``X Xᵀ`` then sit near 1 on the diagonal and near 0 ± 1/√d_in elsewhere, and its softmax
rows mix every token instead of collapsing onto their own (N(0, 1) rows at d_in = 16 gave
self-scores near 32 and one-hot rows; see bench/defaults_search.py for how the scale was picked).

Each row is drawn from its own private generator, keyed by (seed, token id) or by
(seed, position) in disjoint key spaces, so

- the cost is O(tokens x d_in): no 50,257 x d_in table is ever built;
- the same token always gets the same token embedding, wherever it stands;
- ``X`` depends on neither ``context_length`` nor the weight seed;
- torch's global generator is never touched.
"""

from __future__ import annotations

import hashlib

import torch

from attnviz.core.tokens import Tokens

BOOK_TEXT = "Your journey starts with one step"
BOOK_WORDS = ("Your", "journey", "starts", "with", "one", "step")
BOOK_LABELS = tuple(f"{i}: {w}" for i, w in enumerate(BOOK_WORDS))
_BOOK_ROWS = (
    (0.43, 0.15, 0.89),  # Your     (x^1)
    (0.55, 0.87, 0.66),  # journey  (x^2)
    (0.57, 0.85, 0.64),  # starts   (x^3)
    (0.22, 0.58, 0.33),  # with     (x^4)
    (0.77, 0.25, 0.10),  # one      (x^5)
    (0.05, 0.80, 0.55),  # step     (x^6)
)


def book_inputs() -> torch.Tensor:
    """The chapter's 6x3 ``inputs`` tensor (a fresh copy each call)."""
    return torch.tensor(_BOOK_ROWS)


def book_batch() -> torch.Tensor:
    """``torch.stack((inputs, inputs), dim=0)``: the chapter's batch of two copies, (2, 6, 3)."""
    inputs = book_inputs()
    return torch.stack((inputs, inputs), dim=0)


def _row_key(kind: str, seed: int, index: int) -> int:
    # Token rows and position rows hash different prefixes, so their keys never collide.
    digest = hashlib.sha256(f"attnviz:{kind}:{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # a non-negative 63-bit seed


def _row(kind: str, seed: int, index: int, d_in: int) -> torch.Tensor:
    """One N(0, 1) row of width ``d_in`` from its own private generator (unscaled)."""
    generator = torch.Generator().manual_seed(_row_key(kind, seed, index))
    return torch.randn(d_in, generator=generator)


def row_scale(d_in: int) -> float:
    """The standard deviation of one entry of a token or position row: 1/√(2 d_in).

    Token and position rows are independent, so their sum (a row of ``X``) has entries of
    variance 1/d_in and an expected squared length of 1, whatever ``d_in`` is.
    """
    return (2 * d_in) ** -0.5


def _scaled_row(kind: str, seed: int, index: int, d_in: int) -> torch.Tensor:
    return _row(kind, seed, index, d_in) * row_scale(d_in)


def token_embedding(ids: tuple[int, ...], d_in: int, seed: int) -> torch.Tensor:
    """One N(0, 1/(2 d_in)) row per token, keyed by (seed, token id): shape (tokens, d_in)."""
    rows = {i: _scaled_row("token", seed, i, d_in) for i in set(ids)}
    if not ids:
        return torch.empty(0, d_in)
    return torch.stack([rows[i] for i in ids])


def position_embedding(n: int, d_in: int, seed: int) -> torch.Tensor:
    """One N(0, 1/(2 d_in)) row per 0-based position, keyed by (seed, position): (n, d_in)."""
    if n == 0:
        return torch.empty(0, d_in)
    return torch.stack([_scaled_row("position", seed, p, d_in) for p in range(n)])


def embed(tokens: Tokens | tuple[int, ...], d_in: int, seed: int) -> torch.Tensor:
    """``X`` for one text: token + position embedding, shape (1, tokens, d_in)."""
    ids = tuple(tokens.ids) if isinstance(tokens, Tokens) else tuple(tokens)
    x = token_embedding(ids, d_in, seed) + position_embedding(len(ids), d_in, seed)
    return x.unsqueeze(0)
