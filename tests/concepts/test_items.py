"""The concept check's items (attnviz/teach/concepts.toml): 12 to 15 questions on the chapter's
ideas, every wrong option a named misconception with its explanation, every key resting on a
line of the chapter's code or printed outputs, and every claim that numbers can settle computed
here with the app's own modules."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest
import torch

from attnviz.core import modules as M
from attnviz.core.inputs import book_inputs
from attnviz.core.seeding import permutation, seeded
from attnviz.teach import concepts as C

ROOT = Path(__file__).resolve().parents[2]
BOOK_OUTPUTS = ROOT.parent / "shared" / "docs" / "book-outputs.md"
MODULES = ROOT / "attnviz" / "core" / "modules.py"
BY_ID = {item.id: item for item in C.ITEMS}


def test_the_check_has_twelve_to_fifteen_items_with_distinct_ids():
    assert 12 <= len(C.ITEMS) <= 15
    assert len(BY_ID) == len(C.ITEMS)
    assert C.SIZES == tuple(len(i.options) for i in C.ITEMS)


@pytest.mark.parametrize("item", C.ITEMS, ids=lambda i: i.id)
def test_every_wrong_option_names_a_misconception_and_explains_it(item):
    assert len(item.options) == 4  # chance is 25% on every question
    assert item.answer.misconception is None and item.answer.explanation
    for wrong in item.wrong:
        assert wrong.misconception and len(wrong.misconception) <= 60
        assert wrong.explanation.endswith(".") and "\n" not in wrong.explanation
        assert len(wrong.explanation) <= 200  # one line on a projector
    names = [w.misconception for w in item.wrong]
    assert len(set(names)) == len(names)
    texts = [o.text for o in item.options]
    assert len(set(texts)) == len(texts)


def test_the_misconceptions_the_issue_names_are_all_there():
    named = {w.misconception for item in C.ITEMS for w in item.wrong}
    for name in (
        "dropout keeps rows summing to 1",
        "the mask zeroes weights after the softmax",
        "√d_k is about speed",
        "heads see different tokens",
        "causal means nothing attends backwards",
        "a larger score always wins by the same margin",
    ):
        assert name in named
    assert len(named) >= 35


def test_one_misconception_name_has_one_meaning():
    """A name used by two items is the same mistaken idea (its explanations may differ in
    context, but not its name's spelling)."""
    spellings: dict[str, set[str]] = {}
    for item in C.ITEMS:
        for w in item.wrong:
            assert w.misconception is not None
            spellings.setdefault(w.misconception.lower().rstrip("."), set()).add(w.misconception)
    assert all(len(s) == 1 for s in spellings.values()), spellings


@pytest.mark.parametrize("item", C.ITEMS, ids=lambda i: i.id)
def test_every_key_rests_on_a_quoted_line_of_the_chapter(item):
    sources = MODULES.read_text(encoding="utf-8")
    if BOOK_OUTPUTS.exists():
        sources += BOOK_OUTPUTS.read_text(encoding="utf-8")
    elif "`" in item.evidence:
        pytest.skip("the book's outputs are not beside the project here")
    assert item.evidence in sources


def test_the_items_spell_the_american_way():
    text = C.SOURCE.read_text(encoding="utf-8")
    for british in ("normalis", "initialis", "colour", "behaviour", "neighbour"):
        assert british not in text


# --- the shuffle --------------------------------------------------------------------------------
def test_every_student_sees_each_item_in_an_order_of_her_own_that_repeats():
    item = C.ITEMS[0]
    first = C.shown_order(item, "s1", "before")
    assert first == C.shown_order(item, "s1", "before")
    assert sorted(first) == list(range(4))
    orders = {C.shown_order(item, f"s{i}", "before") for i in range(200)}
    assert len(orders) == 24  # every order of four options turns up
    assert C.shown_order(item, "s1", "after") != first or C.shown_order(
        C.ITEMS[1], "s1", "after"
    ) != C.shown_order(C.ITEMS[1], "s1", "before")


def test_always_the_first_option_shown_wins_only_by_chance():
    """Over 200 students, answering the first option shown is right on about a quarter of the
    answers (binomial 2800 draws, p = 1/4: within 4 SD), and no shown position wins more than
    30% of the time."""
    for round_ in ("before", "after"):
        at = Counter(
            C.shown_order(item, f"student-{s}", round_).index(C.KEY)
            for s in range(200)
            for item in C.ITEMS
        )
        n = 200 * len(C.ITEMS)
        sd = math.sqrt(n * 0.25 * 0.75)
        assert abs(at[0] - n / 4) < 4 * sd
        assert max(at.values()) / n < 0.30


def test_the_shuffle_leaves_the_global_generator_alone():
    before = torch.random.get_rng_state()
    permutation(4, "anything")
    assert torch.equal(before, torch.random.get_rng_state())


# --- the claims the numbers settle -----------------------------------------------------------------
def _book_x() -> torch.Tensor:
    return book_inputs()


def test_context_is_the_weighted_sum_of_every_input():
    x = _book_x()
    with M.recording() as rec:
        context = M.simplified_attention(x)
    weights = rec["attn_weights"][0]
    row = 1  # "journey"
    by_hand = sum(weights[row, j] * x[j] for j in range(len(x)))
    assert torch.allclose(context[row], by_hand)
    assert context.shape == x.shape and weights.shape == (6, 6)
    # not the top key's input, nor the query's own input times its weight
    assert not torch.allclose(context[row], x[int(weights[row].argmax())], atol=1e-3)
    assert not torch.allclose(context[row], weights[row, row] * x[row], atol=1e-3)


def test_softmax_rows_sum_to_one_columns_do_not_and_every_weight_is_positive():
    scores = torch.tensor([[2.0, -3.0, 0.5], [-1.0, -2.0, 4.0], [0.0, 0.0, -5.0]])
    weights = torch.softmax(scores, dim=-1)
    assert torch.allclose(weights.sum(-1), torch.ones(3))
    assert not torch.allclose(weights.sum(0), torch.ones(3), atol=0.05)
    assert bool((weights > 0).all()) and float(weights.max()) < 1


def test_a_score_lead_of_one_fixes_the_ratio_e_not_the_difference():
    ratios, differences = [], []
    for others in ([], [0.0], [1.5, 1.9], [3.0, 4.0, 5.0]):
        w = torch.softmax(torch.tensor([2.0, 1.0, *others], dtype=torch.float64), dim=-1)
        ratios.append(float(w[0] / w[1]))
        differences.append(float(w[0] - w[1]))
    assert all(math.isclose(r, math.e, rel_tol=1e-12) for r in ratios)
    assert max(differences) - min(differences) > 0.3  # the lead in weight is not fixed
    assert all(abs(r - 2) > 0.5 for r in ratios)  # not proportional to the scores


def test_in_the_book_with_weighs_journey_more_than_itself():
    x = _book_x()
    with M.recording() as rec:
        M.simplified_attention(x)
    weights = rec["attn_weights"][0]
    assert int(weights[3].argmax()) == 1  # "with" weighs "journey" most
    assert int(weights[4].argmax()) != 3  # nor the token before it
    assert float(weights.max() - weights.min()) > 0.1  # not even


def test_trainable_scores_are_not_symmetric_and_softmax_weights_never_are():
    x = _book_x()
    with seeded(123):
        sa = M.SelfAttention_v2(3, 2)
    with M.recording() as rec, torch.no_grad():
        sa(x)
    scores = rec["attn_scores"][0]
    assert not torch.allclose(scores, scores.T, atol=1e-3)
    with M.recording() as rec:
        M.simplified_attention(x)
    simple_scores, simple_weights = rec["attn_scores"][0], rec["attn_weights"][0]
    assert torch.allclose(simple_scores, simple_scores.T)  # symmetric scores ...
    assert not torch.allclose(simple_weights, simple_weights.T, atol=1e-3)  # ... not weights
    assert sa.W_query.weight.shape == sa.W_key.weight.shape
    assert not torch.equal(sa.W_query.weight, sa.W_key.weight)


def test_dividing_by_root_dk_flattens_rows_that_still_sum_to_one():
    with seeded(0):
        q, k = torch.randn(64), torch.randn(6, 64)
    scores = k @ q
    scaled = torch.softmax(scores / 8, dim=-1)
    raw = torch.softmax(scores, dim=-1)
    assert torch.allclose(scaled.sum(), torch.tensor(1.0)) and torch.allclose(
        raw.sum(), torch.tensor(1.0)
    )
    entropy = lambda w: float(-(w * w.clamp_min(1e-30).log()).sum())  # noqa: E731
    assert entropy(scaled) > entropy(raw)  # flatter, not sharper
    assert float(raw.max()) > float(scaled.max())


def test_multihead_attention_divides_by_the_root_of_one_heads_width():
    with seeded(123):
        mha = M.MultiHeadAttention(768, 768, 16, 0.0, 12).eval()
        x = torch.randn(1, 5, 768)
    with M.recording() as rec, torch.no_grad():
        mha(x)
    scores, weights = rec["attn_scores"][0], rec["attn_weights"][0]
    assert mha.head_dim == 64 and scores.shape == (1, 12, 5, 5)
    assert torch.allclose(weights, torch.softmax(scores / 8.0, dim=-1))
    for wrong in (768**0.5, 12**0.5, 1024**0.5):
        assert not torch.allclose(weights, torch.softmax(scores / wrong, dim=-1), atol=1e-4)


def _causal(dropout: float = 0.0) -> M.CausalAttention:
    with seeded(123):
        return M.CausalAttention(3, 2, 6, dropout)


def test_the_fourth_query_sees_positions_zero_to_three_and_the_first_only_itself():
    x = _book_x().unsqueeze(0)
    module = _causal().eval()
    with M.recording() as rec, torch.no_grad():
        module(x)
    weights = rec["attn_weights"][0][0]
    assert [j for j in range(6) if weights[3, j] > 0] == [0, 1, 2, 3]
    assert weights[0].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert torch.allclose(weights.sum(-1), torch.ones(6))


def test_masking_with_zero_leaks_and_zeroing_after_the_softmax_loses_weight():
    with seeded(123):
        q, k = torch.randn(6, 2), torch.randn(6, 2)
    mask = torch.triu(torch.ones(6, 6), diagonal=1)
    scores = q @ k.T
    right = torch.softmax(scores.masked_fill(mask.bool(), -torch.inf) / 2**0.5, dim=-1)
    with_zero = torch.softmax(scores.masked_fill(mask.bool(), 0.0) / 2**0.5, dim=-1)
    after = torch.softmax(scores / 2**0.5, dim=-1) * (1 - mask)
    assert bool((right * mask == 0).all()) and torch.allclose(right.sum(-1), torch.ones(6))
    assert float((with_zero * mask).sum()) > 0.5  # the future gets weight
    assert bool((after.sum(-1)[:-1] < 0.999).all())  # rows sum to less than 1
    renormalized = M.renormalized_causal_weights(q, k, mask)
    assert torch.allclose(renormalized, right, atol=1e-6)  # the two routes agree
    assert renormalized[0].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]


def test_dropout_rows_sum_to_one_only_on_average_and_survivors_double():
    x = _book_x().unsqueeze(0)
    module = _causal(0.5).train()
    sums, dropped_counts = [], set()
    for seed in range(40):
        with M.recording() as rec, seeded(seed), torch.no_grad():
            module(x)
        before, after = rec["attn_weights"][0][0], rec["weights_dropped"][0][0]
        kept = after != 0
        assert torch.allclose(after[kept], 2 * before[kept])
        sums += after.sum(-1).tolist()
        dropped_counts |= {int(((after == 0) & (before > 0))[5].sum())}
    assert any(abs(s - 1) > 0.2 for s in sums)  # a row that does not sum to 1
    assert abs(sum(sums) / len(sums) - 1) < 0.1  # ... but 1 on average
    assert len(dropped_counts) >= 3  # the last row loses more or fewer than half


def test_every_head_weighs_every_token_with_its_own_projection():
    x = _book_x().unsqueeze(0)
    with seeded(123):
        mha = M.MultiHeadAttention(3, 4, 6, 0.0, 2).eval()
    with M.recording() as rec, torch.no_grad():
        mha(x)
    weights = rec["attn_weights"][0][0]
    assert weights.shape == (2, 6, 6)
    assert [int((weights[h] > 0).sum()) for h in range(2)] == [21, 21]  # all pairs, each head
    assert not torch.allclose(weights[0], weights[1], atol=1e-3)
    assert mha.W_query.weight.shape == (4, 3)  # each head's rows read all 3 input dims
    assert bool((mha.W_query.weight[:2] != 0).all()) and bool((mha.W_query.weight[2:] != 0).all())


def test_view_alone_keeps_tokens_before_heads_and_transpose_leaves_memory_alone():
    t = torch.arange(2 * 6 * 4.0).view(2, 6, 4)
    split = t.view(2, 6, 2, 2)
    assert split.shape == (2, 6, 2, 2)  # (b, tokens, heads, head_dim)
    moved = split.transpose(1, 2)
    assert moved.shape == (2, 2, 6, 2) and not moved.is_contiguous()


def test_the_output_shapes_the_book_prints():
    batch = torch.stack((_book_x(), _book_x()))
    with seeded(123):
        mha = M.MultiHeadAttention(3, 2, 6, 0.0, 2)
    with seeded(123):
        wrapper = M.MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2)
    with torch.no_grad():
        assert tuple(mha(batch).shape) == (2, 6, 2)
        assert tuple(wrapper(batch).shape) == (2, 6, 4)
    assert BY_ID["output_shape"].answer.text == "(2, 6, 2)"
    assert BY_ID["output_shape"].options[1].text == "(2, 6, 4)"


def test_dot_products_spread_with_d_k_and_a_saturated_softmax_has_tiny_gradients():
    """The key of "why divide by √d_k": the scores' spread grows like √d_k, and without the
    division the softmax's gradient shrinks."""
    with seeded(1):
        small = (torch.randn(4000, 4) * torch.randn(4000, 4)).sum(-1)
        large = (torch.randn(4000, 256) * torch.randn(4000, 256)).sum(-1)
        scores = (torch.randn(6, 256) @ torch.randn(256)).double()
    ratio = float(large.std() / small.std())
    assert 6 < ratio < 10  # √(256 / 4) = 8

    def gradient_size(s: torch.Tensor) -> float:
        jacobian = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), s)
        return float(jacobian.abs().sum())

    assert gradient_size(scores) < 0.5 * gradient_size(scores / 16)  # √256 = 16


@pytest.mark.parametrize("rank", range(4), ids=["longest", "second", "third", "shortest"])
def test_no_strategy_by_option_length_scores_more_than_40_percent(rank):
    """ "Pick the longest option" (or the second longest ... or the shortest) is right on at
    most 40% of the items: the right answers are neither the wordiest nor the tersest."""
    score = 0.0
    for item in C.ITEMS:
        lengths = [len(o.text) for o in item.options]
        target = sorted(lengths, reverse=True)[rank]
        tied = [i for i, n in enumerate(lengths) if n == target]
        score += (C.KEY in tied) / len(tied)
    assert score / len(C.ITEMS) <= 0.40
