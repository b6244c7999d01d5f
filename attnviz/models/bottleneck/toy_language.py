"""Mirror, a toy language: twenty words, each with one translation, said back to front.

An English sentence of the toy's twenty words translates into Mirror word by word through a
dictionary *and* in reverse order: the last English word comes first. Looking each word up
keeps the English order, so it is wrong on every word but the middle one; the right translation
has to see the whole sentence before it can write its first word. That is the job an
encoder–decoder learns, and the reversal moves every word as far as a reordering can, so the
decoder cannot lean on "the word at the same place".

Sentences are random sequences of the twenty words (no grammar: every word carries the same
information, so no model can guess a word from its neighbours). They come from a
``torch.Generator`` the caller seeds; the held-out sentences every score is measured on come
from their own fixed seed, never from a training seed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

Tensor = torch.Tensor

# English -> Mirror, one word each (Mirror borrows from Esperanto, without its accents).
DICTIONARY: dict[str, str] = {
    "cat": "kato",
    "dog": "hundo",
    "bird": "birdo",
    "fish": "fiso",
    "fox": "vulpo",
    "horse": "cevalo",
    "king": "rego",
    "queen": "regino",
    "child": "infano",
    "man": "viro",
    "woman": "virino",
    "girl": "knabino",
    "boy": "knabo",
    "sees": "vidas",
    "likes": "satas",
    "eats": "mangas",
    "finds": "trovas",
    "big": "granda",
    "small": "eta",
    "red": "ruga",
}
SOURCE_WORDS: tuple[str, ...] = tuple(DICTIONARY)
TARGET_WORDS: tuple[str, ...] = tuple(DICTIONARY.values())
VOCAB = len(SOURCE_WORDS)  # 20 words on each side
BOS = VOCAB  # the decoder's "start" input (a target id no output takes)
MIN_LENGTH, MAX_LENGTH = 1, 40  # the sentences the models read
HELD_OUT_SEED = 2**31 + 38  # above every training and student seed


@dataclass(frozen=True)
class Translation:
    """One English sentence, its word-by-word rendering and its right Mirror translation."""

    source: tuple[str, ...]
    word_by_word: tuple[str, ...]  # each word looked up, English order
    right: tuple[str, ...]  # each word looked up, order reversed

    @property
    def wrong_positions(self) -> tuple[int, ...]:
        """Where word by word differs from the right translation (0-based)."""
        return tuple(
            i for i, (a, b) in enumerate(zip(self.word_by_word, self.right, strict=True)) if a != b
        )


def translate(source: tuple[str, ...] | list[str]) -> Translation:
    words = tuple(source)
    looked_up = tuple(DICTIONARY[w] for w in words)
    return Translation(words, looked_up, looked_up[::-1])


def target_ids(source_ids: Tensor) -> Tensor:
    """The right translation of each row of ``source_ids`` (b, L): source word i is target
    word i, so the translation is the row reversed."""
    return source_ids.flip(-1)


def true_source_position(length: int) -> list[int]:
    """For each target word of a sentence of ``length`` words, the source word it translates."""
    return [length - 1 - t for t in range(length)]


def sentences(length: int, size: int, generator: torch.Generator) -> Tensor:
    """``size`` random sentences of ``length`` word ids, (size, length)."""
    if not MIN_LENGTH <= length <= MAX_LENGTH:
        raise ValueError(f"a sentence has {MIN_LENGTH}–{MAX_LENGTH} words, not {length}")
    return torch.randint(0, VOCAB, (size, length), generator=generator)


def held_out(length: int, size: int) -> Tensor:
    """Sentences never trained on, the same in every run: (size, length)."""
    seed = HELD_OUT_SEED + length  # each length its own stream, so adding one changes no other
    return sentences(length, size, torch.Generator().manual_seed(seed))


def seeded_sentence(seed: int, length: int) -> tuple[str, ...]:
    """The sentence a seed names, ``length`` words long; a longer one starts with the shorter
    one's words, so lengthening a sentence keeps what the student saw. Built as a list first:
    ``tuple(generator)`` resizes a tuple another thread can already see through
    ``gc.get_objects()`` (the soak's memory probe), which raised SystemError once in CI."""
    gen = torch.Generator().manual_seed(int(seed))
    ids = sentences(MAX_LENGTH, 1, gen)[0, :length]
    return tuple([SOURCE_WORDS[int(i)] for i in ids])


@dataclass(frozen=True)
class Parsed:
    """A typed sentence: its words when all are known, else a message saying what is wrong
    (``reason``: the same, short, as a link's warning names it)."""

    words: tuple[str, ...]
    message: str | None  # None: the sentence can be translated
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.message is None


def parse(text: str) -> Parsed:
    """Split a typed English sentence into the toy's words (case and punctuation ignored)."""
    words = tuple(w for w in re.split(r"[^a-z]+", text.lower()) if w)
    if not words:
        return Parsed(
            (), "Type at least one word of the toy's English.", "no word of the toy's English"
        )
    unknown = sorted({w for w in words if w not in DICTIONARY}, key=words.index)
    if unknown:
        listed = ", ".join(f"“{w}”" for w in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        return Parsed(
            words,
            f"The toy language has no word {listed}{more}. Its words: "
            + ", ".join(SOURCE_WORDS)
            + ".",
            f"no toy word “{unknown[0][:20]}”"
            + (f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""),
        )
    if len(words) > MAX_LENGTH:
        return Parsed(
            words,
            f"The models read up to {MAX_LENGTH} words; this sentence has {len(words)}.",
            f"{len(words)} words, more than {MAX_LENGTH}",
        )
    return Parsed(words, None)


def ids_of(words: tuple[str, ...]) -> Tensor:
    index = {w: i for i, w in enumerate(SOURCE_WORDS)}
    return torch.tensor([[index[w] for w in words]], dtype=torch.long)


def words_of(ids: Tensor) -> tuple[str, ...]:
    return tuple(TARGET_WORDS[int(i)] for i in ids)
