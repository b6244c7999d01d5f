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
            if claim.prop == "own_pattern_heads":  # naming another set of heads fails
                others = tuple(h for h in range(4) if h not in claim.keys[0])
                assert not replace(claim, keys=(others,)).holds(panels), claim.text
            if claim.prop in ("causal_near_even", "heads_near_even") and claim.arg:
                assert not replace(claim, arg=claim.arg - 0.01).holds(panels), claim.text


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
    assert "at least 1.00 apart" in own.text and own.holds({"g": Panel("g", apart, (), ())})
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


def _gapped(n: int, gap: float) -> torch.Tensor:
    """Causal even rows, except the last row moves ``gap`` from key 0 to key 1."""
    w = torch.tril(torch.ones(n, n, dtype=torch.float64)) / torch.arange(1, n + 1)[:, None]
    w[-1, 0] -= gap
    w[-1, 1] += gap
    return w


@pytest.mark.parametrize("gap", [0.0205, 0.0224, 0.02, 0.0999])
def test_within_is_never_printed_below_the_gap(gap):
    # issue 37: "within 0.02 of an even share" was printed for gaps of 0.0205 and 0.0224
    w = _gapped(6, gap)
    claim = H.spread_claim("w", w, causal=True, who="These weights")
    bound = float(claim.text.split("within ")[1].split(" of")[0])
    assert bound >= gap - 1e-12 and bound - gap < 0.01, claim.text
    assert claim.holds({"w": Panel("w", w, (), ())})
    stack = H.spread_claims("w", torch.stack([w, w]), "These weights")
    assert len(stack) == 1 and f"within {bound:.2f}" in stack[0].text


def test_at_least_and_within_between_heads_are_rounded_the_safe_way():
    n = 6
    eye, first = torch.eye(n, dtype=torch.float64), torch.zeros(n, n, dtype=torch.float64)
    first[:, 0] = 1.0
    # heads 0 and 1 are 0.173 apart; head 2 is 0.527 from head 1 and 0.7 from head 0
    stack = torch.stack([eye, 0.827 * eye + 0.173 * first, 0.3 * eye + 0.7 * first])
    d = D.head_distances(stack[:, 1:])
    assert d[0, 1] == pytest.approx(0.173) and d[1, 2] == pytest.approx(0.527)
    claim = H.pattern_claim("g", stack)
    assert "it is at least 0.52 from every other head" in claim.text  # not "0.53"
    assert "each is within 0.18 of another head" in claim.text  # not "0.17"


def test_own_pattern_is_said_of_the_heads_it_holds_for():
    # issue 37: "each head ... its own pattern" rested on head 2 alone
    n = 6
    same = torch.tril(torch.ones(n, n)) / torch.arange(1, n + 1)[:, None]
    eye = torch.eye(n)
    stack = torch.stack([same, 0.9 * same + 0.1 * eye, eye, same])
    claim = H.pattern_claim("g", stack)
    panels = {"g": Panel("g", stack, (), ())}
    assert claim.prop == "own_pattern_heads" and claim.keys == ((2,),)
    assert claim.text.startswith("Head 2 attends with a pattern of its own: it is at least ")
    assert "Heads 0, 1 and 3 do not: each is within " in claim.text
    assert "Each head" not in claim.text
    assert claim.holds(panels)
    assert not replace(claim, keys=((0, 1, 2, 3),)).holds(panels)
    # the spread, per head: head 2 is far from an even share, the others close to it
    spread = H.spread_claims("g", stack, "These weights")
    assert len(spread) == 2
    assert spread[0].text.startswith("Heads 0, 1 and 3's weights are close to an even share")
    assert spread[0].keys == ((0, 1, 3),) and spread[0].prop == "heads_near_even"
    assert spread[1].text.startswith("Head 2's weights are far from an even share")
    assert spread[1].head == 2
    assert all(c.holds(panels) for c in spread)
    assert not any("every head" in c.text for c in spread)
    # the group claims can fail: a head added to the close group, or a bound too tight
    assert not replace(spread[0], keys=((0, 1, 2, 3),)).holds(panels)
    assert not replace(spread[0], arg=0.0).holds(panels)
    two_far = torch.stack([same, eye, eye])
    far = H.spread_claims("g", two_far, "These weights")
    assert far[-1].text.startswith("Heads 1 and 2's weights are far from an even share: each has")
    far_panels = {"g": Panel("g", two_far, (), ())}
    assert far[-1].holds(far_panels)
    assert not replace(far[-1], keys=((0, 1, 2),)).holds(far_panels)


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
