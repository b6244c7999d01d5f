"""The classic attention bugs: one line each, and each one caught by its named check."""

from __future__ import annotations

import inspect
import math
from dataclasses import replace

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from attnviz.core import trace as tracing
from attnviz.core.inputs import BOOK_TEXT, book_inputs, row_scale
from attnviz.core.settings import BOOK, GPT2_SMALL, Settings
from attnviz.teach import bugs, prepare
from attnviz.teach import checks as live_checks

from .helpers import labels, random_x, typed_batch

# A setting where every bug shows: two heads, dropout, six tokens in a context of 32.
SHOWING = Settings(d_in=16, d_out=8, num_heads=2, context_length=32, dropout=0.5)
X_BATCH = typed_batch(16, n=6)  # two different six-token texts


def _spec(pass_kind: str, s: Settings = SHOWING):
    return {
        "simplified": None,
        "trainable": prepare.spec_trainable(s),
        "causal": prepare.spec_causal(s),
        "multihead": prepare.spec_multihead(s),
    }[pass_kind]


def _x(pass_kind: str, batch: torch.Tensor = X_BATCH):
    if pass_kind == "simplified":
        # Pass 1 runs on the book's inputs. (With d_in=16 embeddings X Xᵀ is so
        # diagonal-dominant that softmax over either axis is close to the identity.)
        return book_inputs()
    if pass_kind == "trainable":
        return batch[0]
    return batch


# --- the correct forward is the engine's own --------------------------------------------------
def test_run_pass_simplified_equals_the_simplified_trace():
    x = typed_batch(8, n=6)[0]
    out = bugs.run_pass(bugs.forward_of(None, "simplified"), None, x)
    tr = tracing.trace_simplified(x, labels(6))
    assert torch.equal(out.output, tr.context)
    assert torch.equal(out.attn_weights, tr.attn_weights)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_run_pass_trainable_equals_the_modules_forward(version):
    module = prepare.spec_trainable(SHOWING, version).build()
    x = X_BATCH[0]
    assert torch.equal(
        bugs.run_pass(bugs.forward_of(None, "trainable"), module, x).output, module(x)
    )


@pytest.mark.parametrize(
    ("kind", "spec_of"), [("causal", prepare.spec_causal), ("multihead", prepare.spec_multihead)]
)
def test_run_pass_equals_the_modules_forward_bit_for_bit(kind, spec_of):
    module = spec_of(SHOWING).build().eval()
    out = bugs.run_pass(bugs.forward_of(None, kind), module, X_BATCH)
    assert torch.equal(out.output, module(X_BATCH))
    # ... and the intermediate weights equal the trace's.
    tr = (tracing.trace_causal if kind == "causal" else tracing.trace_multihead)(
        spec_of(SHOWING), X_BATCH, labels(6)
    )
    assert torch.equal(out.attn_weights, tr.attn_weights)


def test_the_renormalize_route_matches_the_minus_infinity_route():
    module = prepare.spec_causal(SHOWING).build().eval()
    routed = bugs._route1(bugs.M.renormalized_causal_weights)(module, X_BATCH)
    assert torch.allclose(routed, module(X_BATCH), atol=1e-6)


def test_forward_of_refuses_an_unknown_pass():
    with pytest.raises(ValueError, match="recurrent"):
        bugs.forward_of(None, "recurrent")


@pytest.mark.parametrize("bug", bugs.BUGS, ids=lambda b: b.key)
def test_a_bug_edits_the_engines_own_code_and_nothing_else(bug):
    correct = getattr(bugs.M, bug.target())
    buggy = bug.compiled()
    assert buggy is not correct and buggy.__name__ == correct.__name__
    assert bug.compiled() is buggy  # compiled once
    # The correct code is untouched: the module still computes what it did.
    if inspect.isclass(correct):
        assert correct.forward is not buggy.forward


def test_a_line_that_is_not_in_the_code_is_refused():
    bug = replace(bugs.BUGS_BY_KEY["mask_with_zero"], line="attn_scores = 0")
    with pytest.raises(ValueError, match="occurs 0 times"):
        bug.diff()


def test_the_trainable_bug_edits_the_version_the_page_runs():
    bug = bugs.BUGS_BY_KEY["no_scaling"]
    assert bug.target(prepare.spec_trainable(SHOWING, "v1")) == "SelfAttention_v1"
    assert bug.target(prepare.spec_trainable(SHOWING, "v2")) == "SelfAttention_v2"
    outcome = bugs.run_bug(bug, X_BATCH[0], prepare.spec_trainable(SHOWING, "v1"))
    assert outcome.check.status == "fail"


# --- the diffs ----------------------------------------------------------------------------
@pytest.mark.parametrize("bug", bugs.BUGS, ids=lambda b: b.key)
def test_each_bug_is_exactly_one_changed_line(bug):
    diff = bug.diff()
    lines = diff.splitlines()
    assert lines[:2] == ["--- bug", "+++ fix"]
    removed = [ln for ln in lines[2:] if ln.startswith("-")]
    added = [ln for ln in lines[2:] if ln.startswith("+")]
    assert len(removed) == 1 and len(added) == 1, diff
    assert removed[0] != "-" + added[0][1:]


def test_the_wrong_axis_diff_shows_the_axis():
    lines = bugs.BUGS_BY_KEY["softmax_wrong_axis"].diff().splitlines()[2:]
    removed = [ln[1:] for ln in lines if ln.startswith("-")]
    added = [ln[1:] for ln in lines if ln.startswith("+")]
    assert "dim=-2" in removed[0] and "dim=-1" in added[0]


@pytest.mark.parametrize("bug", bugs.BUGS, ids=lambda b: b.key)
def test_each_diff_goes_from_the_bug_to_the_fix(bug):
    """st.code draws a diff's removed line red and its added line green: the bug's line is the
    removed one, the engine's (the fix) the added one (issue 36: they were the other way)."""
    lines = bug.diff().splitlines()[2:]
    (removed,) = [ln[1:].strip() for ln in lines if ln.startswith("-")]
    (added,) = [ln[1:].strip() for ln in lines if ln.startswith("+")]
    assert removed == bug.replacement
    assert added.split("  #")[0].strip() == bug.line


def test_each_bug_edits_a_real_line_and_names_a_real_check():
    for bug in bugs.BUGS:
        assert bug.target() in bugs.TARGETS.values(), bug.key
        assert bug.diff().count("\n-") == 1, bug.key
        assert callable(getattr(live_checks, bug.check)), bug.key
        assert bug.pass_kind in ("simplified", "trainable", "causal", "multihead")
    assert len(bugs.BUGS_BY_KEY) == len(bugs.BUGS)


def test_bugs_for_partitions_the_bugs_by_pass():
    by_pass = [
        b
        for kind in ("simplified", "trainable", "causal", "multihead")
        for b in bugs.bugs_for(kind)
    ]
    assert sorted(b.key for b in by_pass) == sorted(b.key for b in bugs.BUGS)


# --- mutation test: every bug is caught -----------------------------------------------------
@pytest.mark.parametrize("bug", bugs.BUGS, ids=lambda b: b.key)
def test_every_bug_fails_its_check_or_raises(bug):
    x, spec = _x(bug.pass_kind), _spec(bug.pass_kind)
    assert bug.hidden_reason(6, SHOWING.num_heads, SHOWING.head_dim, 0.5, 32) is None
    outcome = bugs.run_bug(bug, x, spec)
    assert outcome.bug is bug
    if not bug.raises:
        assert outcome.error is None
        assert outcome.check is not None
        assert outcome.check.name == bug.check
        assert outcome.check.status == "fail", outcome.check.detail
        assert outcome.wrong is not None
        assert not torch.equal(outcome.wrong.output, outcome.right.output)
    else:
        assert outcome.check is None
        assert outcome.error
        assert outcome.why
        assert outcome.wrong is None
    assert outcome.right.output.shape[-2] == x.shape[-2]


def test_unsliced_mask_raises_the_exact_shape_error():
    bug = bugs.BUGS_BY_KEY["unsliced_mask"]
    outcome = bugs.run_bug(bug, X_BATCH, _spec("causal"))
    assert outcome.error == (
        "The size of tensor a (6) must match the size of tensor b (32) at non-singleton dimension 2"
    )
    assert "(32, 32)" in outcome.why
    assert "(2, 6, 6)" in outcome.why
    assert "32 ≠ 6" in outcome.why


def test_global_transpose_raises_and_explains_the_reversed_dims():
    bug = bugs.BUGS_BY_KEY["global_transpose"]
    outcome = bugs.run_bug(bug, X_BATCH, _spec("causal"))
    assert outcome.error and "must match" in outcome.error
    assert "keys (2, 6, 8)" in outcome.why
    assert "(8, 6, 2)" in outcome.why


@pytest.mark.parametrize("bug", bugs.BUGS, ids=lambda b: b.key)
def test_the_named_check_passes_on_the_correct_code(bug):
    result = bugs.correct_check(bug, _x(bug.pass_kind), _spec(bug.pass_kind))
    assert result.name == bug.check
    assert result.status == "pass", result.detail


def test_the_check_names_the_size_of_the_damage():
    outcome = bugs.run_bug(bugs.BUGS_BY_KEY["mask_with_zero"], X_BATCH, _spec("causal"))
    assert outcome.check.max_diff > 1e3 * outcome.check.tol
    assert "see the future" in outcome.check.explanation


# --- hidden bugs --------------------------------------------------------------------------
def test_split_without_transpose_is_hidden_with_one_head():
    bug = bugs.BUGS_BY_KEY["split_without_transpose"]
    reason = bug.hidden_reason(6, 1, 8, 0.5, 32)
    assert reason == "invisible with num_heads=1: raise num_heads to 2 or more"
    one_head = SHOWING.with_changes(num_heads=1)
    outcome = bugs.run_bug(bug, X_BATCH, _spec("multihead", one_head))
    assert outcome.check.status == "pass"  # really invisible there


def test_scale_by_d_out_is_hidden_with_one_head():
    bug = bugs.BUGS_BY_KEY["scale_by_d_out"]
    assert "num_heads=1" in bug.hidden_reason(6, 1, 8, 0.0, 32)
    outcome = bugs.run_bug(bug, X_BATCH, _spec("multihead", SHOWING.with_changes(num_heads=1)))
    assert outcome.check.status == "pass"


def test_no_scaling_is_hidden_with_a_key_width_of_one():
    bug = bugs.BUGS_BY_KEY["no_scaling"]
    reason = bug.hidden_reason(6, 1, 1, 0.0, 32)
    assert "√1 = 1" in reason and "raise d_out" in reason
    narrow = SHOWING.with_changes(d_out=1, num_heads=1)
    outcome = bugs.run_bug(bug, X_BATCH[0], _spec("trainable", narrow))
    assert outcome.check.status == "pass"


@pytest.mark.parametrize(
    "key",
    [
        "softmax_wrong_axis",
        "divide_by_sum",
        "no_scaling",
        "mask_with_zero",
        "renormalize_without_mask",
    ],
)
def test_bugs_needing_two_tokens_are_hidden_with_one(key):
    bug = bugs.BUGS_BY_KEY[key]
    reason = bug.hidden_reason(1, 2, 4, 0.5, 32)
    assert reason == "invisible with 1 token: type a text with at least 2 tokens"
    outcome = bugs.run_bug(bug, _x(bug.pass_kind)[..., :1, :], _spec(bug.pass_kind))
    assert outcome.error is None
    assert outcome.check.status in ("pass", "n/a"), outcome.check.detail


def test_dropout_in_eval_is_hidden_with_dropout_zero():
    bug = bugs.BUGS_BY_KEY["dropout_in_eval"]
    assert bug.hidden_reason(6, 2, 4, 0.0, 32) == "invisible with dropout=0: raise dropout above 0"
    assert bug.hidden_reason(1, 2, 4, 0.5, 32) is None  # one token still shows it
    outcome = bugs.run_bug(bug, X_BATCH, _spec("causal", SHOWING.with_changes(dropout=0.0)))
    assert outcome.check.status == "pass"


def test_unsliced_mask_is_hidden_and_does_not_raise_when_the_text_fills_the_context():
    bug = bugs.BUGS_BY_KEY["unsliced_mask"]
    reason = bug.hidden_reason(6, 2, 4, 0.5, 6)
    assert "T = context_length = 6" in reason
    assert "raise context_length above 6" in reason
    outcome = bugs.run_bug(bug, X_BATCH, _spec("causal", SHOWING.with_changes(context_length=6)))
    assert outcome.error is None
    assert outcome.check.status == "pass"
    assert torch.equal(outcome.wrong.output, outcome.right.output)


def test_hidden_reason_is_none_when_the_bug_shows():
    for bug in bugs.BUGS:
        assert bug.hidden_reason(6, 2, 4, 0.5, 32) is None, bug.key


def test_bug_settings_agree_with_what_the_pages_pass_to_hidden_reason():
    s = Settings(d_in=12, d_out=6, num_heads=3, context_length=20, dropout=0.3)
    x2, x3 = typed_batch(12, n=5)[0], typed_batch(12, n=5)
    by_key = {bug.pass_kind: bug for bug in bugs.BUGS}
    # pages/1: (n, 1, d_in, 0.0, n); 2: (n, 1, d_out, 0.0, n); 3: (n, 1, d_out, dropout, ctx);
    # 4: (n, H, head_dim, dropout, ctx)
    assert by_key["simplified"].settings_of(x2, None) == (5, 1, 12, 0.0, 5)
    assert by_key["trainable"].settings_of(x2, prepare.spec_trainable(s)) == (5, 1, 6, 0.0, 5)
    assert by_key["causal"].settings_of(x3, prepare.spec_causal(s)) == (5, 1, 6, 0.3, 20)
    assert by_key["multihead"].settings_of(x3, prepare.spec_multihead(s)) == (5, 3, 2, 0.3, 20)


# --- the global transpose where it does not raise (batch = T = d_out) ----------------------
def test_global_transpose_at_batch_equals_tokens_equals_d_out_fails_its_check():
    # The audit's crash: two 2-token texts, d_out = 2. The buggy batch runs; each example
    # alone (batch size 1) does not. The check must fail and say so, not raise.
    s = Settings(d_out=2, num_heads=1)
    batch = prepare.prepare_batch("Hello world", "Good night", s)
    tr = prepare.causal_batch(batch, s)
    assert tuple(tr.inputs.shape[:2]) == (2, 2)
    bug = bugs.BUGS_BY_KEY["global_transpose"]
    outcome = bugs.run_bug(bug, tr.inputs, tr.spec)
    assert outcome.error is None and outcome.why is None
    assert outcome.wrong is not None
    assert not torch.equal(outcome.wrong.output, outcome.right.output)
    check = outcome.check
    assert (check.name, check.status) == ("batch_rows_independent", "fail")
    assert "example 0 alone (batch size 1) raises RuntimeError" in check.explanation
    assert "doesn't match the broadcast shape" in check.explanation
    assert check.detail == check.explanation  # no numbers to show: the run alone raised
    assert bugs.correct_check(bug, tr.inputs, tr.spec).status == "pass"


@pytest.mark.parametrize("n", [3, 4])
def test_global_transpose_with_batch_tokens_and_d_out_equal_fails_for_larger_sizes(n):
    x = torch.randn(n, n, 5, generator=torch.Generator().manual_seed(n))
    spec = prepare.spec_causal(Settings(d_in=5, d_out=n, num_heads=1, context_length=8))
    outcome = bugs.run_bug(bugs.BUGS_BY_KEY["global_transpose"], x, spec)
    assert outcome.error is None
    assert outcome.check.status == "fail", outcome.check.detail


@pytest.mark.draws_global_rng  # builds a module the book's way, unseeded
def test_global_transpose_explains_the_step_that_actually_breaks():
    bug = bugs.BUGS_BY_KEY["global_transpose"]

    def why(b, n, d):
        spec = prepare.spec_causal(Settings(d_in=3, d_out=d, num_heads=1, context_length=8))
        outcome = bugs.run_bug(bug, torch.randn(b, n, 3), spec)
        assert outcome.error, (b, n, d)
        return outcome.why

    # One example, T = d_out: the matmul runs, the in-place mask does not fit.
    text = why(1, 3, 3)
    assert "The matmul runs, but gives scores (3, 3, 1) instead of (1, 3, 3)" in text
    assert "masked_fill_ fails" in text
    # Inner sizes clash, batch sizes broadcast: only the clash is named.
    text = why(2, 6, 2)
    assert "matching inner sizes (2 against 6)" in text and "batch sizes" not in text
    # Batch sizes clash only.
    text = why(3, 2, 2)
    assert "batch sizes that broadcast (3 against 2)" in text and "inner" not in text
    # One token, d_out = 1, two examples: the second matmul fails.
    text = why(2, 1, 1)
    assert "weights @ values (2, 1, 1) needs matching inner sizes (2 against 1)" in text


# --- no bug evaluation raises, at any valid small settings ------------------------------------
STATUSES = {"pass", "fail", "documented", "n/a"}


@st.composite
def bug_cases(draw):
    n = draw(st.integers(1, 5))
    heads = draw(st.integers(1, 3))
    s = Settings(
        d_in=draw(st.integers(1, 6)),
        d_out=heads * draw(st.integers(1, 3)),
        num_heads=heads,
        context_length=n + draw(st.integers(0, 3)),
        dropout=draw(st.sampled_from([0.0, 0.3])),
        qkv_bias=draw(st.booleans()),
        seed_weights=draw(st.integers(0, 2**31 - 1)),
    )
    b = draw(st.integers(1, 3))
    scale = draw(st.sampled_from([0.0, 1.0, 40.0]))  # zeros, ordinary, saturating
    return s, b, n, scale, draw(st.integers(0, 2**31 - 1))


def _evaluate_every_bug(s, b, n, scale, seed):
    x = random_x((b, n, s.d_in), seed) * scale
    specs = {
        "simplified": None,
        "trainable": prepare.spec_trainable(s),
        "causal": prepare.spec_causal(s),
        "multihead": prepare.spec_multihead(s),
    }
    for bug in bugs.BUGS:
        inputs = x[0] if bug.pass_kind in ("simplified", "trainable") else x
        spec = specs[bug.pass_kind]
        hidden = bug.hidden_at(inputs, spec)
        assert hidden is None or isinstance(hidden, str)
        outcome = bugs.run_bug(bug, inputs, spec)
        right = bugs.correct_check(bug, inputs, spec)
        assert right.name == bug.check and right.ok, (bug.key, right.detail)
        assert isinstance(right.detail, str)
        if outcome.error is not None:
            assert bug.raises, (bug.key, outcome.error)  # only the documented raisers raise
            assert outcome.check is None and outcome.wrong is None
            assert outcome.why and isinstance(outcome.why, str)
            continue
        check = outcome.check
        assert check.name == bug.check and check.status in STATUSES
        assert isinstance(check.detail, str) and check.explanation
        if hidden is None:
            # Not hidden by the settings: caught, or the numbers hide it and it says so.
            assert check.status in ("fail", "documented"), (bug.key, check.detail)
        if check.status == "documented":
            assert "cannot see it at these numbers" in check.explanation


@settings(max_examples=60, deadline=None)
@given(bug_cases())
@example((Settings(d_out=2, num_heads=1), 2, 2, 1.0, 0))  # batch = T = d_out
@example((Settings(d_in=3, d_out=3, num_heads=1, context_length=3), 3, 3, 1.0, 1))
@example((Settings(d_in=1, d_out=1, num_heads=1, context_length=1), 1, 1, 1.0, 2))
def test_no_bug_evaluation_raises_at_any_small_valid_setting(case):
    _evaluate_every_bug(*case)


# --- each bug shows, or says why not, at the default, book and GPT-2 x 256-token settings -------
DEFAULT_TEXT2 = "Every effort moves you forward"  # the sidebar's second text (ui/state.py)
LONG_A = "The quick brown fox jumps over the lazy dog. " * 40
LONG_B = "Every effort moves you forward, one step at a time. " * 40


def _page_inputs(name):
    """Each pass's input and module as its page builds them: (settings, {kind: (x, spec)})."""
    if name == "default":
        s, text, text2, book = Settings(), BOOK_TEXT, DEFAULT_TEXT2, False
    elif name == "book":
        s, text, text2, book = Settings(**BOOK), "", "", True
    else:
        s, text, text2, book = Settings(**GPT2_SMALL, max_tokens=256), LONG_A, LONG_B, False
    prep = prepare.prepare(text, s, use_book=book)
    traces = {
        "simplified": prepare.simplified(prep),
        "trainable": prepare.trainable(prep, s),
        "causal": prepare.causal_batch(prepare.prepare_batch(text, text2, s, book), s, book),
        "multihead": prepare.multihead(prep, s),
    }
    if name == "gpt2":
        assert traces["causal"].inputs.shape == (2, 256, 768)
        assert traces["multihead"].inputs.shape == (1, 256, 768)
    return {
        kind: (tr.inputs, None if kind == "simplified" else tr.spec) for kind, tr in traces.items()
    }


@pytest.fixture(scope="module")
def page_outcomes():
    """(hidden reason, outcome) of every bug at each named setting, computed once."""
    results = {}
    for name in ("default", "book", "gpt2"):
        inputs = _page_inputs(name)
        for bug in bugs.BUGS:
            x, spec = inputs[bug.pass_kind]
            results[name, bug.key] = (bug.hidden_at(x, spec), bugs.run_bug(bug, x, spec))
    return results


@pytest.mark.parametrize("name", ["default", "book", "gpt2"])
@pytest.mark.parametrize("bug", bugs.BUGS, ids=lambda b: b.key)
def test_each_bug_is_caught_or_says_why_not(page_outcomes, name, bug):
    hidden, outcome = page_outcomes[name, bug.key]
    if hidden is not None:  # the page shows this reason as a warning beside the bug
        assert hidden.startswith(("invisible", "usually invisible")), hidden
        return
    if outcome.error is not None:
        assert bug.raises and outcome.why
        return
    assert outcome.check.status == "fail", outcome.check.detail


def test_the_settings_that_hide_a_bug_at_the_named_settings_are_the_expected_ones(page_outcomes):
    hidden = {key: reason for key, (reason, _) in page_outcomes.items() if reason}
    assert set(hidden) == {
        ("book", "unsliced_mask"),  # T = context_length = 6
        ("book", "dropout_in_eval"),  # dropout 0
    }
    # Typed rows keep |x|² near 1 at every width, so d_in = 768 no longer hides the wrong axis.
    _, outcome = page_outcomes["gpt2", "softmax_wrong_axis"]
    assert outcome.check.status == "fail"


# --- the wrong axis and wide inputs ---------------------------------------------------------
def test_wrong_axis_is_hidden_by_no_width_only_by_a_single_token():
    bug = bugs.BUGS_BY_KEY["softmax_wrong_axis"]
    for d_in in (8, 16, 32, 768, 1600):
        assert bug.hidden_reason(6, 1, d_in, 0.0, 6) is None, d_in
    assert bug.hidden_reason(1, 1, 8, 0.0, 1).startswith("invisible with 1 token")
    assert bugs.run_bug(bug, book_inputs()).check.status == "fail"


def _wrong_axis_caught(d_in: int) -> float:
    """The share of sample texts and seeds on which the wrong axis fails its check."""
    bug = bugs.BUGS_BY_KEY["softmax_wrong_axis"]
    texts = (BOOK_TEXT, DEFAULT_TEXT2, "Hello world", "The cat sat on the mat.")
    runs = [
        bugs.run_bug(
            bug, prepare.prepare(text, Settings(d_in=d_in, seed_embed=seed)).x[0]
        ).check.status
        for text in texts
        for seed in range(5)
    ]
    return runs.count("fail") / len(runs)


def test_wrong_axis_is_caught_on_every_sample_text_and_seed_at_every_width():
    # Typed rows have |x|² near 1 whatever d_in is (attnviz.core.inputs.row_scale): X Xᵀ stays far
    # from diagonal, so the column softmax never passes for the row softmax.
    for d_in in (2, 8, 64, 768):
        assert _wrong_axis_caught(d_in) == 1.0, d_in


def test_wrong_axis_hidden_by_the_numbers_is_documented_not_a_green_pass():
    # Unit-variance rows (the app's embeddings before issue 14: the typed rows at d_in = 16
    # divided by their scale): X Xᵀ is diagonal enough that the buggy rows still sum to 1
    # within float32 rounding. The settings do not hide it, so the check must not pass
    # silently on buggy code.
    bug = bugs.BUGS_BY_KEY["softmax_wrong_axis"]
    x = prepare.prepare("Hello world", Settings(d_in=16)).x[0] / row_scale(16)
    assert bug.hidden_at(x) is None
    check = bugs.run_bug(bug, x).check
    assert check.status == "documented"
    assert check.max_diff <= check.tol
    assert "the bug is in the code but this check cannot see it at these numbers" in check.detail
    assert "exceeds its best score with another token by at least 21.3" in check.detail
    assert "A smaller d_in, a longer text or the book's inputs show it" in check.detail
    assert bugs.correct_check(bug, x).status == "pass"


def test_a_bug_hidden_by_the_settings_still_passes_plainly():
    bug = bugs.BUGS_BY_KEY["split_without_transpose"]
    outcome = bugs.run_bug(bug, X_BATCH, _spec("multihead", SHOWING.with_changes(num_heads=1)))
    assert outcome.check.status == "pass"
    assert torch.equal(outcome.wrong.output, outcome.right.output)


def test_a_check_that_cannot_run_on_the_buggy_code_fails_and_says_why():
    result = live_checks.CheckResult(
        "no_future_leak", "No future leak", "fail", None, None, None, "why"
    )
    assert result.detail == "why"
    shapes = live_checks.CheckResult("x", "X", "fail", math.inf, None, None, "shapes differ")
    assert shapes.detail == "largest |difference| inf: shapes differ"
