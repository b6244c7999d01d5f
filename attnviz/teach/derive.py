"""One attention weight, every number behind it: the derivation a click on a cell opens.

:func:`derivation` reads one cell (query ``i``, key ``j``, head ``h``) of a trace the page draws
and lays out each step the module's ``forward`` took to reach it, with the student's numbers:

1. the score: the terms ``q_i[d] · k_j[d]`` over the head's dimensions and their sum;
2. the causal mask (passes 3 and 4): a future key's score becomes ``−∞``;
3. the division by ``√d_k`` (pass 1 has none), after the mask, in the order ``modules.py``
   computes them (``masked_fill_`` then ``softmax(attn_scores / keys.shape[-1]**0.5)``);
4. the row's softmax: ``exp`` of each scaled score, the row sum, this cell's share;
5. dropout in training mode: this cell's factor (0, or ``1/(1−p)`` for a survivor);
6. the context row ``Σ_j α_ij v_j``: each term (a vector), its size and its weight.

Each step names the line of ``attnviz/core/modules.py`` that computed it, read from the module's own
source (:func:`code_line`), so the number and the text are exact. :func:`recompute_row` is the
slider: one component of ``q_i`` changed, the whole row again. :func:`line_view` gives one
query's weights to every key in reading order. Everything returned is plain data (tensors,
floats, strings); nothing here imports Streamlit or draws a figure.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

import torch

from attnviz.core import modules as M
from attnviz.core import trace as tracing

Tensor = torch.Tensor

MODULES_PATH = "attnviz/core/modules.py"  # as the step names it, relative to the repository root
# Above this the exps of a row are shown shifted by the row's largest score (exp would
# overflow float32 past 88.7); the softmax is the same either way.
EXP_SHIFT_ABOVE = 80.0


class DerivationError(ValueError):
    """A cell that does not exist in this trace, said as a sentence for the page."""


# --- the line of modules.py behind each step ---------------------------------------------------
@dataclass(frozen=True)
class CodeLine:
    """One line of ``attnviz/core/modules.py``: its 1-based number and its text (stripped)."""

    owner: str  # the function that holds it: "CausalAttention.forward"
    lineno: int
    text: str

    @property
    def path(self) -> str:
        return MODULES_PATH

    @property
    def where(self) -> str:
        return f"{MODULES_PATH}:{self.lineno}"


@functools.cache
def code_line(owner: Callable, marker: str) -> CodeLine:
    """The one line of ``owner``'s source (a function or method of :mod:`attnviz.core.modules`) that
    contains ``marker``, read from the file itself; an error names the marker when it is missing
    or not unique, so an edit of modules.py cannot silently point a step at the wrong line."""
    lines, start = inspect.getsourcelines(owner)
    found = [(start + k, line.strip()) for k, line in enumerate(lines) if marker in line]
    name = owner.__qualname__
    if len(found) != 1:
        raise LookupError(f"{len(found)} lines of {name} contain {marker!r}; expected one")
    lineno, text = found[0]
    return CodeLine(name, lineno, text)


# The operation each step names, as it appears in each forward (a marker unique in it).
_SCORE, _SOFTMAX, _CONTEXT = "attn_scores = ", "torch.softmax(attn_scores", "attn_weights @ "
_MARKERS: dict[str, dict[str, str]] = {
    "simplified_attention": {
        "score": "attn_scores = inputs @ inputs.T",
        "softmax": _SOFTMAX,
        "context": "all_context_vecs = attn_weights @ inputs",
    },
    "SelfAttention_v1": {
        "queries": "queries = x @ self.W_query",
        "keys": "keys = x @ self.W_key",
        "values": "values = x @ self.W_value",
        "score": _SCORE,
        "softmax": _SOFTMAX,
        "context": _CONTEXT,
    },
    "SelfAttention_v2": {
        "queries": "queries = self.W_query(x)",
        "keys": "keys = self.W_key(x)",
        "values": "values = self.W_value(x)",
        "score": _SCORE,
        "softmax": _SOFTMAX,
        "context": _CONTEXT,
    },
    "CausalAttention": {
        "queries": "queries = self.W_query(x)",
        "keys": "keys = self.W_key(x)",
        "values": "values = self.W_value(x)",
        "score": _SCORE,
        "mask": "masked_fill_(",
        "softmax": _SOFTMAX,
        "dropout": "self.dropout(attn_weights)",
        "context": _CONTEXT,
    },
    "MultiHeadAttention": {
        "queries": "queries = self.W_query(x)",
        "keys": "keys = self.W_key(x)",
        "values": "values = self.W_value(x)",
        "split": "queries = queries.view(",
        "score": _SCORE,
        "mask": "masked_fill_(",
        "softmax": _SOFTMAX,
        "dropout": "self.dropout(attn_weights)",
        "context": _CONTEXT,
    },
}
_OWNERS: dict[str, Callable] = {
    "simplified_attention": M.simplified_attention,
    "SelfAttention_v1": M.SelfAttention_v1.forward,
    "SelfAttention_v2": M.SelfAttention_v2.forward,
    "CausalAttention": M.CausalAttention.forward,
    "MultiHeadAttention": M.MultiHeadAttention.forward,
}


def lines_of(module: str) -> dict[str, CodeLine]:
    """Step name -> the line of ``module``'s forward that computes it."""
    owner = _OWNERS[module]
    return {step: code_line(owner, marker) for step, marker in _MARKERS[module].items()}


# --- one head of one trace, as plain tensors ---------------------------------------------------
@dataclass(frozen=True)
class _Head:
    """What one head of one batch row computed: every tensor 2-D (tokens first)."""

    module: str
    pass_kind: str
    labels: tuple[str, ...]
    queries: Tensor  # (T, d_k)
    keys: Tensor  # (T, d_k)
    values: Tensor  # (T, d_v)
    scores: Tensor  # (T, T) before the mask
    weights: Tensor  # (T, T) the softmax, before dropout
    used: Tensor  # (T, T) what the context used (after dropout)
    context: Tensor  # (T, d_v) the context rows the trace holds
    future: Tensor  # (T, T) bool: True where the mask hides the key
    kept: Tensor | None  # (T, T) dropout mask, 1 kept / 0 dropped / NaN unknown; None: no dropout
    scale: float  # √d_k, or 1.0 (pass 1 does not scale)
    dropout: float
    training: bool
    shared_input: bool  # pass 1: q, k and v are all the input rows themselves


def _check_index(name: str, value: int, size: int) -> int:
    """``value`` when it is a position from 0 to size − 1; otherwise a sentence saying so."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise DerivationError(f"The {name} must be a whole number, not {value!r}.")
    if not 0 <= value < size:
        allowed = f"there is only {name} 0" if size == 1 else f"it must be from 0 to {size - 1}"
        if size == 0:
            allowed = f"there is no {name} at all"
        raise DerivationError(f"There is no {name} {value}: {allowed}.")
    return value


def _unmasked_head(
    trace: tracing.SimplifiedTrace | tracing.TrainableTrace,
    head: int,
    batch: int,
    module: str,
    pass_kind: str,
    queries: Tensor,
    keys: Tensor,
    values: Tensor,
    scale: float = 1.0,
) -> _Head:
    """The one head of pass 1 or 2 (one batch row): no mask, no dropout; pass 1 (no scale)
    reads the input rows as its queries, keys and values."""
    _check_index("head", head, 1)
    _check_index("batch row", batch, 1)
    n = trace.num_tokens
    no_mask = torch.zeros(n, n, dtype=torch.bool)
    weights = trace.attn_weights
    return _Head(
        module,
        pass_kind,
        trace.labels,
        queries,
        keys,
        values,
        trace.attn_scores,
        weights,
        weights,
        trace.context,
        no_mask,
        None,
        scale,
        0.0,
        False,
        pass_kind == "simplified",
    )


def _head(trace: tracing.Trace, head: int, batch: int, full: bool = True) -> _Head:
    """The tensors of one head of one batch row of ``trace`` (a wrapper: its head's trace).
    ``full=False`` (the line view) skips the scores before the mask and the dropout mask."""
    if isinstance(trace, tracing.WrapperTrace):
        h = _check_index("head", head, len(trace.heads))
        return _head(trace.heads[h], 0, batch, full)
    if isinstance(trace, tracing.SimplifiedTrace):
        x = trace.inputs
        return _unmasked_head(trace, head, batch, "simplified_attention", "simplified", x, x, x)
    scale = trace.d_k**0.5
    if isinstance(trace, tracing.TrainableTrace):
        module = "SelfAttention_v1" if trace.spec.kind == "v1" else "SelfAttention_v2"
        return _unmasked_head(
            trace, head, batch, module, "trainable", trace.queries, trace.keys, trace.values, scale
        )
    b = _check_index("batch row", batch, trace.inputs.shape[0])
    future = tracing.causal_mask(trace).bool()
    if isinstance(trace, tracing.MultiHeadTrace):
        h = _check_index("head", head, trace.num_heads)
        part: tuple[slice, ...] = (slice(b, b + 1), slice(h, h + 1))  # keeps (1, 1, T, d)
        queries, keys, values = trace.queries_heads, trace.keys_heads, trace.values_heads
        context, module, kind = trace.context_heads, "MultiHeadAttention", "multihead"
    else:
        _check_index("head", head, 1)
        part = (slice(b, b + 1),)
        queries, keys, values = trace.queries, trace.keys, trace.values
        context, module, kind = trace.context, "CausalAttention", "causal"

    def one(t: Tensor) -> Tensor:
        return t[part].reshape(t.shape[-2:])

    before, after = one(trace.attn_weights), one(trace.weights_dropped)
    with torch.inference_mode():
        # Q Kᵀ before the mask, as attnviz.core.trace.unmasked_scores computes it, for this head only
        if full:
            n = trace.num_tokens
            unmasked = (queries[part] @ keys[part].transpose(-2, -1)).reshape(n, n)
        else:
            unmasked = one(trace.attn_scores)  # masked: the line view does not read it
        kept = None
        if full and trace.training and trace.spec.dropout > 0:
            # the dropout mask as attnviz.core.trace.dropout_mask reads it off nn.Dropout's output
            nan = torch.full_like(before, float("nan"))
            kept = torch.where(before == 0, nan, (after != 0).to(before.dtype))
    return _Head(
        module,
        kind,
        trace.labels,
        one(queries),
        one(keys),
        one(values),
        unmasked,
        before,
        after,
        one(context),
        future,
        kept,
        scale,
        trace.spec.dropout,
        trace.training,
        False,
    )


# --- the derivation ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    """One step of the derivation: a title, a sentence computed from the numbers, its code."""

    name: str  # "score", "scale", "mask", "softmax", "dropout", "context"
    title: str
    sentence: str
    code: tuple[CodeLine, ...]


@dataclass(frozen=True)
class Derivation:
    """Every number behind the weight of query ``query`` on key ``key`` (head ``head``).

    Tensors are float32 as the trace holds them, except the softmax's exps and sums, which are
    float64 recomputations shown beside the trace's own weights (a test holds them equal).
    """

    module: str  # the class (or function) whose forward computed it
    unit: str  # what computed it, said for the page: "MultiHeadAttention, head 1"
    pass_kind: str  # "simplified", "trainable", "causal" or "multihead"
    query: int
    key: int
    head: int
    batch: int
    labels: tuple[str, ...]  # every token, "3: ␣the"
    q: Tensor  # (d_k,): q_i over the head's dimensions (pass 1: x_i)
    k: Tensor  # (d_k,): k_j (pass 1: x_j)
    keys: Tensor  # (T, d_k): every key, for the slider
    products: Tensor  # (d_k,): q_i[d] · k_j[d], float64
    score: float  # q_i · k_j as the module computed it (before any mask)
    scale: float  # √d_k; 1.0 in pass 1, which does not scale
    scaled: float  # score / scale after the mask: −inf for a masked key
    masked: bool  # the causal mask hides this key (it comes after the query)
    future: Tensor  # (T,) bool: the keys the mask hides in this row
    row_scaled: Tensor  # (T,) float64: what the softmax saw, −inf where masked
    shift: float  # the exps are exp(s − shift): 0 unless the row's scores are large
    row_exp: Tensor  # (T,) float64: exp(s_j − shift), 0 where masked
    row_sum: float  # Σ_j row_exp
    row_weights: Tensor  # (T,): the softmax row the trace holds (before dropout)
    weight: float  # row_weights[key]
    training: bool
    dropout: float  # p
    factors: Tensor | None  # (T,): each key's dropout factor, 0 or 1/(1−p); NaN where unknown
    used_weights: Tensor  # (T,): the row the context used (after dropout)
    values: Tensor  # (T, d_v): v_j for every key (pass 1: the inputs)
    context: Tensor  # (d_v,): the context row the trace holds
    shared_input: bool  # pass 1: q, k and v are the same input rows
    steps: tuple[Step, ...]

    @property
    def d_k(self) -> int:
        return int(self.q.shape[0])

    @property
    def num_tokens(self) -> int:
        return len(self.labels)

    @property
    def query_label(self) -> str:
        return self.labels[self.query]

    @property
    def key_label(self) -> str:
        return self.labels[self.key]

    @property
    def exp(self) -> float:
        """exp(scaled − shift) of this cell (0 when masked)."""
        return float(self.row_exp[self.key])

    @property
    def dropout_factor(self) -> float | None:
        """This cell's dropout factor: 0 (dropped), 1/(1−p) (kept), None without dropout or
        when it cannot be seen (a masked weight is 0 either way)."""
        if self.factors is None:
            return None
        f = float(self.factors[self.key])
        return None if math.isnan(f) else f

    @property
    def used_weight(self) -> float:
        return float(self.used_weights[self.key])

    @property
    def terms(self) -> Tensor:
        """(T, d_v) float64: row j is α_ij v_j with α the weights the context used."""
        return self.used_weights.to(torch.float64).unsqueeze(1) * self.values.to(torch.float64)

    @property
    def term_norms(self) -> Tensor:
        """(T,) float64: the size (Euclidean norm) of each term α_ij v_j."""
        return torch.linalg.vector_norm(self.terms, dim=1)

    @property
    def context_sum(self) -> Tensor:
        """(d_v,) float64: Σ_j α_ij v_j, added up here (the trace's row is ``context``)."""
        return self.terms.sum(dim=0)

    def step(self, name: str) -> Step:
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(name)


def _f(v: float) -> str:
    """A number as the page prints it: 4 decimals, −∞ for a masked score."""
    if math.isinf(v):
        return "−∞" if v < 0 else "∞"
    return f"{v:.4f}".replace("-", "−")


def derivation(
    trace: tracing.Trace, query: int, key: int, head: int = 0, batch: int = 0
) -> Derivation:
    """Every number behind ``attn_weights[batch, head, query, key]`` of ``trace``.

    Works for every pass: pass 1 (q = k = v = the input rows, no scaling), pass 2 (v1 or v2),
    pass 3 (causal, with dropout in training mode), pass 4 (the weight-split module, or the
    wrapper, whose head ``head`` is a CausalAttention). Raises :class:`DerivationError` with a
    sentence when the cell does not exist.
    """
    hv = _head(trace, head, batch)
    n = len(hv.labels)
    if n == 0:
        raise DerivationError("There is no text to attend over, so there is no cell to explain.")
    i = _check_index("query", query, n)
    j = _check_index("key", key, n)
    with torch.inference_mode():
        q, k = hv.queries[i], hv.keys[j]
        products = q.to(torch.float64) * k.to(torch.float64)
        score = float(hv.scores[i, j])
        future = hv.future[i]
        # masked first, then scaled: the order of the module's forward (−∞ / √d_k stays −∞)
        row_scaled = hv.scores[i].to(torch.float64).masked_fill(future, -math.inf) / hv.scale
        top = float(row_scaled.max())
        shift = top if top > EXP_SHIFT_ABOVE else 0.0
        row_exp = torch.exp(row_scaled - shift)
        row_sum = float(row_exp.sum())
        factors = None
        if hv.kept is not None:
            factors = hv.kept[i].to(torch.float64) / (1 - hv.dropout)
    unit = hv.module
    if isinstance(trace, tracing.MultiHeadTrace):
        unit = f"MultiHeadAttention, head {head}"
    elif isinstance(trace, tracing.WrapperTrace):
        unit = f"MultiHeadAttentionWrapper, head {head} (a CausalAttention)"
    d = Derivation(
        module=hv.module,
        unit=unit,
        pass_kind=hv.pass_kind,
        query=i,
        key=j,
        head=head,
        batch=batch,
        labels=hv.labels,
        q=q,
        k=k,
        keys=hv.keys,
        products=products,
        score=score,
        scale=hv.scale,
        scaled=-math.inf if bool(future[j]) else score / hv.scale,
        masked=bool(future[j]),
        future=future,
        row_scaled=row_scaled,
        shift=shift,
        row_exp=row_exp,
        row_sum=row_sum,
        row_weights=hv.weights[i],
        weight=float(hv.weights[i, j]),
        training=hv.training,
        dropout=hv.dropout,
        factors=factors,
        used_weights=hv.used[i],
        values=hv.values,
        context=hv.context[i],
        shared_input=hv.shared_input,
        steps=(),
    )
    return _with_steps(d, hv)


def _with_steps(d: Derivation, hv: _Head) -> Derivation:
    code = lines_of(hv.module)
    steps = [
        _score_step(d, code),
        _mask_step(d, code),
        _scale_step(d, code),
        _softmax_step(d, code),
        _dropout_step(d, code),
        _context_step(d, code),
    ]
    return dataclasses.replace(d, steps=tuple(s for s in steps if s is not None))


def _score_step(d: Derivation, code: dict[str, CodeLine]) -> Step:
    i, j = d.query, d.key
    if d.shared_input:
        what = f"x_{i} · x_{j}: pass 1 has no weights, so the query and the key are the inputs"
        lines: tuple[CodeLine, ...] = (code["score"],)
    else:
        where = f" of head {d.head}" if d.unit != d.module else ""
        what = f"q_{i} · k_{j} over the {d.d_k} dimensions{where}"
        lines = tuple(code[s] for s in ("queries", "keys", "split", "score") if s in code)
    biggest = int(d.products.abs().argmax()) if d.d_k else 0
    sentence = f"The score is {what}: the sum of {d.d_k} products q[d]·k[d] is {_f(d.score)}." + (
        f" The largest term in size is dimension {biggest} "
        f"({_f(float(d.q[biggest]))} × {_f(float(d.k[biggest]))} = "
        f"{_f(float(d.products[biggest]))})."
        if d.d_k
        else ""
    )
    return Step("score", "Query times key", sentence, lines)


def _scale_step(d: Derivation, code: dict[str, CodeLine]) -> Step:
    if d.shared_input:
        sentence = (
            f"Pass 1 does not scale: the softmax sees the score {_f(d.score)} itself. "
            "The division by √d_k arrives with the trainable weights in pass 2."
        )
    elif d.masked:
        sentence = (
            f"After the mask, the row is divided by √d_k = √{d.d_k} = {_f(d.scale)}: this "
            f"score is already −∞, and −∞ / {_f(d.scale)} stays −∞ (the chapter scales so that "
            "the softmax does not saturate as d_k grows)."
        )
    else:
        after = "After the mask, divided" if "mask" in code else "Divided"
        sentence = (
            f"{after} by √d_k = √{d.d_k} = {_f(d.scale)}: {_f(d.score)} / {_f(d.scale)} = "
            f"{_f(d.scaled)} (the chapter scales so that the softmax does not saturate as d_k "
            "grows)."
        )
    return Step("scale", "Scale by √d_k", sentence, (code["softmax"],))


def _mask_step(d: Derivation, code: dict[str, CodeLine]) -> Step | None:
    if "mask" not in code:
        return None
    i, j = d.query, d.key
    if d.masked:
        sentence = (
            f"Key {j} comes after query {i}: the causal mask sets this score to −∞, so its "
            "weight is exactly 0."
        )
    else:
        hidden = int(d.future.sum())
        sentence = (
            f"Key {j} is not after query {i}, so the mask leaves this score as it is; it hides "
            f"the {hidden} later key{'s' if hidden != 1 else ''} of this row."
        )
    return Step("mask", "The causal mask", sentence, (code["mask"],))


def _softmax_step(d: Derivation, code: dict[str, CodeLine]) -> Step:
    visible = int((~d.future).sum())
    shifted = f" − {_f(d.shift)}" if d.shift else ""
    note = (
        f" (each exp is taken after subtracting the row's largest score {_f(d.shift)}, "
        "which leaves the softmax unchanged and keeps exp in range)"
        if d.shift
        else ""
    )
    if d.masked:
        sentence = (
            f"The softmax turns the {visible} visible scores of row {d.query} into weights; "
            f"exp(−∞) = 0, so this key's weight is {_f(d.weight)}. The row's exps sum to "
            f"{_f(d.row_sum)}{note}."
        )
    else:
        sentence = (
            f"exp({_f(d.scaled)}{shifted}) = {_f(d.exp)}; the {visible} exps of row {d.query} "
            f"sum to {_f(d.row_sum)}; weight = {_f(d.exp)} / {_f(d.row_sum)} = "
            f"{_f(d.weight)}{note}."
        )
    return Step("softmax", "Softmax over the row", sentence, (code["softmax"],))


def _dropout_step(d: Derivation, code: dict[str, CodeLine]) -> Step | None:
    if "dropout" not in code:
        return None
    p = d.dropout
    if not d.training or p == 0:
        why = "eval mode" if not d.training else "training mode with dropout 0"
        sentence = f"Dropout is the identity here ({why}): the context uses {_f(d.weight)}."
    elif d.dropout_factor is None:
        sentence = (
            f"This weight is 0 (a masked key), so dropout leaves it 0 whether it keeps it or "
            f"not; the row's other weights are zeroed with probability {p:g} or multiplied by "
            f"1/(1−{p:g}) = {1 / (1 - p):.4g}."
        )
    elif d.dropout_factor == 0:
        sentence = (
            f"Dropout zeroed this weight (probability {p:g}): the context uses 0 instead of "
            f"{_f(d.weight)}."
        )
    else:
        sentence = (
            f"Dropout kept this weight and multiplied it by 1/(1−{p:g}) = "
            f"{d.dropout_factor:.4g}: {_f(d.weight)} → {_f(d.used_weight)}."
        )
    return Step("dropout", "Dropout", sentence, (code["dropout"],))


def _context_step(d: Derivation, code: dict[str, CodeLine]) -> Step:
    norms = d.term_norms
    j = d.key
    v = "x" if d.shared_input else "v"
    lines = tuple(code[s] for s in ("values", "context") if s in code)
    visible = int((~d.future).sum())
    keys = f"the {visible} keys it can see" if d.future.any() else f"the {visible} keys"
    this = (
        f"Key {j}'s term α {v}_{j} has size {_f(float(norms[j]))} (weight {_f(d.used_weight)}, "
        f"‖{v}_{j}‖ = {_f(float(torch.linalg.vector_norm(d.values[j].double())))})"
    )
    if norms.numel() and float(norms.max()) > 0:
        biggest = int(norms.argmax())
        rest = f"the largest term is key {biggest}'s, {_f(float(norms[biggest]))}."
    else:
        rest = "every term is 0, so the context row is 0."
    sentence = f"Context row {d.query} = Σ_j α_{d.query},j {v}_j over {keys}. {this}; {rest}"
    return Step("context", "The context row", sentence, lines)


# --- the slider: one component of q_i changed ---------------------------------------------------
@dataclass(frozen=True)
class RowChange:
    """Row ``query`` again after ``q_i[dim]`` is set to ``value``: scores, weights, context."""

    dim: int
    value: float
    q: Tensor  # (d_k,): the changed query
    scores: Tensor  # (T,): q · k_j, −inf where masked (as the module's attn_scores)
    weights: Tensor  # (T,): the softmax of scores / scale
    used_weights: Tensor  # (T,): after this row's dropout factors (the same mask)
    context: Tensor  # (d_v,): used_weights @ values


def recompute_row(d: Derivation, dim: int, value: float) -> RowChange:
    """The derivation's row with ``q_i[dim] = value`` and every other number as it was (the
    keys, the values, the mask and the dropout draws). In pass 1 the query *is* the input row
    x_i, which is also key i and value i, so those change with it, as they would in a fresh
    forward of ``simplified_attention``."""
    dim = _check_index("dimension", dim, d.d_k)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise DerivationError(f"The new value must be a finite number, not {value!r}.")
    with torch.inference_mode():
        q = d.q.clone()
        q[dim] = float(value)
        keys, values = d.keys, d.values
        if d.shared_input:
            keys = keys.clone()
            keys[d.query] = q
            values = keys
        scores = (q @ keys.T).masked_fill(d.future, -torch.inf)
        weights = torch.softmax(scores / d.scale, dim=-1)
        used = weights
        if d.factors is not None:
            # a key whose factor cannot be seen is masked: its weight is 0 whatever the factor
            used = weights * torch.nan_to_num(d.factors, nan=0.0).to(weights.dtype)
        context = used @ values
    return RowChange(dim, float(value), q, scores, weights, used, context)


# --- the line view --------------------------------------------------------------------------------
@dataclass(frozen=True)
class LineView:
    """One query's weights to every key, in the order the text reads (plain data).

    The drawing joins the query to each key with a line whose thickness is the weight; keys are
    in position order, laid out left to right, or right to left when ``direction`` is "rtl".
    """

    query: int
    query_label: str
    labels: tuple[str, ...]  # every key, by position
    weights: tuple[float, ...]  # query -> key j
    visible: tuple[bool, ...]  # False: a future key the causal mask hides (weight 0)
    direction: str  # "ltr" or "rtl"
    head: int | None  # the head, for a multi-head trace
    sentence: str  # holds token labels (the student's text): show it as plain text

    def rows(self) -> list[dict]:
        """The Numbers box: one row per key."""
        return [
            {"key": label, "weight": w, "visible": v}
            for label, w, v in zip(self.labels, self.weights, self.visible, strict=True)
        ]


_BYTES_SHOWN = re.compile("\u27e8[^\u27e9]*\u27e9")  # "⟨D7 A9⟩": bytes of a split character


def _token_text(label: str) -> str:
    """The token of a label "3: ␣the", without the hex of bytes that are part of a character."""
    text = label.split(": ", 1)[1] if ": " in label else label
    return _BYTES_SHOWN.sub("", text)


def reading_direction(labels: tuple[str, ...] | list[str]) -> str:
    """ "rtl" when the tokens' letters are mostly right-to-left (Hebrew, Arabic, ...), else
    "ltr", by the Unicode bidirectional class of each letter."""
    rtl = ltr = 0
    for label in labels:
        for ch in _token_text(label):
            kind = unicodedata.bidirectional(ch)
            if kind in ("R", "AL"):
                rtl += 1
            elif kind == "L":
                ltr += 1
    return "rtl" if rtl > ltr else "ltr"


def line_view(
    weights: Tensor,
    labels: tuple[str, ...] | list[str],
    query: int,
    head: int | None = None,
    causal: bool | None = None,
) -> LineView:
    """The line view of row ``query`` of a (T, T) weights matrix as a page draws it (pass the
    matrix the heatmap beside it shows: before or after dropout). ``causal``: whether keys after
    the query are masked (None: read it from the zeros above the diagonal)."""
    labels = tuple(labels)
    if (
        weights.dim() != 2
        or weights.shape[0] != weights.shape[1]
        or weights.shape[0] != len(labels)
    ):
        raise DerivationError(
            f"A line view needs a square weights matrix with one row per token; got shape "
            f"{tuple(weights.shape)} for {len(labels)} tokens."
        )
    n = len(labels)
    i = _check_index("query", query, n)
    row = [float(v) for v in weights[i]]
    if causal is None:
        causal = bool(n) and bool((torch.triu(weights, diagonal=1) == 0).all())
    visible = tuple(not (causal and j > i) for j in range(n))
    best = max(range(n), key=lambda j: row[j])
    whose = f"head {head}, " if head is not None else ""
    sentence = (
        f"Query {labels[i]} ({whose}{sum(visible)} visible keys): the largest weight, "
        f"{_f(row[best])}, is on key {labels[best]}."
    )
    return LineView(
        i, labels[i], labels, tuple(row), visible, reading_direction(labels), head, sentence
    )


def weights_of(
    trace: tracing.Trace, head: int = 0, batch: int = 0, after_dropout: bool = False
) -> tuple[Tensor, tuple[str, ...]]:
    """One head's (T, T) weights of one batch row of ``trace`` and its token labels: the
    softmax (``after_dropout``: what the context used), as :func:`derivation` reads them."""
    hv = _head(trace, head, batch, full=False)
    return (hv.used if after_dropout else hv.weights), hv.labels


def line_view_of(
    trace: tracing.Trace, query: int, head: int = 0, batch: int = 0, after_dropout: bool = True
) -> LineView:
    """The line view of a trace's weights: ``after_dropout`` picks the weights the context used
    (training mode) rather than the softmax before dropout; for a multi-head trace, of ``head``."""
    hv = _head(trace, head, batch, full=False)
    weights = hv.used if after_dropout else hv.weights
    multi = isinstance(trace, (tracing.MultiHeadTrace, tracing.WrapperTrace))
    causal = hv.pass_kind in ("causal", "multihead")
    return line_view(weights, hv.labels, query, head if multi else None, causal=causal)
