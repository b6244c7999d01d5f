"""The defaults teach the chapter (issue 14): read through attnviz.teach.prepare as the pages do.

- pass 1's weights visibly mix on the default text (no row puts more than 0.8 on one token,
  every row has at least two weights >= 0.1);
- d_in = d_out, so every comparison with nn.MultiheadAttention applies;
- one click from the defaults (d_out = 128), dropping pass 2's 1/√d_k moves a weight by at
  least 0.1; at the defaults themselves the move is small, as the chapter predicts for small d_k;
- the book's toy example is one toggle away and keeps its numbers.

bench/defaults_search.py shows how these values were picked.
"""

from __future__ import annotations

import pytest
import torch

from attnviz.core.inputs import BOOK_TEXT, row_scale
from attnviz.core.settings import Settings
from attnviz.teach import checks as live_checks
from attnviz.teach import prepare
from tests.support import module_checks as MC

SCALING_CLICK = {"d_out": 128}  # the one change that makes pass 2's scaling matter
OTHER_TEXTS = (
    "Every effort moves you forward",
    "The cat sat on the mat",
    "Attention is all you need",
)


def _weights(tr) -> torch.Tensor:
    return tr.attn_weights


def _pass_one_weights(text: str, s: Settings) -> torch.Tensor:
    return _weights(prepare.simplified(prepare.prepare(text, s)))


def _scaling_move(s: Settings) -> float:
    """max |softmax(Q Kᵀ) - softmax(Q Kᵀ / √d_k)| of pass 2 (SelfAttention_v2) on the default text."""
    tr = prepare.trainable(prepare.prepare(BOOK_TEXT, s), s)
    unscaled = torch.softmax(tr.attn_scores, dim=-1)
    return float((unscaled - _weights(tr)).abs().max())


def test_the_default_text_is_the_books_sentence_in_six_tokens():
    prep = prepare.prepare(BOOK_TEXT, Settings())
    assert prep.num_tokens == 6
    assert prep.x.shape == (1, 6, 8)


def test_pass_one_weights_mix_at_the_defaults():
    w = _pass_one_weights(BOOK_TEXT, Settings())
    assert w.shape == (6, 6)
    largest = w.max(dim=-1).values
    spread = (w >= 0.1).sum(dim=-1)
    assert (largest <= 0.8).all(), largest
    assert (spread >= 2).all(), spread
    # Measured (bench/defaults_search.py): at most 0.497 on one token, at least 3 weights >= 0.1.
    assert float(largest.max()) == pytest.approx(0.497, abs=0.001)
    assert int(spread.min()) == 3
    # Every context vector mixes: none equals its own input.
    z = prepare.simplified(prepare.prepare(BOOK_TEXT, Settings()))
    x, ctx = z.inputs, z.context
    assert ((ctx - x).norm(dim=-1) > 0.1).all()


@pytest.mark.parametrize("text", OTHER_TEXTS)
def test_pass_one_weights_mix_on_other_short_sentences_too(text):
    w = _pass_one_weights(text, Settings())
    assert float(w.max()) <= 0.8
    assert int((w >= 0.1).sum(dim=-1).min()) >= 2


def test_pass_one_weights_were_one_hot_with_the_old_unit_variance_rows():
    # The failure this guards against: N(0, 1) rows (today's rows / their scale) at d_in = 16.
    prep = prepare.prepare(BOOK_TEXT, Settings(d_in=16))
    x = prep.x[0] / row_scale(16)
    w = torch.softmax(x @ x.T, dim=-1)
    assert float(w.diagonal().min()) > 0.99


def test_d_in_equals_d_out_at_the_defaults_so_torch_mha_applies():
    s = Settings()
    assert s.d_in == s.d_out == 8
    assert s.num_heads == 2 and s.d_out % s.num_heads == 0
    module = prepare.spec_multihead(s).build()
    assert live_checks.torch_mha_na(module) is None
    prep = prepare.prepare(BOOK_TEXT, s)
    result = MC.matches_torch_mha(module, prep.x)
    assert result.status == "pass", result.detail


def test_dropping_the_scaling_moves_a_weight_by_a_tenth_one_click_from_the_defaults():
    s = Settings()
    clicked = s.with_changes(**SCALING_CLICK)
    assert clicked.d_in == s.d_in  # one value changed
    move = _scaling_move(clicked)
    assert move >= 0.1
    assert move == pytest.approx(0.246, abs=0.001)  # bench/defaults_search.py


def test_at_the_defaults_the_scaling_barely_moves_the_weights():
    # d_k = 8: the scores are small, so 1/√8 changes little (the chapter's point is for large d_k).
    assert _scaling_move(Settings()) == pytest.approx(0.032, abs=0.001)


def test_the_books_toy_example_is_one_toggle_away_with_its_numbers():
    prep = prepare.prepare(BOOK_TEXT, Settings(), use_book=True)
    assert prep.book and prep.x.shape == (1, 6, 3)
    w = _weights(prepare.simplified(prep))
    # The chapter's printed row for "journey" (x^(2)).
    expected = torch.tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
    assert torch.allclose(w[1], expected, atol=1e-4)
