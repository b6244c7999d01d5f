"""Settings: defaults, bounds, the multi-head divisibility rule, parameter counts, cost."""

from __future__ import annotations

import dataclasses

import pytest

from attnviz.core.modules import MultiHeadAttention
from attnviz.core.settings import (
    BOOK,
    GPT2_SMALL,
    GPT2_XL,
    LABELS,
    Settings,
    SettingsError,
    mha_parameter_count,
    request_bytes,
)
from attnviz.core.trace import ModuleSpec


def test_defaults():
    s = Settings()
    assert (s.d_in, s.d_out, s.num_heads, s.context_length) == (8, 8, 2, 32)
    assert s.dropout == 0.1
    assert s.training is False  # eval mode
    assert (s.seed_embed, s.seed_weights, s.seed_dropout) == (123, 123, 123)
    assert s.max_tokens == 256
    assert s.qkv_bias is False
    assert s.head_dim == 4
    assert s.multihead_problem() is None


BAD_VALUES = [
    ("d_in", 0),
    ("d_in", 1601),
    ("d_in", 16.0),
    ("d_in", "16"),
    ("d_in", True),
    ("d_out", 0),
    ("d_out", 1601),
    ("d_out", None),
    ("num_heads", 0),
    ("num_heads", 33),
    ("num_heads", 2.5),
    ("context_length", 0),
    ("context_length", 1025),
    ("dropout", 0.95),
    ("dropout", -0.1),
    ("dropout", 1.0),
    ("dropout", float("nan")),
    ("dropout", float("inf")),
    ("dropout", "0.1"),
    ("dropout", True),
    ("seed_embed", -1),
    ("seed_embed", 2**31),
    ("seed_weights", -5),
    ("seed_weights", 1.5),
    ("seed_dropout", 2**40),
    ("max_tokens", 0),
    ("max_tokens", 1025),
    ("max_tokens", "256"),
]


@pytest.mark.parametrize(("field", "value"), BAD_VALUES, ids=[f"{f}={v!r}" for f, v in BAD_VALUES])
def test_each_bad_value_raises_settings_error_naming_the_field(field, value):
    with pytest.raises(SettingsError) as info:
        Settings(**{field: value})
    problems = info.value.problems
    assert len(problems) == 1
    assert problems[0].startswith(LABELS[field])
    assert isinstance(info.value, ValueError)
    assert str(info.value) == problems[0]


@pytest.mark.parametrize("field", ["qkv_bias", "training"])
def test_flags_must_be_booleans(field):
    with pytest.raises(SettingsError) as info:
        Settings(**{field: 1})
    assert info.value.problems == [f"{field} must be true or false"]


def test_problem_sentences_say_what_is_wrong():
    with pytest.raises(SettingsError) as info:
        Settings(d_in=0)
    assert info.value.problems == ["d_in=0 is outside 1–1600"]
    with pytest.raises(SettingsError) as info:
        Settings(seed_embed=1.5)
    assert info.value.problems == ["embedding seed must be a whole number"]
    with pytest.raises(SettingsError) as info:
        Settings(dropout=float("nan"))
    assert info.value.problems == ["dropout must be a finite number"]


def test_every_problem_is_reported_at_once():
    with pytest.raises(SettingsError) as info:
        Settings(d_in=0, dropout=0.95, max_tokens=5000)
    joined = " | ".join(info.value.problems)
    assert len(info.value.problems) == 3
    for name in ("d_in", "dropout", "max tokens"):
        assert name in joined
    assert str(info.value) == "; ".join(info.value.problems)


def test_bounds_are_inclusive():
    Settings(d_in=1, d_out=1, num_heads=1, context_length=1, dropout=0.0, max_tokens=1)
    Settings(d_in=1600, d_out=1600, context_length=1024, dropout=0.9, max_tokens=1024)
    Settings(num_heads=32, d_out=32, seed_embed=0, seed_weights=2**31 - 1)


def test_dropout_0_95_is_rejected_and_0_3_is_accepted_as_illustrative():
    with pytest.raises(SettingsError):
        Settings(dropout=0.95)
    s = Settings(dropout=0.3)
    assert s.dropout == 0.3
    assert s.dropout_is_illustrative
    assert not Settings(dropout=0.1).dropout_is_illustrative
    assert not Settings(dropout=0.2).dropout_is_illustrative


def test_integer_dropout_zero_is_accepted():
    assert Settings(dropout=0).dropout == 0


def test_indivisible_heads_are_a_multihead_problem_not_an_error():
    s = Settings(d_out=10, num_heads=4)  # valid: the single-head passes still run
    assert s.multihead_problem() == (
        "d_out=10 is not divisible by num_heads=4: each head needs d_out / num_heads columns."
    )
    assert Settings(d_out=12, num_heads=4).multihead_problem() is None
    assert Settings(d_out=10, num_heads=1).multihead_problem() is None


def test_gpt2_xl_sizes_are_valid():
    s = Settings(**GPT2_XL)
    assert (s.d_in, s.d_out, s.num_heads, s.context_length) == (1600, 1600, 25, 1024)
    assert s.multihead_problem() is None
    assert s.head_dim == 64


def test_presets_are_valid_settings():
    assert Settings(**BOOK).head_dim == 1
    assert Settings(**GPT2_SMALL).head_dim == 64


def test_settings_are_frozen_and_hashable_by_key():
    s = Settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.d_in = 4
    assert s.key() == Settings().key()
    assert s.key() != Settings(seed_weights=1).key()
    hash(s.key())


def test_with_changes_validates_the_result():
    assert Settings().with_changes(d_in=32).d_in == 32
    with pytest.raises(SettingsError):
        Settings().with_changes(num_heads=0)


def test_mha_parameter_count_matches_gpt2_small():
    assert mha_parameter_count(768, 768, False) == 2_360_064
    assert mha_parameter_count(768, 768, True) == 2_362_368


@pytest.mark.parametrize(
    ("d_in", "d_out", "heads", "bias"),
    [(768, 768, 12, False), (768, 768, 12, True), (3, 2, 2, False), (16, 8, 2, True)],
)
def test_mha_parameter_count_equals_the_modules_own_count(d_in, d_out, heads, bias):
    module = ModuleSpec("mha", d_in, d_out, 4, 0.0, heads, bias, seed=0).build()
    counted = sum(p.numel() for p in module.parameters())
    assert counted == mha_parameter_count(d_in, d_out, bias)
    assert isinstance(module, MultiHeadAttention)


def test_request_bytes_components_are_positive_and_sum_to_total():
    parts = request_bytes(Settings(), tokens=10)
    total = parts.pop("total")
    assert parts
    assert all(isinstance(v, int) and v > 0 for v in parts.values())
    assert sum(parts.values()) == total


def test_request_bytes_grows_with_tokens_quadratically_in_the_attention_maps():
    s = Settings()
    small, large = request_bytes(s, tokens=10), request_bytes(s, tokens=20)
    assert large["total"] > small["total"]
    assert large["attention_maps"] == 4 * small["attention_maps"]
    assert large["masks"] == small["masks"]  # the mask buffers depend on context_length only


def test_request_bytes_grows_with_heads_and_context():
    base = request_bytes(Settings(), tokens=16)["total"]
    assert request_bytes(Settings(num_heads=4), tokens=16)["total"] > base
    assert request_bytes(Settings(context_length=64), tokens=16)["total"] > base


def test_request_bytes_at_the_widest_setting_stays_bounded():
    # The bounds exist so one request's cost is bounded: GPT-2 XL with 1024 tokens.
    worst = request_bytes(Settings(**GPT2_XL, max_tokens=1024), tokens=1024)["total"]
    assert 0 < worst < 4 * 2**30


def test_for_pass_keeps_only_what_the_pass_reads():
    s = Settings(
        d_in=12,
        d_out=6,
        num_heads=3,
        context_length=20,
        dropout=0.3,
        seed_embed=5,
        seed_weights=6,
        seed_dropout=7,
        qkv_bias=True,
        training=True,
    )
    simple = s.for_pass("simplified")
    assert (simple.d_in, simple.seed_embed) == (12, 5)
    assert simple.d_out == Settings().d_out and simple.dropout == Settings().dropout
    trainable = s.for_pass("trainable")
    assert (trainable.d_out, trainable.seed_weights, trainable.qkv_bias) == (6, 6, True)
    assert trainable.dropout == Settings().dropout and trainable.num_heads == Settings().num_heads
    causal = s.for_pass("causal")
    assert (causal.context_length, causal.dropout, causal.training, causal.seed_dropout) == (
        20,
        0.3,
        True,
        7,
    )
    assert causal.num_heads == Settings().num_heads
    assert s.for_pass("multihead") == s
