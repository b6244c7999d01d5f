"""An independent recomputation of what the questions ask about: the chapter's modules
(attnviz/core/modules.py) built and run directly with the same seeds, their intermediates read
with forward hooks on the module's own ``dropout`` (never from a trace, never through
attnviz.teach.prepare's traces or attnviz.teach.questions)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnviz.core import book as BK
from attnviz.core import modules as M
from attnviz.core.seeding import seeded
from attnviz.core.settings import Settings
from attnviz.teach import prepare


@dataclass(frozen=True)
class Reference:
    raw: torch.Tensor  # (H, T, T) scores before any mask
    weights: torch.Tensor  # (H, T, T) softmax, before dropout
    dropped: torch.Tensor | None  # (H, T, T) after dropout in training mode (causal: the lab)
    p: float
    split_shape: tuple[int, ...] | None = None


def _inputs(text: str, s: Settings, book: bool, causal: bool) -> torch.Tensor:
    """X (1, T, d_in): the page's inputs (the embedding is not what these tests check)."""
    x = prepare.prepare(text, s, book).x
    return x[:, : s.context_length] if causal else x


def _through(module, x, training: bool, dropout_seed: int):
    """Run the module; return what its dropout saw and gave (the weights before and after)."""
    seen = {}

    def hook(_, args, out):
        seen["before"], seen["after"] = args[0].detach().clone(), out.detach().clone()

    handle = module.dropout.register_forward_hook(hook)
    module.train(training)
    try:
        with torch.no_grad():
            if training:  # dropout draws from the global generator: inside the helper
                with seeded(dropout_seed):
                    module(x)
            else:
                module(x)
    finally:
        handle.remove()
    return seen["before"], seen["after"]


def reference(page: str, text: str, s: Settings, book: bool = False) -> Reference:
    x = _inputs(text, s, book, page in ("causal", "multihead"))
    with torch.no_grad():
        if page == "simplified":
            inputs = x[0]
            raw = inputs @ inputs.T
            return Reference(raw[None], torch.softmax(raw, dim=-1)[None], None, 0.0)
        if page == "trainable":
            d_in, d_out, seed = (
                (BK.D_IN, BK.D_OUT, BK.SEED_V2) if book else (s.d_in, s.d_out, s.seed_weights)
            )
            with seeded(seed):
                module = M.SelfAttention_v2(d_in, d_out, qkv_bias=s.qkv_bias and not book)
            q, k = module.W_query(x[0]), module.W_key(x[0])
            raw = q @ k.T
            return Reference(raw[None], torch.softmax(raw / d_out**0.5, dim=-1)[None], None, 0.0)
    n = x.shape[1]
    if page == "causal":
        if book:
            d_in, d_out, ctx, p, bias, seed = (
                BK.D_IN,
                BK.D_OUT,
                BK.CONTEXT_LENGTH,
                0.0,
                False,
                BK.SEED_V2,
            )
        else:
            d_in, d_out, ctx, p, bias, seed = (
                s.d_in,
                s.d_out,
                s.context_length,
                s.dropout,
                s.qkv_bias,
                s.seed_weights,
            )
        with seeded(seed):
            module = M.CausalAttention(d_in, d_out, ctx, p, bias)
        before, _ = _through(module, x, False, s.seed_dropout)
        with torch.no_grad():
            raw = (module.W_query(x) @ module.W_key(x).transpose(1, 2))[0]
        dropped, rate = None, p
        if book:  # the chapter's example: torch.manual_seed(123); nn.Dropout(0.5)(attn_weights)
            rate = BK.DROPOUT_EXAMPLE_P
            with torch.no_grad(), seeded(BK.SEED_DROPOUT):
                dropped = torch.nn.functional.dropout(before[0], rate, training=True)[None]
        elif p > 0:  # the dropout lab: training mode at the sidebar's rate and seed
            dropped = _through(module, x, True, s.seed_dropout)[1]
        return Reference(raw[None], before, dropped, rate)
    if page == "multihead":
        if book:
            d_in, d_out, ctx, p, heads, bias = BK.D_IN, BK.D_OUT, BK.CONTEXT_LENGTH, 0.0, 2, False
            seed = BK.SEED_MULTIHEAD
        else:
            d_in, d_out, ctx, p, heads, bias = (
                s.d_in,
                s.d_out,
                s.context_length,
                s.dropout,
                s.num_heads,
                s.qkv_bias,
            )
            seed = s.seed_weights
        with seeded(seed):
            module = M.MultiHeadAttention(d_in, d_out, ctx, p, heads, bias)
        training = s.training and not book
        before, after = _through(module, x, training, s.seed_dropout)
        head_dim = d_out // heads
        with torch.no_grad():
            split = module.W_query(x).view(1, n, heads, head_dim).transpose(1, 2)
            keys = module.W_key(x).view(1, n, heads, head_dim).transpose(1, 2)
            raw = (split @ keys.transpose(2, 3))[0]
        dropped = after[0] if training and p > 0 else None
        return Reference(raw, before[0], dropped, p, tuple(split.shape))
    raise ValueError(page)
