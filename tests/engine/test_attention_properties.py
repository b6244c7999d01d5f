"""Properties over random small shapes: b 1-3, T 1-8, d_in 1-8, heads dividing d_out."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from attnviz.core import modules as M
from attnviz.core import trace as tracing
from attnviz.teach import checks as live_checks
from tests.support import module_checks as MC

from .helpers import labels, random_x


@dataclass(frozen=True)
class Case:
    b: int
    n: int
    d_in: int
    heads: int
    head_dim: int
    context_length: int
    seed: int
    qkv_bias: bool

    @property
    def d_out(self) -> int:
        return self.heads * self.head_dim

    def x(self) -> torch.Tensor:
        return random_x((self.b, self.n, self.d_in), self.seed)

    def spec(self, kind: str = "mha", dropout: float = 0.0) -> tracing.ModuleSpec:
        d_out = self.head_dim if kind == "wrapper" else self.d_out
        heads = 1 if kind == "causal" else self.heads
        return tracing.ModuleSpec(
            kind, self.d_in, d_out, self.context_length, dropout, heads, self.qkv_bias, self.seed
        )


@st.composite
def cases(draw, min_tokens: int = 1) -> Case:
    n = draw(st.integers(min_tokens, 8))
    return Case(
        b=draw(st.integers(1, 3)),
        n=n,
        d_in=draw(st.integers(1, 8)),
        heads=draw(st.integers(1, 4)),
        head_dim=draw(st.integers(1, 3)),
        context_length=n + draw(st.integers(0, 3)),
        seed=draw(st.integers(0, 2**31 - 1)),
        qkv_bias=draw(st.booleans()),
    )


def _future(n: int) -> torch.Tensor:
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)


@given(cases())
def test_attention_rows_are_positive_sum_to_one_and_ignore_the_future(case):
    x = case.x()
    lab = labels(case.n)
    for tr in (
        tracing.trace_causal(case.spec("causal"), x, lab),
        tracing.trace_multihead(case.spec("mha"), x, lab),
    ):
        w = tr.attn_weights
        assert (w >= 0).all()
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]), rtol=0, atol=1e-5)
        assert (w[..., _future(case.n)] == 0).all()
        assert live_checks.rows_sum_to_one(w).passed


@given(cases())
def test_trainable_rows_sum_to_one_over_every_key(case):
    tr = tracing.trace_trainable(case.spec("v2"), case.x()[0], labels(case.n))
    w = tr.attn_weights
    assert w.shape == (case.n, case.n)
    assert (w > 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(case.n), rtol=0, atol=1e-5)


@given(cases(min_tokens=2), st.data())
def test_no_output_depends_on_a_later_token(case, data):
    cut = data.draw(st.integers(1, case.n - 1), label="cut")
    x = case.x()
    changed = x.clone()
    changed[:, cut:] += 10 * random_x((case.b, case.n - cut, case.d_in), case.seed + 1)
    for kind in ("causal", "mha", "wrapper"):
        module = case.spec(kind).build().eval()
        with torch.no_grad():
            before, after = module(x), module(changed)
        torch.testing.assert_close(before[:, :cut], after[:, :cut], rtol=0, atol=1e-6)
        assert not torch.equal(before[:, cut:], after[:, cut:])


@given(cases())
def test_wrapper_and_weight_split_agree_before_out_proj_in_eval_mode(case):
    wrapper = case.spec("wrapper", dropout=0.3).build().eval()
    mha = case.spec("mha", dropout=0.3).build().eval()
    # Load the wrapper's heads into the weight-split projections, head h = rows h*hd:(h+1)*hd.
    with torch.no_grad():
        for name in ("W_query", "W_key", "W_value"):
            getattr(mha, name).weight.copy_(
                torch.cat([getattr(h, name).weight for h in wrapper.heads])
            )
            if case.qkv_bias:
                getattr(mha, name).bias.copy_(
                    torch.cat([getattr(h, name).bias for h in wrapper.heads])
                )
    x = case.x()
    with torch.no_grad():
        concatenated = wrapper(x)
        with M.recording() as taps:
            mha(x)
    merged = taps["context"][0]
    assert concatenated.shape == merged.shape == (case.b, case.n, case.d_out)
    torch.testing.assert_close(concatenated, merged, rtol=1e-5, atol=1e-6)
    assert MC.wrapper_equals_split(mha, x).passed


@given(cases())
def test_multihead_context_matches_pytorch_sdpa(case):
    tr = tracing.trace_multihead(case.spec("mha"), case.x(), labels(case.n))
    q, k, v = tr.queries_heads, tr.keys_heads, tr.values_heads
    reference = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(tr.context_heads, reference, rtol=1e-5, atol=1e-6)
    assert live_checks.matches_sdpa(q, k, v, tr.context_heads, causal=True).passed


@given(cases())
def test_trainable_context_matches_pytorch_sdpa_without_a_mask(case):
    tr = tracing.trace_trainable(case.spec("v2"), case.x()[0], labels(case.n))
    reference = F.scaled_dot_product_attention(tr.queries, tr.keys, tr.values)
    torch.testing.assert_close(tr.output, reference, rtol=1e-5, atol=1e-6)


@given(cases())
def test_the_renormalizing_route_on_raw_tensors_matches_sdpa_at_any_scale(case):
    q, k, v = (
        random_x((case.b, case.heads, case.n, case.head_dim), case.seed + i) * 3 for i in range(3)
    )
    mask = torch.triu(torch.ones(case.context_length, case.context_length), diagonal=1)
    ours = M.renormalized_causal_weights(q, k, mask) @ v
    torch.testing.assert_close(
        ours, F.scaled_dot_product_attention(q, k, v, is_causal=True), rtol=1e-5, atol=1e-5
    )


@given(cases())
def test_both_masking_routes_agree(case):
    tr = tracing.trace_multihead(case.spec("mha"), case.x(), labels(case.n))
    torch.testing.assert_close(tracing.renormalized_weights(tr), tr.attn_weights, rtol=0, atol=1e-5)


@given(cases())
def test_batched_heads_equal_a_loop_over_heads(case):
    tr = tracing.trace_multihead(case.spec("mha"), case.x(), labels(case.n))
    hd = case.head_dim
    for h in range(case.heads):
        cols = slice(h * hd, (h + 1) * hd)
        one = F.scaled_dot_product_attention(
            tr.queries[..., cols], tr.keys[..., cols], tr.values[..., cols], is_causal=True
        )
        torch.testing.assert_close(tr.context[..., cols], one, rtol=1e-5, atol=1e-6)


@given(cases(), st.sampled_from([0.1, 0.5, 0.9]))
def test_training_dropout_keeps_or_zeroes_each_weight_and_scales_survivors(case, p):
    tr = tracing.trace_multihead(
        case.spec("mha", dropout=p),
        case.x(),
        labels(case.n),
        training=True,
        dropout_seed=case.seed,
    )
    w, d = tr.attn_weights, tr.weights_dropped
    kept = d != 0
    torch.testing.assert_close(d[kept], w[kept] / (1 - p), rtol=1e-6, atol=0)
    mask = tracing.dropout_mask(tr)
    assert torch.equal(torch.isnan(mask), w == 0)
