"""The two encoder–decoders: one size, the same parameters, and what each decoder reads."""

from __future__ import annotations

import math

import torch

from attnviz.models.bottleneck import bottleneck_training as T
from attnviz.models.bottleneck import encoder_decoder as ED
from attnviz.models.bottleneck import toy_language as L


def test_the_two_models_have_the_same_parameters_shape_for_shape():
    b = ED.build(ED.Seq2SeqConfig(attention=False), 0)
    a = ED.build(ED.Seq2SeqConfig(attention=True), 0)
    shapes = {k: tuple(v.shape) for k, v in b.state_dict().items()}
    assert shapes == {k: tuple(v.shape) for k, v in a.state_dict().items()}
    assert ED.parameter_count(a) == ED.parameter_count(b) == 42_356
    assert b.encoder.hidden_size * 2 == b.decoder.hidden_size == 64  # each encoder state: 64


def test_a_seed_names_the_initial_weights():
    cfg = ED.Seq2SeqConfig(attention=True)
    one, two, other = ED.build(cfg, 3), ED.build(cfg, 3), ED.build(cfg, 4)
    assert all(torch.equal(x, y) for x, y in zip(one.parameters(), two.parameters(), strict=True))
    assert not torch.equal(next(one.parameters()), next(other.parameters()))


def test_greedy_decoding_writes_one_word_per_source_word():
    cfg = ED.Seq2SeqConfig(attention=True)
    model = ED.model_from(cfg, ED.parameters_of(ED.build(cfg, 0)))
    assert not any(p.requires_grad for p in model.parameters()) and not model.training
    source = L.held_out(7, 3)
    out = model.greedy(source)
    assert out.ids.shape == (3, 7) and out.weights is not None
    assert out.weights.shape == (3, 7, 7)
    assert torch.allclose(out.weights.sum(-1), torch.ones(3, 7), atol=1e-5)
    plain = ED.model_from(ED.Seq2SeqConfig(attention=False), ED.parameters_of(ED.build(cfg, 0)))
    assert plain.greedy(source).weights is None


def test_the_bottleneck_reads_the_same_context_at_every_step():
    """Without attention, what the decoder reads besides its state is the summary, at each step;
    with it, a weighted sum of the encoder states whose weights are a softmax of dot products."""
    cfg = ED.Seq2SeqConfig(attention=False)
    model = ED.build(cfg, 0)
    source = L.held_out(5, 2)
    states, summary = model.encode(source)
    s = torch.randn(2, 4, 64, generator=torch.Generator().manual_seed(0))
    logits, weights = model.read_out(s, states, summary)
    assert weights is None and logits.shape == (2, 4, L.VOCAB)
    att = ED.build(ED.Seq2SeqConfig(attention=True), 0)
    states, summary = att.encode(source)
    _, w = att.read_out(s, states, summary)
    assert w is not None
    expected = torch.softmax(torch.einsum("btd,bsd->bts", s, states), dim=-1)
    assert torch.allclose(w, expected, atol=1e-6)


def test_the_learning_rate_falls_on_a_cosine():
    cfg = T.TrainConfig(model=ED.Seq2SeqConfig(attention=True), steps=101, lr=1e-2)
    assert math.isclose(T.learning_rate(cfg, 1), 1e-2)
    assert math.isclose(T.learning_rate(cfg, 101), 1e-2 * cfg.final_lr)
    assert math.isclose(T.learning_rate(cfg, 51), 1e-2 * (cfg.final_lr + 1) / 2)
