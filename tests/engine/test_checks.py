"""Live checks: each claim of the chapter tested on the numbers in front of the student."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from attnviz.core import book
from attnviz.core import modules as M
from attnviz.core import trace as tracing
from attnviz.core.inputs import book_inputs
from attnviz.core.settings import BOOK, GPT2_SMALL, Settings
from attnviz.teach import checks as live_checks
from attnviz.teach import prepare
from tests.support import module_checks as MC

from .helpers import random_x

DEFAULT_TEXT = "Your journey starts with one step, and every next step follows the last."
STATUSES = {"pass", "fail", "documented", "n/a"}


def _scaled(queries, keys):
    return queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5


def _assert_well_formed(result: live_checks.CheckResult) -> None:
    assert isinstance(result, live_checks.CheckResult)
    assert result.status in STATUSES
    assert result.name and result.title and result.explanation
    if result.status == "pass":
        assert result.max_diff is not None and result.tol is not None
        assert 0.0 <= result.max_diff <= result.tol
        assert result.scale is not None and result.scale >= 0
        assert result.explanation in result.detail
        assert f"{result.max_diff:.2e}" in result.detail
    if result.status in ("documented", "n/a"):
        assert result.ok and not result.passed


def _pass_one_checks(prep) -> list[live_checks.CheckResult]:
    simp = prepare.simplified(prep)
    results = [
        live_checks.rows_sum_to_one(simp.attn_weights),
        live_checks.weights_are_softmax(simp.attn_scores, simp.attn_weights),
        live_checks.naive_softmax_matches(simp.attn_scores),
    ]
    # The trace keeps the nested loops only up to LOOP_TOKEN_CAP tokens; check that many.
    loops = (
        simp.loop_scores
        if simp.loop_scores is not None
        else tracing.loop_scores(simp.inputs[: tracing.LOOP_TOKEN_CAP])
    )
    results.append(live_checks.loops_equal_matmul(simp.inputs, loops))
    return results


def _pass_two_checks(prep, s) -> list[live_checks.CheckResult]:
    tr = prepare.trainable(prep, s)
    if prep.book:
        v1, v2 = book.SPEC_V1.build(), replace(book.SPEC_V2, seed=book.SEED_V1).build()
    else:
        v1, v2 = prepare.spec_trainable(s, "v1").build(), prepare.spec_trainable(s, "v2").build()
    return [
        live_checks.rows_sum_to_one(tr.attn_weights),
        live_checks.matches_sdpa(tr.queries, tr.keys, tr.values, tr.output, causal=False),
        live_checks.v1_equals_v2(v1, v2, prep.x[0]),
    ]


def _pass_three_checks(prep, s) -> list[live_checks.CheckResult]:
    tr = prepare.causal(prep, s)
    module = tr.spec.build().eval()
    x = torch.cat([prep.x, prep.x.flip(1)])  # a batch of two different sequences
    return [
        live_checks.rows_sum_to_one(tr.attn_weights),
        live_checks.masking_routes_agree(
            tracing.renormalized_weights(tr), tr.attn_weights, tr.scaled_scores
        ),
        live_checks.no_future_leak(module, prep.x),
        live_checks.matches_sdpa(tr.queries, tr.keys, tr.values, tr.output, causal=True),
        live_checks.eval_ignores_dropout(
            lambda m, inp: m(inp), lambda p: replace(tr.spec, dropout=p).build(), prep.x, 0.5
        ),
        live_checks.batch_rows_independent(module, x),
    ]


def _pass_four_checks(prep, s) -> list[live_checks.CheckResult]:
    tr = prepare.multihead(prep, s)
    mha = tr.spec.build().eval()
    heads = tr.queries_heads, tr.keys_heads, tr.values_heads
    return [
        live_checks.rows_sum_to_one(tr.attn_weights),
        live_checks.heads_equal_loop(
            tr.queries,
            tr.keys,
            tr.values,
            tr.context,
            mha.num_heads,
            tracing.causal_mask(tr).bool(),
        ),
        MC.wrapper_equals_split(mha, prep.x),
        live_checks.matches_sdpa(*heads, tr.context_heads, True),
        live_checks.matches_sdpa(
            *heads, torch.softmax(_scaled(*heads[:2]), dim=-1) @ heads[2], False
        ),
        MC.matches_torch_mha(mha, prep.x),
        MC.torch_mha_weights_match(mha, prep.x),
        live_checks.masking_routes_agree(
            tracing.renormalized_weights(tr), tr.attn_weights, tr.scaled_scores
        ),
        live_checks.no_future_leak(mha, prep.x),
    ]


def _all_checks(prep, s):
    return (
        _pass_one_checks(prep)
        + _pass_two_checks(prep, s)
        + _pass_three_checks(prep, s)
        + _pass_four_checks(prep, s)
    )


def _statuses(results):
    return {r.name: r.status for r in results if r.status != "pass"}, {r.name for r in results}


def test_every_check_passes_at_the_default_settings():
    s = Settings()
    prep = prepare.prepare(DEFAULT_TEXT, s)
    results = _all_checks(prep, s)
    for r in results:
        _assert_well_formed(r)
    not_passing, names = _statuses(results)
    # d_in = d_out at the defaults, so nn.MultiheadAttention holds the weights: nothing is n/a
    assert not_passing == {}
    assert names == {
        "rows_sum_to_one",
        "weights_are_softmax",
        "naive_softmax_matches",
        "loops_equal_matmul",
        "matches_sdpa",
        "v1_equals_v2",
        "masking_routes_agree",
        "no_future_leak",
        "eval_ignores_dropout",
        "batch_rows_independent",
        "heads_equal_loop",
        "wrapper_equals_split",
        "matches_torch_mha",
        "torch_mha_weights_match",
    }


def test_every_check_passes_in_book_mode():
    s = Settings(**BOOK)
    prep = prepare.prepare("", s, use_book=True)
    results = _all_checks(prep, s)
    for r in results:
        _assert_well_formed(r)
    assert _statuses(results)[0] == {  # d_in=3 != d_out=2
        "matches_torch_mha": "n/a",
        "torch_mha_weights_match": "n/a",
    }


def test_checks_pass_at_square_default_sizes_including_torch_mha():
    s = Settings(d_in=8, d_out=8, num_heads=4)
    prep = prepare.prepare(DEFAULT_TEXT, s)
    results = _pass_four_checks(prep, s)
    assert all(r.status == "pass" for r in results), [r.detail for r in results]


GPT2_TEXT = "The quick brown fox jumps over the lazy dog. " * 40


@pytest.fixture(scope="module")
def gpt2_results():
    """Every check of every pass at GPT-2 small with 256 tokens, computed once."""
    s = Settings(**GPT2_SMALL, max_tokens=256)
    prep = prepare.prepare(GPT2_TEXT, s)
    assert prep.num_tokens == 256 and prep.x.shape == (1, 256, 768)
    return {
        1: _pass_one_checks(prep),
        2: _pass_two_checks(prep, s),
        3: _pass_three_checks(prep, s),
        4: _pass_four_checks(prep, s),
    }


GPT2_EXPECTED = {
    1: [
        ("rows_sum_to_one", "pass"),
        ("weights_are_softmax", "pass"),
        ("naive_softmax_matches", "pass"),  # typed rows have |x|² near 1: no overflow
        ("loops_equal_matmul", "pass"),
    ],
    2: [("rows_sum_to_one", "pass"), ("matches_sdpa", "pass"), ("v1_equals_v2", "pass")],
    3: [
        ("rows_sum_to_one", "pass"),
        ("masking_routes_agree", "pass"),
        ("no_future_leak", "pass"),
        ("matches_sdpa", "pass"),
        ("eval_ignores_dropout", "pass"),
        ("batch_rows_independent", "pass"),
    ],
    4: [
        ("rows_sum_to_one", "pass"),
        ("heads_equal_loop", "pass"),
        ("wrapper_equals_split", "pass"),
        ("matches_sdpa", "pass"),
        ("matches_sdpa", "pass"),
        ("matches_torch_mha", "pass"),
        ("torch_mha_weights_match", "pass"),
        ("masking_routes_agree", "pass"),
        ("no_future_leak", "pass"),
    ],
}


@pytest.mark.parametrize("kind", [1, 2, 3, 4])
def test_every_check_of_every_pass_holds_at_gpt2_small_sizes_with_256_tokens(gpt2_results, kind):
    results = gpt2_results[kind]
    for r in results:
        _assert_well_formed(r)
    assert [(r.name, r.status) for r in results] == GPT2_EXPECTED[kind], [
        r.detail for r in results if r.status != "pass"
    ]


def test_gpt2_checks_cover_sdpa_single_and_multi_head_causal_and_not(gpt2_results):
    titles = {kind: [r.title for r in gpt2_results[kind]] for kind in gpt2_results}
    assert "Matches PyTorch SDPA (full)" in titles[2]
    assert "Matches PyTorch SDPA (causal)" in titles[3]
    assert {"Matches PyTorch SDPA (full)", "Matches PyTorch SDPA (causal)"} <= set(titles[4])


def test_gpt2_naive_softmax_agrees_because_typed_scores_stay_small(gpt2_results):
    # Typed rows have |x|² near 1 at every width, so X Xᵀ stays far below exp()'s overflow at
    # 88.7 even 768 wide (the overflow itself is tested on large scores below).
    naive = next(r for r in gpt2_results[1] if r.name == "naive_softmax_matches")
    assert naive.explanation == "with no overflow the two formulas agree"
    s = Settings(**GPT2_SMALL, max_tokens=256)
    x = prepare.prepare(GPT2_TEXT, s).x[0]
    assert float((x @ x.T).abs().max()) < 2.0 < live_checks.EXP_MAX_F32


def test_gpt2_tolerance_grows_with_the_width_and_reports_the_scale(gpt2_results):
    # Larger here than at book sizes, and the scale is reported beside the difference.
    torch_mha = next(r for r in gpt2_results[4] if r.name == "matches_torch_mha")
    assert torch_mha.tol >= live_checks.tolerance(1.0, 768) > live_checks.tolerance(1.0, 3)
    assert torch_mha.scale_is == live_checks.MHA_OUTPUT_SCALE
    assert (
        f"(sums of 768) × 1 ({live_checks.MHA_OUTPUT_SCALE} is {torch_mha.scale:.3g}"
        in torch_mha.detail
    )


# --- naive softmax ------------------------------------------------------------------------
def _book_scores():
    x = book_inputs()
    return x @ x.T


def test_naive_softmax_agrees_on_the_book_scores():
    result = live_checks.naive_softmax_matches(_book_scores())
    assert result.status == "pass"


def test_naive_softmax_overflow_is_documented():
    scores = _book_scores() * 100
    result = live_checks.naive_softmax_matches(scores)
    assert result.status == "documented"
    assert "naive overflowed: max score" in result.explanation
    assert f"{float(scores.max()):.4g}" in result.explanation
    overflowing_rows = int(torch.isinf(torch.exp(scores)).any(dim=-1).sum())
    assert overflowing_rows == 4  # rows 3 and 4 peak below 88.7 even at x100
    assert f"({overflowing_rows} rows affected)" in result.explanation
    assert result.ok


def test_naive_softmax_underflow_is_documented():
    scores = _book_scores() - 200
    result = live_checks.naive_softmax_matches(scores)
    assert result.status == "documented"
    assert "naive underflowed" in result.explanation
    assert result.max_diff is None


def test_a_single_overflowing_row_is_counted_alone():
    scores = _book_scores()
    scores[2] *= 100
    assert "(1 row affected)" in live_checks.naive_softmax_matches(scores).explanation


def test_naive_softmax_compares_the_rows_that_stayed_finite_beside_the_overflow():
    scores = _book_scores()
    scores[2] *= 100  # row 2 overflows; the other five stay finite
    result = live_checks.naive_softmax_matches(scores)
    assert result.status == "documented"
    assert result.max_diff is not None and result.tol is not None
    assert 0.0 <= result.max_diff <= result.tol
    finite = torch.ones(6, dtype=torch.bool)
    finite[2] = False
    naive = torch.exp(scores[finite]) / torch.exp(scores[finite]).sum(-1, keepdim=True)
    expected = float((naive.double() - torch.softmax(scores[finite], -1).double()).abs().max())
    assert result.max_diff == pytest.approx(expected)
    assert result.scale == pytest.approx(float(scores[finite].abs().max()))
    assert "naive overflowed: max score 147.5 > 88.7" in result.detail
    assert "(1 row affected); on the other 5 rows, where naive stayed finite, the two agree" in (
        result.detail
    )
    assert result.detail.startswith(f"largest |difference| {result.max_diff:.2e}")
    assert f"; tolerance {result.tol:.2e} = " in result.detail


def test_naive_softmax_fails_when_its_finite_rows_disagree():
    scores = _book_scores()
    scores[2] *= 100  # overflows
    scores[1] = torch.tensor([-102.5, -103.0, -103.5, -103.2, -102.8, -104.0])  # subnormal exp()
    result = live_checks.naive_softmax_matches(scores)
    assert result.status == "fail"
    assert result.max_diff > result.tol
    assert "naive overflowed" in result.explanation
    assert "on the 5 rows where naive stayed finite the two disagree" in result.explanation


def test_naive_softmax_counts_a_row_whose_sum_overflows_as_overflowed():
    # Each exp(88) is finite, but six of them add up past float32's largest number: the
    # naive weights are finite zeros, which are wrong too.
    scores = _book_scores()
    scores[0] = 88.0
    result = live_checks.naive_softmax_matches(scores)
    assert result.status == "documented"
    assert "add up past float32's largest number 3.4e+38" in result.explanation
    assert "(1 row affected)" in result.explanation
    assert result.max_diff <= result.tol


def test_naive_softmax_with_no_finite_row_says_so():
    result = live_checks.naive_softmax_matches(_book_scores() * 1000)
    assert result.status == "documented"
    assert result.max_diff is None
    assert "(6 rows affected, so no row is left to compare)" in result.explanation


# --- n/a results --------------------------------------------------------------------------
def test_torch_mha_is_not_applicable_when_d_in_differs_from_d_out():
    mha = tracing.ModuleSpec("mha", 16, 8, 32, 0.0, 2).build()
    result = MC.matches_torch_mha(mha, random_x((1, 5, 16), 0))
    assert result.status == "n/a"
    assert "needs d_in == d_out" in result.explanation
    assert "(here d_in=16, d_out=8)" in result.explanation
    assert live_checks.torch_mha_from(mha) is None


def test_torch_mha_matches_with_qkv_bias():
    mha = tracing.ModuleSpec("mha", 8, 8, 16, 0.0, 2, True, 5).build()
    assert MC.matches_torch_mha(mha, random_x((2, 7, 8), 1)).passed


def test_v1_equals_v2_is_not_applicable_with_qkv_bias():
    v1 = tracing.ModuleSpec("v1", 4, 3).build()
    v2 = tracing.ModuleSpec("v2", 4, 3, qkv_bias=True).build()
    result = live_checks.v1_equals_v2(v1, v2, random_x((5, 4), 0))
    assert result.status == "n/a"
    assert "qkv_bias=True" in result.explanation


def test_v1_equals_v2_leaves_the_callers_v1_untouched():
    v1 = tracing.ModuleSpec("v1", 4, 3, seed=1).build()
    v2 = tracing.ModuleSpec("v2", 4, 3, seed=2).build()
    before = {name: p.detach().clone() for name, p in v1.named_parameters()}
    x = random_x((5, 4), 0)
    assert live_checks.v1_equals_v2(v1, v2, x).passed
    for name, p in v1.named_parameters():
        assert torch.equal(p, before[name]), name
    # ... while the transferred copy computes v2's output
    torch.testing.assert_close(live_checks.transferred_v1(v1, v2)(x), v2(x))
    assert not torch.allclose(v1(x), v2(x))


def test_no_future_leak_needs_two_tokens():
    module = tracing.ModuleSpec("causal", 4, 4, 8).build().eval()
    result = live_checks.no_future_leak(module, random_x((1, 1, 4), 0))
    assert result.status == "n/a"
    assert "at least two tokens" in result.explanation


def test_eval_ignores_dropout_passes_with_zero_tolerance():
    spec = tracing.ModuleSpec("mha", 8, 8, 16, 0.5, 2, False, 3)
    result = live_checks.eval_ignores_dropout(
        lambda m, inp: m(inp),
        lambda p: replace(spec, dropout=p).build(),
        random_x((2, 6, 8), 0),
        0.5,
    )
    assert result.status == "pass"
    assert result.tol == 0.0 and result.max_diff == 0.0


# --- every check can fail -----------------------------------------------------------------
def test_checks_fail_on_wrong_numbers():
    scores = _book_scores()
    weights = torch.softmax(scores, dim=-1)
    x = book_inputs()
    assert live_checks.rows_sum_to_one(weights * 1.01).status == "fail"
    assert (
        live_checks.weights_are_softmax(scores, torch.softmax(scores * 2, dim=-1)).status == "fail"
    )
    assert live_checks.loops_equal_matmul(x, scores + 1e-3).status == "fail"
    masked = weights.tril()
    assert live_checks.masking_routes_agree(masked, weights, scores).status == "fail"
    q = k = v = x.unsqueeze(0)
    assert live_checks.matches_sdpa(q, k, v, v, causal=True).status == "fail"


def test_no_future_leak_fails_for_a_forward_that_sees_the_future():
    def leaky(inp):
        return inp.flip(-2).cumsum(-2).flip(-2)  # each output sums its own and later tokens

    result = live_checks.no_future_leak(leaky, random_x((1, 6, 3), 0))
    assert result.status == "fail"
    assert "see the future" in result.explanation


def test_eval_ignores_dropout_fails_when_dropout_stays_on():
    spec = tracing.ModuleSpec("causal", 8, 4, 16, 0.5, 1, False, 3)

    def always_training(module, inp):
        return module.train()(inp)

    result = live_checks.eval_ignores_dropout(
        always_training, lambda p: replace(spec, dropout=p).build(), random_x((1, 6, 8), 0), 0.5
    )
    assert result.status == "fail"
    assert result.max_diff > 0


def test_batch_rows_independent_fails_when_examples_mix():
    result = live_checks.batch_rows_independent(
        lambda inp: inp + inp.mean(0), random_x((2, 4, 3), 0)
    )
    assert result.status == "fail"


def test_heads_equal_loop_fails_for_merged_heads_in_the_wrong_order():
    tr = tracing.trace_multihead(
        tracing.ModuleSpec("mha", 8, 8, 16, 0.0, 2), random_x((1, 5, 8), 0), "abcde"
    )
    swapped = torch.cat([tr.context[..., 4:], tr.context[..., :4]], dim=-1)
    result = live_checks.heads_equal_loop(
        tr.queries, tr.keys, tr.values, swapped, 2, tracing.causal_mask(tr).bool()
    )
    assert result.status == "fail"


def test_different_shapes_fail_with_both_shapes_named():
    result = live_checks.rows_sum_to_one(torch.ones(3, 3) / 3)
    assert result.passed
    mismatch = live_checks.matches_sdpa(
        random_x((1, 4, 2), 0),
        random_x((1, 4, 2), 1),
        random_x((1, 4, 2), 2),
        random_x((1, 4, 3), 3),
        causal=False,
    )
    assert mismatch.status == "fail"
    assert mismatch.explanation == "shapes differ: (1, 4, 3) against (1, 4, 2)"
    assert mismatch.max_diff == math.inf


def test_masking_routes_document_an_underflowed_renormalize_row():
    scaled = torch.tensor([[0.0, 1000.0], [0.0, 0.0]])
    mask = torch.triu(torch.ones(2, 2), diagonal=1)
    route1 = M.renormalized_causal_weights(scaled, torch.eye(2), mask)  # scores = scaled / √2
    route2 = torch.softmax(scaled.masked_fill(mask.bool(), -torch.inf), dim=-1)
    assert torch.isnan(route1[0]).all()
    result = live_checks.masking_routes_agree(route1, route2, scaled)
    assert result.status == "documented"
    assert "1 row(s) of the renormalize route underflowed" in result.explanation


# --- tolerance ----------------------------------------------------------------------------
def test_tolerance_grows_with_scale_and_sum_length():
    eps = torch.finfo(torch.float32).eps
    assert live_checks.tolerance(1.0, 1) == pytest.approx(live_checks.TOL_FACTOR * eps)
    assert live_checks.tolerance(0.001, 1) == live_checks.tolerance(
        1.0, 1
    )  # small values use scale 1
    assert live_checks.tolerance(800.0, 1) == pytest.approx(800 * live_checks.tolerance(1.0, 1))
    assert live_checks.tolerance(1.0, 64) == pytest.approx(8 * live_checks.tolerance(1.0, 1))


def test_detail_names_the_tolerance_and_the_magnitudes_compared():
    result = live_checks.CheckResult(
        "n",
        "t",
        "pass",
        2.4e-4,
        1e-3,
        800.0,
        "float32 rounding",
        (("ours", 0.381), ("PyTorch's", 0.3814)),
        "the largest |score|",
        64,
    )
    assert result.detail == (
        "largest |difference| 2.40e-04; tolerance 1.00e-03 = 16 float32 eps × √64 (sums of 64) "
        "× 800, the largest |score|; compared: ours max |value| 0.381, PyTorch's max |value| "
        "0.381: float32 rounding"
    )
    small = live_checks.CheckResult(
        "n", "t", "pass", 0.0, 1e-6, 0.0971, "e", (), "the largest |score|"
    )
    assert "× 1 (the largest |score| is 0.0971; the scale is at least 1)" in small.detail
    exact = live_checks.CheckResult("n", "t", "pass", 0.0, 0.0, 6.0, "e", (("a", 1.0), ("b", 1.0)))
    assert "tolerance 0.00e+00 (exactly equal" in exact.detail
    assert live_checks.CheckResult("n", "t", "n/a", None, None, None, "why").detail == "why"
