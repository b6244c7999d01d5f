"""Traces: every named intermediate of one pass over one input, as an immutable, typed value.

A trace is recorded from the module's own ``forward`` (its ``tap`` recording points, see
:mod:`attnviz.core.modules`), so what the page draws is what the module computes. One frozen
dataclass per pass; each field says its shape. Views that cost extra (the scores before
masking, the second masking route, the dropout mask) are functions computed on demand.

Traces are safe to cache and share between sessions: they are frozen, their parameter mapping
is read-only, and their tensors are inference tensors, which refuse in-place changes outside
``torch.inference_mode``. Module construction and training-mode dropout happen inside
:func:`attnviz.core.seeding.seeded`.

Symbols: ``b`` batch, ``T`` tokens, ``H`` heads, ``head_dim = d_out / H``, ``ctx``
context_length.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

import torch
import torch.nn as nn

from attnviz.core import modules as M
from attnviz.core import skeleton
from attnviz.core.seeding import seeded

LOOP_TOKEN_CAP = 16  # the nested-loop version of X X^T runs on at most this many tokens

Tensor = torch.Tensor
Params = Mapping[str, Tensor]


@dataclass(frozen=True)
class Trained:
    """Where a module's trained weights come from: the grown induction model's reference run
    (``attnviz/models/induction``) at checkpoint ``step``, layer ``layer``; ``head`` for the one-head
    modules (pass 2's ``SelfAttention_v1``/``_v2``, pass 3's ``CausalAttention``).
    ``weights(kind, layer=, head=, step=)`` returns the state a module of that kind loads: the
    caller supplies it (``attnviz.models.induction.passes.module_state``), so the core never
    imports the models built on it."""

    step: int
    layer: int
    head: int
    weights: Callable[..., Mapping[str, torch.Tensor]]

    def words(self, whole_layer: bool) -> str:
        """E.g. "layer 0, head 2 of the grown model (step 4000)"."""
        which = f"layer {self.layer}" if whole_layer else f"layer {self.layer}, head {self.head}"
        return f"{which} of the grown model (step {self.step})"


@dataclass(frozen=True)
class ModuleSpec:
    """Plain values that rebuild one module exactly: the seed fixes its weights, or, when
    ``trained`` is set, the grown model's checkpoint does (the seed is then None)."""

    kind: str  # "v1", "v2", "causal", "wrapper" or "mha"
    d_in: int
    d_out: int
    context_length: int = 0
    dropout: float = 0.0
    num_heads: int = 1
    qkv_bias: bool = False
    seed: int | None = 123
    trained: Trained | None = None

    def constructor_call(self) -> str:
        """The literal call that builds this module, as a student would type it."""
        if self.kind == "v1":
            return f"SelfAttention_v1(d_in={self.d_in}, d_out={self.d_out})"
        if self.kind == "v2":
            return (
                f"SelfAttention_v2(d_in={self.d_in}, d_out={self.d_out}, qkv_bias={self.qkv_bias})"
            )
        args = (
            f"d_in={self.d_in}, d_out={self.d_out}, context_length={self.context_length}, "
            f"dropout={self.dropout}"
        )
        if self.kind == "causal":
            return f"CausalAttention({args}, qkv_bias={self.qkv_bias})"
        name = "MultiHeadAttentionWrapper" if self.kind == "wrapper" else "MultiHeadAttention"
        return f"{name}({args}, num_heads={self.num_heads}, qkv_bias={self.qkv_bias})"

    def build_lines(self, name: str) -> str:
        """The lines that build this module into the variable ``name``: the seed, then the
        call; with trained weights, the call, then the load of the grown model's weights."""
        if self.trained is None:
            return f"torch.manual_seed({self.seed})\n{name} = {self.constructor_call()}"
        t = self.trained
        head = "" if self.kind in ("mha", "wrapper") else f", head={t.head}"
        return (
            f"{name} = {self.constructor_call()}\n"
            f"# its weights replaced by {t.words(not head)}:\n"
            f"{name}.load_state_dict(passes.module_state({self.kind!r}, layer={t.layer}{head}, "
            f"step={t.step}), strict=False)"
        )

    def as_wrapper(self) -> ModuleSpec:
        """This multi-head spec as ``MultiHeadAttentionWrapper``: ``d_out // num_heads`` per
        head, so its output is as wide as this module's (same seed, sizes and dropout)."""
        return dataclasses.replace(self, kind="wrapper", d_out=self.d_out // self.num_heads)

    def build(self) -> nn.Module:
        """Construct the module with ``torch.manual_seed(seed)`` semantics, thread-safely; with
        ``trained`` set, then copy the grown model's weights into it."""
        module = self._construct()
        if self.trained is not None:
            t = self.trained
            state = t.weights(self.kind, layer=t.layer, head=t.head, step=t.step)
            with torch.no_grad():
                for pname, param in module.named_parameters():
                    param.copy_(state[pname])
        return module

    def _construct(self) -> nn.Module:
        cls, args = self._class_and_args()
        if self.kind in ("v1", "v2"):
            return skeleton.seeded_build(self, lambda: self._seeded(cls, args))
        # nn.Dropout draws nothing when built, so the seed gives the same weights at every
        # rate: one kept build serves them all (a class's students each pick their own rate).
        key = dataclasses.replace(self, dropout=0.0)
        module = skeleton.seeded_build(key, lambda: self._seeded(cls, args))
        return skeleton.with_dropout(module, self.dropout)

    def _class_and_args(self) -> tuple[type[nn.Module], tuple]:
        if self.kind == "v1":
            return M.SelfAttention_v1, (self.d_in, self.d_out)
        if self.kind == "v2":
            return M.SelfAttention_v2, (self.d_in, self.d_out, self.qkv_bias)
        args = (self.d_in, self.d_out, self.context_length, self.dropout)
        if self.kind == "causal":
            return M.CausalAttention, (*args, self.qkv_bias)
        if self.kind == "wrapper":
            return M.MultiHeadAttentionWrapper, (*args, self.num_heads, self.qkv_bias)
        if self.kind == "mha":
            return M.MultiHeadAttention, (*args, self.num_heads, self.qkv_bias)
        raise ValueError(f"unknown module kind {self.kind!r}")

    def _seeded(self, cls: type[nn.Module], args: tuple) -> nn.Module:
        with seeded(self.seed):
            return cls(*args)


# --- the traces -------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class _Labelled:
    labels: tuple[str, ...]  # one per token, "3: ␣the"

    @property
    def num_tokens(self) -> int:
        return len(self.labels)


@dataclass(frozen=True, kw_only=True)
class SimplifiedTrace(_Labelled):
    """Pass 1, no trainable weights: ``simplified_attention(inputs)``."""

    inputs: Tensor  # (T, d_in)
    attn_scores: Tensor  # (T, T): X Xᵀ, symmetric
    attn_weights: Tensor  # (T, T): row softmax of the scores
    context: Tensor  # (T, d_in): attn_weights @ inputs
    sum_weights: Tensor  # (T, T): scores divided by their row sum (the book's first try)
    loop_scores: Tensor | None  # (n, n), n = min(T, LOOP_TOKEN_CAP): the nested loops

    kind = "simplified"

    @property
    def output(self) -> Tensor:
        return self.context


@dataclass(frozen=True, kw_only=True)
class _Projected(_Labelled):
    """What every pass with W_query, W_key, W_value records. Shapes are those of pass 2; passes
    3 and 4 put the batch dimension b in front (and pass 4 the heads H after it)."""

    spec: ModuleSpec
    params: Params  # the module's parameters by their names ("W_query.weight", ...)
    inputs: Tensor  # (T, d_in)
    queries: Tensor  # (T, d_out)
    keys: Tensor  # (T, d_out)
    values: Tensor  # (T, d_out)
    attn_scores: Tensor  # (T, T): queries @ keys.T (future set to -inf from pass 3)
    attn_weights: Tensor  # (T, T): softmax(attn_scores / √d_k), before any dropout
    context: Tensor  # (T, d_out): the attention weights (as used) @ values
    output: Tensor  # (T, d_out): what forward returned

    @property
    def d_k(self) -> int:
        """The width one query and one key share, which the scores are scaled by."""
        return self.keys.shape[-1]

    @property
    def scaled_scores(self) -> Tensor:
        """The scores the softmax saw, attn_scores / √d_k (shaped as attn_scores)."""
        return _scaled(self.attn_scores, self.d_k)


@dataclass(frozen=True, kw_only=True)
class TrainableTrace(_Projected):
    """Pass 2: ``SelfAttention_v1`` or ``_v2`` (``spec.kind``) on (T, d_in) inputs."""

    kind = "trainable"
    training = False
    dropout_seed = None


@dataclass(frozen=True, kw_only=True)
class _Masked(_Projected):
    """Passes 3 and 4: the causal mask, and dropout on the weights in training mode."""

    training: bool
    dropout_seed: int | None
    mask: Tensor  # (ctx, ctx): the module's buffer, 1 above the diagonal (a future key)
    weights_dropped: Tensor  # shaped as attn_weights: what the context used (eval: the same)


@dataclass(frozen=True, kw_only=True)
class CausalTrace(_Masked):
    """Pass 3: ``CausalAttention`` on a batch (b, T, d_in); dropout only in training mode.

    Every tensor has the batch dimension in front: queries (b, T, d_out), attn_scores
    (b, T, T), context (b, T, d_out) = weights_dropped @ values. In a wrapper's trace each head
    is one of these (``spec`` then describes that head alone and its seed is None: the weights
    come from the wrapper's construction).
    """

    kind = "causal"


@dataclass(frozen=True, kw_only=True)
class MultiHeadTrace(_Masked):
    """Pass 4: ``MultiHeadAttention`` (weight splits) on a batch (b, T, d_in).

    queries, keys and values are (b, T, d_out), before the split into heads; the scores and
    weights are per head, (b, H, T, T), scaled by √head_dim; ``context`` is the heads merged,
    (b, T, d_out), before out_proj, and ``output`` is out_proj(context).
    """

    context_heads: Tensor  # (b, H, T, head_dim): weights_dropped @ values, per head

    kind = "multihead"

    @property
    def num_heads(self) -> int:
        return self.spec.num_heads

    @property
    def head_dim(self) -> int:
        return self.spec.d_out // self.spec.num_heads

    @property
    def d_k(self) -> int:
        return self.head_dim

    def _split(self, t: Tensor) -> Tensor:
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    @property
    def queries_heads(self) -> Tensor:
        """(b, H, T, head_dim): the queries split into heads (a view, costs nothing)."""
        return self._split(self.queries)

    @property
    def keys_heads(self) -> Tensor:
        """(b, H, T, head_dim)."""
        return self._split(self.keys)

    @property
    def values_heads(self) -> Tensor:
        """(b, H, T, head_dim)."""
        return self._split(self.values)


@dataclass(frozen=True, kw_only=True)
class WrapperTrace(_Labelled):
    """Pass 4, first way: ``MultiHeadAttentionWrapper``, one causal trace per head."""

    spec: ModuleSpec
    params: Params  # "heads.0.W_query.weight", ...
    training: bool
    dropout_seed: int | None
    inputs: Tensor  # (b, T, d_in)
    heads: tuple[CausalTrace, ...]  # head h: its (b, T, T) weights, (b, T, d_out) context, ...
    output: Tensor  # (b, T, H * d_out): the heads' contexts, concatenated

    kind = "wrapper"


Trace = SimplifiedTrace | TrainableTrace | CausalTrace | MultiHeadTrace | WrapperTrace


def _scaled(attn_scores: Tensor, d_k: int) -> Tensor:
    with torch.inference_mode():
        return attn_scores / d_k**0.5


# --- recording --------------------------------------------------------------------------------
def record(forward: Callable[[], Tensor]) -> tuple[Tensor, dict[str, list[Tensor]]]:
    """Run ``forward()`` and collect what its modules' ``tap`` points record: the output and
    name -> tensors in the order they came (several when the same forward runs more than once,
    as the wrapper's heads do). The public way to read a module's intermediates."""
    with M.recording() as taps:
        out = forward()
    return out, taps


def _params(module: nn.Module) -> Params:
    return MappingProxyType(
        {
            name: tensor.detach().clone()
            for name, tensor in module.state_dict().items()
            if name != "mask" and not name.endswith(".mask")
        }
    )


# --- pass 1 -----------------------------------------------------------------------------------
def naive_softmax(scores: Tensor) -> Tensor:
    """The book's ``softmax_naive``: exp(x) / sum exp(x), which overflows for large scores."""
    return torch.exp(scores) / torch.exp(scores).sum(dim=-1, keepdim=True)


def sum_normalize(scores: Tensor) -> Tensor:
    """Divide by the row sum: sums to 1, but is not positive when scores are negative."""
    return scores / scores.sum(dim=-1, keepdim=True)


def loop_scores(inputs: Tensor) -> Tensor:
    """The chapter's nested loops: ``attn_scores[i, j] = torch.dot(x_i, x_j)``."""
    n = inputs.shape[0]
    attn_scores = torch.empty(n, n)
    for i, x_i in enumerate(inputs):
        for j, x_j in enumerate(inputs):
            attn_scores[i, j] = torch.dot(x_i, x_j)
    return attn_scores


def trace_simplified(inputs: Tensor, labels) -> SimplifiedTrace:
    """Pass 1, no trainable weights: scores X X^T, weights softmax(X X^T), context alpha X.

    ``inputs`` is (T, d_in). The one-query walk of the chapter is row ``q`` of each matrix.
    """
    with torch.inference_mode():
        context, taps = record(lambda: M.simplified_attention(inputs))
        attn_scores = taps["attn_scores"][0]
        return SimplifiedTrace(
            labels=tuple(labels),
            inputs=inputs.clone(),
            attn_scores=attn_scores,
            attn_weights=taps["attn_weights"][0],
            context=context,
            sum_weights=sum_normalize(attn_scores),
            loop_scores=loop_scores(inputs) if inputs.shape[0] <= LOOP_TOKEN_CAP else None,
        )


# --- passes 2-4 -------------------------------------------------------------------------------
def _run(spec: ModuleSpec, x: Tensor, training: bool, dropout_seed: int | None):
    """Build the module, run its forward once with the recorder on; (module, output, taps)."""
    return _run_module(spec.build(), spec, x, training, dropout_seed)


def _run_module(module, spec: ModuleSpec, x: Tensor, training: bool, dropout_seed: int | None):
    module.train(training)  # a private module: never shared, so switching mode here is safe
    draws = training and spec.dropout > 0
    with torch.inference_mode():
        if draws:  # dropout draws from the global generator: only inside the seeding helper
            with seeded(dropout_seed):
                out, taps = record(lambda: module(x))
        else:
            out, taps = record(lambda: module(x))
    return module, out, taps


_Traced = TypeVar("_Traced", bound=_Labelled)


def _fill(cls: type[_Traced], taps: dict[str, list[Tensor]], i: int, **given) -> _Traced:
    """A ``cls`` trace: each field from ``given`` when it is there (``given`` may hold more),
    otherwise the ``i``-th recording of the tap of the same name (i = h: the wrapper's head)."""
    names = [f.name for f in dataclasses.fields(cls)]
    fields: dict[str, Any] = {n: given[n] if n in given else taps[n][i] for n in names}
    return cls(**fields)


def _recorded(spec: ModuleSpec, x: Tensor, labels, training: bool, dropout_seed, module=None):
    """Run ``spec``'s module (or ``module``, which ``spec`` describes) once on ``x`` with the
    recorder on: (module, taps, the fields every trace of passes 2-4 takes from the run: labels,
    spec, params, inputs, training, dropout_seed and output)."""
    if module is None:
        module, out, taps = _run(spec, x, training, dropout_seed)
    else:
        module, out, taps = _run_module(module, spec, x, training, dropout_seed)
    with torch.inference_mode():  # inference tensors: they refuse in-place changes
        params, inputs = _params(module), x.clone()
    given = dict(labels=tuple(labels), spec=spec, params=params, inputs=inputs, output=out)
    return module, taps, given | dict(training=training, dropout_seed=dropout_seed)


def _trace(
    cls: type[_Traced],
    spec: ModuleSpec,
    x: Tensor,
    labels,
    training: bool,
    dropout_seed,
    module=None,
) -> _Traced:
    """Run ``spec``'s module once on ``x`` with the recorder on, and fill a ``cls`` trace."""
    module, taps, given = _recorded(spec, x, labels, training, dropout_seed, module)
    with torch.inference_mode():
        mask = module.mask.clone() if hasattr(module, "mask") else None  # v1, v2: no mask
        # context: what forward returned, unless the forward tapped it (before out_proj)
        context = taps["context"][0] if "context" in taps else given["output"]
        return _fill(cls, taps, 0, **given, mask=mask, context=context)


def trace_trainable(spec: ModuleSpec, inputs: Tensor, labels) -> TrainableTrace:
    """Pass 2: ``SelfAttention_v1`` or ``_v2`` (``spec.kind``) on (T, d_in) inputs."""
    return _trace(TrainableTrace, spec, inputs, labels, False, None)


def trace_causal(
    spec: ModuleSpec, x: Tensor, labels, training: bool = False, dropout_seed: int = 123
) -> CausalTrace:
    """Pass 3: ``CausalAttention`` on a batch (b, T, d_in); dropout only in training mode."""
    return _trace(CausalTrace, spec, x, labels, training, dropout_seed)


def trace_multihead(
    spec: ModuleSpec, x: Tensor, labels, training: bool = False, dropout_seed: int = 123
) -> MultiHeadTrace:
    """Pass 4: ``MultiHeadAttention`` (weight splits) on a batch (b, T, d_in)."""
    return _trace(MultiHeadTrace, spec, x, labels, training, dropout_seed)


def trace_multihead_module(module: M.MultiHeadAttention, x: Tensor, labels=None) -> MultiHeadTrace:
    """Pass 4 in eval mode on a ``MultiHeadAttention`` someone already built (a test's, a
    notebook's): its spec describes the module, with no seed (the trace's ``params`` hold its
    weights). ``module`` is switched to eval mode. ``labels``: "0", "1", ... by default."""
    spec = ModuleSpec(
        "mha",
        module.W_query.in_features,
        module.d_out,
        module.mask.shape[0],
        module.dropout.p,
        module.num_heads,
        module.W_query.bias is not None,
        None,
    )
    if labels is None:
        labels = tuple(str(i) for i in range(x.shape[-2]))
    return _trace(MultiHeadTrace, spec, x, labels, False, None, module)


def trace_wrapper(
    spec: ModuleSpec, x: Tensor, labels, training: bool = False, dropout_seed: int = 123
) -> WrapperTrace:
    """Pass 4, first way: ``MultiHeadAttentionWrapper``; ``heads[h]`` is head h's trace."""
    module, taps, given = _recorded(spec, x, labels, training, dropout_seed)
    d_out = spec.d_out
    # each head alone, as CausalAttention; its weights come from the wrapper's construction
    head_spec = dataclasses.replace(spec, kind="causal", num_heads=1, seed=None)
    heads = []
    with torch.inference_mode():
        for h, head in enumerate(module.heads):
            prefix = f"heads.{h}."
            params = given["params"].items()
            own = {n.removeprefix(prefix): t for n, t in params if n.startswith(prefix)}
            head_out = given["output"][..., h * d_out : (h + 1) * d_out]  # (b, T, d_out)
            own_given = given | dict(spec=head_spec, params=MappingProxyType(own), output=head_out)
            heads.append(
                _fill(CausalTrace, taps, h, **own_given, mask=head.mask.clone(), context=head_out)
            )
    return _fill(WrapperTrace, {}, 0, **given, heads=tuple(heads))


# --- views computed on demand -----------------------------------------------------------------
def _qk(trace: CausalTrace | MultiHeadTrace) -> tuple[Tensor, Tensor]:
    if isinstance(trace, MultiHeadTrace):
        return trace.queries_heads, trace.keys_heads
    return trace.queries, trace.keys


def unmasked_scores(trace: CausalTrace | MultiHeadTrace) -> Tensor:
    """Q K^T before the mask (the traced ``attn_scores`` were masked in place, as in the book)."""
    queries, keys = _qk(trace)
    with torch.inference_mode():
        return queries @ keys.transpose(-2, -1)


def causal_mask(trace: CausalTrace | MultiHeadTrace) -> Tensor:
    """The mask buffer sliced to the tokens in use (1 = a future key, hidden)."""
    n = trace.num_tokens
    return trace.mask[:n, :n]


def renormalized_weights(trace: CausalTrace | MultiHeadTrace) -> Tensor:
    """The other masking route: softmax over all keys, zero the future, renormalize each row."""
    with torch.inference_mode():
        queries, keys = _qk(trace)
        return M.renormalized_causal_weights(queries, keys, trace.mask)


def dropout_mask(trace: CausalTrace | MultiHeadTrace) -> Tensor:
    """Read the dropout mask off ``nn.Dropout``'s output (never drawn a second time).

    1 where a weight was kept, 0 where it was dropped, NaN where the weight was exactly 0 (a
    masked future key): there, keeping and dropping both give 0, so the mask cannot be seen.
    """
    with torch.inference_mode():
        before, after = trace.attn_weights, trace.weights_dropped
        kept = (after != 0).to(before.dtype)
        return torch.where(before == 0, torch.full_like(before, float("nan")), kept)


def strides_table(trace: MultiHeadTrace) -> list[dict]:
    """The multi-head reshape walk with real shapes, strides and contiguity.

    The in-between views (before the head transpose, and after the context's transpose back)
    are taken on demand: views share memory, so they cost nothing.
    """
    b, T, d_out = trace.queries.shape
    H = trace.num_heads
    head_dim = trace.head_dim
    with torch.inference_mode():
        steps = [
            ("queries = W_query(x)", trace.queries, "(b, T, d_out)"),
            (
                "queries.view(b, T, H, head_dim)",
                trace.queries.view(b, T, H, head_dim),
                "(b, T, H, head_dim)",
            ),
            (".transpose(1, 2)", trace.queries_heads, "(b, H, T, head_dim)"),
            ("attn_scores = queries @ keys.transpose(2, 3)", trace.attn_scores, "(b, H, T, T)"),
            (
                "attn_weights = softmax(attn_scores / √head_dim)",
                trace.attn_weights,
                "(b, H, T, T)",
            ),
            ("context = attn_weights @ values", trace.context_heads, "(b, H, T, head_dim)"),
            (
                "context.transpose(1, 2)",
                trace.context_heads.transpose(1, 2),
                "(b, T, H, head_dim)",
            ),
            (".contiguous().view(b, T, d_out)", trace.context, "(b, T, d_out)"),
            ("out_proj(context)", trace.output, "(b, T, d_out)"),
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


def context_dropout(trace: CausalTrace, p: float, seed: int) -> Tensor:
    """The other placement: dropout on the context vectors (computed without weight dropout)."""
    dropout = nn.Dropout(p)
    dropout.train()
    with torch.inference_mode():
        context = trace.attn_weights @ trace.values
        with seeded(seed):
            return dropout(context)


def tensors_of(trace: Trace) -> list[Tensor]:
    """Every tensor a trace holds (its heads' and parameters' included), each once."""
    seen: dict[int, Tensor] = {}

    def walk(value) -> None:
        if isinstance(value, torch.Tensor):
            seen.setdefault(id(value), value)
        elif isinstance(value, Mapping):
            for v in value.values():
                walk(v)
        elif isinstance(value, tuple):
            for v in value:
                walk(v)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name))

    walk(trace)
    return list(seen.values())
