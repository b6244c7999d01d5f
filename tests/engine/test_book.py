"""Book mode: the chapter's own calls reproduce its printed tensors (4 decimals)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn

from attnviz.core import book
from attnviz.core import trace as tracing
from attnviz.core.inputs import BOOK_LABELS, book_batch, book_inputs
from attnviz.core.modules import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttention_v1,
    SelfAttention_v2,
)
from attnviz.core.settings import BOOK, Settings
from attnviz.teach import prepare

from .helpers import book_seed


def _simplified():
    return tracing.trace_simplified(book_inputs(), BOOK_LABELS)


def _trainable_v1():
    return tracing.trace_trainable(book.SPEC_V1, book_inputs(), BOOK_LABELS)


def _masking_walk():
    return tracing.trace_causal(book.SPEC_MASKING_WALK, book_batch(), BOOK_LABELS)


def _sa_v1():
    with book_seed(123):
        sa_v1 = SelfAttention_v1(3, 2)
    return sa_v1(book_inputs())


def _sa_v2():
    with book_seed(789):
        sa_v2 = SelfAttention_v2(3, 2)
    return sa_v2(book_inputs())


def _exercise_3_1():
    with book_seed(123):
        sa_v1 = SelfAttention_v1(3, 2)
    with book_seed(123):
        sa_v2 = SelfAttention_v2(3, 2)
    sa_v1.W_query = nn.Parameter(sa_v2.W_query.weight.T)
    sa_v1.W_key = nn.Parameter(sa_v2.W_key.weight.T)
    sa_v1.W_value = nn.Parameter(sa_v2.W_value.weight.T)
    out1, out2 = sa_v1(book_inputs()), sa_v2(book_inputs())
    assert torch.allclose(out1, out2, atol=1e-6)
    return out1


def _unmasked_weights():
    tr = _masking_walk()
    scores = tracing.unmasked_scores(tr)[0]
    return torch.softmax(scores / tr.keys.shape[-1] ** 0.5, dim=-1)


def _dropout_ones():
    with book_seed(123):
        dropout = nn.Dropout(0.5)
        return dropout(torch.ones(6, 6))


def _dropout_weights():
    weights = _masking_walk().attn_weights[0].clone()
    with book_seed(123):
        return nn.Dropout(0.5)(weights)


def _causal():
    with book_seed(123):
        ca = CausalAttention(3, 2, 6, 0.0)
    out = ca(book_batch())
    assert out.shape == (2, 6, 2)
    assert torch.equal(out[0], out[1])
    return out[0]


def _wrapper():
    with book_seed(123):
        mha = MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
    out = mha(book_batch())
    assert out.shape == (2, 6, 4)
    return out[0]


def _multihead():
    with book_seed(123):
        mha = MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)
    out = mha(book_batch())
    assert out.shape == (2, 6, 2)
    return out[0]


PRODUCERS = {
    "simple_scores_2": lambda: _simplified().attn_scores[1],
    "simple_sum_weights_2": lambda: _simplified().sum_weights[1],
    "simple_weights_2": lambda: _simplified().attn_weights[1],
    "simple_context_2": lambda: _simplified().context[1],
    "simple_scores": lambda: _simplified().attn_scores,
    "simple_weights": lambda: _simplified().attn_weights,
    "simple_context": lambda: _simplified().context,
    "trainable_query_2": lambda: _trainable_v1().queries[1],
    "trainable_scores_2": lambda: _trainable_v1().attn_scores[1],
    "trainable_weights_2": lambda: _trainable_v1().attn_weights[1],
    "trainable_context_2": lambda: _trainable_v1().context[1],
    "sa_v1": _sa_v1,
    "sa_v2": _sa_v2,
    "exercise_3_1": _exercise_3_1,
    "masking_weights_unmasked": _unmasked_weights,
    "masking_masked_scores": lambda: _masking_walk().attn_scores[0],
    "masking_weights": lambda: _masking_walk().attn_weights[0],
    "dropout_ones": _dropout_ones,
    "dropout_weights": _dropout_weights,
    "causal_attention": _causal,
    "wrapper": _wrapper,
    "multihead": _multihead,
}


@pytest.mark.parametrize("name", sorted(book.PRINTED))
def test_the_chapters_call_reproduces_its_printout(name):
    actual = PRODUCERS[name]()
    match, worst = book.matches_printout(actual, name)
    assert match, f"{name}: largest difference {worst:.2e}\n{actual}"


def test_every_printout_has_a_producer():
    assert set(PRODUCERS) == set(book.PRINTED)


def test_dropout_examples_reproduce_exactly():
    # The scaling is exact (x2), so these two match to the last bit, not only 4 decimals.
    assert torch.equal(_dropout_ones(), book.printed("dropout_ones"))
    kept = _dropout_weights()
    weights = _masking_walk().attn_weights[0]
    assert (kept[weights == 0] == 0).all()  # the masked future stays zero
    nonzero = kept != 0
    assert torch.equal(kept[nonzero], 2 * weights[nonzero])  # survivors scaled by 1/(1-0.5)
    # The same seed drops the same positions in the ones and in the weights.
    assert torch.equal(nonzero, (book.printed("dropout_ones") != 0) & (weights != 0))


def test_the_masked_scores_have_minus_infinity_above_the_diagonal():
    scores = _masking_walk().attn_scores[0]
    future = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    assert torch.isneginf(scores[future]).all()
    assert torch.isfinite(scores[~future]).all()


def test_both_masking_routes_print_the_same_weights():
    tr = _masking_walk()
    assert book.matches_printout(tracing.renormalized_weights(tr)[0], "masking_weights")[0]


def test_the_loop_scores_print_as_the_matmul_scores():
    assert book.matches_printout(_simplified().loop_scores, "simple_scores")[0]


def test_naive_softmax_prints_as_torch_softmax_on_the_book_scores():
    naive = tracing.naive_softmax(_simplified().attn_scores)
    assert book.matches_printout(naive[1], "simple_weights_2")[0]


def test_the_book_specs_give_the_same_modules_as_the_chapters_calls():
    with book_seed(123):
        ca = CausalAttention(3, 2, 6, 0.0)
    built = book.SPEC_CAUSAL.build()
    for name, tensor in ca.state_dict().items():
        assert torch.equal(tensor, built.state_dict()[name]), name
    with book_seed(789):
        sa_v2 = SelfAttention_v2(3, 2)
    walk = book.SPEC_MASKING_WALK.build()
    for name in ("W_query.weight", "W_key.weight", "W_value.weight"):
        assert torch.equal(walk.state_dict()[name], sa_v2.state_dict()[name])


def test_lesson_book_mode_traces_match_the_printouts():
    s = Settings(**BOOK)
    prep = prepare.prepare("ignored", s, use_book=True)
    assert prep.book and prep.labels == BOOK_LABELS and prep.x.shape == (1, 6, 3)
    assert book.matches_printout(prepare.simplified(prep).context, "simple_context")[0]
    assert book.matches_printout(prepare.trainable(prep, s, "v1").output, "sa_v1")[0]
    assert book.matches_printout(prepare.trainable(prep, s, "v2").output, "sa_v2")[0]
    assert book.matches_printout(prepare.causal(prep, s).attn_weights[0], "masking_weights")[0]
    assert book.matches_printout(prepare.multihead(prep, s).output[0], "multihead")[0]
    assert book.matches_printout(prepare.wrapper(prep, s).output[0], "wrapper")[0]


def test_exercise_3_2_wrapper_with_one_column_per_head_gives_two_columns():
    out = book.SPEC_EXERCISE_3_2.build()(book_batch())
    assert tuple(out.shape) == book.EXERCISE_3_2_SHAPE == (2, 6, 2)


@pytest.mark.draws_global_rng  # builds a module the book's way, unseeded
def test_exercise_3_3_parameter_count():
    mha = MultiHeadAttention(768, 768, 1024, 0.0, 12)
    count = sum(p.numel() for p in mha.parameters() if p.requires_grad)
    assert count == book.EXERCISE_3_3_PARAMETERS == 2_360_064


# The shapes the chapter prints (context_vecs.shape) after each module's example.
PRINTED_SHAPES = {
    "causal_attention": (2, 6, 2),
    "wrapper": (2, 6, 4),
    "multihead": (2, 6, 2),
}


def test_printed_shapes_match_the_modules():
    assert _causal_shape() == PRINTED_SHAPES["causal_attention"]
    assert tuple(book.SPEC_WRAPPER.build()(book_batch()).shape) == PRINTED_SHAPES["wrapper"]
    assert tuple(book.SPEC_MHA.build()(book_batch()).shape) == PRINTED_SHAPES["multihead"]


def _causal_shape():
    return tuple(book.SPEC_CAUSAL.build()(book_batch()).shape)


# --- matches_printout itself can say no ---------------------------------------------------
def test_matches_printout_rejects_a_change_in_the_fourth_decimal():
    good = book.printed("sa_v1")
    assert book.matches_printout(good, "sa_v1") == (True, 0.0)
    bad = good.clone()
    bad[2, 1] += 1e-4
    match, worst = book.matches_printout(bad, "sa_v1")
    assert not match
    assert worst == pytest.approx(1e-4, rel=1e-2)


def test_matches_printout_rejects_a_wrong_shape_or_a_misplaced_infinity():
    assert book.matches_printout(torch.zeros(5, 2), "sa_v1") == (False, math.inf)
    masked = book.printed("masking_masked_scores")
    moved = masked.clone()
    moved[0, 1] = 0.0
    assert book.matches_printout(moved, "masking_masked_scores")[0] is False
    assert book.matches_printout(masked, "masking_masked_scores")[0] is True


# --- the printouts file --------------------------------------------------------------------
def test_printouts_file_reads_vectors_matrices_and_masked_scores():
    text = "# a comment\nv: 1.5 -2.0\nm:  # rows follow\n    0.1 -inf\n    0.3 0.4\n"
    read = book._read_printouts(text)
    assert read == {"v": (1.5, -2.0), "m": ((0.1, -math.inf), (0.3, 0.4))}
    assert book.printed("simple_context_2").shape == (3,)
    assert book.printed("masking_masked_scores").shape == (6, 6)
    assert int(torch.isinf(book.printed("masking_masked_scores")).sum()) == 15


def test_printouts_file_refuses_a_name_given_twice_and_stays_read_only():
    with pytest.raises(ValueError, match="'v' is given twice"):
        book._read_printouts("v: 1.0\nv: 2.0\n")
    with pytest.raises(TypeError):
        book.PRINTED["sa_v1"] = ()  # type: ignore[index]
