"""attnviz.core.skeleton: meta-device modules built once per class and arguments, handed out as
copies that callers fill with their own tensors without touching the template."""

from __future__ import annotations

import tracemalloc

import pytest
import torch
from torch import nn

from attnviz.core import modules as M
from attnviz.core import skeleton
from attnviz.core.seeding import seeded
from attnviz.core.settings import BOUNDS
from attnviz.server import budget
from tests.threads import from_threads


@pytest.fixture(autouse=True)
def empty():
    skeleton.clear()
    yield
    skeleton.clear()


def structure(module: nn.Module) -> list[tuple[str, str, tuple[int, ...]]]:
    """Every submodule's class and every parameter's and buffer's name and shape."""
    rows = [(name, type(m).__name__, ()) for name, m in module.named_modules()]
    rows += [(n, "parameter", tuple(p.shape)) for n, p in module.named_parameters()]
    rows += [(n, "buffer", tuple(b.shape)) for n, b in module.named_buffers()]
    return rows


CASES = [
    (M.MultiHeadAttention, (3, 4, 6, 0.0, 2, False)),
    (M.MultiHeadAttentionWrapper, (3, 2, 6, 0.5, 4, True)),
    (nn.MultiheadAttention, (8, 2, 0.0, True, False, False, None, None, True)),
]


@pytest.mark.parametrize(("cls", "args"), CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_a_copy_has_the_structure_a_meta_build_has(cls, args):
    with torch.device("meta"):
        built = cls(*args)
    copy = skeleton.on_meta(cls, *args)
    assert type(copy) is cls
    assert structure(copy) == structure(built)
    assert all(p.is_meta for p in copy.parameters())
    assert copy.training and vars(copy).keys() == vars(built).keys()


def test_filling_a_copy_leaves_the_template_and_other_copies_alone():
    args = (3, 4, 6, 0.0, 2, False)
    first = skeleton.on_meta(M.MultiHeadAttention, *args)
    second = skeleton.on_meta(M.MultiHeadAttention, *args)
    assert skeleton.templates() == 1  # one template for both
    weight = nn.Parameter(torch.arange(12.0).reshape(4, 3), requires_grad=False)
    first.W_query.weight = weight
    first.mask = torch.zeros(6, 6)
    first.eval()
    first.W_query.register_forward_hook(lambda *_: None)
    assert first.W_query.weight is weight and not first.W_query.weight.is_meta
    assert second.W_query.weight.is_meta and second.mask.is_meta
    assert second.training and second.W_query.training
    assert not second.W_query._forward_hooks
    third = skeleton.on_meta(M.MultiHeadAttention, *args)
    assert third.W_query.weight.is_meta and third.mask.is_meta and third.training
    assert not third.W_query._forward_hooks


def test_a_filled_copy_computes_what_the_same_module_built_for_real_computes():
    with seeded(0):  # the project's one locked way to seed torch's global generator
        real = M.MultiHeadAttention(3, 4, 6, 0.0, 2, True).eval()
    copy = skeleton.on_meta(M.MultiHeadAttention, 3, 4, 6, 0.0, 2, True)
    assert_computes_as(filled(copy, real), real)


def filled(copy: nn.Module, real: nn.Module) -> nn.Module:
    """``copy`` given clones of ``real``'s parameters and its mask, in eval mode."""
    for name, param in real.named_parameters():
        owner, _, attr = name.rpartition(".")
        setattr(copy.get_submodule(owner), attr, nn.Parameter(param.detach().clone()))
    copy.mask = real.mask
    return copy.eval()


def assert_computes_as(module: nn.Module, real: nn.Module) -> None:
    x = torch.randn(1, 5, 3, generator=torch.Generator().manual_seed(1))
    assert torch.equal(module(x), real(x))


def test_templates_are_capped_oldest_first():
    for width in range(1, skeleton.TEMPLATE_ENTRIES + 6):
        skeleton.on_meta(nn.Linear, width, 2)
    assert skeleton.templates() == skeleton.TEMPLATE_ENTRIES


def test_copies_made_at_once_by_many_threads_are_each_their_own():
    args = (3, 4, 6, 0.0, 2, False)
    copies = from_threads(lambda: skeleton.on_meta(M.MultiHeadAttention, *args), 16)
    assert len({id(m) for m in copies}) == 16
    assert len({id(m._parameters) for m in copies}) == 16
    assert len({id(m.W_query) for m in copies}) == 16


def test_the_largest_template_fits_its_byte_bound_and_the_cap_is_in_the_server_bound():
    widest, heads, context = int(BOUNDS["d_in"][1]), int(BOUNDS["num_heads"][1]), 1024
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        skeleton.on_meta(M.MultiHeadAttentionWrapper, widest, widest, context, 0.5, heads, True)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 0 < held <= skeleton.TEMPLATE_BYTES, held
    bound = budget.server_bound()
    assert bound["cache: module templates"] == skeleton.TEMPLATE_ENTRIES * skeleton.TEMPLATE_BYTES


def test_a_small_template_is_drawn_for_real_without_touching_the_global_stream(monkeypatch):
    # Small modules are cheaper to build for real than on the meta device; their weights are
    # drawn under seeded(None), so the process's own random stream does not move.
    args = (3, 4, 6, 0.0, 2, False)
    assert skeleton._elements(M.MultiHeadAttention, args) <= skeleton.REAL_BUILD_ELEMENTS
    locked = []
    real_seeded = skeleton.seeded

    def watching(seed):
        locked.append(seed)
        return real_seeded(seed)

    monkeypatch.setattr(skeleton, "seeded", watching)
    before = torch.get_rng_state()
    copy = skeleton.on_meta(M.MultiHeadAttention, *args)
    assert torch.equal(torch.get_rng_state(), before)
    assert locked == [None]
    assert all(p.is_meta for p in copy.parameters()) and copy.mask.is_meta


@pytest.mark.parametrize(
    ("cls", "args"),
    [
        (M.MultiHeadAttention, (768, 768, 1024, 0.1, 12, True)),  # GPT-2 small's width
        (M.MultiHeadAttentionWrapper, (64, 16, 256, 0.0, 32, True)),  # 32 heads, each a mask
        (nn.MultiheadAttention, (768, 12)),
    ],
    ids=lambda c: getattr(c, "__name__", ""),
)
def test_a_wide_template_is_built_on_the_meta_device(cls, args, monkeypatch):
    built = []
    monkeypatch.setattr(skeleton, "seeded", lambda seed: built.append(seed))  # must not be used
    elements = skeleton._elements(cls, args)
    assert elements is not None and elements > skeleton.REAL_BUILD_ELEMENTS
    with seeded(0):
        real = sum(t.numel() for t in cls(*args).state_dict().values())
    assert elements >= real  # the estimate is from above
    copy = skeleton.on_meta(cls, *args)
    assert not built and all(p.is_meta for p in copy.parameters())


@pytest.mark.parametrize(("cls", "args"), CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_the_estimate_of_a_small_module_is_from_above(cls, args):
    with seeded(0):
        real = sum(t.numel() for t in cls(*args).state_dict().values())
    assert real <= skeleton._elements(cls, args) <= skeleton.REAL_BUILD_ELEMENTS


def test_a_masked_shell_serves_every_context_length_and_rate_from_one_template():
    shells = [
        skeleton.masked_shell(M.MultiHeadAttentionWrapper, 3, 2, context, rate, 2, False)
        for context, rate in ((6, 0.0), (32, 0.5), (1024, 0.1))
    ]
    assert skeleton.templates() == 1
    for shell, rate in zip(shells, (0.0, 0.5, 0.1), strict=True):
        assert [h.dropout.p for h in shell.heads] == [rate, rate]
        assert all(h.mask.is_meta and h.mask.shape == (1, 1) for h in shell.heads)
    assert shells[0].heads[0].dropout is not shells[1].heads[0].dropout


def test_a_filled_masked_shell_computes_what_the_module_built_for_real_computes():
    with seeded(0):
        real = M.MultiHeadAttention(3, 4, 6, 0.25, 2, True).eval()
    shell = skeleton.masked_shell(M.MultiHeadAttention, 3, 4, 6, 0.25, 2, True)
    assert shell.dropout.p == 0.25
    assert_computes_as(filled(shell, real), real)
