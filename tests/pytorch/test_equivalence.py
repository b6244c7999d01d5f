"""Our MultiHeadAttention against PyTorch's SDPA and nn.MultiheadAttention, over random shapes,
in eval mode, within the engine's tolerance (the checks of attnviz/teach/checks.py)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.core import modules as M
from attnviz.models import implementations as impl
from attnviz.teach import checks as live_checks
from tests.support import module_checks as MC

from .helpers import mha, random_x


@st.composite
def cases(draw, square: bool | None = None):
    """(module, x): b 1–2, T 1–8, heads dividing d_out; ``square`` forces d_in == d_out
    (True) or d_in != d_out (False). Dropout may be on: eval mode must ignore it."""
    b, tokens = draw(st.integers(1, 2)), draw(st.integers(1, 8))
    heads, head_dim = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    d_out = heads * head_dim
    if square:
        d_in = d_out
    elif square is False:
        d_in = draw(st.integers(1, 12).filter(lambda d: d != d_out))
    else:
        d_in = draw(st.integers(1, 12))
    module = mha(
        d_in,
        d_out,
        heads,
        tokens + draw(st.integers(0, 3)),  # context_length >= T: the mask is sliced
        bias=draw(st.booleans()),
        seed=draw(st.integers(0, 2**16)),
        dropout=draw(st.sampled_from([0.0, 0.1, 0.5])),
    )
    scale = draw(st.sampled_from([0.1, 1.0, 4.0]))  # small, typical and large inputs
    return module, random_x((b, tokens, d_in), draw(st.integers(0, 2**16)), scale)


def _recorded(module, x):
    with torch.inference_mode(), M.recording() as taps:
        out = module(x)
    b, n, _ = x.shape
    recorded = {name: tensors[0] for name, tensors in taps.items()}
    for role in ("queries", "keys", "values"):
        heads = recorded[role].view(b, n, module.num_heads, module.head_dim).transpose(1, 2)
        recorded[role + "_heads"] = heads
    return out, recorded


@settings(max_examples=40)
@given(cases())
def test_sdpa_gives_our_context_vectors_on_every_shape(case):
    module, x = case
    _, rec = _recorded(module, x)
    result = live_checks.matches_sdpa(
        rec["queries_heads"], rec["keys_heads"], rec["values_heads"], rec["context_heads"], True
    )
    assert result.passed, result.detail


@settings(max_examples=30)
@given(cases())
def test_the_sdpa_implementation_gives_our_output_after_out_proj(case):
    module, x = case
    result = impl.verify(impl.SDPA(module), module, x)
    assert result.passed, result.detail


@settings(max_examples=40)
@given(cases(square=True))
def test_nn_multiheadattention_gives_our_output_where_d_in_equals_d_out(case):
    module, x = case
    result = MC.matches_torch_mha(module, x)
    assert result.passed, result.detail


@settings(max_examples=30)
@given(cases(square=True))
def test_nn_multiheadattention_per_head_weights_equal_ours(case):
    module, x = case
    _, rec = _recorded(module, x)
    output, weights = live_checks.torch_mha_forward(module, x)
    b, tokens, _ = x.shape
    assert weights.shape == (b, module.num_heads, tokens, tokens)  # one matrix per head
    assert torch.equal(weights == 0, rec["attn_weights"] == 0)  # the same cells are masked
    result = MC.torch_mha_weights_match(module, x)
    assert result.passed, result.detail


@settings(max_examples=20)
@given(cases(square=False))
def test_nn_multiheadattention_is_not_applicable_when_d_in_differs(case):
    module, x = case
    d_in = module.W_query.in_features
    for result in (MC.matches_torch_mha(module, x), MC.torch_mha_weights_match(module, x)):
        assert result.status == "n/a"
        assert f"d_in={d_in}, d_out={module.d_out}" in result.explanation
    assert live_checks.torch_mha_forward(module, x) is None
    with pytest.raises(ValueError, match="d_in == d_out"):
        impl.TorchMHA(module, need_weights=False)


@settings(max_examples=25)
@given(cases())
def test_every_benchmark_implementation_computes_our_function(case):
    module, x = case
    square = module.W_query.in_features == module.d_out
    variants = impl.build_variants(module)
    assert [v.key for v in variants] == list(impl.KEYS)
    for v in variants:
        if v.module is None:
            assert not square and v.key.startswith("torch_mha")
            assert "d_in == d_out" in v.reason
            continue
        result = impl.verify(v.module, module, x)
        assert result.passed, f"{v.label}: {result.detail}"


@settings(max_examples=15)
@given(cases())
def test_side_by_side_shows_three_agreeing_outputs_or_says_why_not(case):
    module, x = case
    side = impl.side_by_side(module, x)
    b, tokens, _ = x.shape
    assert side.ours.shape == side.sdpa.shape == (b, tokens, module.d_out)
    assert side.ours_weights.shape == (b, module.num_heads, tokens, tokens)
    assert [c.name for c in side.checks] == [
        "matches_sdpa",
        "same_output_as_mha",
        "matches_torch_mha",
    ]
    if module.W_query.in_features == module.d_out:
        assert all(c.passed for c in side.checks), [c.detail for c in side.checks]
        assert side.weights_check.passed and side.not_applicable is None
        assert side.torch_mha.shape == side.ours.shape
        assert side.torch_weights.shape == side.ours_weights.shape
    else:
        assert [c.status for c in side.checks] == ["pass", "pass", "n/a"]
        assert side.weights_check.status == "n/a"
        assert side.torch_mha is None and side.torch_weights is None
        assert "d_in == d_out" in side.not_applicable


# --- the check can fail -------------------------------------------------------------------------
class NoMask(impl.CombinedQKV):
    def attend(self, queries, keys, values):
        scores = queries @ keys.transpose(-2, -1)
        return torch.softmax(scores / self.head_dim**0.5, dim=-1) @ values  # sees the future


class ScaledByDOut(impl.CombinedQKV):
    def attend(self, queries, keys, values):
        num_tokens = queries.shape[-2]
        scores = (queries @ keys.transpose(-2, -1)).masked_fill(
            self.future[:num_tokens, :num_tokens], -torch.inf
        )
        return torch.softmax(scores / self.d_out**0.5, dim=-1) @ values  # √d_out, not √head_dim


class HeadsMixed(impl.CombinedQKV):
    def split_qkv(self, x):
        b, num_tokens, _ = x.shape
        qkv = self.qkv(x).reshape(3, b, self.num_heads, num_tokens, self.head_dim)  # no permute
        return qkv.unbind(0)


class KeysForQueries(impl.CombinedQKV):
    def split_qkv(self, x):
        queries, keys, values = super().split_qkv(x)
        return keys, queries, values  # the stacked weight read in the wrong order


class SDPANotCausal(impl.SDPA):
    def attend(self, queries, keys, values):
        return torch.nn.functional.scaled_dot_product_attention(queries, keys, values)


@pytest.mark.parametrize(
    "broken", [NoMask, ScaledByDOut, HeadsMixed, KeysForQueries, SDPANotCausal]
)
def test_a_broken_implementation_fails_verification(broken):
    module = mha(16, 16, 4, 6, seed=3)
    x = random_x((1, 6, 16), 5)
    assert impl.verify(impl.CombinedQKV(module), module, x).passed  # the correct one passes
    result = impl.verify(broken(module), module, x)
    assert result.status == "fail"
    assert result.max_diff > 10 * result.tol
