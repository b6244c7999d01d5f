"""The slider (one component of q_i changed, the row again) against a fresh forward with that
query changed, and the line view against the weights the page draws."""

from __future__ import annotations

import pytest
import torch

from attnviz.core import modules as M
from attnviz.core import trace as tracing
from attnviz.core.seeding import seeded
from attnviz.core.settings import Settings
from attnviz.teach import derive, prepare
from attnviz.teach.lessons import cell as cell_lesson

TEXT = "Your journey starts with one step"


def _fresh_row(tr: tracing.Trace, i: int, h: int, dim: int, value: float):
    """A fresh forward of the trace's module with q_i[dim] of head h set to ``value`` (a hook
    on W_query's output): its row i of (masked scores, weights, weights used, context)."""
    if isinstance(tr, tracing.SimplifiedTrace):
        x = tr.inputs.clone()
        x[i, dim] = value
        with torch.inference_mode():
            context, taps = tracing.record(lambda: M.simplified_attention(x))
        w = taps["attn_weights"][0][i]
        return taps["attn_scores"][0][i], w, w, context[i]
    assert isinstance(tr, tracing.TrainableTrace | tracing.CausalTrace | tracing.MultiHeadTrace)
    module = tr.spec.build()
    module.train(tr.training)
    column = h * tr.d_k + dim

    def change_query(_module, _inputs, out):
        out = out.clone()
        out[..., i, column] = value  # batch row 0 is the only one
        return out

    module.W_query.register_forward_hook(change_query)
    with torch.inference_mode():
        if tr.training and tr.spec.dropout > 0:
            with seeded(tr.dropout_seed):
                out, taps = tracing.record(lambda: module(tr.inputs))
        else:
            out, taps = tracing.record(lambda: module(tr.inputs))
    scores, weights = taps["attn_scores"][0], taps["attn_weights"][0]
    if isinstance(tr, tracing.TrainableTrace):
        return scores[i], weights[i], weights[i], out[i]
    used = taps["weights_dropped"][0]
    if isinstance(tr, tracing.MultiHeadTrace):
        return scores[0, h, i], weights[0, h, i], used[0, h, i], taps["context_heads"][0][0, h, i]
    return scores[0, i], weights[0, i], used[0, i], out[0, i]


CASES = [
    ("simplified", Settings()),
    ("v2", Settings()),
    ("causal", Settings()),
    ("causal", Settings(training=True, dropout=0.5, seed_dropout=5)),
    ("multihead", Settings(d_out=16, num_heads=4)),
    ("multihead", Settings(d_out=32, num_heads=16, training=True, dropout=0.3)),
    ("multihead-book", Settings()),
]


def _trace(kind: str, s: Settings) -> tracing.Trace:
    book = kind.endswith("-book")
    prep = prepare.prepare(TEXT, s, book)
    kind = kind.removesuffix("-book")
    if kind == "simplified":
        return prepare.simplified(prep)
    if kind == "v2":
        return prepare.trainable(prep, s)
    return prepare.causal(prep, s) if kind == "causal" else prepare.multihead(prep, s)


@pytest.mark.parametrize(
    "kind, settings", CASES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(CASES)]
)
def test_the_slider_recompute_equals_a_fresh_forward_with_that_query_changed(kind, settings):
    tr = _trace(kind, settings)
    heads = tr.num_heads if isinstance(tr, tracing.MultiHeadTrace) else 1
    checked = 0
    for h in sorted({0, heads - 1}):
        for i in (0, 3, tr.num_tokens - 1):
            d = derive.derivation(tr, i, 0, head=h)
            for dim in sorted({0, d.d_k - 1}):
                value = float(d.q[dim]) + 1.5
                change = derive.recompute_row(d, dim, value)
                scores, weights, used, context = _fresh_row(tr, i, h, dim, value)
                assert change.q[dim] == pytest.approx(value)
                assert torch.equal(torch.isinf(change.scores), torch.isinf(scores))
                finite = torch.isfinite(scores)
                assert torch.allclose(change.scores[finite], scores[finite], atol=1e-6, rtol=1e-5)
                assert torch.allclose(change.weights, weights, atol=1e-6, rtol=1e-5)
                assert torch.allclose(change.used_weights, used, atol=1e-6, rtol=1e-5)
                assert torch.allclose(change.context, context, atol=1e-6, rtol=1e-5)
                # and the change moved the row (so a recompute that returned the old row fails)
                if i > 0 or kind == "simplified":
                    assert not torch.allclose(change.weights, d.row_weights, atol=1e-6)
                checked += 1
    assert checked >= 6


def test_the_slider_at_the_current_value_gives_the_drawn_row_back():
    tr = _trace("causal", Settings(training=True, dropout=0.5))
    d = derive.derivation(tr, 4, 1)
    same = derive.recompute_row(d, 2, float(d.q[2]))
    assert torch.allclose(same.weights, d.row_weights, atol=1e-7)
    assert torch.allclose(same.used_weights, d.used_weights, atol=1e-7)
    assert torch.allclose(same.context, d.context, atol=1e-6)


def test_an_untouched_slider_says_nothing_changed():
    # issue 37: the slider at its start reported "goes from 0.1606 to 0.1606"
    tr = _trace("causal", Settings())
    d = derive.derivation(tr, 4, 1)
    for dim in range(d.d_k):
        start = round(float(d.q[dim]), 3)  # where the page's slider starts
        lesson = cell_lesson.slider_lesson(d, dim, start)
        assert "nothing has changed yet" in lesson.sentence, lesson.sentence
        assert "goes from" not in lesson.sentence
        assert torch.equal(
            lesson.change.weights, derive.recompute_row(d, dim, float(d.q[dim])).weights
        )
    # a move too small to show at 4 decimals changes no printed weight, and says so
    tiny = cell_lesson.slider_lesson(d, 0, float(d.q[0]) + 1e-4)
    assert "no weight of row 4 changes at 4 decimals" in tiny.sentence, tiny.sentence
    # a real move says what moved, from and to two different printed numbers
    moved = cell_lesson.slider_lesson(d, 0, float(d.q[0]) + 2.0)
    before, after = moved.sentence.split("goes from ")[1].split(";")[0].split(" to ")
    assert before != after


def test_in_pass_1_the_slider_moves_the_query_and_its_own_key():
    tr = _trace("simplified", Settings())
    d = derive.derivation(tr, 2, 0)
    change = derive.recompute_row(d, 0, float(d.q[0]) + 1.0)
    # the diagonal score is x_2 · x_2 with both factors changed
    x2 = change.q.double()
    assert float(change.scores[2]) == pytest.approx(float(x2 @ x2), rel=1e-6)


@pytest.mark.parametrize(
    "dim, value, message",
    [
        (8, 1.0, "There is no dimension 8: it must be from 0 to 7."),
        (0, float("nan"), "The new value must be a finite number, not nan."),
        (0, "2", "The new value must be a finite number, not '2'."),
    ],
)
def test_a_bad_slider_value_gets_a_sentence(dim, value, message):
    d = derive.derivation(_trace("v2", Settings()), 1, 1)
    with pytest.raises(derive.DerivationError) as err:
        derive.recompute_row(d, dim, value)
    assert str(err.value) == message


# --- the line view ----------------------------------------------------------------------------------
def test_line_view_gives_every_key_in_reading_order_with_the_drawn_weights():
    tr = _trace("causal", Settings(training=True, dropout=0.5))
    view = derive.line_view_of(tr, 3)
    assert view.labels == tr.labels and view.query_label == tr.labels[3]
    assert view.weights == tuple(float(w) for w in tr.weights_dropped[0, 3])
    assert view.visible == (True, True, True, True, False, False)
    assert view.direction == "ltr" and view.head is None
    before = derive.line_view_of(tr, 3, after_dropout=False)
    assert before.weights == tuple(float(w) for w in tr.attn_weights[0, 3])
    best = max(range(4), key=lambda j: view.weights[j])
    assert view.sentence.endswith(f"is on key {tr.labels[best]}.")
    assert f"{view.weights[best]:.4f}" in view.sentence
    rows = view.rows()
    assert [r["key"] for r in rows] == list(tr.labels)
    assert [r["weight"] for r in rows] == list(view.weights)


def test_line_view_of_a_chosen_head():
    tr = _trace("multihead", Settings(d_out=16, num_heads=4))
    assert isinstance(tr, tracing.MultiHeadTrace)
    for h in range(4):
        view = derive.line_view_of(tr, 5, head=h)
        assert view.head == h
        assert view.weights == tuple(float(w) for w in tr.attn_weights[0, h, 5])
        assert f"head {h}, 6 visible keys" in view.sentence


def test_line_view_of_a_matrix_reads_the_mask_from_its_zeros():
    w = torch.tensor([[1.0, 0.0], [0.4, 0.6]])
    assert derive.line_view(w, ("0: a", "1: b"), 0).visible == (True, False)
    full = torch.tensor([[0.5, 0.5], [0.4, 0.6]])
    assert derive.line_view(full, ("0: a", "1: b"), 0).visible == (True, True)
    with pytest.raises(
        derive.DerivationError, match="square weights matrix with one row per token"
    ):
        derive.line_view(torch.ones(2, 3), ("0: a", "1: b"), 0)
    with pytest.raises(derive.DerivationError, match="There is no query 2"):
        derive.line_view(full, ("0: a", "1: b"), 2)


@pytest.mark.parametrize(
    "text, direction",
    [
        ("שלום עולם, מה שלומך", "rtl"),
        ("مرحبا بالعالم", "rtl"),
        ("Your journey starts with one step", "ltr"),
        ("12 + 34 = 46", "ltr"),
    ],
)
def test_line_view_reads_in_the_direction_of_the_text(text, direction):
    prep = prepare.prepare(text, Settings())
    tr = prepare.simplified(prep)
    assert derive.line_view_of(tr, 0).direction == direction
