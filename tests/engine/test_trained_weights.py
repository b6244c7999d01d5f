"""Trained weights on passes 2-4 (weights="trained"): the settings fix the grown model's sizes,
the chapter's modules hold its weights exactly, and every sentence about the heads (how even,
whether they differ, what a head is named) is a claim that holds for the panel it names, in
every mode, and fails when its number is wrong."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from attnviz.core.settings import (
    TRAINED_CONTEXT,
    TRAINED_HEADS,
    TRAINED_WIDTH,
    Settings,
    SettingsError,
)
from attnviz.models import detectors as D
from attnviz.models.induction import passes
from attnviz.models.induction.model import ModelConfig, run
from attnviz.models.induction.recorded import recorded
from attnviz.teach import prepare
from attnviz.teach.lessons import causal as CL
from attnviz.teach.lessons import heads as H
from attnviz.teach.lessons import multihead as ML
from attnviz.teach.lessons import trainable as TL
from attnviz.teach.panel import Panel

TEXT = "Your journey starts with one step"
TWICE = f"{TEXT} {TEXT}"


def test_the_trained_sizes_are_the_grown_models():
    cfg = ModelConfig()
    assert (TRAINED_WIDTH, TRAINED_HEADS, TRAINED_CONTEXT) == (
        cfg.d_model,
        cfg.num_heads,
        cfg.context,
    )
    assert recorded().reference.config.model == cfg


def test_trained_weights_fix_the_sizes_of_passes_2_to_4_and_leave_pass_1_alone():
    s = Settings(d_in=12, d_out=6, num_heads=3, context_length=9, seed_embed=5, seed_weights=6,
                 dropout=0.3, training=True, qkv_bias=True, weights="trained")  # fmt: skip
    two, three, four = s.for_pass("trainable"), s.for_pass("causal"), s.for_pass("multihead")
    assert (two.d_in, two.d_out, two.qkv_bias, two.seed_weights) == (64, 16, False, 123)
    assert (three.d_out, three.context_length, three.dropout, three.training) == (16, 24, 0.3, True)
    assert (four.d_out, four.num_heads, four.context_length) == (64, 4, 24)
    assert s.for_pass("inputs").d_in == 64 and s.for_pass("inputs").seed_embed == 123
    one = s.for_pass("simplified")
    assert (one.d_in, one.seed_embed, one.weights) == (12, 5, "random")
    with pytest.raises(SettingsError, match="weights must be one of random, trained"):
        Settings(weights="sharp")


def _prep(text=TWICE, kind="multihead", **changes):
    s = Settings(weights="trained", **changes)
    return prepare.prepare(text, s.for_pass("inputs")), s.for_pass(kind)


def test_the_chapters_modules_hold_the_grown_models_weights_exactly():
    prep, s = _prep(kind="causal")
    model = recorded().reference.model(4000)
    with torch.inference_mode():
        r = run(model, torch.tensor([prep.model_ids]))
    assert torch.equal(prep.x, r.layer_inputs[0])
    causal = prepare.causal(prep, s)
    assert causal.spec.seed is None and causal.spec.trained is not None
    assert torch.equal(causal.attn_weights[0], r.attn_weights[0, 0, 2])
    mha = prepare.multihead(prep, Settings(weights="trained").for_pass("multihead"))
    assert torch.equal(mha.attn_weights[0], r.attn_weights[0, 0])
    # v1 holds the transpose (Exercise 3.1) and computes the same numbers as v2
    two = Settings(weights="trained").for_pass("trainable")
    v1, v2 = prepare.trainable(prep, two, "v1"), prepare.trainable(prep, two, "v2")
    torch.testing.assert_close(v1.attn_weights, v2.attn_weights)
    state = passes.module_state("v2", 0, 2, 4000)
    assert torch.equal(v2.params["W_query.weight"], state["W_query.weight"])
    assert "load_state_dict(passes.module_state('v2', layer=0, head=2, step=4000)" in (
        v2.spec.build_lines("sa")
    )


def _all_claims(text: str, weights: str, training: bool):
    """(claims, panels) of passes 2, 3 and 4 at these settings."""
    s = Settings(weights=weights, training=training, dropout=0.3)
    prep = prepare.prepare(text, s.for_pass("inputs"))
    out = []
    two = s.for_pass("trainable")
    tr, other = prepare.trainable(prep, two), prepare.trainable(prep, two, "v1")
    lesson = TL.trainable_lesson(tr, other, None, False)
    out.append((lesson.claims, lesson.panels))
    three = s.for_pass("causal")
    lab = prepare.causal(prep, three.with_changes(training=True))
    c = CL.causal_lesson(prepare.causal(prep, three), lab, None, (), settings=three, book=False)
    out.append((c.claims, c.panels))
    four = prepare.multihead(prep, s.for_pass("multihead"))
    m = ML.build(four, None, False)
    out.append((m.claims, m.panels))
    return out


@pytest.mark.parametrize("weights", ["random", "trained"])
@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("text", [TEXT, TWICE, "the cat sat on the mat the cat"])
def test_every_sentence_about_the_heads_holds_for_the_panel_it_names(weights, training, text):
    for claims, panels in _all_claims(text, weights, training):
        assert claims
        for claim in claims:
            assert claim.holds(panels), claim.text
            if claim.prop == "named_by_score":  # named only when its score says so
                values = panels[claim.panel].values
                w = values[claim.head] if claim.head is not None else values
                scores = {
                    name: float(D.expected_key_score(w, torch.tensor(keys)))
                    for name, keys in H.expected_keys(panels[claim.panel].rows).items()
                }
                assert D.name_of(scores) is not None and D.name_of(scores) in claim.text
            if claim.prop in ("named_by_score", "named_by_none", "largest_head_distance_near"):
                wrong = replace(claim, arg=round((claim.arg or 0) + 0.2, 2))
                assert not wrong.holds(panels), claim.text  # the claim can fail


def test_own_pattern_is_said_only_when_the_heads_differ_by_half_or_more():
    n = 6
    same = torch.tril(torch.ones(n, n)) / torch.arange(1, n + 1)[:, None]
    alike = torch.stack([same, same])
    eye = torch.eye(n)
    first = torch.zeros(n, n)
    first[:, 0] = 1.0
    apart = torch.stack([eye, first])  # rows 1 … 5 put all weight on different keys
    assert H.pattern_claim("g", alike).text.startswith("The heads barely differ")
    own = H.pattern_claim("g", apart)
    assert own.text.startswith("Each head attends over the same tokens with its own pattern")
    assert "differ by 1.00" in own.text and own.holds({"g": Panel("g", apart, (), ())})
    mix = torch.stack([eye, 0.6 * eye + 0.4 * first])  # 0.4 apart
    assert H.pattern_claim("g", mix).text.startswith("The heads differ only somewhat")
    # 0.497 is not printed as "0.50" next to the 0.5 threshold
    near = torch.stack([eye, 0.503 * eye + 0.497 * first])
    text = H.pattern_claim("g", near).text
    assert "0.497 apart" in text and "own pattern" not in text
    assert H.pattern_claim("g", same[None]) is None  # one head: nothing to compare


def test_the_spread_sentence_says_close_or_far_by_the_numbers():
    n = 5
    even = torch.full((n, n), 1.0 / n)
    claim = H.spread_claim("w", even, causal=False, who="These weights")
    assert "close to an even share" in claim.text and "0.200" in claim.text
    sharp = torch.eye(n)
    far = H.spread_claim("w", sharp, causal=False, who="These weights")
    assert "far from an even share" in far.text and "is 1.000" in far.text
    causal = H.spread_claim("w", torch.tril(torch.ones(n, n)) / torch.arange(1, n + 1)[:, None],
                            causal=True, who="These weights")  # fmt: skip
    assert "within 0.00 of an even share" in causal.text
    assert causal.holds({"w": Panel("w", sharp, (), ())}) is False


def test_trained_heads_are_named_on_pass_4_and_random_ones_are_not():
    for weights, named in (("trained", True), ("random", False)):
        s = Settings(weights=weights)
        prep = prepare.prepare(TWICE, s.for_pass("inputs"))
        m = ML.build(prepare.multihead(prep, s.for_pass("multihead")), None, False)
        names = [c for c in m.claims if c.prop in ("named_by_score", "named_by_none")]
        assert bool(names) == named
        if named:
            assert [c.head for c in names] == [0, 1, 2, 3]
            assert [c.prop for c in names].count("named_by_score") == 1  # head 2, current token
