"""Checks read the trace: the independent computations behind page 4's and page 6's checks run
once per setting (:func:`attnviz.models.implementations.references`), and building both lessons from a
trace and its references runs no forward at all."""

from __future__ import annotations

import pytest
import torch

from attnviz.core import modules as M
from attnviz.core.settings import GPT2_SMALL, Settings
from attnviz.models import implementations as impl
from attnviz.teach import checks as live_checks
from attnviz.teach import prepare as lesson
from attnviz.teach.lessons import multihead as ML
from attnviz.teach.lessons import pytorch as PL
from tests.support.forwards import SDPA, counted_forwards, name_of

TEXT = "Your journey starts with one step"
CASES = {
    "default": (TEXT, Settings(), False),
    "book": ("", Settings(), True),
    "training": (TEXT, Settings(training=True, dropout=0.5), False),
    "gpt2 small": (TEXT, Settings(**GPT2_SMALL), False),  # 12 heads, 768 wide
}
OURS = name_of(M.MultiHeadAttention)
WRAPPER = name_of(M.MultiHeadAttentionWrapper)
TORCH_MHA = name_of(torch.nn.MultiheadAttention)
SDPA_IMPL = name_of(impl.SDPA)


def traces(case: str):
    text, s, book = CASES[case]
    prep, _ = lesson.within_context(lesson.prepare(text, s, book), s.context_length)
    trace = lesson.multihead(prep, s)
    wrapper = lesson.wrapper(prep, s) if book else None
    return trace, ML.eval_trace(trace), wrapper, book


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    """(name, trace, eval-mode trace, wrapper trace, book, references, forwards they ran)."""
    trace, checked, wrapper, book = traces(request.param)
    with counted_forwards() as counts:
        refs = impl.references(checked)
    return request.param, trace, checked, wrapper, book, refs, counts


def test_references_run_each_independent_computation_once(case):
    name, trace, checked, _, book, refs, counts = case
    assert counts[OURS] == 1  # on the input with its later half changed
    assert counts[WRAPPER] == 1
    assert counts[SDPA_IMPL] == 1
    assert counts[TORCH_MHA] == (0 if book else 1)  # book: d_in 3 != d_out 2, not applicable
    assert (refs.torch_output is None) == book == (refs.torch_na is not None)
    H, n, d_out = checked.num_heads, checked.num_tokens, checked.spec.d_out
    assert refs.sdpa_context.shape == (1, H, n, d_out // H)
    assert refs.heads_looped.shape == refs.wrapper_context.shape == (1, n, d_out)
    assert refs.future_changed is not None and refs.future_changed.shape == (1, n, d_out)


def test_the_checks_read_the_eval_trace_in_training_mode(case):
    name, trace, checked, *_ = case
    assert (checked is trace) == (name != "training")
    assert not checked.training and checked.spec == trace.spec
    assert torch.equal(checked.attn_weights, trace.attn_weights)  # dropout acts after them
    if name == "training":  # the training trace's context used dropped weights
        with pytest.raises(ValueError, match="eval mode"):
            impl.references(trace)


def test_building_page_4_and_6_lessons_from_a_trace_and_its_references_runs_no_forward(case):
    name, trace, checked, wrapper, book, refs, _ = case
    with counted_forwards() as counts:
        view = ML.build(trace, wrapper, book, refs, checked)
        heads = [ML.head_view(trace, h) for h in {0, trace.num_heads - 1}]  # first and last
        side = impl.side_from(checked, refs)
        page6 = PL.lesson(checked, side, training=trace.training and not book, book=book)
        page6_panels = page6.panels  # every head's weights, ours and PyTorch's
    assert dict(counts) == {}, name
    assert SDPA not in counts
    assert len(view.checks) == 5 and len(side.checks) == 3 and heads[-1].product.passed
    assert len(page6_panels) >= 2 * trace.num_heads


def test_the_lessons_built_from_references_equal_those_built_alone(case):
    """The standalone path (a test's, a notebook's: references computed inside) gives the same
    checks as the cached path."""
    name, trace, checked, wrapper, book, refs, _ = case
    cached = ML.build(trace, wrapper, book, refs, checked)
    alone = ML.build(trace, wrapper, book)
    assert cached.checks == alone.checks and cached.equivalence == alone.equivalence
    mha = trace.spec.build()
    assert impl.side_from(checked, refs).checks == impl.side_by_side(mha, trace.inputs).checks


def test_references_for_another_trace_are_refused():
    trace, checked, _, _ = traces("default")
    other, *_ = traces("gpt2 small")
    refs = impl.references(other)
    with pytest.raises(ValueError, match="another trace"):
        impl.side_from(checked, refs)


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def test_the_reference_modules_hold_the_traces_own_tensors_and_draw_nothing(case):
    """The modules the references run (ours rebuilt from the trace, the wrapper of its rows,
    nn.MultiheadAttention) share the trace's weights and mask instead of copying them: at the
    largest sizes a copy was 41 MB of weights, and the wrapper's own masks 32 × 4 MB. They are
    built on the meta device, so they draw nothing from the global generator either."""
    name, trace, checked, *_ = case
    rng = torch.random.get_rng_state()
    mha = impl.module_of(checked)
    wrapper = live_checks.wrapper_from_mha(mha)
    theirs = live_checks.torch_mha_from(mha)
    assert torch.equal(torch.random.get_rng_state(), rng), name
    modules = [mha, wrapper] + ([theirs] if theirs is not None else [])
    for module in modules:
        tensors = [*module.parameters(), *module.buffers()]
        assert all(t.device.type == "cpu" and not t.requires_grad for t in tensors), name
        assert not module.training
    for pname, param in mha.named_parameters():
        assert param.data_ptr() == checked.params[pname].data_ptr(), pname
    assert mha.mask.data_ptr() == checked.mask.data_ptr()
    hd = mha.head_dim
    for h, head in enumerate(wrapper.heads):
        assert head.mask.data_ptr() == mha.mask.data_ptr()
        for role in ("W_query", "W_key", "W_value"):
            ours, its = getattr(mha, role), getattr(head, role)
            assert _storage(its.weight) == _storage(ours.weight), (name, h, role)
            assert torch.equal(its.weight, ours.weight[h * hd : (h + 1) * hd])
            if ours.bias is not None:
                assert torch.equal(its.bias, ours.bias[h * hd : (h + 1) * hd])
    if theirs is not None:
        assert theirs.out_proj.weight.data_ptr() == mha.out_proj.weight.data_ptr()
        assert theirs.out_proj.bias.data_ptr() == mha.out_proj.bias.data_ptr()
        stacked = torch.cat([mha.W_query.weight, mha.W_key.weight, mha.W_value.weight])
        assert torch.equal(theirs.in_proj_weight, stacked)
