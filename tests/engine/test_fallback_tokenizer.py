"""The fallback tokenizer: needs nothing downloaded, stable ids, never raises."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from attnviz.core.tokens import (
    ENDOFTEXT,
    GPT2_EOT,
    FallbackEncoding,
    Tokenizer,
    TokenizerStatus,
    tokenize,
)

FALLBACK = Tokenizer(
    FallbackEncoding(), TokenizerStatus("fallback", False, "unavailable", "test fallback")
)


def test_the_same_piece_gets_the_same_id_wherever_it_stands():
    toks = tokenize("the cat. the cat.", tokenizer=FALLBACK)
    assert toks.pieces == (b"the", b" cat", b".", b" the", b" cat", b".")
    assert toks.ids[1] == toks.ids[4]
    assert toks.ids[2] == toks.ids[5]
    assert toks.ids[0] != toks.ids[3]  # "the" and " the" are different pieces


def test_ids_are_stable_across_instances():
    text = "Stable ids across runs"
    a = FallbackEncoding().encode_pieces(text)
    b = FallbackEncoding().encode_pieces(text)
    assert a == b


def test_endoftext_becomes_the_gpt2_special_id():
    toks = tokenize(f"end{ENDOFTEXT}start", tokenizer=FALLBACK)
    assert toks.ids[1] == GPT2_EOT
    assert toks.pieces[1] == ENDOFTEXT.encode()
    assert toks.ids.count(GPT2_EOT) == 1


def test_fallback_labels_are_zero_based_and_marked_as_fallback():
    toks = tokenize("Your journey starts", tokenizer=FALLBACK)
    assert toks.tokenizer == "fallback"
    assert toks.labels == ("0: Your", "1: \u2423journey", "2: \u2423starts")


def test_fallback_respects_the_cap():
    toks = tokenize("word " * 50, cap=10, tokenizer=FALLBACK)
    assert len(toks) == 10
    assert toks.total > 10
    assert "10" in toks.cap_message()


@given(st.text(max_size=80))
def test_fallback_never_raises_and_ids_stay_below_endoftext(text):
    pairs = FallbackEncoding().encode_pieces(text)
    for token_id, piece in pairs:
        if piece == ENDOFTEXT.encode():
            assert token_id == GPT2_EOT
        else:
            assert 0 <= token_id < GPT2_EOT


@given(st.text(max_size=80))
def test_fallback_pieces_reassemble_the_text(text):
    pieces = [p for _, p in FallbackEncoding().encode_pieces(text)]
    assert b"".join(pieces) == text.encode("utf-8")


@given(st.lists(st.sampled_from(["cat", " cat", "!", " 42", "\n", " é"]), max_size=12))
def test_fallback_id_depends_only_on_the_piece(parts):
    text = "".join(parts)
    seen: dict[bytes, int] = {}
    for token_id, piece in FallbackEncoding().encode_pieces(text):
        assert seen.setdefault(piece, token_id) == token_id
