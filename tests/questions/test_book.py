"""Book mode: the keys equal the chapter's printed values (attnviz/core/book.py), to the printout's
4 decimals, wherever the chapter printed the number asked about."""

from __future__ import annotations

import math

import pytest

from attnviz.core import book as BK
from attnviz.core.inputs import BOOK_TEXT
from attnviz.core.settings import Settings
from attnviz.teach import questions as Q

PRINTED_DIGITS = 0.5e-4 + 1e-6  # half a unit of the 4th decimal, plus float32 slack
SEEDS = range(40)
# The chapter's sa_v2 (seed 789) on its inputs: the unmasked weights and the raw scores below
# the diagonal are printed in section 3.5.1.
V2_WEIGHTS = "masking_weights_unmasked"


def posed(kind: str, page: str) -> list[Q.Question]:
    found = [Q.make(kind, page, BOOK_TEXT, Settings(), True, seed) for seed in SEEDS]
    return [q for q in found if q is not None]


def printed(name: str, row: int, col: int | None = None):
    values = BK.PRINTED[name][row]
    return values if col is None else values[col]


def _row_matches(row, name: str, q: int) -> None:
    assert row == pytest.approx(printed(name, q), abs=PRINTED_DIGITS)


@pytest.mark.parametrize(
    ("page", "weights", "scores"),
    [
        ("simplified", "simple_weights", "simple_scores"),
        ("trainable", V2_WEIGHTS, "masking_masked_scores"),
        ("causal", "masking_weights", "masking_masked_scores"),
    ],
)
def test_book_keys_on_the_weights_and_scores_are_the_printed_ones(page, weights, scores):
    compared = 0
    for q in posed(Q.SKETCH_ROW, page):
        _row_matches(q.key, weights, q.query)
        compared += 1
    for q in posed(Q.ARGMAX_KEY, page):
        row = printed(weights, q.query)
        assert q.key == max(range(len(row)), key=row.__getitem__)
        compared += 1
    for q in posed(Q.SCORE, page):
        value = printed(scores, q.query, q.other)
        if math.isinf(value):  # printed masked: the raw score above the diagonal is not shown
            assert page == "trainable" and q.other > q.query
            continue
        assert q.key == pytest.approx(value, abs=PRINTED_DIGITS)
        compared += 1
    for q in posed(Q.WEIGHT_RATIO, page):  # the ratio of two printed weights of the row
        row = printed(weights, q.query)
        labels = Q.read(page, BOOK_TEXT, Settings(), True).labels
        b = max(
            (i for i, label in enumerate(labels) if f"than the weight on {label}" in q.prompt),
            key=lambda i: len(labels[i]),
        )
        assert q.key == pytest.approx(row[q.other] / row[b], rel=1e-3)
        compared += 1
    assert compared >= 10


def test_book_masked_zeros_are_the_printed_zeros_and_minus_infinities():
    zeros = sum(v == 0.0 for row in BK.PRINTED["masking_weights"] for v in row)
    minus_inf = sum(v == -math.inf for row in BK.PRINTED["masking_masked_scores"] for v in row)
    assert zeros == minus_inf == 15
    for page in ("causal", "multihead"):
        questions = posed(Q.MASKED_ZEROS, page)
        assert questions and all(q.key == zeros for q in questions)


def test_book_dropout_keys_are_the_chapters_dropout_example():
    survivors = posed(Q.DROPOUT_SURVIVOR, "causal")
    sums = posed(Q.DROPOUT_ROW_SUM, "causal")
    assert survivors and not sums  # a row sum needs the dropout mask, which book mode lacks
    for q in survivors:
        assert q.key == pytest.approx(
            printed("dropout_weights", q.query, q.other), abs=PRINTED_DIGITS
        )
        assert "p = 0.5" in q.prompt  # the chapter's rate, not the sidebar's
    for q in sums:
        row = printed("dropout_weights", q.query)
        assert q.key == pytest.approx(sum(row), abs=len(row) * PRINTED_DIGITS)


def test_book_split_shape_is_the_chapters_heads_and_tokens():
    b, tokens, d_out = 2, 6, 2  # the chapter prints context_vecs.shape: torch.Size([2, 6, 2])
    heads = BK.SPEC_MHA.num_heads
    asked = set()
    for q in posed(Q.SPLIT_SHAPE, "multihead"):
        # the page runs one example (b = 1); the chapter's batch of two has b = 2
        head_dim = d_out // heads
        split, scores = (1, heads, tokens, head_dim), (1, heads, tokens, tokens)
        merged, flat = (1, tokens, heads, head_dim), (1, tokens, d_out)
        assert q.key in (split, scores, merged, flat)
        assert split == (1, 2, 6, 1) and b == 2
        asked.add(q.key)
    assert len(asked) >= 3  # the steps vary with the seed
