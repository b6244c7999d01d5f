"""The chapter's attention modules, written so that a student can copy them as they are.

Names, constructor signatures, parameter names and the order parameters are created in follow
chapter 3, so ``torch.manual_seed(s)`` followed by construction gives the chapter's numbers.

Each ``forward`` calls a shared function (``self_attention``, ``causal_attention``,
``multi_head_attention``) that the app's traces call too, with a ``record`` callback; the modules
pass ``None``. One code path computes each number, so the picture can never disagree with the
code. The shared functions are built from the small steps below, one idea per line.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn

Record = Callable[[str, torch.Tensor], None] | None


# --- the steps ----------------------------------------------------------------------------
def attention_scores(queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """omega = Q K^T: every query against every key, over the last two dims."""
    return queries @ keys.transpose(-2, -1)  # (..., T, T)


def mask_future(attn_scores: torch.Tensor, mask: torch.Tensor, num_tokens: int) -> torch.Tensor:
    """Hide future keys: -inf becomes weight exactly 0 after the softmax. In place, as the book."""
    return attn_scores.masked_fill_(mask.bool()[:num_tokens, :num_tokens], -torch.inf)


def key_width(keys: torch.Tensor) -> int:
    """d_k: the width of one key, the last dim (head_dim once heads are split)."""
    return keys.shape[-1]


def scale_scores(attn_scores: torch.Tensor, d_k: int) -> torch.Tensor:
    """Divide by sqrt(d_k) so the softmax does not saturate and keeps useful gradients."""
    return attn_scores / d_k**0.5


def softmax_rows(scores: torch.Tensor) -> torch.Tensor:
    """Each query's row becomes weights that are positive and sum to 1."""
    return torch.softmax(scores, dim=-1)


def apply_dropout(attn_weights: torch.Tensor, dropout: nn.Module) -> torch.Tensor:
    """Drop weights at random in training mode (scaling the rest by 1/(1-p)); identity in eval."""
    return dropout(attn_weights)


def renormalize_causal(attn_weights: torch.Tensor, mask: torch.Tensor, num_tokens: int):
    """The other masking route: zero the future weights after the softmax, then renormalize."""
    masked_simple = attn_weights * (1 - mask[:num_tokens, :num_tokens])
    return masked_simple / masked_simple.sum(dim=-1, keepdim=True)


def context_vectors(attn_weights: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """z = alpha V: each output is a weighted sum of the value vectors."""
    return attn_weights @ values


def split_heads(x: torch.Tensor, num_heads: int, head_dim: int) -> torch.Tensor:
    """(b, T, d_out) -> (b, T, H, head_dim) -> (b, H, T, head_dim): one T x head_dim per head."""
    b, num_tokens, _ = x.shape
    return x.view(b, num_tokens, num_heads, head_dim).transpose(1, 2)


def merge_heads(context_vec: torch.Tensor, d_out: int) -> torch.Tensor:
    """(b, H, T, head_dim) -> (b, T, H, head_dim) -> (b, T, d_out); ``contiguous`` first,
    because ``view`` needs memory laid out in the new order and the transpose did not move it."""
    b, _, num_tokens, _ = context_vec.shape
    return context_vec.transpose(1, 2).contiguous().view(b, num_tokens, d_out)


# --- the shared forward functions ---------------------------------------------------------
def attend(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: nn.Module | None = None,
    record: Record = None,
) -> torch.Tensor:
    """Scaled dot-product attention, the chapter's way, over the last two dims."""
    attn_scores = attention_scores(queries, keys)  # (..., T, T)
    if mask is not None:
        attn_scores = mask_future(attn_scores, mask, queries.shape[-2])
    scaled = scale_scores(attn_scores, key_width(keys))
    attn_weights = softmax_rows(scaled)  # (..., T, T), rows sum to 1
    if record:
        record("attn_scores", attn_scores)
        record("scaled_scores", scaled)
        record("attn_weights", attn_weights)
    if dropout is not None:
        attn_weights = apply_dropout(attn_weights, dropout)  # identity in eval mode
        if record:
            record("dropped_weights", attn_weights)
    context_vec = context_vectors(attn_weights, values)  # (..., T, d_v)
    if record:
        record("context_vec", context_vec)
    return context_vec


def _record_all(record: Record, **tensors: torch.Tensor) -> None:
    if record:
        for name, tensor in tensors.items():
            record(name, tensor)


def self_attention(module: nn.Module, x: torch.Tensor, record: Record = None) -> torch.Tensor:
    """``SelfAttention_v1`` (raw parameters, ``x @ W``) and ``_v2`` (``nn.Linear``, ``x W^T``)."""
    if isinstance(module.W_key, nn.Linear):
        keys = module.W_key(x)
        queries = module.W_query(x)
        values = module.W_value(x)
    else:
        keys = x @ module.W_key
        queries = x @ module.W_query
        values = x @ module.W_value
    _record_all(record, queries=queries, keys=keys, values=values)
    return attend(queries, keys, values, record=record)


def causal_attention(module: nn.Module, x: torch.Tensor, record: Record = None) -> torch.Tensor:
    """``CausalAttention``: x (b, T, d_in) -> context (b, T, d_out)."""
    keys = module.W_key(x)  # (b, T, d_out)
    queries = module.W_query(x)
    values = module.W_value(x)
    _record_all(record, queries=queries, keys=keys, values=values)
    return attend(queries, keys, values, module.mask, module.dropout, record)


def multi_head_attention(module: nn.Module, x: torch.Tensor, record: Record = None) -> torch.Tensor:
    """``MultiHeadAttention``: one projection per role, split into heads, attend, merge, project."""
    keys = module.W_key(x)  # (b, T, d_out)
    queries = module.W_query(x)
    values = module.W_value(x)
    _record_all(record, queries=queries, keys=keys, values=values)

    keys = split_heads(keys, module.num_heads, module.head_dim)  # (b, H, T, head_dim)
    queries = split_heads(queries, module.num_heads, module.head_dim)
    values = split_heads(values, module.num_heads, module.head_dim)
    _record_all(record, queries_heads=queries, keys_heads=keys, values_heads=values)

    context_vec = attend(queries, keys, values, module.mask, module.dropout, record)
    context_vec = merge_heads(context_vec, module.d_out)  # (b, T, d_out)
    output = module.out_proj(context_vec)  # mixes the heads' outputs
    _record_all(record, merged=context_vec, output=output)
    return output


# --- the modules --------------------------------------------------------------------------
class SelfAttention_v1(nn.Module):
    """Trainable self-attention with raw weight matrices, initialised U[0, 1) as in the book."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        return self_attention(self, x)


class SelfAttention_v2(nn.Module):
    """The same with ``nn.Linear`` layers: better initialisation, optional bias."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        return self_attention(self, x)


class CausalAttention(nn.Module):
    """Single-head causal attention with dropout on the weights; takes batches (b, T, d_in)."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        # A buffer: it moves with the module (.to(device), state_dict) but is never trained.
        self.register_buffer(
            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, x):
        return causal_attention(self, x)


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
        return torch.cat([head(x) for head in self.heads], dim=-1)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with weight splits: ``d_out`` is the total width, ``d_out //
    num_heads`` per head; ``out_proj`` (with a bias) combines the heads."""

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
        return multi_head_attention(self, x)
