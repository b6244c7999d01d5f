"""The chapter's attention modules, written so that a student can copy them as they are.

Names, constructor signatures, parameter names and the order parameters are created in follow
chapter 3, so ``torch.manual_seed(s)`` followed by construction gives the chapter's numbers.
This file imports only torch and the standard library: a copy of it runs on its own.

Each ``forward`` holds its whole computation, top to bottom, in the book's order and names.
The app draws the same lines: ``tap(name=tensor)`` is a recording point that does nothing
unless :func:`recording` is active in the current context (each thread, hence each web
session, has its own), so the traced forward and the plain one are one and the same code.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch
import torch.nn as nn

# --- recording points -----------------------------------------------------------------------
_RECORDER: ContextVar[dict[str, list[torch.Tensor]] | None] = ContextVar(
    "attnviz_recorder", default=None
)


def tap(**tensors: torch.Tensor) -> None:
    """Record named intermediates when a recorder is active here; otherwise do nothing."""
    recorder = _RECORDER.get()
    if recorder is not None:
        for name, tensor in tensors.items():
            recorder.setdefault(name, []).append(tensor)


@contextmanager
def recording() -> Iterator[dict[str, list[torch.Tensor]]]:
    """Collect every ``tap`` made inside the block: name -> tensors, in the order they came
    (one per head for ``MultiHeadAttentionWrapper``, whose heads run one after another)."""
    recorder: dict[str, list[torch.Tensor]] = {}
    token = _RECORDER.set(recorder)
    try:
        yield recorder
    finally:
        _RECORDER.reset(token)


# --- pass 1: no trainable weights -------------------------------------------------------------
def simplified_attention(inputs):
    """Every token against every token: scores X Xᵀ, row softmax, context = weights @ X."""
    attn_scores = inputs @ inputs.T  # (T, T): dot product of each pair of tokens
    attn_weights = torch.softmax(attn_scores, dim=-1)  # each query's row sums to 1
    tap(attn_scores=attn_scores, attn_weights=attn_weights)
    all_context_vecs = attn_weights @ inputs  # (T, d_in)
    return all_context_vecs


# --- pass 2: trainable weights ----------------------------------------------------------------
class SelfAttention_v1(nn.Module):
    """Trainable self-attention with raw weight matrices, initialised U[0, 1) as in the book."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        keys = x @ self.W_key  # (T, d_out)
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.T  # (T, T): omega
        # Scale by sqrt(d_k) so the softmax does not saturate and keeps useful gradients.
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        context_vec = attn_weights @ values  # (T, d_out)

        tap(queries=queries, keys=keys, values=values)  # what the app draws, nothing otherwise
        tap(attn_scores=attn_scores, attn_weights=attn_weights)
        return context_vec


class SelfAttention_v2(nn.Module):
    """The same with ``nn.Linear`` layers: better initialisation, optional bias."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)  # (T, d_out)
        queries = self.W_query(x)
        values = self.W_value(x)
        tap(queries=queries, keys=keys, values=values)

        attn_scores = queries @ keys.T  # (T, T): omega
        # Scale by sqrt(d_k) so the softmax does not saturate and keeps useful gradients.
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        tap(attn_scores=attn_scores, attn_weights=attn_weights)

        context_vec = attn_weights @ values  # (T, d_out)
        return context_vec


# --- pass 3: causal attention with dropout ----------------------------------------------------
class CausalAttention(nn.Module):
    """Single-head causal attention with dropout on the weights; takes batches (b, T, d_in)."""

    mask: torch.Tensor  # (context_length, context_length), registered as a buffer below

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        mask = torch.triu(torch.ones(context_length, context_length), diagonal=1)  # 1: future
        # A buffer: it moves with the module (.to(device), state_dict) but is never trained.
        self.register_buffer("mask", mask)

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)  # (b, T, d_out)
        queries = self.W_query(x)
        values = self.W_value(x)

        attn_scores = queries @ keys.transpose(1, 2)  # (b, T, T): batch stays first
        # Hide the future keys: -inf becomes a weight of exactly 0 after the softmax.
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        tap(queries=queries, keys=keys, values=values)  # what the app draws, before dropout
        tap(attn_scores=attn_scores, attn_weights=attn_weights)
        attn_weights = self.dropout(attn_weights)  # identity in eval mode
        tap(weights_dropped=attn_weights)

        context_vec = attn_weights @ values  # (b, T, d_out)
        return context_vec


def renormalized_causal_weights(queries, keys, mask):
    """The other masking route: softmax over every key, zero the future, renormalise each row.

    ``mask`` is the module's buffer (1 above the diagonal); it gives the same weights as
    masking the scores with -inf first.
    """
    num_tokens = queries.shape[-2]
    attn_scores = queries @ keys.transpose(-2, -1)  # (..., T, T), no mask yet
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
    masked_simple = attn_weights * (1 - mask[:num_tokens, :num_tokens])  # future weights -> 0
    row_sums = masked_simple.sum(dim=-1, keepdim=True)
    masked_simple_norm = masked_simple / row_sums  # each row sums to 1 again
    return masked_simple_norm


# --- pass 4: multi-head attention -------------------------------------------------------------
class MultiHeadAttentionWrapper(nn.Module):
    """``num_heads`` independent ``CausalAttention`` heads, concatenated: output width
    ``d_out * num_heads`` (``d_out`` is per head here, and there is no output projection)."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            [
                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                for _ in range(num_heads)
            ]
        )

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)  # (b, T, num_heads * d_out)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with weight splits: ``d_out`` is the total width, ``d_out //
    num_heads`` per head; ``out_proj`` (with a bias) combines the heads."""

    mask: torch.Tensor  # (context_length, context_length), registered as a buffer below

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)  # (b, T, d_out)
        queries = self.W_query(x)
        values = self.W_value(x)
        tap(queries=queries, keys=keys, values=values)

        # Split the last dim into heads, then bring heads forward: (b, H, T, head_dim).
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)  # (b, H, T, T): every head at once
        # Hide the future keys: -inf becomes a weight of exactly 0 after the softmax.
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        tap(attn_scores=attn_scores, attn_weights=attn_weights)
        attn_weights = self.dropout(attn_weights)  # identity in eval mode
        tap(weights_dropped=attn_weights)

        context_vec = attn_weights @ values  # (b, H, T, head_dim)
        tap(context_heads=context_vec)
        # Merge the heads back: (b, T, H, head_dim), then (b, T, d_out). view needs memory in
        # the new order, and the transpose did not move it: hence contiguous() first.
        context_vec = context_vec.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)
        tap(context=context_vec)
        context_vec = self.out_proj(context_vec)  # mixes the heads' outputs
        return context_vec
