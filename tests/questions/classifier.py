"""A simple classifier that names the bug of a mystery from what the page shows, and nothing
else: the exhibit's tensors, shapes, row sums, the error text and the stated sizes."""

from __future__ import annotations

import re

import torch

from attnviz.teach import mystery as MY

FLOAT_SLACK = 1e-4  # relative: float32 rounding of a recomputation, far below VISIBLE


def _close(a: torch.Tensor, b: torch.Tensor) -> float:
    """Largest difference over the entries finite in both (inf where the pattern differs)."""
    a, b = a.double(), b.double()
    if not torch.equal(torch.isfinite(a), torch.isfinite(b)):
        return float("inf")
    finite = torch.isfinite(a)
    return float((a[finite] - b[finite]).abs().max()) if finite.any() else 0.0


def _scale(t: torch.Tensor) -> float:
    finite = t[torch.isfinite(t)]
    return max(1.0, float(finite.abs().max())) if finite.numel() else 1.0


def _softmax(scores: torch.Tensor, divisor: float) -> torch.Tensor:
    return torch.softmax(scores.double() / divisor, dim=-1)


def classify(ex: MY.Exhibit) -> str:
    return {
        "simplified": _simplified,
        "trainable": _trainable,
        "causal": _causal,
        "multihead": _multihead,
    }[ex.page](ex)


def _simplified(ex: MY.Exhibit) -> str:
    sums = dict(ex.row_sums)[MY.WEIGHTS]
    if max(abs(s - 1) for s in sums) > 1e-3:
        return "softmax_wrong_axis"
    if _close(ex.get(MY.WEIGHTS), _softmax(ex.get(MY.SCORES), 1.0)) > 1e-3:
        return "divide_by_sum"
    return MY.NONE


def _trainable(ex: MY.Exhibit) -> str:
    scores, weights = ex.get(MY.SCORES), ex.get(MY.WEIGHTS)
    scaled = _close(weights, _softmax(scores, ex.setup.d_out**0.5))
    unscaled = _close(weights, _softmax(scores, 1.0))
    return "no_scaling" if unscaled < scaled else MY.NONE


def _causal(ex: MY.Exhibit) -> str:
    if ex.error is not None:
        # The unsliced (ctx, ctx) mask shows in the error as a size ctx ≠ T: "tensor b (ctx)"
        # or a broadcast shape ending "ctx, ctx]". With T = ctx slicing changes nothing.
        ctx = ex.setup.context_length
        mask = rf"tensor b \({ctx}\)|, {ctx}, {ctx}\]"
        if ex.setup.tokens != ctx and re.search(mask, ex.error):
            return "unsliced_mask"
        return "global_transpose"
    n = ex.setup.tokens
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    scores, weights = ex.get(MY.SCORES), ex.get(MY.WEIGHTS)
    if torch.isfinite(scores[future]).any() or (weights[future] != 0).any():
        return "mask_with_zero"
    if (ex.get(MY.ROUTE1)[future] != 0).any():
        return "renormalize_without_mask"
    if not ex.setup.training and _close(ex.get(MY.DROPPED), weights) > 1e-6:
        return "dropout_in_eval"
    product = ex.get(MY.QUERIES).double() @ ex.get(MY.KEYS).double().T
    if _close(scores.masked_fill(future, 0), product.masked_fill(future, 0)) > FLOAT_SLACK * _scale(
        product
    ):
        return "global_transpose"
    return MY.NONE


def _multihead(ex: MY.Exhibit) -> str:
    s = ex.setup
    n, heads, head_dim = s.tokens, s.num_heads, s.head_dim
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)

    def split(t: torch.Tensor) -> torch.Tensor:  # (T, d_out) -> (H, T, head_dim)
        return t.double().view(n, heads, head_dim).transpose(0, 1)

    product = split(ex.get(MY.QUERIES)) @ split(ex.get(MY.KEYS)).transpose(1, 2)
    scores = ex.get(MY.SCORES)
    if _close(scores.masked_fill(future, 0), product.masked_fill(future, 0)) > FLOAT_SLACK * _scale(
        product
    ):
        return "split_without_transpose"
    weights = ex.get(MY.WEIGHTS)
    per_head = _close(weights, _softmax(scores, head_dim**0.5))
    whole = _close(weights, _softmax(scores, s.d_out**0.5))
    return "scale_by_d_out" if whole < per_head else MY.NONE
