"""Arbitrary Unicode text and arbitrary valid settings through the engine and the figure
builders: nothing raises, and the invariants hold (bounded hypothesis runs)."""

from __future__ import annotations

import json

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz import checks as C
from attnviz import figures as F
from attnviz import lesson
from attnviz import trace as T
from attnviz.settings import Settings

SMALL = st.builds(
    lambda d_in, heads, head_dim, extra_ctx, dropout, seeds, bias, training: Settings(
        d_in=d_in,
        d_out=heads * head_dim,
        num_heads=heads,
        context_length=8 + extra_ctx,
        dropout=dropout,
        seed_embed=seeds[0],
        seed_weights=seeds[1],
        seed_dropout=seeds[2],
        qkv_bias=bias,
        training=training,
        max_tokens=12,
    ),
    st.integers(1, 12),
    st.integers(1, 3),
    st.integers(1, 4),
    st.integers(0, 8),
    st.sampled_from([0.0, 0.1, 0.5, 0.9]),
    st.tuples(*[st.integers(0, 2**31 - 1)] * 3),
    st.booleans(),
    st.booleans(),
)


def _labels_are_unique_and_escaped(fig, n: int) -> None:
    spec = json.loads(fig.to_json())
    x = spec["data"][0]["x"]
    assert len(x) == len(set(x)) == n
    assert not any("<" in label for label in x)  # every "<" arrives as &lt;


@settings(max_examples=25, deadline=None)
@given(text=st.text(max_size=60), s=SMALL)
def test_any_text_and_settings_run_through_every_pass_and_figure(text, s):
    prep = lesson.prepare(text, s)
    if prep.empty:
        assert lesson.EMPTY_MESSAGE in prep.messages
        return
    prep, _ = lesson.within_context(prep, s.context_length)
    n = prep.num_tokens
    assert 1 <= n <= min(s.max_tokens, s.context_length)
    assert torch.isfinite(prep.x).all()

    simple = lesson.simplified(prep)
    assert C.rows_sum_to_one(simple["attn_weights"]).passed
    _labels_are_unique_and_escaped(
        F.heatmap(simple["attn_weights"], prep.labels, prep.labels, title="w"), n
    )

    trainable = lesson.trainable(prep, s)
    assert C.rows_sum_to_one(trainable["attn_weights"]).passed

    causal = lesson.causal(prep, s)
    assert C.rows_sum_to_one(causal["attn_weights"]).passed
    assert C.masking_routes_agree(
        T.renormalized_weights(causal), causal["attn_weights"], causal["scaled_scores"]
    ).ok
    if s.training and s.dropout > 0:
        mask = T.dropout_mask(causal)
        kept = mask[torch.isfinite(mask)]
        assert set(kept.unique().tolist()) <= {0.0, 1.0}
    F.relative_to_uniform(causal["attn_weights"][0], prep.labels, title="r")
    F.heatmap(causal["attn_scores"][0], prep.labels, prep.labels, title="s", kind="signed")

    multi = lesson.multihead(prep, s)
    assert multi.shape("attn_weights") == (1, s.num_heads, n, n)
    assert C.rows_sum_to_one(multi["attn_weights"]).passed
    _labels_are_unique_and_escaped(
        F.heads_grid(multi["attn_weights"][0], prep.labels, title="h"), n
    )
    F.bars(multi["attn_weights"][0, 0, -1], prep.labels, title="b")
