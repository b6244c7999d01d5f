"""From typed text and settings to prepared inputs, specs and traces."""

from __future__ import annotations

import torch

from attnviz.core import trace as tracing
from attnviz.core.settings import Settings
from attnviz.core.tokens import tokenize
from attnviz.teach import prepare

TEXT = "Your journey starts with one step"


def test_prepare_tokenizes_and_embeds_the_text():
    s = Settings()
    prep = prepare.prepare(TEXT, s)
    assert not prep.book
    assert prep.labels == tokenize(TEXT).labels
    assert prep.x.shape == (1, 6, s.d_in)
    assert prep.messages == ()
    assert prep.num_tokens == 6 and not prep.empty


def test_x_ignores_the_weight_seed_context_length_and_dropout():
    base = prepare.prepare(TEXT, Settings()).x
    other = prepare.prepare(TEXT, Settings(seed_weights=9, context_length=64, dropout=0.5)).x
    assert torch.equal(base, other)
    assert not torch.equal(base, prepare.prepare(TEXT, Settings(seed_embed=9)).x)


def test_prepare_of_empty_text_says_there_is_nothing_to_attend_over():
    prep = prepare.prepare("", Settings())
    assert prep.empty
    assert prep.x.shape == (1, 0, 8)
    assert prep.messages == (prepare.EMPTY_MESSAGE,)


def test_prepare_caps_long_text_and_says_so():
    s = Settings(max_tokens=20)
    prep = prepare.prepare("word " * 100, s)
    assert prep.num_tokens == 20
    assert prep.x.shape == (1, 20, 8)
    assert len(prep.messages) == 1
    assert "the token cap is 20" in prep.messages[0]
    assert f"has {tokenize('word ' * 100).total} tokens" in prep.messages[0]


def test_within_context_cuts_to_the_context_and_explains():
    prep = prepare.prepare("word " * 40, Settings(max_tokens=40))
    cut, note = prepare.within_context(prep, 32)
    assert cut.num_tokens == 32
    assert cut.x.shape == (1, 32, 8)
    assert torch.equal(cut.x, prep.x[:, :32])
    assert cut.labels == prep.labels[:32]
    assert "40 tokens" in note and "context_length is 32" in note
    same, none = prepare.within_context(prep, 40)
    assert same is prep and none is None


def test_specs_follow_the_settings():
    s = Settings(
        d_in=12, d_out=6, num_heads=3, context_length=16, dropout=0.2, qkv_bias=True, seed_weights=5
    )
    assert prepare.spec_causal(s) == tracing.ModuleSpec("causal", 12, 6, 16, 0.2, 1, True, 5)
    assert prepare.spec_multihead(s) == tracing.ModuleSpec("mha", 12, 6, 16, 0.2, 3, True, 5)
    assert prepare.spec_wrapper(s) == tracing.ModuleSpec("wrapper", 12, 2, 16, 0.2, 3, True, 5)
    assert prepare.spec_trainable(s, "v1").qkv_bias is False  # v1 has no bias to give
    assert prepare.spec_trainable(s, "v2").qkv_bias is True


def test_the_wrapper_and_the_weight_split_have_the_same_output_width():
    s = Settings(d_out=12, num_heads=3)
    prep = prepare.prepare(TEXT, s)
    assert (
        tuple(prepare.wrapper(prep, s).output.shape)
        == tuple(prepare.multihead(prep, s).output.shape)
        == (1, 6, 12)
    )


def test_lesson_traces_use_the_training_flag_and_dropout_seed():
    s = Settings(dropout=0.5, training=True, seed_dropout=77)
    prep = prepare.prepare(TEXT, s)
    tr = prepare.causal(prep, s)
    assert tr.training and tr.dropout_seed == 77
    direct = tracing.trace_causal(prepare.spec_causal(s), prep.x, prep.labels, True, 77)
    assert torch.equal(tr.output, direct.output)
    other = prepare.causal(prep, s.with_changes(seed_dropout=78))
    assert not torch.equal(tr.weights_dropped, other.weights_dropped)


def test_lesson_traces_are_reproducible_from_plain_values():
    s = Settings(training=True, dropout=0.3)
    a = prepare.multihead(prepare.prepare(TEXT, s), s)
    b = prepare.multihead(prepare.prepare(TEXT, s), s)
    tensors_a, tensors_b = tracing.tensors_of(a), tracing.tensors_of(b)
    assert len(tensors_a) == len(tensors_b) > 10
    for x, y in zip(tensors_a, tensors_b, strict=True):
        assert torch.equal(x, y)


# --- the batch of two texts ------------------------------------------------------------------
def test_a_batch_of_texts_of_different_lengths_is_cut_to_the_shorter_and_says_so():
    s = Settings()
    batch = prepare.prepare_batch(TEXT, "Every effort moves you forward", s)  # 6 and 5 tokens
    assert batch.num_tokens == 5 and batch.x.shape == (2, 5, s.d_in)
    (message,) = batch.messages
    assert message.startswith("The two texts have 6 and 5 tokens.")
    assert "no padding mask" in message
    assert "uses the first 5 tokens of each" in message
    assert batch.labels == (
        prepare.prepare(TEXT, s).labels[:5],
        tokenize("Every effort moves you forward").labels,
    )


def test_a_batch_of_texts_of_equal_length_has_no_message():
    s = Settings()
    batch = prepare.prepare_batch(TEXT, "one two three four five six", s)
    assert batch.num_tokens == 6
    assert batch.messages == ()


def test_a_batch_longer_than_the_context_names_both_cuts():
    s = Settings(context_length=4)
    batch = prepare.prepare_batch(TEXT, "Every effort moves you forward", s)
    assert batch.num_tokens == 4
    assert batch.messages == (
        "The two texts have 6 and 5 tokens. The chapter's modules have no padding mask, so the "
        "batch uses the first 4 tokens of each.",
        "The batch is cut to context_length = 4 tokens.",
    )
    same = prepare.prepare_batch(TEXT, TEXT, s)
    assert same.messages == ("The batch is cut to context_length = 4 tokens.",)
