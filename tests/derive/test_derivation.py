"""One cell, every number: the derivation's parts add up to the cell the page draws.

At the defaults, in book mode (the chapter's printed numbers), in training mode with dropout,
and with 4 and 16 heads: Σ q[d]·k[d] is the score, the exps over their sum are the drawn
softmax row, dropout's factor times the weight is what the context used, and Σ α_j v_j is the
context row. Each step's code line is read back from modules.py and holds its operation.
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import pytest
import torch

from attnviz.core import book as BK
from attnviz.core import modules as M
from attnviz.core import trace as tracing
from attnviz.core.settings import Settings
from attnviz.teach import derive, prepare

TEXT = "Your journey starts with one step"
DEFAULTS = Settings()
TRAINING = Settings(training=True, dropout=0.5, seed_dropout=7)
FOUR_HEADS = Settings(d_in=8, d_out=16, num_heads=4)
SIXTEEN_HEADS = Settings(d_in=8, d_out=32, num_heads=16, training=True, dropout=0.3)


def _traces(s: Settings, book: bool = False) -> dict[str, tracing.Trace]:
    prep = prepare.prepare(TEXT, s, book)
    cut, _ = prepare.within_context(prep, s.context_length)
    return {
        "simplified": prepare.simplified(prep),
        "v1": prepare.trainable(prep, s, "v1"),
        "v2": prepare.trainable(prep, s, "v2"),
        "causal": prepare.causal(cut, s),
        "multihead": prepare.multihead(cut, s),
        "wrapper": prepare.wrapper(cut, s),
    }


def _heads(tr: tracing.Trace) -> int:
    if isinstance(tr, tracing.MultiHeadTrace):
        return tr.num_heads
    if isinstance(tr, tracing.WrapperTrace):
        return len(tr.heads)
    return 1


def _drawn(tr: tracing.Trace, h: int):
    """(scores before the mask, softmax weights, weights used, context rows) as the trace
    holds them for head h, batch row 0: what the page draws."""
    if isinstance(tr, tracing.WrapperTrace):
        return _drawn(tr.heads[h], 0)
    if isinstance(tr, tracing.SimplifiedTrace | tracing.TrainableTrace):
        return tr.attn_scores, tr.attn_weights, tr.attn_weights, tr.context
    scores = tracing.unmasked_scores(tr)
    if isinstance(tr, tracing.MultiHeadTrace):
        return scores[0, h], tr.attn_weights[0, h], tr.weights_dropped[0, h], tr.context_heads[0, h]
    return scores[0], tr.attn_weights[0], tr.weights_dropped[0], tr.context[0]


def _assert_adds_up(tr: tracing.Trace, i: int, j: int, h: int) -> derive.Derivation:
    d = derive.derivation(tr, i, j, head=h)
    scores, weights, used, context = _drawn(tr, h)
    # Σ q·k = the score
    tol = 1e-6 + 1e-5 * float(d.products.abs().sum())
    assert abs(float(d.products.sum()) - float(scores[i, j])) <= tol
    assert d.score == float(scores[i, j])
    assert len(d.products) == d.d_k == d.q.shape[0] == d.k.shape[0]
    # the scale: √d_k from pass 2 on, none in pass 1
    expected_scale = 1.0 if isinstance(tr, tracing.SimplifiedTrace) else math.sqrt(d.d_k)
    assert d.scale == pytest.approx(expected_scale)
    # the mask: future keys only, and only in passes 3 and 4; masked before it is scaled
    causal = isinstance(tr, tracing.CausalTrace | tracing.MultiHeadTrace | tracing.WrapperTrace)
    assert d.masked == (causal and j > i)
    if d.masked:
        assert d.scaled == -math.inf
    else:
        scaled = float(scores[i, j]) / expected_scale
        assert d.scaled == pytest.approx(scaled, rel=1e-6, abs=1e-9)
    assert d.future.tolist() == [causal and k > i for k in range(tr.num_tokens)]
    # softmax of the row = the drawn weights
    recomputed = d.row_exp / d.row_sum
    assert torch.allclose(recomputed, weights[i].double(), atol=1e-6, rtol=1e-5)
    assert d.row_sum == pytest.approx(float(d.row_exp.sum()))
    assert d.weight == float(weights[i, j])
    if d.masked:
        assert d.weight == 0.0 and d.exp == 0.0
    # dropout: the factor times the weight is what the context used
    assert torch.equal(d.used_weights, used[i])
    if d.dropout_factor is not None:
        assert d.dropout_factor in (0.0, pytest.approx(1 / (1 - d.dropout)))
        assert d.used_weight == pytest.approx(d.weight * d.dropout_factor, rel=1e-6, abs=1e-9)
    # Σ α v = the context row
    assert torch.allclose(d.context_sum, context[i].double(), atol=1e-6, rtol=1e-5)
    assert torch.equal(d.context, context[i])
    norms = torch.linalg.vector_norm(
        d.used_weights.double().unsqueeze(1) * d.values.double(), dim=1
    )
    assert torch.allclose(d.term_norms, norms)
    return d


@pytest.mark.parametrize(
    "settings",
    [DEFAULTS, TRAINING, FOUR_HEADS, SIXTEEN_HEADS],
    ids=["defaults", "training-dropout", "4-heads", "16-heads-training"],
)
@pytest.mark.parametrize("kind", ["simplified", "v1", "v2", "causal", "multihead", "wrapper"])
def test_every_cells_parts_add_up_to_the_drawn_cell(settings, kind):
    tr = _traces(settings)[kind]
    n = tr.num_tokens
    for h in range(_heads(tr)):
        for i in range(n):
            for j in range(n):
                _assert_adds_up(tr, i, j, h)


def test_sixteen_heads_have_two_dimensions_each_and_dropout_both_keeps_and_drops():
    tr = _traces(SIXTEEN_HEADS)["multihead"]
    assert isinstance(tr, tracing.MultiHeadTrace) and tr.num_heads == 16
    factors = set()
    for h in range(16):
        for i in range(tr.num_tokens):
            for j in range(i + 1):
                d = derive.derivation(tr, i, j, head=h)
                assert d.d_k == 2
                factors.add(round(d.dropout_factor, 4))
    assert factors == {0.0, round(1 / 0.7, 4)}


def test_training_mode_cell_names_its_dropout_factor():
    tr = _traces(TRAINING)["causal"]
    kept = dropped = None
    for i in range(tr.num_tokens):
        for j in range(i + 1):
            d = derive.derivation(tr, i, j)
            if d.dropout_factor == 0 and dropped is None:
                dropped = d
            elif d.dropout_factor and kept is None:
                kept = d
    assert kept is not None and dropped is not None
    assert "multiplied it by 1/(1−0.5) = 2" in kept.step("dropout").sentence
    assert f"{kept.weight:.4f}" in kept.step("dropout").sentence
    assert "Dropout zeroed this weight" in dropped.step("dropout").sentence
    masked = derive.derivation(tr, 0, 3)
    assert masked.dropout_factor is None
    assert "a masked key" in masked.step("dropout").sentence


def test_eval_mode_says_dropout_is_the_identity():
    d = derive.derivation(_traces(DEFAULTS)["causal"], 2, 1)
    assert d.dropout_factor is None
    assert d.step("dropout").sentence.startswith("Dropout is the identity here (eval mode)")
    assert torch.equal(d.used_weights, d.row_weights)


# --- book mode: the chapter's numbers -------------------------------------------------------------
def _close_to_printout(values, name: str) -> None:
    printed = BK.printed(name)
    assert torch.allclose(torch.as_tensor(values, dtype=torch.float32), printed, atol=0.5e-4 + 1e-6)


def test_book_mode_pass_1_query_2_gives_the_chapters_scores_weights_and_context():
    tr = _traces(DEFAULTS, book=True)["simplified"]
    row = [derive.derivation(tr, 1, j) for j in range(6)]
    _close_to_printout([d.score for d in row], "simple_scores_2")
    _close_to_printout([d.weight for d in row], "simple_weights_2")
    _close_to_printout(row[0].context_sum, "simple_context_2")
    # the chapter's dot-product side note: x_1 · x_0 term by term
    assert row[0].products.tolist() == pytest.approx([0.55 * 0.43, 0.87 * 0.15, 0.66 * 0.89])


def test_book_mode_pass_2_v1_gives_the_chapters_query_scores_weights_and_context():
    tr = _traces(DEFAULTS, book=True)["v1"]
    assert tr.spec == BK.SPEC_V1
    row = [derive.derivation(tr, 1, j) for j in range(6)]
    _close_to_printout(row[0].q, "trainable_query_2")
    _close_to_printout([d.score for d in row], "trainable_scores_2")
    _close_to_printout([d.weight for d in row], "trainable_weights_2")
    _close_to_printout(row[0].context_sum, "trainable_context_2")
    assert row[0].scale == pytest.approx(math.sqrt(2))


def test_book_mode_pass_3_gives_the_chapters_masked_weights():
    tr = _traces(DEFAULTS, book=True)["causal"]
    weights = BK.printed("masking_weights")
    masked = BK.printed("masking_masked_scores")
    for i in range(6):
        for j in range(6):
            d = derive.derivation(tr, i, j)
            assert d.masked == bool(torch.isinf(masked[i, j]))
            assert abs(d.weight - float(weights[i, j])) <= 0.5e-4 + 1e-6
            if not d.masked:
                assert abs(d.score - float(masked[i, j])) <= 0.5e-4 + 1e-6


def test_book_mode_pass_4_wrapper_heads_give_the_chapters_context():
    tr = _traces(DEFAULTS, book=True)["wrapper"]
    printed = BK.printed("wrapper")  # (6, 4), the first example: the heads' contexts side by side
    for h in range(2):
        for i in range(6):
            d = derive.derivation(tr, i, 0, head=h)
            got = d.context_sum.float()
            assert torch.allclose(got, printed[i, 2 * h : 2 * h + 2], atol=0.5e-4 + 1e-6)


# --- the code lines -----------------------------------------------------------------------------
# What each step's line must do, read back from the file on disk.
OPERATION = {
    "score": ("attn_scores =", "@"),
    "scale": ("torch.softmax(attn_scores",),
    "mask": ("masked_fill_(", "-torch.inf"),
    "softmax": ("torch.softmax(attn_scores", "dim=-1"),
    "dropout": ("self.dropout(attn_weights)",),
    "context": ("attn_weights @",),
}


@pytest.mark.parametrize("kind", ["simplified", "v1", "v2", "causal", "multihead", "wrapper"])
def test_each_step_names_the_line_of_modules_py_that_computes_it(kind):
    tr = _traces(TRAINING)[kind]
    d = derive.derivation(tr, 2, 1)
    modules_file = Path(__file__).resolve().parents[2] / derive.MODULES_PATH  # as steps name it
    file_lines = modules_file.read_text(encoding="utf-8").splitlines()
    assert modules_file.name == "modules.py" and modules_file.samefile(inspect.getfile(M))
    names = [s.name for s in d.steps]
    causal = kind in ("causal", "multihead", "wrapper")
    expected = ["score", "scale", "softmax", "context"]
    if causal:  # masked first, then scaled: the order of modules.py and of page 3 (issue 37)
        expected = ["score", "mask", "scale", "softmax", "dropout", "context"]
    assert names == expected
    if causal:  # the steps follow the forward's own lines
        assert d.step("mask").code[-1].lineno < d.step("scale").code[0].lineno
    for step in d.steps:
        assert step.code, step.name
        for line in step.code:
            assert line.path == "attnviz/core/modules.py"
            assert file_lines[line.lineno - 1].strip() == line.text
            assert line.where == f"attnviz/core/modules.py:{line.lineno}"
        last = step.code[-1].text
        for op in OPERATION[step.name]:
            assert op in last, (step.name, last)
    scale_line = d.step("scale").code[0].text
    assert ("** 0.5" in scale_line) == (kind != "simplified")
    score_lines = [c.text for c in d.step("score").code]
    if kind == "simplified":
        assert score_lines == [
            "attn_scores = inputs @ inputs.T  # (T, T): dot product of each pair of tokens"
        ]
    else:
        assert any("W_query" in t for t in score_lines) and any("W_key" in t for t in score_lines)
    if kind == "multihead":
        assert any(".view(" in t for t in score_lines)


def test_a_marker_missing_from_the_source_is_an_error_not_a_wrong_line():
    with pytest.raises(LookupError, match="0 lines"):
        derive.code_line(derive.M.CausalAttention.forward, "no such operation")
    with pytest.raises(LookupError, match="lines of CausalAttention.forward contain 'values'"):
        derive.code_line(derive.M.CausalAttention.forward, "values")


# --- the sentences are the numbers ----------------------------------------------------------------
def test_step_sentences_hold_the_cells_numbers():
    tr = _traces(DEFAULTS)["multihead"]
    d = derive.derivation(tr, 4, 2, head=1)
    score = d.step("score").sentence
    assert f"{d.score:.4f}".replace("-", "−") in score
    assert "over the 4 dimensions of head 1" in score
    scale = d.step("scale").sentence
    assert "√d_k = √4 = 2.0000" in scale
    soft = d.step("softmax").sentence
    assert f"{d.row_sum:.4f}" in soft and f"{d.weight:.4f}" in soft
    assert "the 5 exps of row 4" in soft
    assert "hides the 1 later key of this row" in d.step("mask").sentence
    assert scale.startswith("After the mask, divided by √d_k")
    assert d.unit == "MultiHeadAttention, head 1"
    ctx = d.step("context").sentence
    big = int(d.term_norms.argmax())
    assert f"the largest term is key {big}'s" in ctx
    assert "over the 5 keys it can see" in ctx


def test_a_masked_cell_is_masked_before_it_is_scaled():
    tr = _traces(DEFAULTS)["causal"]
    d = derive.derivation(tr, 1, 4)
    assert d.masked and d.scaled == -math.inf
    names = [s.name for s in d.steps]
    assert names.index("mask") < names.index("scale")
    assert "sets this score to −∞" in d.step("mask").sentence
    said = f"this score is already −∞, and −∞ / {d.scale:.4f} stays −∞"
    assert said in d.step("scale").sentence
    # the row the softmax saw: masked, then divided
    expected = tr.attn_scores[0, 1].double() / d.scale
    assert torch.equal(d.row_scaled.isinf(), d.future)
    torch.testing.assert_close(d.row_scaled[:2], expected[:2])


def test_a_large_row_shows_shifted_exps_and_still_adds_up():
    x = torch.tensor([[30.0, 0.0], [0.0, 1.0], [29.0, 0.5]])
    tr = tracing.trace_simplified(x, ("0: a", "1: b", "2: c"))
    d = derive.derivation(tr, 0, 2)
    assert d.shift == pytest.approx(900.0)
    assert torch.allclose(d.row_exp / d.row_sum, tr.attn_weights[0].double(), atol=1e-6)
    assert "subtracting the row's largest score 900.0000" in d.step("softmax").sentence


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda tr: derive.derivation(tr, 6, 0), "There is no query 6: it must be from 0 to 5."),
        (lambda tr: derive.derivation(tr, 0, -1), "There is no key -1: it must be from 0 to 5."),
        (
            lambda tr: derive.derivation(tr, 0, 0, head=2),
            "There is no head 2: it must be from 0 to 1.",
        ),
        (lambda tr: derive.derivation(tr, 0, 0, batch=1), "There is no batch row 1: there is only"),
        (lambda tr: derive.derivation(tr, "1", 0), "The query must be a whole number, not '1'."),
    ],
)
def test_a_cell_that_does_not_exist_gets_a_sentence(call, message):
    tr = _traces(DEFAULTS)["multihead"]
    with pytest.raises(derive.DerivationError) as err:
        call(tr)
    assert str(err.value).startswith(message)


def test_empty_text_has_no_cell_to_explain():
    tr = prepare.simplified(prepare.prepare("", DEFAULTS))
    with pytest.raises(derive.DerivationError, match="There is no text to attend over"):
        derive.derivation(tr, 0, 0)
