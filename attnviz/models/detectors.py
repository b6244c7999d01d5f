"""What a head does, measured: one set of scores for every attention head the app shows.

Every detector is the same measurement with a different *expected key*: for each query
position ``i`` it names one key position ``k(i)`` (or none), and the head's score is the mean
attention weight on that key, over the queries that have one:

    score = mean over queries i with a key of  attn_weights[i, k(i)]

A score is a share of attention, between 0 and 1: 1 when every such query puts all its weight on
its expected key; an even share gives about ``mean(1 / (i + 1))``.

- **previous token**: ``k(i) = i - 1``, for queries ``1 .. T-1``.
- **current token**: ``k(i) = i``, for queries ``1 .. T-1`` (query 0 sees only itself, so it
  is left out of all three position rules).
- **first token**: ``k(i) = 0``, for queries ``1 .. T-1``.
- **induction**: the token right after the earlier occurrence of the query's own token. On a
  sequence whose last ``L`` tokens repeat the ``L`` before them, for the queries of the repeat
  ``i = T-L .. T-1``: ``k(i) = i - L + 1`` (:func:`repeat_keys`). From token ids alone
  (:func:`induction_keys`): ``k(i) = j + 1`` with ``j < i`` the most recent earlier position
  holding the same id; queries whose token has not occurred before have no key.

Weights come as ``(..., T, T)``: ``(heads, T, T)``, ``(layers, heads, T, T)``, or with a batch
of sequences in front. A detector returns one score per head: the leading dimensions, without
the batch when there is one (``batch=True``: the first dimension is the batch, and the mean is
over every query of every sequence). Computed in float64; the arrays are numpy.
"""

from __future__ import annotations

import numpy as np
import torch

Tensor = torch.Tensor
NO_KEY = -1  # a query with no expected key

DETECTORS: dict[str, str] = {
    "previous": "mean weight on the previous token (key i − 1), queries 1 … T−1",
    "current": "mean weight on itself (key i), queries 1 … T−1",
    "first": "mean weight on the first token (key 0), queries 1 … T−1",
    "induction": "mean weight on the token right after the earlier occurrence of its own token",
}


# --- expected keys ----------------------------------------------------------------------------
def previous_keys(num_tokens: int) -> Tensor:
    """(T,): ``i - 1`` for queries 1 … T−1; query 0 has none."""
    keys = torch.arange(num_tokens) - 1
    return torch.where(keys >= 0, keys, NO_KEY)


def current_keys(num_tokens: int) -> Tensor:
    """(T,): ``i`` for queries 1 … T−1; query 0 has none."""
    keys = torch.arange(num_tokens)
    keys[:1] = NO_KEY
    return keys


def first_keys(num_tokens: int) -> Tensor:
    """(T,): ``0`` for queries 1 … T−1; query 0 has none."""
    keys = torch.zeros(num_tokens, dtype=torch.long)
    keys[:1] = NO_KEY
    return keys


def repeat_keys(num_tokens: int, repeat: Tensor | int) -> Tensor:
    """Induction keys of sequences whose last ``L`` tokens repeat the ``L`` before them.

    ``repeat``: ``L`` (an int) or one ``L`` per sequence, shape (b,). Returns (T,) or (b, T):
    ``i - L + 1`` for the queries of the repeat, ``i >= T - L``; none before.
    """
    lengths = torch.as_tensor(repeat, dtype=torch.long)
    i = torch.arange(num_tokens)
    if lengths.dim() == 1:
        i = i.expand(lengths.shape[0], num_tokens)
        lengths = lengths[:, None]
    if bool((lengths < 1).any()) or bool((2 * lengths > num_tokens).any()):
        raise ValueError(f"a repeat of L tokens needs 1 <= L <= T/2 = {num_tokens // 2}")
    return torch.where(i >= num_tokens - lengths, i - lengths + 1, NO_KEY)


def induction_keys(token_ids) -> Tensor:
    """Induction keys from token ids: (T,) or (b, T) ids -> the same shape of key positions.

    For query ``i``: ``j + 1``, where ``j < i`` is the most recent earlier position holding the
    same token; :data:`NO_KEY` when the token has not occurred before.
    """
    ids = torch.as_tensor(token_ids, dtype=torch.long)
    if ids.dim() not in (1, 2):
        raise ValueError("token_ids must be (T,) or (b, T)")
    rows = ids if ids.dim() == 2 else ids[None]
    keys = torch.full_like(rows, NO_KEY)
    for b, row in enumerate(rows.tolist()):
        last_seen: dict[int, int] = {}
        for i, token in enumerate(row):
            if token in last_seen:
                keys[b, i] = last_seen[token] + 1
            last_seen[token] = i
    return keys if ids.dim() == 2 else keys[0]


# --- the one measurement ----------------------------------------------------------------------
def expected_key_score(weights: Tensor, keys: Tensor, batch: bool = False) -> np.ndarray:
    """Mean attention weight on each query's expected key, one score per head.

    ``weights``: (..., T, T); with ``batch=True`` the first dimension is the batch, and
    ``keys`` is (b, T) (or (T,), the same for every sequence); otherwise ``keys`` is (T,).
    Queries whose key is :data:`NO_KEY` are left out. NaN when no query has a key.
    """
    w = weights.detach().to(torch.float64)
    T = w.shape[-1]
    keys = torch.as_tensor(keys, dtype=torch.long)
    if keys.shape[-1] != T or w.shape[-2] != T:
        raise ValueError(f"weights end in {tuple(w.shape[-2:])}, keys have {keys.shape[-1]}")
    if bool((keys >= T).any()) or bool((keys < NO_KEY).any()):
        raise ValueError(f"expected keys must lie in 0 … {T - 1} (or {NO_KEY}: none)")
    if not batch:
        w = w[None]
        if keys.dim() != 1:
            raise ValueError("without a batch, keys must be (T,)")
    if w.dim() < 3:
        raise ValueError("weights must have a query and a key dimension")
    b = w.shape[0]
    keys = keys.expand(b, T) if keys.dim() == 1 else keys
    if keys.shape[0] != b:
        raise ValueError(f"{keys.shape[0]} rows of keys for a batch of {b}")
    has_key = keys >= 0  # (b, T)
    head_dims = w.shape[1:-2]
    # (b, T) -> (b, 1, …, 1, T, 1): the same key for every head
    index = keys.clamp(min=0).view(b, *([1] * len(head_dims)), T, 1)
    on_key = w.gather(-1, index.expand(b, *head_dims, T, 1)).squeeze(-1)  # (b, …, T)
    mask = has_key.view(b, *([1] * len(head_dims)), T).to(torch.float64)
    count = float(has_key.sum())
    if count == 0:
        return np.full(tuple(head_dims), np.nan)
    total = (on_key * mask).sum(dim=-1).sum(dim=0)  # (…,)
    return (total / count).numpy()


def previous_token_score(weights: Tensor, batch: bool = False) -> np.ndarray:
    """Per head: mean weight on key ``i - 1`` over queries 1 … T−1."""
    return expected_key_score(weights, previous_keys(weights.shape[-1]), batch)


def current_token_score(weights: Tensor, batch: bool = False) -> np.ndarray:
    """Per head: mean weight on key ``i`` (the query itself) over queries 1 … T−1."""
    return expected_key_score(weights, current_keys(weights.shape[-1]), batch)


def first_token_score(weights: Tensor, batch: bool = False) -> np.ndarray:
    """Per head: mean weight on key 0 over queries 1 … T−1."""
    return expected_key_score(weights, first_keys(weights.shape[-1]), batch)


def induction_score(
    weights: Tensor, *, token_ids=None, repeat: Tensor | int | None = None, batch: bool = False
) -> np.ndarray:
    """Per head: mean weight on the token right after the earlier occurrence of the query's own
    token. Give ``repeat`` (``L``, or one per sequence) for sequences whose last ``L`` tokens
    repeat the ``L`` before them (queries of the repeat only), or ``token_ids`` to find the
    earlier occurrences from the ids (every query whose token occurred before)."""
    if (token_ids is None) == (repeat is None):
        raise ValueError("give exactly one of token_ids and repeat")
    if token_ids is not None:
        keys = induction_keys(token_ids)
    else:
        assert repeat is not None
        keys = repeat_keys(weights.shape[-1], repeat)
    return expected_key_score(weights, keys, batch)


def all_scores(
    weights: Tensor, *, token_ids=None, repeat: Tensor | int | None = None, batch: bool = False
) -> dict[str, np.ndarray]:
    """Every detector of :data:`DETECTORS` on the same weights: name -> per-head scores."""
    return {
        "previous": previous_token_score(weights, batch),
        "current": current_token_score(weights, batch),
        "first": first_token_score(weights, batch),
        "induction": induction_score(weights, token_ids=token_ids, repeat=repeat, batch=batch),
    }


# --- naming a head from its scores ------------------------------------------------------------
NAMES = {
    "previous": "previous-token head",
    "current": "current-token head",
    "first": "first-token head",
    "induction": "induction head",
    "duplicate": "duplicate-token head",  # measured inside a repeat (page 8), not a DETECTOR
}
NAMED_AT = 0.5  # a head is named after a detector only when that score reaches this


def name_of(scores: dict[str, float], threshold: float = NAMED_AT) -> str | None:
    """The name of a head whose highest score reaches ``threshold``, with that score: e.g.
    ``"previous-token head (score 0.77)"``; None when no score reaches it."""
    measured = {k: v for k, v in scores.items() if k in NAMES and np.isfinite(v)}
    if not measured:
        return None
    best = max(measured, key=lambda k: measured[k])
    if measured[best] < threshold:
        return None
    return f"{NAMES[best]} (score {measured[best]:.2f})"


def random_repeated_tokens(
    length: int, vocab_size: int, seed: int, low: int = 0, copies: int = 2
) -> Tensor:
    """``length`` random token ids in ``low … vocab_size-1`` from a private generator, repeated
    ``copies`` times: the usual probe for induction heads. (copies·length,) long."""
    if length < 1 or copies < 2 or not 0 <= low < vocab_size:
        raise ValueError("need length >= 1, copies >= 2 and 0 <= low < vocab_size")
    gen = torch.Generator().manual_seed(int(seed))
    first = torch.randint(low, vocab_size, (length,), generator=gen)
    return first.repeat(copies)


# --- do the heads differ? ---------------------------------------------------------------------
def head_distances(weights: Tensor) -> np.ndarray:
    """(H, T, T) weights -> (H, H): the mean total-variation distance between two heads' rows,

        d(g, h) = mean over queries i of  ½ Σ_j |w_g[i, j] − w_h[i, j]|

    0 when two heads attend alike, 1 when every row puts its weight on different keys. Every
    row counts; causal weights' row 0 is the same for every head (all on token 0), so a caller
    that wants it left out passes ``weights[:, 1:]``."""
    w = weights.detach().to(torch.float64)
    if w.dim() != 3:
        raise ValueError("weights must be (heads, T, T)")
    # One head against all at a time: (H, T, T) in memory, not (H, H, T, T) (32 heads of 256
    # tokens would be half a gigabyte at once).
    rows = [((w[g] - w).abs().sum(dim=-1) / 2).mean(dim=-1) for g in range(w.shape[0])]
    return torch.stack(rows).numpy() if rows else np.zeros((0, 0))


def row_peaks(weights: Tensor) -> np.ndarray:
    """(..., T, T) -> (..., T): each row's largest weight."""
    return weights.detach().to(torch.float64).amax(dim=-1).numpy()
