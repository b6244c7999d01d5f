"""Page 6's lesson object: at the default, book and GPT-2-small settings, in eval, training and
book mode, every claim holds on the tensors drawn and every panel has the shape of its labels."""

from __future__ import annotations

import pytest
import torch

from attnviz.core.settings import GPT2_SMALL, Settings
from attnviz.models import implementations as impl
from attnviz.teach import prepare
from attnviz.teach.lessons import pytorch as lessons

TEXT = "Your journey starts with one step"
LONG = " ".join(["Every effort moves you forward, and every step counts."] * 6)  # ~66 tokens
CASES = {
    "default": (TEXT, Settings(), False),
    "default, training": (TEXT, Settings(training=True, dropout=0.5), False),
    "book": ("", Settings(), True),
    "gpt2 small": (LONG, Settings(**GPT2_SMALL), False),
    "gpt2 small, training": (LONG, Settings(**GPT2_SMALL, training=True, dropout=0.5), False),
}


def build(text: str, s: Settings, book: bool) -> lessons.PytorchLesson:
    prep, _ = prepare.within_context(prepare.prepare(text, s, book), s.context_length)
    trace = prepare.multihead(prep, s)
    side = impl.side_by_side(trace.spec.build(), trace.inputs)
    return lessons.lesson(trace, side, training=s.training and not book, book=book)


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    return request.param, build(*CASES[request.param])


def test_every_claim_holds_on_the_panels_drawn(case):
    name, les = case
    panels = les.panels
    assert les.claims, name
    for claim in les.claims:
        assert claim.holds(panels), (name, claim.text)
    # The page shows them beside every head: they hold for every head, not only head 0.
    for h in range(les.num_heads):
        ours = lessons.head_panels(les, h)[0]
        assert ours.key == f"p6_ours_w_{h}"
        for claim in les.claims:
            assert claim.holds({claim.panel: ours}), (name, h, claim.text)


def test_every_panel_has_the_shape_its_labels_say(case):
    name, les = case
    for key, panel in les.panels.items():
        assert panel.shape == (len(panel.rows), len(panel.cols)), (name, key)
        assert torch.isfinite(panel.values).all(), (name, key)


def test_training_mode_is_named_and_the_weights_are_eval_weights(case):
    name, les = case
    assert bool(les.training_note) == name.endswith("training")
    if les.training_note:
        assert "compares in eval mode" in les.training_note


def test_at_the_defaults_and_gpt2_small_all_three_outputs_apply(case):
    name, les = case
    missing = [o.name for o in les.outputs if o.panel is None]
    if name == "book":  # the chapter's d_in=3, d_out=2 cannot go into nn.MultiheadAttention
        assert missing == ["nn.MultiheadAttention"]
        assert "turn it off" in les.weights_na
    else:
        assert missing == [] and les.weights_na == ""


def timing(key: str, median: float, spread: float = 0.01) -> impl.Timing:
    return impl.Timing(
        key, impl.LABELS[key], "verified", median, median * (1 - spread), median * (1 + spread)
    )


def bench(wrapper_s: float, split_s: float, heads: int = 12) -> impl.BenchResult:
    return impl.BenchResult(
        shape=(1, 1024, 768, 768, heads, False),
        timings=(timing("wrapper", wrapper_s), timing("weight_split", split_s)),
        rounds=5,
        calls_per_sample=1,
        threads=1,
        torch_version="x",
        seconds=1.0,
    )


def test_the_wrapper_sentence_follows_the_measurement_and_counts_matmuls():
    faster = lessons.wrapper_sentence(bench(wrapper_s=0.010, split_s=0.020))
    assert "the wrapper was faster (10 ms against 20 ms), against the chapter's" in faster
    assert "37 matrix multiplications" in faster and "the weight split 4" in faster
    slower = lessons.wrapper_sentence(bench(wrapper_s=0.030, split_s=0.010, heads=2))
    assert "the weight split was 3.00× as fast as the wrapper" in slower
    assert "7 matrix multiplications" in slower
    same = lessons.wrapper_sentence(bench(wrapper_s=0.0101, split_s=0.0100))
    assert "no clear difference" in same
