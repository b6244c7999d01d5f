"""Traces: one code path with the modules, immutable values, named shapes, on-demand views."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F

from attnviz.core import modules as M
from attnviz.core import trace as tracing
from attnviz.core.seeding import seeded

from .helpers import book_seed, labels, typed_batch

D_IN, D_OUT, HEADS, CTX = 16, 8, 2, 32
N = 6
LAB = labels(N)


def _x():
    return typed_batch(D_IN, n=N)


def _spec(kind, dropout=0.5, seed=7, heads=HEADS):
    d_out = D_OUT // heads if kind == "wrapper" else D_OUT
    return tracing.ModuleSpec(kind, D_IN, d_out, CTX, dropout, heads, False, seed)


def _trace(kind, training=False, dropout=0.5, dropout_seed=11):
    x = _x()
    if kind == "v1" or kind == "v2":
        return tracing.trace_trainable(_spec(kind, dropout), x[0], LAB)
    fn = {
        "causal": tracing.trace_causal,
        "mha": tracing.trace_multihead,
        "wrapper": tracing.trace_wrapper,
    }[kind]
    return fn(_spec(kind, dropout), x, LAB, training=training, dropout_seed=dropout_seed)


# --- softmax once -------------------------------------------------------------------------
@pytest.fixture
def softmax_calls(monkeypatch):
    calls = []
    real = torch.softmax

    def counting(*args, **kwargs):
        calls.append(tuple(args[0].shape))
        return real(*args, **kwargs)

    monkeypatch.setattr(torch, "softmax", counting)
    return calls


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda: tracing.trace_simplified(_x()[0], LAB), 1),
        (lambda: _trace("v1"), 1),
        (lambda: _trace("v2"), 1),
        (lambda: _trace("causal"), 1),
        (lambda: _trace("causal", training=True), 1),
        (lambda: _trace("mha"), 1),
        (lambda: _trace("mha", training=True), 1),
        (lambda: _trace("wrapper"), HEADS),
    ],
    ids=["simplified", "v1", "v2", "causal", "causal-train", "mha", "mha-train", "wrapper"],
)
def test_softmax_runs_once_per_head_while_a_trace_is_built(softmax_calls, build, expected):
    build()
    assert len(softmax_calls) == expected


def test_the_multihead_softmax_runs_on_all_heads_at_once(softmax_calls):
    _trace("mha")
    assert softmax_calls == [(2, HEADS, N, N)]


def test_the_softmax_counter_sees_the_engines_calls(softmax_calls):
    M.simplified_attention(torch.zeros(2, 3))
    assert softmax_calls == [(2, 2)]


# --- the module's forward equals the trace ------------------------------------------------
@pytest.mark.parametrize("kind", ["v1", "v2"])
def test_trainable_forward_equals_trace_output_bit_for_bit(kind):
    tr = _trace(kind)
    module = _spec(kind).build()
    assert torch.equal(module(_x()[0]), tr.output)


@pytest.mark.parametrize("kind", ["causal", "mha", "wrapper"])
@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
def test_forward_equals_trace_output_bit_for_bit(kind, training):
    tr = _trace(kind, training=training, dropout_seed=31)
    module = _spec(kind).build()
    module.train(training)
    with seeded(31):
        out = module(_x())
    assert torch.equal(out, tr.output)
    assert tr.training is training
    if training:  # dropout really acted, so the equality above covers the mask too
        module.eval()
        assert not torch.equal(module(_x()), out)


def test_forward_with_the_chapters_own_seeding_equals_the_trace():
    x = _x()
    tr = tracing.trace_causal(_spec("causal", seed=42), x, LAB, training=True, dropout_seed=42)
    with book_seed(42):
        ca = M.CausalAttention(D_IN, D_OUT, CTX, 0.5)
        ca.train()
    with book_seed(42):
        out = ca(x)
    assert torch.equal(out, tr.output)


def test_different_dropout_seeds_give_different_training_traces():
    a = _trace("causal", training=True, dropout_seed=1)
    b = _trace("causal", training=True, dropout_seed=2)
    assert not torch.equal(a.weights_dropped, b.weights_dropped)
    assert torch.equal(a.attn_weights, b.attn_weights)


def test_the_trace_records_the_modules_weights():
    tr = _trace("mha")
    module = _spec("mha").build()
    for name, tensor in module.state_dict().items():
        if name != "mask":
            assert torch.equal(tr.params[name], tensor), name
    assert "mask" not in tr.params
    assert torch.equal(tr.mask, module.mask)


# --- immutability -------------------------------------------------------------------------
def test_trace_parameters_are_read_only():
    tr = _trace("causal")
    with pytest.raises(TypeError):
        tr.params["x"] = torch.zeros(1)
    with pytest.raises(TypeError):
        del tr.params["W_query.weight"]


def test_trace_attributes_cannot_be_assigned():
    tr = _trace("causal")
    with pytest.raises(dataclasses.FrozenInstanceError):
        tr.attn_weights = torch.zeros(1)
    with pytest.raises(AttributeError):
        tr.labels = ()


@pytest.mark.parametrize("kind", ["simplified", "v2", "causal", "mha", "wrapper"])
def test_trace_tensors_refuse_in_place_changes(kind):
    tr = tracing.trace_simplified(_x()[0], LAB) if kind == "simplified" else _trace(kind)
    for tensor in tracing.tensors_of(tr):
        assert tensor.is_inference()
    with pytest.raises(RuntimeError, match="[Ii]nference"):
        tr.output.add_(1.0)
    with pytest.raises(RuntimeError):
        (tr.heads[0] if isinstance(tr, tracing.WrapperTrace) else tr).attn_weights.zero_()


def test_trace_inputs_are_a_copy_of_the_callers_tensor():
    x = _x()
    tr = tracing.trace_causal(_spec("causal"), x, LAB)
    x[0, 0, 0] += 100.0
    assert not torch.equal(tr.inputs, x)


# --- names and shapes ---------------------------------------------------------------------
def test_multihead_shapes_are_named_by_role():
    tr = _trace("mha")
    b, H, hd = 2, HEADS, D_OUT // HEADS
    expected = {
        "inputs": (b, N, D_IN),
        "queries": (b, N, D_OUT),
        "keys": (b, N, D_OUT),
        "values": (b, N, D_OUT),
        "queries_heads": (b, H, N, hd),
        "keys_heads": (b, H, N, hd),
        "values_heads": (b, H, N, hd),
        "attn_scores": (b, H, N, N),
        "scaled_scores": (b, H, N, N),
        "attn_weights": (b, H, N, N),
        "weights_dropped": (b, H, N, N),
        "context_heads": (b, H, N, hd),
        "context": (b, N, D_OUT),
        "output": (b, N, D_OUT),
        "mask": (CTX, CTX),
    }
    for name, shape in expected.items():
        assert tuple(getattr(tr, name).shape) == shape, name
    assert tuple(tr.params["out_proj.weight"].shape) == (D_OUT, D_OUT)
    assert tuple(tr.params["out_proj.bias"].shape) == (D_OUT,)
    assert tr.kind == "multihead"
    assert tr.num_tokens == N
    assert next(iter(tr.params)) == "W_query.weight"


def test_causal_shapes_are_named_by_role():
    tr = _trace("causal")
    assert tr.queries.shape == (2, N, D_OUT)
    assert tr.attn_weights.shape == (2, N, N)
    assert tr.context.shape == (2, N, D_OUT)
    assert torch.equal(tr.output, tr.context)


def test_wrapper_traces_each_head_as_a_causal_trace():
    tr = _trace("wrapper")
    assert len(tr.heads) == HEADS
    for head in tr.heads:
        assert isinstance(head, tracing.CausalTrace)
        assert head.attn_weights.shape == (2, N, N)
        assert head.context.shape == (2, N, D_OUT // HEADS)
    assert tr.output.shape == (2, N, D_OUT)
    joined = torch.cat([head.context for head in tr.heads], dim=-1)
    assert torch.equal(joined, tr.output)
    # each head's weights are its own module's: head 1 differs from head 0
    assert not torch.equal(tr.heads[0].attn_weights, tr.heads[1].attn_weights)
    assert torch.equal(tr.heads[1].params["W_query.weight"], tr.params["heads.1.W_query.weight"])


def test_simplified_trace_holds_every_route_to_the_weights():
    x = _x()[0]
    tr = tracing.trace_simplified(x, LAB)
    assert tr.attn_scores.shape == (N, N)
    assert torch.allclose(tr.attn_scores, tr.attn_scores.T, atol=1e-4)  # X X^T
    assert torch.allclose(tr.sum_weights.sum(-1), torch.ones(N), atol=1e-5)
    assert torch.allclose(tr.attn_weights, torch.softmax(x @ x.T, dim=-1))
    assert torch.allclose(tr.loop_scores, x @ x.T, atol=1e-5)
    assert tr.context.shape == (N, D_IN)


def test_simplified_trace_skips_the_loop_above_the_cap():
    n = tracing.LOOP_TOKEN_CAP + 1
    tr = tracing.trace_simplified(
        torch.randn(n, 3, generator=torch.Generator().manual_seed(0)), labels(n)
    )
    assert tr.loop_scores is None
    assert (
        tracing.trace_simplified(torch.ones(tracing.LOOP_TOKEN_CAP, 3), labels(16)).loop_scores
        is not None
    )


# --- the mask -----------------------------------------------------------------------------
def test_mask_is_built_at_context_length_and_sliced_to_the_tokens():
    tr = _trace("causal")
    assert tr.mask.shape == (CTX, CTX)
    mask = tracing.causal_mask(tr)
    assert mask.shape == (N, N)
    assert torch.equal(mask, torch.triu(torch.ones(N, N), diagonal=1))


def test_masked_scores_are_minus_infinity_exactly_on_future_keys():
    tr = _trace("mha")
    future = tracing.causal_mask(tr).bool()
    scores = tr.attn_scores
    assert torch.isneginf(scores[..., future]).all()
    assert torch.isfinite(scores[..., ~future]).all()
    assert (tr.attn_weights[..., future] == 0).all()


def test_unmasked_scores_are_q_k_transpose():
    tr = _trace("causal")
    unmasked = tracing.unmasked_scores(tr)
    assert torch.isfinite(unmasked).all()
    assert torch.allclose(unmasked, tr.queries @ tr.keys.transpose(1, 2))
    future = tracing.causal_mask(tr).bool()
    assert torch.equal(unmasked[..., ~future], tr.attn_scores[..., ~future])


@pytest.mark.parametrize("kind", ["causal", "mha"])
def test_renormalized_weights_equal_the_minus_infinity_route(kind):
    tr = _trace(kind)
    route1 = tracing.renormalized_weights(tr)
    assert route1.shape == tr.attn_weights.shape
    assert torch.allclose(route1, tr.attn_weights, atol=1e-6)


# --- dropout ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["causal", "mha"])
def test_dropout_mask_in_training_mode(kind):
    p = 0.5
    tr = _trace(kind, training=True, dropout=p, dropout_seed=5)
    weights, dropped = tr.attn_weights, tr.weights_dropped
    mask = tracing.dropout_mask(tr)
    nan = torch.isnan(mask)
    assert torch.equal(nan, weights == 0)
    assert set(mask[~nan].unique().tolist()) == {0.0, 1.0}
    observable = ~nan
    expected = weights * torch.nan_to_num(mask) / (1 - p)
    assert torch.allclose(dropped[observable], expected[observable], rtol=1e-6, atol=0)
    assert (dropped[nan] == 0).all()
    # The mask is the one nn.Dropout draws from the same seed on a tensor of ones.
    with seeded(5):
        ones = F.dropout(torch.ones_like(weights), p, training=True)
    assert torch.equal(mask[observable], (ones != 0).to(mask.dtype)[observable])


def test_dropout_mask_is_read_not_drawn_again():
    tr = _trace("causal", training=True)
    assert torch.equal(
        torch.nan_to_num(tracing.dropout_mask(tr), nan=-1.0),
        torch.nan_to_num(tracing.dropout_mask(tr), nan=-1.0),
    )


@pytest.mark.parametrize("kind", ["causal", "mha"])
def test_eval_mode_dropout_is_the_identity(kind):
    tr = _trace(kind, training=False, dropout=0.5)
    assert torch.equal(tr.weights_dropped, tr.attn_weights)
    mask = tracing.dropout_mask(tr)
    assert (mask[~torch.isnan(mask)] == 1).all()


def test_training_with_dropout_zero_draws_nothing():
    tr = _trace("causal", training=True, dropout=0.0)
    assert torch.equal(tr.weights_dropped, tr.attn_weights)


def test_dropout_keeps_about_one_minus_p_of_the_weights():
    x = typed_batch(D_IN, n=6)
    x = torch.cat([x] * 8)  # 16 examples: enough draws for the rate to show
    tr = tracing.trace_causal(_spec("causal", 0.3), x, LAB, training=True, dropout_seed=3)
    mask = tracing.dropout_mask(tr)
    rate = float(mask[~torch.isnan(mask)].mean())
    assert abs(rate - 0.7) < 0.1


# --- strides ------------------------------------------------------------------------------
def _contiguous_stride(shape):
    stride, out = 1, []
    for size in reversed(shape):
        out.append(stride)
        stride *= size
    return tuple(reversed(out))


def test_strides_table_shows_the_head_split_non_contiguous_and_the_merge_contiguous():
    tr = _trace("mha")
    rows = tracing.strides_table(tr)
    by_layout = {}
    for row in rows:
        by_layout.setdefault((row["shape"], row["stride"]), []).append(row)
        assert set(row) >= {"step", "shape (symbols)", "shape", "stride", "contiguous"}

    heads = tr.queries_heads
    split_rows = by_layout[(str(tuple(heads.shape)), str(heads.stride()))]
    assert split_rows and all(r["contiguous"] is False for r in split_rows)
    assert heads.stride() != _contiguous_stride(tuple(heads.shape))

    merged = tr.context
    merged_rows = by_layout[(str(tuple(merged.shape)), str(merged.stride()))]
    assert merged_rows and all(r["contiguous"] is True for r in merged_rows)
    assert rows[-1]["contiguous"] is True
    assert rows[-1]["shape"] == str((2, N, D_OUT))
    assert "(b, H, T, head_dim)" in {r["shape (symbols)"] for r in rows}


def test_strides_table_contiguity_agrees_with_the_strides():
    for row in tracing.strides_table(_trace("mha")):
        shape = eval(row["shape"])  # a tuple the engine printed
        stride = eval(row["stride"])
        assert row["contiguous"] is (stride == _contiguous_stride(shape)), row["step"]


# --- specs --------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["v1", "v2", "causal", "wrapper", "mha"])
def test_constructor_call_rebuilds_the_same_module(kind):
    spec = tracing.ModuleSpec(kind, 5, 4, 9, 0.25, 2, kind != "v1", 77)
    namespace = {
        "SelfAttention_v1": M.SelfAttention_v1,
        "SelfAttention_v2": M.SelfAttention_v2,
        "CausalAttention": M.CausalAttention,
        "MultiHeadAttentionWrapper": M.MultiHeadAttentionWrapper,
        "MultiHeadAttention": M.MultiHeadAttention,
    }
    with book_seed(77):
        typed = eval(spec.constructor_call(), namespace)  # our own literal
    built = spec.build()
    assert type(typed) is type(built)
    assert typed.state_dict().keys() == built.state_dict().keys()
    for name, tensor in built.state_dict().items():
        assert torch.equal(typed.state_dict()[name], tensor), name


def test_unknown_module_kind_is_refused():
    with pytest.raises(ValueError, match="unknown module kind 'gru'"):
        tracing.ModuleSpec("gru", 2, 2).build()


def test_empty_input_has_no_nan_in_the_simplified_trace():
    tr = tracing.trace_simplified(torch.empty(0, 3), ())
    assert tuple(tr.attn_weights.shape) == (0, 0)
    assert tr.num_tokens == 0
    assert not math.isnan(float(tr.context.sum()))


def test_a_multihead_spec_as_a_wrapper_gives_an_output_as_wide():
    mha = _spec("mha", dropout=0.0)
    wrapper = mha.as_wrapper()
    assert wrapper == _spec("wrapper", dropout=0.0)
    with torch.inference_mode():
        assert wrapper.build()(_x()).shape == mha.build()(_x()).shape == (2, N, D_OUT)
