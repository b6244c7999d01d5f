"""Inputs: the book's preset and typed text embedded as token + position rows."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import attnviz.core.inputs as inputs_module
from attnviz.core.inputs import (
    BOOK_LABELS,
    _row_key,
    book_batch,
    book_inputs,
    embed,
    position_embedding,
    token_embedding,
)
from attnviz.core.tokens import tokenize

BOOK_ROWS = [
    [0.43, 0.15, 0.89],
    [0.55, 0.87, 0.66],
    [0.57, 0.85, 0.64],
    [0.22, 0.58, 0.33],
    [0.77, 0.25, 0.10],
    [0.05, 0.80, 0.55],
]


def test_book_inputs_are_the_chapters_six_rows():
    x = book_inputs()
    assert x.shape == (6, 3)
    assert x.dtype == torch.float32
    assert torch.equal(x, torch.tensor(BOOK_ROWS))


def test_book_inputs_are_a_fresh_copy_each_call():
    x = book_inputs()
    x[0, 0] = 99.0
    assert book_inputs()[0, 0].item() == pytest.approx(0.43)


def test_book_batch_stacks_two_copies():
    batch = book_batch()
    assert batch.shape == (2, 6, 3)
    assert torch.equal(batch[0], torch.tensor(BOOK_ROWS))
    assert torch.equal(batch[1], torch.tensor(BOOK_ROWS))


def test_book_labels_are_zero_based_words():
    assert BOOK_LABELS == ("0: Your", "1: journey", "2: starts", "3: with", "4: one", "5: step")


def test_embed_shape_is_one_by_tokens_by_d_in():
    toks = tokenize("Your journey starts with one step")
    x = embed(toks, 16, 123)
    assert x.shape == (1, 6, 16)
    assert x.dtype == torch.float32
    assert torch.isfinite(x).all()


def test_embed_accepts_tokens_or_a_tuple_of_ids_alike():
    toks = tokenize("Your journey starts")
    assert torch.equal(embed(toks, 8, 5), embed(toks.ids, 8, 5))


def test_embed_is_token_plus_position_embedding():
    ids = (10, 20, 10)
    x = embed(ids, 4, 9)[0]
    assert torch.equal(x, token_embedding(ids, 4, 9) + position_embedding(3, 4, 9))


def test_the_same_token_gets_the_same_token_row_at_any_position():
    ids = (464, 3290, 464, 464, 3290)  # "The", " cat" repeated
    rows = token_embedding(ids, 8, 123)
    assert torch.equal(rows[0], rows[2])
    assert torch.equal(rows[0], rows[3])
    assert torch.equal(rows[1], rows[4])
    assert not torch.equal(rows[0], rows[1])
    # ... and the same row in a different text, too
    assert torch.equal(token_embedding((7, 464), 8, 123)[1], rows[0])


def test_positions_make_repeated_tokens_differ_in_x():
    x = embed((464, 464), 8, 123)[0]
    assert not torch.equal(x[0], x[1])


def test_x_depends_only_on_d_in_and_the_embedding_seed():
    # embed takes no context length and no weight seed: there is nothing else it could read.
    import inspect

    assert list(inspect.signature(embed).parameters) == ["tokens", "d_in", "seed"]
    ids = (1, 2, 3, 4)
    a = embed(ids, 8, 123)
    b = embed(ids, 8, 123)
    assert torch.equal(a, b)  # bit for bit
    assert not torch.equal(a, embed(ids, 8, 124))


def test_embedding_does_not_read_the_global_generator():
    ids = (1, 2, 3)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        a = embed(ids, 6, 42)
        torch.manual_seed(1)
        b = embed(ids, 6, 42)
        state = torch.random.get_rng_state()
        embed(ids, 6, 42)
        assert torch.equal(state, torch.random.get_rng_state())
    assert torch.equal(a, b)


@pytest.mark.parametrize("d_in", [8, 64, 768])
def test_embedding_rows_are_normal_with_variance_one_over_two_d_in(d_in):
    # Each token and each position row is N(0, 1/(2 d_in)): mean near 0, variance near
    # 1/(2 d_in) over many entries, so a row of X (their sum) has |x|² near 1 at every width.
    n = max(200, 20_000 // d_in)  # at least 20,000 entries
    for rows in (token_embedding(tuple(range(n)), d_in, 7), position_embedding(n, d_in, 7)):
        assert abs(float(rows.mean())) < 0.05 / d_in**0.5
        assert float(rows.var()) * 2 * d_in == pytest.approx(1.0, abs=0.05)
    x = embed(tuple(range(n)), d_in, 7)[0]
    assert float((x * x).sum(dim=-1).mean()) == pytest.approx(1.0, abs=0.05)


def test_row_scale_is_one_over_the_root_of_two_d_in():
    assert inputs_module.row_scale(8) == 0.25
    assert inputs_module.row_scale(2) == 0.5
    assert inputs_module.row_scale(1600) == pytest.approx(1 / (40 * 2**0.5))


def test_token_and_position_key_spaces_are_disjoint():
    for seed in (0, 123):
        token_keys = {_row_key("token", seed, i) for i in range(2000)}
        position_keys = {_row_key("position", seed, i) for i in range(2000)}
        assert token_keys.isdisjoint(position_keys)
        assert len(token_keys) == len(position_keys) == 2000
    for i in range(50):
        assert _row_key("token", 123, i) != _row_key("position", 123, i)
        assert 0 <= _row_key("token", 123, i) < 2**63


def test_token_row_differs_from_position_row_with_the_same_index():
    assert not torch.equal(token_embedding((5,), 8, 123)[0], position_embedding(6, 8, 123)[5])


def test_token_embedding_draws_one_row_per_unique_token(monkeypatch):
    calls = []
    real_row = inputs_module._row

    def counting_row(kind, seed, index, d_in):
        calls.append((kind, index, d_in))
        return real_row(kind, seed, index, d_in)

    monkeypatch.setattr(inputs_module, "_row", counting_row)
    token_embedding((50000, 7, 50256), 16, 123)
    assert sorted(calls) == [("token", 7, 16), ("token", 50000, 16), ("token", 50256, 16)]

    calls.clear()
    embed((9, 9, 9, 4), 16, 123)
    assert len(calls) == 2 + 4  # unique tokens + positions


def test_no_vocabulary_sized_table_is_ever_drawn(monkeypatch):
    sizes = []
    real_randn = torch.randn

    def recording_randn(*args, **kwargs):
        out = real_randn(*args, **kwargs)
        sizes.append(out.numel())
        return out

    monkeypatch.setattr(torch, "randn", recording_randn)
    ids = tuple(tokenize("The quick brown fox jumps over the lazy dog").ids)
    x = embed(ids, 32, 123)
    assert x.shape == (1, len(ids), 32)
    assert len(sizes) == len(set(ids)) + len(ids)
    assert max(sizes) == 32


def test_embed_of_no_tokens_is_an_empty_matrix():
    assert embed((), 8, 1).shape == (1, 0, 8)
    assert token_embedding((), 8, 1).shape == (0, 8)
    assert position_embedding(0, 8, 1).shape == (0, 8)


@given(st.text(max_size=40), st.integers(1, 8), st.integers(0, 2**31 - 1))
def test_embed_of_any_text_has_the_right_shape_and_is_finite(text, d_in, seed):
    toks = tokenize(text, cap=64)
    x = embed(toks, d_in, seed)
    assert x.shape == (1, len(toks), d_in)
    assert torch.isfinite(x).all()
