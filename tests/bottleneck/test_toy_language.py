"""The toy language Mirror: its translation, its sentences and how a typed sentence is read."""

from __future__ import annotations

import torch

from attnviz.models.bottleneck import toy_language as L


def test_mirror_reverses_the_looked_up_words():
    t = L.translate(("fox", "red", "sees"))
    assert t.word_by_word == ("vulpo", "ruga", "vidas")
    assert t.right == ("vidas", "ruga", "vulpo")
    assert t.wrong_positions == (0, 2)  # the middle word alone is where word by word puts it
    assert L.true_source_position(4) == [3, 2, 1, 0]
    ids = torch.tensor([[0, 1, 2]])
    assert L.target_ids(ids).tolist() == [[2, 1, 0]]


def test_the_vocabulary_is_twenty_distinct_words_each_side():
    assert L.VOCAB == 20
    assert len(set(L.SOURCE_WORDS)) == len(set(L.TARGET_WORDS)) == 20


def test_a_seed_names_a_sentence_and_lengthening_keeps_its_start():
    short, long = L.seeded_sentence(7, 5), L.seeded_sentence(7, 30)
    assert len(short) == 5 and len(long) == 30 and long[:5] == short
    assert L.seeded_sentence(7, 5) == short and L.seeded_sentence(8, 5) != short
    assert all(w in L.DICTIONARY for w in long)


def test_held_out_sentences_are_fixed_and_not_a_training_stream():
    a, b = L.held_out(10, 4), L.held_out(10, 4)
    assert torch.equal(a, b) and a.shape == (4, 10)
    train = L.sentences(10, 4, torch.Generator().manual_seed(0))
    assert not torch.equal(a, train)


def test_a_typed_sentence_is_read_or_told_what_is_wrong():
    assert L.parse("Cat, sees the dog!").message == (
        "The toy language has no word “the”. Its words: " + ", ".join(L.SOURCE_WORDS) + "."
    )
    ok = L.parse("Big red FOX sees small cat.")
    assert ok.ok and ok.words == ("big", "red", "fox", "sees", "small", "cat")
    assert L.parse("  ,. ").message == "Type at least one word of the toy's English."
    assert L.parse("cat " * 41).message == "The models read up to 40 words; this sentence has 41."
    many = L.parse("a b c d e f g")
    assert many.message is not None and many.message.startswith(
        "The toy language has no word “a”, “b”, “c”, “d”, “e” and 2 more."
    )
