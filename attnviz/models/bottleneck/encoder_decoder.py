"""Two GRU encoder–decoders of one size: the one-vector bottleneck, and the same with attention.

Both read the English sentence with the same bidirectional GRU encoder (half the width each
way, so every encoder state ``h_j`` has the model's width ``hidden``) and write Mirror with the
same GRU decoder, started from the encoder's summary (its two final states, side by side). At
each output step ``t`` the decoder state ``s_t`` is joined with a context vector ``c_t`` and
turned into word scores:

    logits_t = out(tanh(combine([s_t ; c_t])))

They differ in ``c_t`` alone (Cho et al. 2014 against Bahdanau et al. 2014, in Luong's dot-product
form):

- **bottleneck**: ``c_t`` is the summary, the same one vector at every step: everything the
  decoder knows about the sentence has passed through it;
- **attention**: ``c_t = Σ_j α_tj h_j`` with ``α_t = softmax_j(s_t · h_j)``: the dot products of
  the decoder's state with every encoder state, a row softmax, a weighted sum (pass 1's
  formula, with the query from one sequence and the keys and values from another).

Dot-product attention has no weights of its own, so the two models have exactly the same
parameters, shape for shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from attnviz.core.seeding import seeded
from attnviz.models.bottleneck import toy_language

Tensor = torch.Tensor
KINDS = ("bottleneck", "attention")


@dataclass(frozen=True)
class Seq2SeqConfig:
    """The sizes of one model, and whether it attends."""

    attention: bool
    hidden: int = 64
    embed: int = 32

    def __post_init__(self) -> None:
        for name in ("hidden", "embed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 2:
                raise ValueError(f"{name} must be a whole number >= 2, not {value!r}")
        if self.hidden % 2:
            raise ValueError(f"hidden={self.hidden} must be even (half each way)")

    @property
    def kind(self) -> str:
        return "attention" if self.attention else "bottleneck"


@dataclass(frozen=True)
class Decoded:
    """A greedy decoding: word ids (b, L); with attention, the weights (b, L, S); the decoder's
    states, one per word written (b, L, hidden: the queries), and the encoder's (b, S, hidden:
    the keys and values)."""

    ids: Tensor
    weights: Tensor | None
    queries: Tensor
    keys: Tensor


class EncoderDecoder(nn.Module):
    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        self.cfg = cfg
        h, e = cfg.hidden, cfg.embed
        self.source_embedding = nn.Embedding(toy_language.VOCAB, e)
        self.encoder = nn.GRU(e, h // 2, batch_first=True, bidirectional=True)
        self.target_embedding = nn.Embedding(toy_language.VOCAB + 1, e)  # + the start input
        self.decoder = nn.GRU(e, h, batch_first=True)
        self.combine = nn.Linear(2 * h, h)
        self.out = nn.Linear(h, toy_language.VOCAB)

    def encode(self, source: Tensor) -> tuple[Tensor, Tensor]:
        """Encoder states (b, S, hidden) and the summary (b, hidden): the forward pass's last
        state beside the backward pass's (which ends on the first word)."""
        states, last = self.encoder(self.source_embedding(source))
        summary = torch.cat([last[0], last[1]], dim=-1)
        return states, summary

    def read_out(self, s: Tensor, states: Tensor, summary: Tensor) -> tuple[Tensor, Tensor | None]:
        """Word scores for decoder states ``s`` (b, T, hidden), and the attention weights."""
        if self.cfg.attention:
            weights = F.softmax(s @ states.transpose(1, 2), dim=-1)  # (b, T, S)
            context = weights @ states
        else:
            weights = None
            context = summary[:, None, :].expand_as(s)
        return self.out(torch.tanh(self.combine(torch.cat([s, context], dim=-1)))), weights

    def forward(self, source: Tensor, target: Tensor) -> Tensor:
        """Teacher forcing: logits (b, L, vocab) for ``target`` given its true previous words."""
        states, summary = self.encode(source)
        start = torch.full_like(target[:, :1], toy_language.BOS)
        inputs = torch.cat([start, target[:, :-1]], dim=1)
        s, _ = self.decoder(self.target_embedding(inputs), summary[None])
        logits, _ = self.read_out(s, states, summary)
        return logits

    @torch.no_grad()
    def greedy(self, source: Tensor, length: int | None = None) -> Decoded:
        """Write ``length`` words (default: as many as the source has), each step feeding back
        the word it chose."""
        n = source.shape[1] if length is None else length
        states, summary = self.encode(source)
        h = summary[None]
        word = torch.full((source.shape[0], 1), toy_language.BOS, dtype=torch.long)
        ids, weights, queries = [], [], []
        for _ in range(n):
            s, h = self.decoder(self.target_embedding(word), h)
            queries.append(s)
            logits, w = self.read_out(s, states, summary)
            word = logits.argmax(-1)
            ids.append(word)
            if w is not None:
                weights.append(w)
        return Decoded(
            torch.cat(ids, dim=1),
            torch.cat(weights, dim=1) if weights else None,
            torch.cat(queries, dim=1),
            states,
        )


def build(cfg: Seq2SeqConfig, seed: int | None) -> EncoderDecoder:
    """A fresh model, its initial weights drawn from ``seed`` (through the one seeding lock)."""
    with seeded(seed):
        return EncoderDecoder(cfg)


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def parameters_of(model: nn.Module) -> dict[str, Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def model_from(cfg: Seq2SeqConfig, params: Mapping[str, Tensor]) -> EncoderDecoder:
    """A frozen model (eval, no gradients) holding ``params``: share it, never train it."""
    model = build(cfg, None)
    model.load_state_dict(dict(params))
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model
