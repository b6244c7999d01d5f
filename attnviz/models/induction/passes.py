"""Trained weights for passes 2–4: the chapter's modules holding one layer of the reference run.

The student's text is tokenized with GPT-2's BPE as everywhere else; its token ids are then
mapped into the trained model's 64-token vocabulary by one rule, :data:`RULE`:

    the first distinct token gets id 0, the second distinct token id 1, and so on, in the order
    they first appear; a token that occurs again gets the same id again. Past 64 distinct tokens
    the ids start over at 0 (id = order of first appearance mod 64), so two different tokens then
    share an id.

So repeated words stay repeated and different words stay different (up to 64 of them), which is
all the model knows about tokens: it was trained on random ids, so which id a token gets does
not matter, only which positions hold the same one.

X is what the chosen layer reads in the trained model: for layer 0 the token plus position
embeddings, for layer 1 that plus layer 0's output (the residual stream). The modules are the
chapter's own: pass 2 ``SelfAttention_v2`` with one head's slices of ``W_query``, ``W_key`` and
``W_value``; pass 3 ``CausalAttention`` with the same slices (it then computes exactly that head's
weights in the trained model); pass 4 ``MultiHeadAttention`` with the layer's whole weights,
``out_proj`` included. The trained model's width fixes the sizes: d_in = d_out = 64, 4 heads of
16, context_length 24.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import torch
import torch.nn as nn

from attnviz.core import modules as M
from attnviz.core.seeding import seeded
from attnviz.models.induction.api import probe
from attnviz.models.induction.model import InductionModel, run
from attnviz.models.induction.recorded import recorded

Tensor = torch.Tensor

RULE = (
    "Each distinct token gets the next free id of the trained model's 64 in the order it first "
    "appears (the first token 0, the next new token 1, …); a repeated token gets its id again; "
    "past 64 distinct tokens the ids start over at 0."
)
# The layer pass 4 shows and the head passes 2 and 3 show, by default: chosen by measurement
# (`scripts/train-induction --passes` prints every layer and head on the default text repeated
# twice). Layer 0 at the last checkpoint: its heads' rows differ by a mean total-variation
# distance of 0.65–0.68 between head 2 and each other head (layer 1's four induction heads
# attend alike: 0.22 at most); head 0.2 (current-token score 0.70) puts at least 0.54 on one
# token in each of pass 2's 12 rows (no layer-1 head does on more than 3 rows without the mask).
DEFAULT_LAYER = 0
DEFAULT_HEAD = 2


@dataclass(frozen=True)
class MappedTokens:
    """The student's tokens in the model's vocabulary."""

    ids: tuple[int, ...]  # model ids, 0 … vocab-1
    distinct: int  # distinct tokens in the text
    wrapped: bool  # more distinct tokens than the vocabulary: some ids are shared


def map_tokens(token_ids: Sequence[int], vocab: int = 64) -> MappedTokens:
    """:data:`RULE`: the k-th distinct token (in order of first appearance) gets id k mod vocab."""
    order: dict[int, int] = {}
    out = []
    for token in token_ids:
        if token not in order:
            order[token] = len(order)
        out.append(order[token] % vocab)
    return MappedTokens(tuple(out), len(order), len(order) > vocab)


def repeated(ids: Sequence[int], copies: int = 2, limit: int | None = None) -> tuple[int, ...]:
    """``ids`` one after the other ``copies`` times, cut to ``limit`` tokens when given."""
    out = tuple(ids) * copies
    return out if limit is None else out[:limit]


@dataclass(frozen=True)
class TrainedPass:
    """One layer of the trained model as the chapter's modules take it, on the student's text."""

    labels: tuple[str, ...]  # one per position, the student's tokens ("3: ␣the")
    model_ids: tuple[int, ...]  # the same tokens in the model's vocabulary (:data:`RULE`)
    x: Tensor  # (1, T, 64): what the layer reads in the trained model
    layer: int
    head: int
    step: int  # the checkpoint the weights come from
    head_state: Mapping[str, Tensor]  # W_query/W_key/W_value.weight, (16, 64) each: one head
    layer_state: Mapping[str, Tensor]  # the layer's MultiHeadAttention parameters

    context_length: int = 24  # the trained model's context: the mask's size
    messages: tuple[str, ...] = ()

    @property
    def d_in(self) -> int:
        return int(self.x.shape[-1])

    @property
    def head_dim(self) -> int:
        return int(self.head_state["W_query.weight"].shape[0])

    @property
    def num_heads(self) -> int:
        return self.d_in // self.head_dim

    def self_attention_v2(self) -> M.SelfAttention_v2:
        """Pass 2: ``SelfAttention_v2(64, 16)`` holding the head's weights (no mask)."""
        module = _build(lambda: M.SelfAttention_v2(self.d_in, self.head_dim))
        return _loaded(module, self.head_state)

    def causal_attention(self, dropout: float = 0.0) -> M.CausalAttention:
        """Pass 3: ``CausalAttention(64, 16, 24, dropout)`` holding the head's weights."""
        module = _build(
            lambda: M.CausalAttention(self.d_in, self.head_dim, self.context_length, dropout)
        )
        return _loaded(module, self.head_state)

    def multi_head_attention(self, dropout: float = 0.0) -> M.MultiHeadAttention:
        """Pass 4: ``MultiHeadAttention(64, 64, 24, dropout, 4)`` holding the layer's weights."""
        module = _build(
            lambda: M.MultiHeadAttention(
                self.d_in, self.d_in, self.context_length, dropout, self.num_heads
            )
        )
        return _loaded(module, self.layer_state)


def _loaded(module, state: Mapping[str, Tensor]):
    """Copy ``state`` into a freshly built module's parameters (its mask buffer stays)."""
    names = {name for name, _ in module.named_parameters()}
    if names != set(state):
        raise ValueError(f"weights for {sorted(state)}, the module has {sorted(names)}")
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(state[name])
    module.eval()
    return module


def _build(factory):
    with seeded(None):  # construction draws weights that are overwritten right after
        return factory()


def head_weights(att: nn.Module, head: int, head_dim: int) -> dict[str, Tensor]:
    """One head's slices of a ``MultiHeadAttention``'s W_query, W_key and W_value: the rows
    ``head·head_dim … (head+1)·head_dim − 1`` of each ``nn.Linear`` weight (out, in)."""
    rows = slice(head * head_dim, (head + 1) * head_dim)
    return {
        f"{name}.weight": getattr(att, name).weight[rows].detach().clone()
        for name in ("W_query", "W_key", "W_value")
    }


def module_state(
    kind: str, layer: int = DEFAULT_LAYER, head: int = DEFAULT_HEAD, step: int | None = None
) -> dict[str, Tensor]:
    """The parameters of the chapter's module ``kind`` holding the reference run's weights at
    checkpoint ``step`` (default: its last), by the module's own parameter names:

    - ``"v2"``, ``"causal"``: head ``head`` of layer ``layer`` (:func:`head_weights`);
    - ``"v1"``: the same head as ``SelfAttention_v1`` holds it, each matrix transposed to
      (d_in, head_dim) (Exercise 3.1's transfer);
    - ``"mha"``: the whole layer, ``out_proj`` included;
    - ``"wrapper"``: the layer's heads, head h's rows of each projection in ``heads.h``.
    """
    run_ = recorded().reference
    model = run_.model(run_.steps[-1] if step is None else step)
    cfg = model.cfg
    if not 0 <= layer < cfg.layers or not 0 <= head < cfg.num_heads:
        raise ValueError(f"layer must be 0–{cfg.layers - 1} and head 0–{cfg.num_heads - 1}")
    att = model.blocks[layer]
    with torch.inference_mode():
        if kind in ("v2", "causal"):
            return head_weights(att, head, cfg.head_dim)
        if kind == "v1":
            one = head_weights(att, head, cfg.head_dim)
            return {name.removesuffix(".weight"): w.T.clone() for name, w in one.items()}
        if kind == "mha":
            return {name: p.detach().clone() for name, p in att.named_parameters()}
        if kind == "wrapper":
            return {
                f"heads.{h}.{name}": w
                for h in range(cfg.num_heads)
                for name, w in head_weights(att, h, cfg.head_dim).items()
            }
    raise ValueError(f"no trained weights for a module of kind {kind!r}")


def trained_pass(
    token_ids: Sequence[int],
    labels: Sequence[str],
    layer: int = DEFAULT_LAYER,
    head: int = DEFAULT_HEAD,
    step: int | None = None,
    layout: str = "text",
) -> TrainedPass:
    """The reference run's layer ``layer`` (head ``head`` for passes 2–3) on the student's tokens.

    ``token_ids``: GPT-2 ids of the text (mapped by :data:`RULE`); ``labels``: one per token,
    ``"3: ␣the"``. ``step``: a checkpoint of the reference run (default: its last).
    ``layout``: ``"text"``, the tokens as they are (longer texts are cut to the model's context
    of 24, with a message); ``"probe"``, filler tokens then the text twice, ending at position
    23, where training put repeats (:func:`attnviz.models.induction.api.probe`; layer 1's induction
    heads only fire there).
    """
    if layout not in ("text", "probe"):
        raise ValueError(f"layout must be 'text' or 'probe', not {layout!r}")
    run_ = recorded().reference
    model: InductionModel = run_.model(run_.steps[-1] if step is None else step)
    cfg = model.cfg
    if not 0 <= layer < cfg.layers or not 0 <= head < cfg.num_heads:
        raise ValueError(f"layer must be 0–{cfg.layers - 1} and head 0–{cfg.num_heads - 1}")
    if len(token_ids) != len(labels) or not token_ids:
        raise ValueError("need one label per token, and at least one token")
    messages = []
    if layout == "probe":
        displays = [label.split(": ", 1)[-1] for label in labels]
        laid = probe(map_tokens(token_ids, cfg.vocab).ids, displays, cfg.context)
        model_ids, labels, messages = laid.ids, list(laid.labels), list(laid.messages)
    else:
        if len(token_ids) > cfg.context:
            messages.append(
                f"The text has {len(token_ids)} tokens; the trained model's context is "
                f"{cfg.context}, so the first {cfg.context} are used."
            )
        labels = list(labels)[: cfg.context]
        model_ids = map_tokens(list(token_ids)[: cfg.context], cfg.vocab).ids  # <= 64 distinct
    ids = torch.tensor([model_ids])
    att = model.blocks[layer]
    with torch.inference_mode():
        x = run(model, ids).layer_inputs[layer].clone()  # (1, T, 64)
        head_state = head_weights(att, head, cfg.head_dim)
        layer_state = {name: p.detach().clone() for name, p in att.named_parameters()}
    return TrainedPass(
        labels=tuple(labels),
        model_ids=model_ids,
        x=x,
        layer=layer,
        head=head,
        step=run_.steps[-1] if step is None else step,
        head_state=MappingProxyType(head_state),
        layer_state=MappingProxyType(layer_state),
        context_length=cfg.context,
        messages=tuple(messages),
    )
