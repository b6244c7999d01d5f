"""The model that grows induction heads: the chapter's ``MultiHeadAttention``, stacked.

Two layers of the chapter's own causal ``MultiHeadAttention`` (unchanged, dropout 0), with token
and position embeddings in front, a residual add around each layer and an unembedding at the
end. No MLP, no LayerNorm, no dropout: attention is the only thing that moves information
between positions, so whatever the model learns about the sequence, its heads have to do.

    x = tok_emb(ids) + pos_emb(positions)            # (b, T, d_model)
    x = x + attention_0(x)                           # layer 0 adds to each token's vector
    x = x + attention_1(x)                           # layer 1 reads what layer 0 wrote
    logits = out_head(x)                             # (b, T, vocab)

The one-layer control is the same design with one layer: it has no earlier layer to tell it
which token came before, so it cannot form an induction head (it can only learn positions,
which is why the training data varies where the repeat starts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import cast

import torch
import torch.nn as nn

from attnviz.core import modules as M
from attnviz.core.seeding import seeded

Tensor = torch.Tensor


@dataclass(frozen=True)
class ModelConfig:
    """The sizes of one model; validated here, once."""

    layers: int = 2
    vocab: int = 64
    context: int = 24
    d_model: int = 64
    num_heads: int = 4

    def __post_init__(self) -> None:
        for name in ("layers", "vocab", "context", "d_model", "num_heads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive whole number, not {value!r}")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by {self.num_heads} heads")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads


class InductionModel(nn.Module):
    """Embeddings, ``layers`` x (x + MultiHeadAttention(x)), unembedding."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.context, cfg.d_model)
        self.blocks = nn.ModuleList(
            [
                M.MultiHeadAttention(
                    d_in=cfg.d_model,
                    d_out=cfg.d_model,
                    context_length=cfg.context,
                    dropout=0.0,
                    num_heads=cfg.num_heads,
                )
                for _ in range(cfg.layers)
            ]
        )
        self.out_head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)

    def embed(self, ids: Tensor) -> Tensor:
        """(b, T) token ids -> (b, T, d_model): what layer 0 sees."""
        positions = torch.arange(ids.shape[-1], device=ids.device)
        return self.tok_emb(ids) + self.pos_emb(positions)

    def forward(self, ids: Tensor) -> Tensor:
        x = self.embed(ids)  # (b, T, d_model)
        for att in self.blocks:
            x = x + att(x)  # the residual: each layer adds to the token's vector
        return self.out_head(x)  # (b, T, vocab)


def build_model(cfg: ModelConfig, seed: int | None) -> InductionModel:
    """Construction draws the initial weights: inside the project's seeding helper only."""
    with seeded(seed):
        return InductionModel(cfg)


def parameters_of(model: InductionModel) -> dict[str, Tensor]:
    """The trained tensors by name (the causal masks are buffers, rebuilt by construction)."""
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def model_from(cfg: ModelConfig, params: Mapping[str, Tensor]) -> InductionModel:
    """A model holding ``params`` (float32), in eval mode, frozen: safe to share read-only."""
    model = build_model(cfg, None)  # the random draws are overwritten just below
    names = {name for name, _ in model.named_parameters()}
    if set(params) != names:
        missing, extra = sorted(names - set(params)), sorted(set(params) - names)
        raise ValueError(f"parameters do not fit the model: missing {missing}, unexpected {extra}")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if tuple(params[name].shape) != tuple(p.shape):
                raise ValueError(f"{name} has shape {tuple(params[name].shape)}, not {p.shape}")
            p.copy_(params[name].to(torch.float32))
    model.eval()
    model.requires_grad_(False)
    return model


# --- a forward that keeps what the page shows ---------------------------------------------------
@dataclass(frozen=True)
class Run:
    """One forward: the logits, every layer's attention weights and every layer's input."""

    logits: Tensor  # (b, T, vocab)
    attn_weights: Tensor  # (b, layers, heads, T, T)
    layer_inputs: tuple[Tensor, ...]  # per layer: the residual stream it reads, (b, T, d_model)


def run(
    model: InductionModel,
    ids: Tensor,
    ablate: Iterable[tuple[int, int]] = (),
    where: Tensor | None = None,
) -> Run:
    """The model's forward with each layer's weights read off the chapter module's own ``tap``
    points, and optionally some heads zeroed.

    ``ablate``: (layer, head) pairs whose output is zeroed: that head's slice of the merged
    context (before ``out_proj``, so the other heads' outputs pass unchanged) is set to 0 and
    ``out_proj`` is applied again to the result. ``where``: a (b, T) boolean mask of the
    positions at which they are zeroed (default: every position). Never mutates the model.
    """
    ablate = set(ablate)
    cfg = model.cfg
    for layer, head in ablate:
        if not (0 <= layer < cfg.layers and 0 <= head < cfg.num_heads):
            raise ValueError(f"no head {layer}.{head} in {cfg.layers} layers of {cfg.num_heads}")
    with torch.no_grad():
        x = model.embed(ids)
        weights, inputs = [], []
        for layer, block in enumerate(model.blocks):
            att = cast(M.MultiHeadAttention, block)
            inputs.append(x)
            with M.recording() as taps:
                out = att(x)  # (b, T, d_model)
            weights.append(taps["attn_weights"][0])  # (b, H, T, T)
            dead = sorted(h for (lay, h) in ablate if lay == layer)
            if dead:
                context = taps["context"][0].clone()  # (b, T, d_out): heads merged
                for h in dead:
                    cols = slice(h * cfg.head_dim, (h + 1) * cfg.head_dim)
                    if where is None:
                        context[..., cols] = 0.0
                    else:
                        context[..., cols] = context[..., cols] * (~where)[..., None]
                out = att.out_proj(context)
            x = x + out
        logits = model.out_head(x)
    return Run(logits, torch.stack(weights, dim=1), tuple(inputs))
