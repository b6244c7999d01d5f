"""Traces: every named intermediate of one pass over one input, as an immutable value.

A trace is computed by the same shared function the module's ``forward`` calls (with a recorder
instead of ``None``), so what the page draws is what the module computes. Traces hold only the
tensors the plain forward computes anyway; views that cost extra (the scores before masking,
the second masking route, the dropout mask) are functions computed on demand.

Traces are safe to cache and share between sessions: they are frozen, their tensor mapping is
read-only, and their tensors are inference tensors, which refuse in-place changes outside
``torch.inference_mode``. Module construction and training-mode dropout happen inside
:func:`attnviz.seeding.seeded`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import torch
import torch.nn as nn

from . import modules as M
from .seeding import seeded

LOOP_TOKEN_CAP = 16  # the nested-loop version of X X^T runs on at most this many tokens


@dataclass(frozen=True)
class ModuleSpec:
    """Plain values that rebuild one module exactly (the seed fixes its weights)."""

    kind: str  # "v1", "v2", "causal", "wrapper" or "mha"
    d_in: int
    d_out: int
    context_length: int = 0
    dropout: float = 0.0
    num_heads: int = 1
    qkv_bias: bool = False
    seed: int | None = 123

    def constructor_call(self) -> str:
        """The literal call that builds this module, as a student would type it."""
        if self.kind == "v1":
            return f"SelfAttention_v1(d_in={self.d_in}, d_out={self.d_out})"
        if self.kind == "v2":
            return (
                f"SelfAttention_v2(d_in={self.d_in}, d_out={self.d_out}, qkv_bias={self.qkv_bias})"
            )
        args = f"d_in={self.d_in}, d_out={self.d_out}, context_length={self.context_length}, dropout={self.dropout}"
        if self.kind == "causal":
            return f"CausalAttention({args}, qkv_bias={self.qkv_bias})"
        name = "MultiHeadAttentionWrapper" if self.kind == "wrapper" else "MultiHeadAttention"
        return f"{name}({args}, num_heads={self.num_heads}, qkv_bias={self.qkv_bias})"

    def build(self) -> nn.Module:
        """Construct the module with ``torch.manual_seed(seed)`` semantics, thread-safely."""
        with seeded(self.seed):
            if self.kind == "v1":
                return M.SelfAttention_v1(self.d_in, self.d_out)
            if self.kind == "v2":
                return M.SelfAttention_v2(self.d_in, self.d_out, self.qkv_bias)
            args = (self.d_in, self.d_out, self.context_length, self.dropout)
            if self.kind == "causal":
                return M.CausalAttention(*args, self.qkv_bias)
            if self.kind == "wrapper":
                return M.MultiHeadAttentionWrapper(*args, self.num_heads, self.qkv_bias)
            if self.kind == "mha":
                return M.MultiHeadAttention(*args, self.num_heads, self.qkv_bias)
        raise ValueError(f"unknown module kind {self.kind!r}")


@dataclass(frozen=True)
class Trace:
    """Every named intermediate of one pass. ``trace["attn_weights"]``, ``trace.shape(name)``."""

    kind: str
    labels: tuple[str, ...]
    tensors: Mapping[str, torch.Tensor]
    spec: ModuleSpec | None = None
    training: bool = False
    dropout_seed: int | None = None
    info: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.tensors[name]

    def __contains__(self, name: str) -> bool:
        return name in self.tensors

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.tensors[name].shape)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.tensors)

    @property
    def num_tokens(self) -> int:
        return len(self.labels)

    @property
    def output(self) -> torch.Tensor:
        return self.tensors["output"] if "output" in self.tensors else self.tensors["context_vec"]


class _Recorder:
    def __init__(self) -> None:
        self.tensors: dict[str, torch.Tensor] = {}

    def __call__(self, name: str, tensor: torch.Tensor) -> None:
        self.tensors[name] = tensor

    def prefixed(self, prefix: str):
        return lambda name, tensor: self(prefix + name, tensor)


def _freeze(kind, labels, recorder, spec=None, training=False, dropout_seed=None, **info) -> Trace:
    return Trace(
        kind=kind,
        labels=tuple(labels),
        tensors=MappingProxyType(dict(recorder.tensors)),
        spec=spec,
        training=training,
        dropout_seed=dropout_seed,
        info=MappingProxyType(info),
    )


def _weights(module: nn.Module, recorder: _Recorder, prefix: str = "") -> None:
    for name, tensor in module.state_dict().items():
        if name != "mask" and not name.endswith(".mask"):
            recorder(prefix + name, tensor.detach().clone())


# --- pass 1 -------------------------------------------------------------------------------
def naive_softmax(scores: torch.Tensor) -> torch.Tensor:
    """The book's ``softmax_naive``: exp(x) / sum exp(x), which overflows for large scores."""
    return torch.exp(scores) / torch.exp(scores).sum(dim=-1, keepdim=True)


def sum_normalize(scores: torch.Tensor) -> torch.Tensor:
    """Divide by the row sum: sums to 1, but is not positive when scores are negative."""
    return scores / scores.sum(dim=-1, keepdim=True)


def loop_scores(inputs: torch.Tensor) -> torch.Tensor:
    """The chapter's nested loops: ``attn_scores[i, j] = torch.dot(x_i, x_j)``."""
    n = inputs.shape[0]
    attn_scores = torch.empty(n, n)
    for i, x_i in enumerate(inputs):
        for j, x_j in enumerate(inputs):
            attn_scores[i, j] = torch.dot(x_i, x_j)
    return attn_scores


def trace_simplified(inputs: torch.Tensor, labels) -> Trace:
    """Pass 1, no trainable weights: scores X X^T, weights softmax(X X^T), context alpha X.

    ``inputs`` is (T, d_in). The one-query walk of the chapter is row ``q`` of each matrix.
    """
    rec = _Recorder()
    with torch.inference_mode():
        attn_scores = M.attention_scores(inputs, inputs)  # (T, T), symmetric
        attn_weights = M.softmax_rows(attn_scores)
        context_vec = M.context_vectors(attn_weights, inputs)  # (T, d_in)
        rec("inputs", inputs.clone())
        rec("attn_scores", attn_scores)
        rec("sum_weights", sum_normalize(attn_scores))
        rec("naive_weights", naive_softmax(attn_scores))
        rec("attn_weights", attn_weights)
        rec("context_vec", context_vec)
        if inputs.shape[0] <= LOOP_TOKEN_CAP:
            rec("loop_scores", loop_scores(inputs))
    return _freeze("simplified", labels, rec)


# --- passes 2-4 ---------------------------------------------------------------------------
def _run(spec: ModuleSpec, x: torch.Tensor, forward, training: bool, dropout_seed, prefix=""):
    module = spec.build()
    module.train(training)  # a private module: never shared, so switching mode here is safe
    rec = _Recorder()
    draws = training and spec.dropout > 0
    with torch.inference_mode():
        _weights(module, rec)
        if hasattr(module, "mask"):
            rec("mask_buffer", module.mask.clone())
        rec("inputs", x.clone())
        if draws:  # dropout draws from the global generator: only inside the seeding helper
            with seeded(dropout_seed):
                out = forward(module, x, rec)
        else:
            out = forward(module, x, rec)
        rec("output", out)
    return rec


def trace_trainable(spec: ModuleSpec, inputs: torch.Tensor, labels) -> Trace:
    """Pass 2: ``SelfAttention_v1`` or ``_v2`` (``spec.kind``) on (T, d_in) inputs."""
    rec = _run(spec, inputs, M.self_attention, False, None)
    return _freeze("trainable", labels, rec, spec)


def trace_causal(
    spec: ModuleSpec, x: torch.Tensor, labels, training: bool = False, dropout_seed: int = 123
) -> Trace:
    """Pass 3: ``CausalAttention`` on a batch (b, T, d_in); dropout only in training mode."""
    rec = _run(spec, x, M.causal_attention, training, dropout_seed)
    return _freeze("causal", labels, rec, spec, training, dropout_seed)


def trace_multihead(
    spec: ModuleSpec, x: torch.Tensor, labels, training: bool = False, dropout_seed: int = 123
) -> Trace:
    """Pass 4: ``MultiHeadAttention`` (weight splits) on a batch (b, T, d_in)."""
    rec = _run(spec, x, M.multi_head_attention, training, dropout_seed)
    return _freeze("multihead", labels, rec, spec, training, dropout_seed)


def _wrapper_forward(module, x, record):
    heads = [
        M.causal_attention(head, x, record.prefixed(f"head{h}."))
        for h, head in enumerate(module.heads)
    ]
    return torch.cat(heads, dim=-1)


def trace_wrapper(
    spec: ModuleSpec, x: torch.Tensor, labels, training: bool = False, dropout_seed: int = 123
) -> Trace:
    """Pass 4, first way: ``MultiHeadAttentionWrapper``; head ``h``'s tensors are ``head{h}.*``."""
    rec = _run(spec, x, _wrapper_forward, training, dropout_seed)
    return _freeze("wrapper", labels, rec, spec, training, dropout_seed)


# --- views computed on demand -------------------------------------------------------------
def unmasked_scores(trace: Trace) -> torch.Tensor:
    """Q K^T before the mask (the traced ``attn_scores`` were masked in place, as in the book)."""
    queries, keys = _qk(trace)
    with torch.inference_mode():
        return M.attention_scores(queries, keys)


def _qk(trace: Trace) -> tuple[torch.Tensor, torch.Tensor]:
    if "queries_heads" in trace:
        return trace["queries_heads"], trace["keys_heads"]
    return trace["queries"], trace["keys"]


def causal_mask(trace: Trace) -> torch.Tensor:
    """The mask buffer sliced to the tokens in use (1 = a future key, hidden)."""
    n = trace.num_tokens
    return trace["mask_buffer"][:n, :n]


def renormalized_weights(trace: Trace) -> torch.Tensor:
    """The other masking route: softmax over all keys, zero the future, renormalize each row."""
    with torch.inference_mode():
        queries, keys = _qk(trace)
        scores = M.attention_scores(queries, keys)
        full = M.softmax_rows(M.scale_scores(scores, M.key_width(keys)))
        return M.renormalize_causal(full, trace["mask_buffer"], trace.num_tokens)


def dropout_mask(trace: Trace) -> torch.Tensor:
    """Read the dropout mask off ``nn.Dropout``'s output (never drawn a second time).

    1 where a weight was kept, 0 where it was dropped, NaN where the weight was exactly 0 (a
    masked future key): there, keeping and dropping both give 0, so the mask cannot be seen.
    """
    with torch.inference_mode():
        before, after = trace["attn_weights"], trace["dropped_weights"]
        kept = (after != 0).to(before.dtype)
        return torch.where(before == 0, torch.full_like(before, float("nan")), kept)


def strides_table(trace: Trace) -> list[dict]:
    """The multi-head reshape walk with real shapes, strides and contiguity.

    The two in-between views (before the head transpose, and after the context's transpose back)
    are taken on demand: views share memory, so they cost nothing.
    """
    b, T, d_out = trace.shape("queries")
    H = trace.spec.num_heads
    head_dim = d_out // H
    with torch.inference_mode():
        steps = [
            ("queries = W_query(x)", trace["queries"], "(b, T, d_out)"),
            (
                "queries.view(b, T, H, head_dim)",
                trace["queries"].view(b, T, H, head_dim),
                "(b, T, H, head_dim)",
            ),
            (".transpose(1, 2)", trace["queries_heads"], "(b, H, T, head_dim)"),
            ("attn_scores = queries @ keys.transpose(2, 3)", trace["attn_scores"], "(b, H, T, T)"),
            (
                "attn_weights = softmax(attn_scores / √head_dim)",
                trace["attn_weights"],
                "(b, H, T, T)",
            ),
            ("context = attn_weights @ values", trace["context_vec"], "(b, H, T, head_dim)"),
            (
                "context.transpose(1, 2)",
                trace["context_vec"].transpose(1, 2),
                "(b, T, H, head_dim)",
            ),
            (".contiguous().view(b, T, d_out)", trace["merged"], "(b, T, d_out)"),
            ("out_proj(context)", trace["output"], "(b, T, d_out)"),
        ]
        return [
            {
                "step": code,
                "shape (symbols)": symbolic,
                "shape": str(tuple(t.shape)),
                "stride": str(t.stride()),
                "contiguous": bool(t.is_contiguous()),
            }
            for code, t, symbolic in steps
        ]


def context_dropout(trace: Trace, p: float, seed: int) -> torch.Tensor:
    """The other placement: dropout on the context vectors (computed without weight dropout)."""
    dropout = nn.Dropout(p)
    dropout.train()
    with torch.inference_mode():
        context = M.context_vectors(trace["attn_weights"], trace["values"])
        with seeded(seed):
            return dropout(context)
