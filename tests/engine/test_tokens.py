"""Tokens: GPT-2 ids, 0-based labels, visible whitespace, partial UTF-8, the token cap."""

from __future__ import annotations

import tiktoken
from hypothesis import given
from hypothesis import strategies as st

import attnviz.core.tokens as T
from attnviz.core.tokens import (
    ENDOFTEXT,
    GPT2_EOT,
    get_tokenizer,
    group_characters,
    piece_display,
    tokenize,
)

BOOK_TEXT = "Your journey starts with one step"


def gpt2() -> tiktoken.Encoding:
    return tiktoken.get_encoding("gpt2")


def test_the_real_gpt2_tokenizer_is_in_use_in_the_tests():
    # Every test below assumes GPT-2's BPE; the shared cache makes it available offline.
    status = get_tokenizer().status
    assert (status.name, status.is_real) == ("gpt2", True)
    # the sidebar's caption, "headline · detail", says each thing once
    assert status.headline == "Tokenizer: GPT-2 BPE (tiktoken)"
    assert status.detail == "a vocabulary of 50,257 tokens, read from the local cache."


def test_book_sentence_has_the_gpt2_ids():
    assert tokenize(BOOK_TEXT).ids == (7120, 7002, 4940, 351, 530, 2239)


def test_ids_are_what_tiktoken_itself_gives():
    text = "Attention is all you need, 12345 times: <b>bold</b> & naïve café."
    assert tokenize(text).ids == tuple(gpt2().encode(text))


def test_labels_are_zero_based_with_the_leading_space_shown():
    labels = tokenize(BOOK_TEXT).labels
    assert labels == (
        "0: Your",
        "1: \u2423journey",
        "2: \u2423starts",
        "3: \u2423with",
        "4: \u2423one",
        "5: \u2423step",
    )


def test_newline_shows_as_return_arrow_and_tab_as_tab_arrow():
    toks = tokenize("one\ntwo")
    assert toks.labels == ("0: one", "1: \u21b5", "2: two")
    assert piece_display(b"\t") == "\u21e5"


def test_control_characters_show_as_control_pictures():
    assert piece_display(b"\x00") == "\u2400"
    assert piece_display(b"\x1b") == "\u241b"
    assert piece_display(b"\x7f") == "\u2421"


def test_partial_utf8_bytes_show_in_hex():
    assert piece_display(b"\xe2\x80") == "\u27e8E2 80\u27e9"
    assert piece_display(b"a\xe2\x80") == "a\u27e8E2 80\u27e9"
    assert piece_display(b"\x8d!") == "\u27e88D\u27e9!"
    assert piece_display(b" \xf0\x9f\x91") == "\u2423\u27e8F0 9F 91\u27e9"


def test_a_token_that_is_part_of_a_character_is_labelled_in_hex():
    toks = tokenize("\u2014\u200d")  # em dash then a zero-width joiner
    assert all(len(p) < 3 for p in toks.pieces[-2:])  # the ZWJ's 3 bytes are split
    assert "\u27e8E2 80\u27e9" in "".join(toks.labels)


def test_an_emoji_split_over_two_tokens_is_one_character_group():
    toks = tokenize(" \U0001f44b")  # " 👋"
    assert toks.ids == tuple(gpt2().encode(" \U0001f44b"))
    assert len(toks) == 2
    assert toks.char_groups == ((0, 1),)
    rows = toks.table_rows()
    assert [r["position"] for r in rows] == [0, 1]
    assert [r["forms"] for r in rows] == ["\u2423\U0001f44b", "\u2423\U0001f44b"]
    assert rows[0]["piece"] == "\u2423\u27e8F0 9F 91\u27e9"
    assert rows[1]["piece"] == "\u27e88B\u27e9"
    assert rows[0]["bytes"] == "20 F0 9F 91"
    assert rows[1]["bytes"] == "8B"


def test_whole_character_tokens_have_an_empty_forms_column():
    toks = tokenize("hi \U0001f44b there")
    groups = toks.char_groups
    assert groups[0] == (0,)
    assert (1, 2) in groups
    rows = {r["position"]: r for r in toks.table_rows()}
    assert rows[0]["forms"] == ""
    assert rows[len(toks) - 1]["forms"] == ""
    assert rows[1]["forms"] == rows[2]["forms"] == "\u2423\U0001f44b"


def test_group_characters_keeps_trailing_bytes_that_never_complete():
    assert group_characters((b"a", b"\xe2", b"\x80")) == ((0,), (1, 2))
    assert group_characters((b"\xe2\x80", b"\x94", b"b")) == ((0, 1), (2,))


def test_typed_endoftext_becomes_the_special_token():
    toks = tokenize(f"Hello{ENDOFTEXT}World")
    assert GPT2_EOT in toks.ids
    assert toks.pieces[toks.ids.index(GPT2_EOT)] == ENDOFTEXT.encode()
    assert toks.labels[toks.ids.index(GPT2_EOT)].endswith(ENDOFTEXT)


def test_plain_tiktoken_refuses_a_typed_endoftext_so_the_allowance_matters():
    try:
        gpt2().encode(ENDOFTEXT)
    except ValueError as err:
        assert "disallowed special token" in str(err)
    else:
        raise AssertionError("tiktoken accepted <|endoftext|> without allowed_special")


def test_token_cap_keeps_the_first_tokens_and_reports_the_real_count():
    long_text = "The quick brown fox jumps over the lazy dog. " * 60
    everything = gpt2().encode(long_text)
    toks = tokenize(long_text, cap=256)
    assert len(everything) > 256
    assert len(toks) == 256
    assert toks.ids == tuple(everything[:256])
    assert toks.total == len(everything)
    assert toks.truncated
    message = toks.cap_message()
    assert f"{len(everything):,}" in message
    assert "256" in message


def test_text_under_the_cap_is_not_truncated_and_has_no_message():
    toks = tokenize(BOOK_TEXT, cap=256)
    assert (len(toks), toks.total, toks.truncated) == (6, 6, False)
    assert toks.cap_message() is None


def test_no_cap_keeps_every_token():
    text = "word " * 300
    toks = tokenize(text)
    assert len(toks) == toks.total == len(gpt2().encode(text))


def test_invisible_format_characters_are_named():
    assert piece_display("\u200d".encode()) == "\u27e8U+200D\u27e9"
    assert piece_display("\u202e".encode()) == "\u27e8U+202E\u27e9"
    assert piece_display("a\u202eb".encode()) == "a\u27e8U+202E\u27e9b"


def test_a_zero_width_joiner_split_over_tokens_forms_its_named_character():
    toks = tokenize("x\u200dy")
    forms = {r["forms"] for r in toks.table_rows()}
    assert "\u27e8U+200D\u27e9" in forms
    assert not any("\u200d" in label for label in toks.labels)


def test_repeated_number_like_and_html_like_tokens_keep_their_own_labels():
    toks = tokenize("<b> 1 1 <b>")
    assert len(set(toks.labels)) == len(toks)
    assert any("<" in label for label in toks.labels)  # raw text here; escaped for Plotly


def test_encode_returns_the_ids():
    tok = get_tokenizer()
    assert tok.encode(BOOK_TEXT) == [7120, 7002, 4940, 351, 530, 2239]


# --- properties over arbitrary Unicode ---------------------------------------------------
@given(st.text(max_size=60))
def test_tokenize_never_raises_and_labels_are_unique_per_position(text):
    toks = tokenize(text, cap=256)
    assert len(toks.labels) == len(toks.ids) == len(toks.pieces)
    assert len(set(toks.labels)) == len(toks.labels)
    for i, label in enumerate(toks.labels):
        assert label.startswith(f"{i}: ")


@given(st.text(max_size=60))
def test_gpt2_pieces_reassemble_the_text_exactly(text):
    toks = tokenize(text)
    assert b"".join(toks.pieces) == text.encode("utf-8")


@given(st.text(max_size=60))
def test_labels_contain_no_raw_control_or_format_characters(text):
    import unicodedata

    for label in tokenize(text).labels:
        for ch in label:
            category = unicodedata.category(ch)
            assert category[0] != "C" and category not in ("Zl", "Zp"), repr(label)


@given(st.text(max_size=60))
def test_character_groups_partition_the_positions(text):
    toks = tokenize(text)
    flat = [i for group in toks.char_groups for i in group]
    assert flat == list(range(len(toks)))
    assert [r["position"] for r in toks.table_rows()] == list(range(len(toks)))


def test_invisible_marks_and_lone_combining_marks_stay_visible_in_labels():
    from attnviz.core.tokens import piece_display

    assert piece_display("\ufe0f".encode()) == "⟨U+FE0F⟩"  # the emoji variation selector
    assert piece_display("\u0301".encode()) == "◌\u0301"  # a combining acute accent on its own
    assert piece_display("e\u0301".encode()) == "e\u0301"  # attached to its letter: unchanged


def test_the_token_table_decodes_each_piece_a_bounded_number_of_times(monkeypatch):
    """The table once decoded every piece again for every row (256 tokens: 65,536 decodes,
    a quarter of a second on the home page's every rerun)."""
    toks = tokenize("the cat sat on the mat " * 40, cap=256)
    assert len(toks) == 241
    calls = []
    original = T.piece_display
    monkeypatch.setattr(T, "piece_display", lambda p: calls.append(p) or original(p))
    rows = toks.table_rows()
    assert [r["position"] for r in rows] == list(range(241))
    assert len(calls) <= 2 * len(toks)
