"""Page 3's lesson object (attnviz.teach.lessons.causal): every sentence it states about the numbers
holds on the tensors it draws, every panel's values have the shape its labels say, and the
modes agree with themselves (training mode shows the weights the context used, Z = A·V; book
mode never credits the sidebar with a value it does not show)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from attnviz import figures
from attnviz.core.settings import GPT2_SMALL, Settings
from attnviz.core.tokens import tokenize
from attnviz.teach import bugs
from attnviz.teach import prepare as lesson
from attnviz.teach.lessons.causal import CausalLesson, causal_lesson

DEFAULT_TEXT = "Your journey starts with one step"
DEFAULT_TEXT2 = "Every effort moves you forward"
LONG_TEXT = "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat. " * 6


def page3(text: str, text2: str, s: Settings, book: bool) -> CausalLesson:
    """The lesson exactly as the page builds it from the caches' traces."""
    prep = lesson.prepare(text, s, book)
    prep, _ = lesson.within_context(prep, 6 if book else s.context_length)
    trace = lesson.causal(prep, s)
    lab = None
    if not book and s.dropout > 0:
        lab = lesson.causal(prep, s.with_changes(training=True))
    batch = lesson.prepare_batch(text, text2, s, book)
    bt = lesson.causal_batch(batch, s, book) if batch.num_tokens else None
    return causal_lesson(trace, lab, bt, batch.labels, settings=s, book=book)


GPT2 = dict(GPT2_SMALL, context_length=128)
CASES = {
    "default": (DEFAULT_TEXT, DEFAULT_TEXT2, Settings(), False),
    "default-train": (
        DEFAULT_TEXT,
        DEFAULT_TEXT2,
        Settings(training=True, dropout=0.5),
        False,
    ),
    "default-dropout-0": (DEFAULT_TEXT, DEFAULT_TEXT2, Settings(dropout=0.0), False),
    "book": ("", "", Settings(), True),
    "book-train-ignored": ("", "", Settings(training=True, dropout=0.5), True),
    "gpt2": (LONG_TEXT, LONG_TEXT, Settings(**GPT2), False),
    "gpt2-train": (LONG_TEXT, LONG_TEXT, Settings(**GPT2, training=True, dropout=0.5), False),
}


@pytest.fixture(scope="module")
def lessons() -> dict[str, CausalLesson]:
    return {name: page3(*case) for name, case in CASES.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_every_claim_holds_on_the_panels_it_speaks_of(lessons, case):
    L = lessons[case]
    panels = L.panels
    assert L.claims, "a page that states nothing about its numbers"
    for claim in (*L.claims, *L.step_claims):  # the page's, and the presenter steps'
        assert claim.panel in panels, claim
        assert claim.holds(panels), claim.text


@pytest.mark.parametrize("case", list(CASES))
def test_every_panel_has_the_shape_its_labels_say(lessons, case):
    for key, panel in lessons[case].panels.items():
        assert panel.shape == (len(panel.rows), len(panel.cols)), key
        assert panel.formula and panel.sentence, key


def test_the_gpt2_case_is_wide_and_long():
    text, _, s, _ = CASES["gpt2"]
    assert (s.d_in, s.d_out) == (768, 768)
    assert len(tokenize(text)) >= 64


@pytest.mark.parametrize("case", ["default-train", "gpt2-train"])
def test_training_mode_shows_the_weights_the_context_used(lessons, case):
    L = lessons[case]
    lab = L.lab
    assert lab is not None and lab.dropped is not None and lab.values is not None
    assert lab.context is not None
    A, V, Z = lab.dropped.values, lab.values.values, lab.context.values
    torch.testing.assert_close(A @ V, Z, rtol=1e-5, atol=1e-6)
    # dropout struck: some row sum differs from 1, and the page says so
    sums = A.sum(dim=-1)
    assert ((sums - 1).abs() > 1e-5).any()
    assert any(c.text.startswith("Row sums after dropout are no longer 1") for c in L.claims)
    # the routes are labelled as before dropout, their rows sum to 1
    assert figures.title_of(L.route2.figure).endswith("(before dropout)")
    torch.testing.assert_close(L.route2.values.sum(-1), torch.ones(L.route2.shape[0]))
    # the batch shows the dropped weights of each example
    assert L.batch is not None
    for panel in L.batch.panels:
        assert "after dropout" in figures.title_of(panel.figure)
        assert ((panel.values.sum(-1) - 1).abs() > 1e-5).any()
    assert any(c.text.startswith("Training mode:") for c in L.mode_claims)


def test_eval_mode_routes_and_batch_are_what_the_context_used(lessons):
    L = lessons["default"]
    assert "before dropout" not in figures.title_of(L.route2.figure)
    assert L.batch is not None
    for panel in L.batch.panels:
        torch.testing.assert_close(panel.values.sum(-1), torch.ones(panel.shape[0]))
    assert any(c.text.startswith("Eval mode:") for c in L.mode_claims)
    assert not any("before dropout" in c.text for c in L.claims)


def test_the_lab_states_the_sidebar_values_outside_book_mode(lessons):
    lab = lessons["default-train"].lab
    assert lab is not None
    assert "Here p = 0.5 (the sidebar's dropout) and the dropout seed is 123" in lab.intro
    assert "1/(1−0.5) = **2**" in lab.intro


@pytest.mark.parametrize("case", ["book", "book-train-ignored"])
def test_book_mode_never_credits_the_sidebar(lessons, case):
    L = lessons[case]
    assert L.lab is not None and L.lab.dropped is None
    assert "p = 0.5 (the chapter's example)" in L.lab.intro
    words = [L.lab.intro, L.mask_sentence, *(c.text for c in L.claims)]
    assert not any("sidebar" in w for w in words), words
    assert [p.name for p in L.lab.printouts] == ["dropout_ones", "dropout_weights"]
    assert [p.name for p in L.walkthrough][0] == "masking_weights_unmasked"
    assert "before dropout" not in figures.title_of(L.route2.figure)


def test_dropout_zero_has_no_lab(lessons):
    assert lessons["default-dropout-0"].lab is None


@pytest.mark.parametrize("case", ["default", "gpt2", "book"])
def test_hidden_reasons_come_from_each_bug_at_the_batch(lessons, case):
    text, text2, s, book = CASES[case]
    batch = lesson.prepare_batch(text, text2, s, book)
    bt = lesson.causal_batch(batch, s, book)
    hidden = lessons[case].batch.hidden
    assert hidden == {b.key: b.hidden_at(bt.inputs, bt.spec) for b in bugs.bugs_for("causal")}


def test_dropout_0_hides_the_dropout_bug_and_says_how_to_show_it():
    L = page3(DEFAULT_TEXT, DEFAULT_TEXT2, Settings(dropout=0.0), False)
    assert L.batch is not None
    assert L.batch.hidden["dropout_in_eval"] == "invisible with dropout=0: raise dropout above 0"


def test_an_empty_second_text_gives_no_batch():
    L = page3(DEFAULT_TEXT, "", Settings(), False)
    assert L.batch is None
    assert L.lab is not None  # the rest of the page is whole


def test_the_placement_sentence_counts_what_context_dropout_zeroed(lessons):
    lab = lessons["default-train"].lab
    assert lab is not None and lab.context_dropout is not None
    zeroed = int((lab.context_dropout.values == 0).sum())
    assert f"zeroes {zeroed} of {lab.context_dropout.values.numel()} entries" in lab.placement


def test_the_rows_sum_check_says_it_reads_the_weights_before_dropout_in_training_mode(lessons):
    train = {c.name: c.title for c in lessons["default-train"].checks}
    plain = {c.name: c.title for c in lessons["default"].checks}
    assert train["rows_sum_to_one"] == plain["rows_sum_to_one"] + " (before dropout)"
    assert train["matches_sdpa"] == plain["matches_sdpa"] + " (before dropout)"
    assert figures.title_of(lessons["default-train"].uniform.figure).endswith("(before dropout)")
    assert "dropout" not in plain["rows_sum_to_one"]
    assert "draws its own dropout mask" in lessons["default-train"].batch.shape_sentence
    assert "dropout" not in lessons["default"].batch.shape_sentence


@pytest.mark.parametrize("case", ["default-train", "gpt2-train"])
def test_the_dropout_step_counts_the_masks_zeros_and_dropouts(lessons, case):
    """Pass 3's presenter dropout step said "the zeros here are the dropped weights"; most of
    them are the causal mask. It counts both, and each count is a claim on the step's panel."""
    L = lessons[case]
    step = L.panels["p3_step_dropout"]
    n = step.shape[-1]
    future = n * (n - 1) // 2
    seen = torch.tril(torch.ones(n, n, dtype=torch.bool))
    dropped = int((step.values[seen] == 0).sum())
    assert dropped > 0
    assert f"{future} are the causal mask" in step.sentence
    assert f"{dropped} are weights dropout dropped" in step.sentence
    assert {c.prop: c.arg for c in L.step_claims} == {
        "future_zeros": future,
        "visible_zeros": dropped,
    }
    wrong = [dataclasses.replace(c, arg=c.arg + 1) for c in L.step_claims]
    assert not any(c.holds(L.panels) for c in wrong)  # the claims can fail


def test_eval_mode_says_dropout_is_the_identity_and_claims_no_count(lessons):
    L = lessons["default"]
    assert L.step_claims == ()
    assert L.panels["p3_step_dropout"].sentence.startswith("In eval mode dropout is the identity")
