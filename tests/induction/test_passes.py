"""Trained weights for passes 2–4: the token rule, exact agreement with the trained model, and
heads that differ on the default text."""

from __future__ import annotations

import pytest
import torch

from attnviz.core import modules as M
from attnviz.core.tokens import tokenize
from attnviz.models import detectors as D
from attnviz.models.induction import passes
from attnviz.models.induction.model import run
from attnviz.models.induction.recorded import recorded

DEFAULT_TEXT = "Your journey starts with one step"


def _default_repeated():
    tokens = tokenize(DEFAULT_TEXT)
    ids = passes.repeated(tokens.ids)
    labels = [f"{i}: {d}" for i, d in enumerate(tokens.displays * 2)]
    return ids, labels


def test_tokens_map_in_order_of_first_appearance_and_repeats_stay_repeats():
    m = passes.map_tokens([50256, 464, 50256, 3797, 464])
    assert m.ids == (0, 1, 0, 2, 1) and m.distinct == 3 and not m.wrapped
    many = passes.map_tokens(list(range(1000, 1066)) + [1000, 1064])
    assert many.ids[:64] == tuple(range(64))
    assert many.ids[64:] == (0, 1, 0, 0)  # 65th and 66th distinct wrap to 0 and 1
    assert many.wrapped and many.distinct == 66
    assert passes.repeated((3, 4), copies=3) == (3, 4, 3, 4, 3, 4)
    assert passes.repeated((3, 4, 5), limit=4) == (3, 4, 5, 3)


def _model_layer(tp: passes.TrainedPass):
    ref = recorded().reference
    model = ref.model(tp.step)
    ids = torch.tensor([tp.model_ids])
    with torch.inference_mode():
        r = run(model, ids)
        with M.recording() as taps:
            out = model.blocks[tp.layer](r.layer_inputs[tp.layer])
    return r, taps, out


@pytest.mark.parametrize("layout", ["text", "probe"])
@pytest.mark.parametrize("layer", [0, 1])
def test_the_chapters_modules_reproduce_the_trained_models_own_attention(layer, layout):
    ids, labels = _default_repeated()
    for head in range(4):
        tp = passes.trained_pass(ids, labels, layer=layer, head=head, layout=layout)
        T = len(tp.model_ids)
        r, taps, out = _model_layer(tp)
        assert torch.equal(tp.x, r.layer_inputs[layer])
        with torch.inference_mode():
            with M.recording() as causal_taps:
                tp.causal_attention()(tp.x)
            with M.recording() as v2_taps:
                tp.self_attention_v2()(tp.x[0])
        # pass 3: the same head's weights, the same numbers
        assert torch.equal(causal_taps["attn_weights"][0][0], r.attn_weights[0, layer, head])
        # pass 2: the same scores QKᵀ below the diagonal (pass 2 has no mask)
        model_scores = taps["attn_scores"][0][0, head]
        lower = torch.tril(torch.ones(T, T, dtype=torch.bool))
        assert torch.equal(v2_taps["attn_scores"][0][lower], model_scores[lower])
    # pass 4: the whole layer, out_proj included
    with torch.inference_mode():
        with M.recording() as mha_taps:
            mha_out = tp.multi_head_attention()(tp.x)
    assert torch.equal(mha_taps["attn_weights"][0], r.attn_weights[:, layer])
    assert torch.equal(mha_out, out)


def test_the_modules_take_the_chapters_shapes_and_leave_the_rng_alone():
    ids, labels = _default_repeated()
    tp = passes.trained_pass(ids, labels)
    assert tp.x.shape == (1, 12, 64) and tp.labels == tuple(labels)
    v2, causal, mha = tp.self_attention_v2(), tp.causal_attention(0.1), tp.multi_head_attention()
    assert v2.W_query.weight.shape == (16, 64) and causal.mask.shape == (24, 24)
    assert causal.dropout.p == 0.1
    assert (mha.num_heads, mha.head_dim, mha.out_proj.weight.shape) == (4, 16, (64, 64))
    assert tp.model_ids == passes.map_tokens(ids).ids


def test_long_texts_are_cut_to_the_models_context_with_a_message():
    tp = passes.trained_pass(list(range(30)), [str(i) for i in range(30)])
    assert tp.x.shape == (1, 24, 64) and len(tp.labels) == 24
    assert tp.messages == (
        "The text has 30 tokens; the trained model's context is 24, so the first 24 are used.",
    )
    with pytest.raises(ValueError, match="layer must be 0–1 and head 0–3"):
        passes.trained_pass([1], ["0: a"], layer=2)


def test_trained_heads_differ_on_the_default_text_repeated_twice():
    ids, labels = _default_repeated()
    tp = passes.trained_pass(ids, labels)
    with torch.inference_mode():
        with M.recording() as taps:
            tp.multi_head_attention()(tp.x)
        with M.recording() as v2_taps:
            tp.self_attention_v2()(tp.x[0])
    dist = D.head_distances(taps["attn_weights"][0][0])
    far = [(g, h) for g in range(4) for h in range(g + 1, 4) if dist[g, h] >= 0.5]
    assert far, dist.round(2)  # at least two heads whose rows differ by TV >= 0.5
    peaks = D.row_peaks(v2_taps["attn_weights"][0])
    assert (peaks >= 0.5).sum() >= len(peaks) / 2, peaks.round(2)


def test_the_probe_layout_shows_layer_ones_induction_heads_through_pass_3():
    tokens = tokenize(DEFAULT_TEXT)
    labels = [f"{i}: {d}" for i, d in enumerate(tokens.displays)]
    tp = passes.trained_pass(tokens.ids, labels, layer=1, head=0, layout="probe")
    assert len(tp.model_ids) == 24 and tp.labels[12] == "12: Your" and tp.labels[0] == "0: ·"
    assert tp.model_ids[12:18] == tp.model_ids[18:] == (0, 1, 2, 3, 4, 5)
    with torch.inference_mode(), M.recording() as taps:
        tp.causal_attention()(tp.x)
    w = taps["attn_weights"][0]  # (1, 24, 24)
    assert D.induction_score(w, repeat=6)[0] >= 0.5
    with pytest.raises(ValueError, match="layout must be"):
        passes.trained_pass(tokens.ids, labels, layout="other")
