"""Page 4's lesson object: every sentence it states about the numbers holds for the panels it
draws, in every mode and at every size; in training mode the weights drawn are the ones the
context used (Z = A·V on the panels); the speed sentences follow the measured numbers."""

from __future__ import annotations

import pytest
import torch

from attnviz import figures
from attnviz.core import book
from attnviz.core.settings import GPT2_SMALL, Settings, mha_parameter_count
from attnviz.core.tokens import tokenize
from attnviz.teach import prepare as lesson
from attnviz.teach.lessons import multihead as ML
from tests.support.specs import as_figure, words_of

DEFAULT_TEXT = "Your journey starts with one step"
GPT2 = Settings(
    d_in=GPT2_SMALL["d_in"],
    d_out=GPT2_SMALL["d_out"],
    num_heads=GPT2_SMALL["num_heads"],
    context_length=GPT2_SMALL["context_length"],
)


def text_of(tokens: int) -> str:
    sentence = "The quick brown fox jumps over the lazy dog while the cat sleeps. "
    text = b"".join(tokenize(sentence * 10, cap=tokens).pieces).decode("utf-8")
    assert len(tokenize(text)) == tokens
    return text


# (settings, book, text): the defaults, GPT-2 small (64 tokens keep it quick), the book.
SIZES = {
    "default": (Settings(), False, DEFAULT_TEXT),
    "gpt2-small": (GPT2, False, None),
    "book": (Settings(), True, ""),
}
MODES = {"normal": {}, "training": {"training": True, "dropout": 0.5}}
CASES = [(size, mode) for size in SIZES for mode in MODES]


def traces(size: str, mode: str):
    s, use_book, text = SIZES[size]
    s = s.with_changes(**MODES[mode])
    prep = lesson.prepare(text if text is not None else text_of(64), s, use_book)
    prep, _ = lesson.within_context(prep, book.CONTEXT_LENGTH if use_book else s.context_length)
    trace = lesson.multihead(prep, s)
    wrapper = lesson.wrapper(prep, s) if use_book else None
    return s, use_book, trace, wrapper


@pytest.fixture(scope="module")
def built():
    """Every case's (trace, lesson, head views), built once for this module."""
    out = {}
    for size, mode in CASES:
        s, use_book, trace, wrapper = traces(size, mode)
        view = ML.build(trace, wrapper, use_book)
        heads = [ML.head_view(trace, h) for h in range(trace.num_heads)]
        out[size, mode] = (trace, view, heads)
    return out


def assert_labels_fit(panels) -> None:
    for key, panel in panels.items():
        assert panel.key == key
        assert panel.shape[-2:] == (len(panel.rows), len(panel.cols)), key


@pytest.mark.parametrize(("size", "mode"), CASES)
def test_every_claim_holds_and_every_panel_has_the_shape_its_labels_say(built, size, mode):
    trace, view, heads = built[size, mode]
    n, H = trace.num_tokens, trace.num_heads
    assert view.claims and all(c.holds(view.panels) for c in view.claims), [
        c.text for c in view.claims if not c.holds(view.panels)
    ]
    assert_labels_fit(view.panels)
    assert view.grid.shape == (H, n, n)
    for h, head in enumerate(heads):
        assert head.head == h
        assert head.claims and all(c.holds(head.panels) for c in head.claims)
        assert_labels_fit(head.panels)
        assert head.panels["p4_weights"].shape == (n, n)
        assert head.panels["p4_context"].shape == (n, trace.head_dim)
        assert head.product.status == "pass", head.product.detail


@pytest.mark.parametrize(("size", "mode"), CASES)
def test_the_context_drawn_is_the_weights_drawn_times_v(built, size, mode):
    trace, view, heads = built[size, mode]
    for h, head in enumerate(heads):
        weights = head.panels["p4_weights"].values
        values = head.panels["p4_values_heads"].values
        context = head.panels["p4_context"].values
        torch.testing.assert_close(weights @ values, context, rtol=1e-5, atol=1e-5)
        # the grid draws the same weights as the head in detail
        torch.testing.assert_close(view.grid.values[h], weights, rtol=0, atol=0)


@pytest.mark.parametrize("size", ["default", "gpt2-small"])
def test_training_mode_draws_the_weights_after_dropout_and_says_so(built, size):
    trace, view, heads = built[size, "training"]
    grid = view.grid.values
    assert torch.equal(grid, trace.weights_dropped[0])
    assert not torch.equal(grid, trace.attn_weights[0])
    sums = grid.sum(dim=-1)
    assert ((sums - 1).abs() > 1e-3).any()  # where dropout struck, rows no longer sum to 1
    assert float(grid.max()) > 1.0 and as_figure(view.grid).layout.coloraxis.cmax == 2.0
    assert "after dropout" in words_of(view.grid)
    (rows,) = [c for c in view.claims if c.prop == "some_row_sum_differs"]
    assert rows.text.startswith("All heads: ") and "no longer sum to 1 after dropout" in rows.text
    assert view.weights_note.startswith("Training mode, dropout p = 0.5: these are the weights")
    assert "1/(1−0.5) = 2" in view.weights_note
    assert view.checks_note and "eval mode" in view.checks_note
    head = heads[0]
    before = head.panels["p4_weights_before"].values
    torch.testing.assert_close(before.sum(dim=-1), torch.ones(trace.num_tokens))
    assert figures.title_of(head.panels["p4_weights"].figure) == (
        "Weights of head 0 after dropout (what the context used)"
    )


def test_the_product_check_fails_when_the_weights_shown_are_not_the_ones_used(built):
    """The check behind "Z = A·V on screen" can fail: the weights before dropout do not give
    the training-mode context."""
    trace, _, _ = built["default", "training"]
    h = 0
    wrong = ML.context_check(
        trace.attn_weights[0, h], trace.values_heads[0, h], trace.context_heads[0, h]
    )
    assert wrong.status == "fail" and wrong.max_diff > 1e-2


@pytest.mark.parametrize("size", ["default", "gpt2-small", "book"])
def test_eval_mode_claims_say_rows_sum_to_one(built, size):
    _, view, heads = built[size, "normal"]
    props = {c.prop for c in view.claims}
    # the rows, then the heads (attnviz/teach/lessons/heads.py): do they differ, how even are they
    # (a "within" bound is a causal_near_even claim; a "far from" one names the largest gap)
    spread = props & {"causal_near_even", "largest_gap_to_even_near"}
    assert len(spread) == 1
    about_heads = {"largest_head_distance_near"} | spread
    assert props == {"rows_sum_to_one", "future_is_zero"} | about_heads
    assert "p4_weights_before" not in heads[0].panels
    assert view.checks_note is None


def test_no_check_is_not_applicable_at_the_defaults(built):
    trace, view, _ = built["default", "normal"]
    assert trace.spec.d_in == trace.spec.d_out == 8
    assert [(c.title, c.status) for c in view.checks] == [
        ("Rows sum to 1", "pass"),
        ("Batched heads = loop over heads", "pass"),
        ("Matches PyTorch SDPA (causal)", "pass"),
        ("Matches torch.nn.MultiheadAttention", "pass"),
        ("No future leak", "pass"),
    ]
    assert view.equivalence.status == "pass"


def test_book_mode_ignores_training_and_names_the_chapters_call(built):
    trace, view, _ = built["book", "training"]
    assert not trace.training
    assert view.weights_note.startswith("Book mode: the chapter's MultiHeadAttention(d_in=3, ")
    assert "sidebar" not in view.weights_note
    assert [title for title, _, _ in view.book_printouts] == [
        "MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2): context_vecs[0]",
        "MultiHeadAttention(3, 2, 6, 0.0, num_heads=2): context_vecs[0]",
    ]
    assert all(book.matches_printout(ours, name)[0] for _, ours, name in view.book_printouts)


def test_the_bugs_hidden_at_these_settings_come_from_the_bug_registry(built):
    trace, view, _ = built["default", "normal"]
    assert view.hidden == {"scale_by_d_out": None, "split_without_transpose": None}
    one = Settings(num_heads=1)
    prep = lesson.prepare(DEFAULT_TEXT, one)
    hidden = ML.build(lesson.multihead(prep, one), None, False).hidden
    assert hidden["scale_by_d_out"].startswith("invisible with num_heads=1")


# --- parameters ---------------------------------------------------------------------------------
def test_gpt2_small_counts_124m_from_its_configuration():
    parts = ML.gpt2_parameters()
    assert parts["token embedding"] == 50_257 * 768
    assert parts["position embedding"] == 1024 * 768
    assert parts["total"] == 124_439_808
    assert mha_parameter_count(768, 768) == book.EXERCISE_3_3_PARAMETERS == 2_360_064


def test_the_parameters_caption_gives_both_totals_and_the_exercise_count():
    caption = ML.preface(Settings(), False).parameters_caption
    assert f"Exercise 3.3: {book.EXERCISE_3_3_PARAMETERS:,} for GPT-2 small, 1.9% " in caption
    assert "the chapter's 117M is the figure of the GPT-2 paper" in caption
    assert "gives 124,439,808 ≈ 124M." in caption


def test_the_preset_in_use_is_named_only_outside_book_mode():
    small = Settings(d_in=768, d_out=768, num_heads=12, context_length=1024)
    assert ML.preface(small, False).preset_in_use == (
        "Preset in use: Exercise 3.3 (GPT-2 small). MultiHeadAttention(768, 768, 1024, "
        "num_heads=12, qkv_bias=False) has 2,360,064 parameters."
    )
    assert ML.preface(small, True).preset_in_use is None
    assert ML.preface(Settings(d_in=9), False).preset_in_use is None


# --- speed --------------------------------------------------------------------------------------
SHAPE = (1, 256, 768, 768, 12, 1024, False)


def timing(wrapper: float, split: float, parts: dict | None = None) -> dict:
    result = {"median": {"wrapper": wrapper, "weight split": split}, "runs": 7}
    if parts is not None:
        result["parts"] = parts
    return result


def parts(small=0.030, large=0.031, out_proj=0.010, merge=0.001) -> dict:
    return {
        "wrapper projections": small,
        "split projections": large,
        "split out_proj": out_proj,
        "split merge": merge,
    }


COUNT = "the weight split projects with 3 matmuls, the wrapper with 36 (3 per head)"


def test_a_faster_wrapper_is_called_against_the_chapter_and_explained_from_the_parts():
    report = ML.speed_report(timing(0.060, 0.075, parts()), SHAPE)
    text = " ".join(report.sentences)
    assert report.sentences[0] == (
        "Median of 7 interleaved runs on this server: wrapper 60.0 ms, weight split 75.0 ms: "
        "the wrapper was 1.25× as fast."
    )
    assert "against the chapter's claim that the weight split is more efficient" in text
    assert (
        "the wrapper's 36 small projections took 30.0 ms, the weight split's 3 large ones "
        "31.0 ms (no saving from fewer calls here)" in text
    )
    assert "out_proj (10.0 ms)" in text and "heads (1.000 ms)" in text
    # the attention itself: 75 - 31 - 10 - 1 = 33 ms against 60 - 30 = 30 ms
    assert "took 33.0 ms in the weight split against 30.0 ms in the wrapper" in text
    assert "a (b, H, T, T) tensor of 3.15 MB" in text and "one head's 0.26 MB" in text
    assert COUNT in text
    assert "agrees with the chapter" not in text


def test_a_faster_weight_split_agrees_with_the_chapter():
    report = ML.speed_report(timing(0.090, 0.060, parts(small=0.050, large=0.020)), SHAPE)
    text = " ".join(report.sentences)
    assert "the weight split was 1.50× as fast" in text
    assert "That agrees with the chapter" in text and "fewer calls saved 30.0 ms" in text
    assert "against the chapter" not in text and "the attention itself" not in text
    assert COUNT in text


def test_a_tie_says_so_and_without_parts_the_wrapper_case_names_out_proj():
    tie = " ".join(ML.speed_report(timing(0.050, 0.049), SHAPE).sentences)
    assert "no real difference" in tie and "about cancel out" in tie and COUNT in tie
    slow = " ".join(ML.speed_report(timing(0.040, 0.050), SHAPE).sentences)
    assert "The weight split also runs out_proj, which the wrapper does not have " in slow
    assert f"({2 * 256 * 768 * 768:,} more FLOPs)" in slow


def test_durations_keep_the_digits_that_matter():
    first = ML.speed_report(timing(6.82, 8.53), SHAPE).sentences[0]
    assert "wrapper 6.82 s, weight split 8.53 s: the wrapper was 1.25× as fast" in first
    first = ML.speed_report(timing(0.0000701, 0.0001006), SHAPE).sentences[0]
    assert "wrapper 0.070 ms, weight split 0.101 ms" in first


@pytest.mark.parametrize("size", ["default", "gpt2-small"])
def test_training_mode_counts_the_weights_dropout_zeroed(built, size):
    """Page 4 said "Dropout zeroed some weights" whatever the numbers: it counts them now, over
    every head (the note) and in each head (its panel's sentence), each count a claim."""
    trace, view, heads = built[size, "training"]
    n, H = trace.num_tokens, trace.num_heads
    seen = torch.tril(torch.ones(n, n, dtype=torch.bool))
    zeroed = int((view.grid.values[:, seen] == 0).sum())
    visible = H * int(seen.sum())
    assert f"dropout zeroed {zeroed} of the {visible} weights the queries can see" in (
        view.weights_note
    )
    assert [c.text for c in view.note_claims] == [view.weights_note] * 2
    assert all(c.holds(view.panels) for c in view.note_claims)
    assert not view.claims_for("p4_grid")[-1].text.startswith("Training mode")  # shown once
    for head in heads:
        mine = int((head.panels["p4_weights"].values[seen] == 0).sum())
        sentence = head.panels["p4_weights"].sentence
        assert f"dropout zeroed {mine} of the {int(seen.sum())} weights" in sentence
        assert head.sentence_claims and all(c.holds(head.panels) for c in head.sentence_claims)
        assert all(c.text == sentence for c in head.sentence_claims)


def test_eval_mode_counts_nothing(built):
    trace, view, heads = built["default", "normal"]
    assert view.note_claims == () and all(h.sentence_claims == () for h in heads)
