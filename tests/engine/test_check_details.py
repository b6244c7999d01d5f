"""Check details name what they compare (issue 23): the largest |difference|, the tolerance and
what its scale is, and the largest |value| of each side, which are the compared tensors' own,
not the tolerance's scale ("on values ~6.03" printed a scale as if it were the values' size)."""

from __future__ import annotations

import re

import pytest
import torch

from attnviz.core.settings import Settings
from attnviz.models import implementations as impl
from attnviz.teach import checks as live_checks
from attnviz.teach import prepare as lesson
from attnviz.teach.lessons import causal as CL
from attnviz.teach.lessons import multihead as ML
from attnviz.teach.lessons import pytorch as PL

TEXT = "Your journey starts with one step"
TEXT2 = "Every effort moves you forward"
MODES = {"defaults": Settings(), "training": Settings(training=True, dropout=0.5)}


def printed(detail: str) -> dict[str, str]:
    """Each compared side's name -> its largest |value| as the detail prints it."""
    found = re.search(r"; compared: (.*?): ", detail)
    assert found, detail
    sides = re.findall(r"(.+?) max \|value\| ([^,]+)(?:, |$)", found[1])
    return dict(sides)


def top(t: torch.Tensor) -> str:
    return f"{float(t.abs().max()):.3g}"


@pytest.fixture(scope="module", params=list(MODES))
def pages(request):
    s = MODES[request.param]
    prep, _ = lesson.within_context(lesson.prepare(TEXT, s), s.context_length)
    trace = lesson.multihead(prep, s)
    checked = ML.eval_trace(trace)
    refs = impl.references(checked)
    page4 = ML.build(trace, None, False, refs, checked)
    page6 = PL.lesson(checked, impl.side_from(checked, refs), training=s.training)
    causal = lesson.causal(prep, s)
    batch = lesson.prepare_batch(TEXT, TEXT2, s)
    bt = lesson.causal_batch(batch, s)
    page3 = CL.causal_lesson(causal, None, bt, batch.labels, settings=s, book=False)
    return request.param, trace, checked, refs, page4, page6, causal, bt, page3


def all_checks(pages) -> list[live_checks.CheckResult]:
    *_, page4, page6, _causal, _bt, page3 = pages
    found = [*page4.checks, page4.equivalence, *page6.checks, page6.weights_check]
    found += [*page3.route_checks, *page3.checks]
    assert page3.batch is not None
    return [*found, page3.batch.check]


def test_every_detail_prints_the_difference_the_tolerance_and_each_sides_magnitude(pages):
    for check in all_checks(pages):
        assert check.max_diff is not None, check.name
        detail = check.detail
        assert detail.startswith(f"largest |difference| {check.max_diff:.2e}; "), detail
        assert f"; tolerance {check.tol:.2e}" in detail
        assert len(check.compared) >= 2, check.name
        assert printed(detail) == {name: f"{value:.3g}" for name, value in check.compared}
        if check.tol:  # a rounding tolerance names its scale; "exactly equal" has none
            assert check.scale_is and check.scale_is in detail, check.name
        assert detail.endswith(f": {check.explanation}")


def test_page_4_prints_the_magnitudes_of_the_tensors_it_compares(pages):
    mode, trace, checked, refs, page4, *_ = pages
    rows, loop, sdpa, torch_mha, future = page4.checks
    sdpa_ref = torch.nn.functional.scaled_dot_product_attention(
        checked.queries_heads, checked.keys_heads, checked.values_heads, is_causal=True
    )
    assert printed(sdpa.detail) == {
        "ours": top(checked.context_heads),
        "PyTorch's SDPA": top(sdpa_ref),
    }
    assert printed(torch_mha.detail) == {
        "ours": top(checked.output),
        "nn.MultiheadAttention": top(refs.torch_output),
    }
    assert printed(loop.detail)["batched heads"] == top(checked.context)
    assert printed(rows.detail) == {"row sums": "1", "ones": "1"}
    assert printed(page4.equivalence.detail) == {
        "wrapper (heads concatenated)": top(refs.wrapper_context),
        "weight split": top(checked.context),
    }
    cut = trace.num_tokens // 2
    assert printed(future.detail)[f"outputs of tokens 0–{cut - 1}"] == top(
        checked.output[..., :cut, :]
    )
    # The scale is named as a scale, not as the size of the values (0.0971 against 0.273).
    assert f"is {sdpa.scale:.3g}; the scale is at least 1" in sdpa.detail
    assert float(printed(sdpa.detail)["ours"]) != pytest.approx(sdpa.scale, rel=1e-2)


def test_the_head_check_prints_the_weights_shown_and_their_context(pages):
    mode, trace, *_ = pages
    h = trace.num_heads - 1
    head = ML.head_view(trace, h)
    shown = trace.weights_dropped[0, h]  # in training mode, after dropout: what the context used
    assert printed(head.product.detail) == {
        "weights shown @ V": top(shown @ trace.values_heads[0, h]),
        "context shown": top(trace.context_heads[0, h]),
    }


def test_page_3_batch_check_prints_the_outputs_not_sixteen_times_them(pages):
    mode, *_, causal, bt, page3 = pages
    module = bt.spec.build().eval()
    with torch.inference_mode():
        together = module(bt.inputs)
    check = page3.batch.check
    assert printed(check.detail)["the batch at once"] == top(together)
    assert check.scale == pytest.approx(16 * float(together.abs().max()), rel=1e-6)
    assert f"× {check.scale:.3g}, 16 × the largest |output|" in check.detail
    sdpa = next(c for c in page3.checks if c.name == "matches_sdpa")
    assert printed(sdpa.detail)["ours"] == top(causal.attn_weights @ causal.values)
