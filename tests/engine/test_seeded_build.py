"""ModuleSpec.build through attnviz.core.skeleton.seeded_build: a module its seed builds is built once
per spec and handed out as copies with their own tensors, equal to a fresh build."""

from __future__ import annotations

import tracemalloc

import pytest
import torch

from attnviz.core import modules as M
from attnviz.core import skeleton
from attnviz.core.seeding import seeded
from attnviz.core.trace import ModuleSpec
from attnviz.server import budget
from tests.threads import from_threads


@pytest.fixture(autouse=True)
def empty():
    skeleton.clear()
    yield
    skeleton.clear()


SPECS = [
    ModuleSpec("v1", 3, 2, seed=123),
    ModuleSpec("v2", 3, 2, qkv_bias=True, seed=789),
    ModuleSpec("causal", 8, 8, 32, 0.1, seed=123),
    ModuleSpec("wrapper", 8, 4, 32, 0.5, num_heads=2, qkv_bias=True, seed=7),
    ModuleSpec("mha", 8, 8, 32, 0.1, num_heads=4, seed=123),
]


def fresh(spec: ModuleSpec) -> torch.nn.Module:
    """The module built the plain way: its class under its seed."""
    cls, args = spec._class_and_args()
    return spec._seeded(cls, args)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.kind)
def test_every_build_equals_a_fresh_one_and_owns_its_tensors(spec):
    reference = fresh(spec)
    built = [spec.build() for _ in range(3)]
    assert skeleton.kept_builds() == 1
    for module in built:
        assert type(module) is type(reference) and module.training
        assert list(module.state_dict()) == list(reference.state_dict())
        theirs = reference.state_dict()
        for name, a in module.state_dict().items():
            assert torch.equal(a, theirs[name]), name
        assert all(p.requires_grad for p in module.parameters())
    # No two builds share a tensor or a table, so a change to one reaches no other.
    pointers = [{t.data_ptr() for t in m.state_dict().values()} for m in built]
    assert not pointers[0] & pointers[1] and not pointers[1] & pointers[2]
    with torch.no_grad():
        for p in built[0].parameters():
            p.add_(1.0)
    again = spec.build()
    for a, b in zip(again.parameters(), reference.parameters(), strict=True):
        assert torch.equal(a, b)


def test_the_seed_is_part_of_the_key():
    a = ModuleSpec("causal", 8, 8, 32, 0.1, seed=1).build()
    b = ModuleSpec("causal", 8, 8, 32, 0.1, seed=2).build()
    assert skeleton.kept_builds() == 2
    assert not torch.equal(a.W_query.weight, b.W_query.weight)


def test_a_wide_module_is_kept_in_the_wide_table():
    wide = ModuleSpec("causal", 128, 128, 256, 0.0, seed=123)  # 3 x 64 kB + a 256 kB mask
    assert torch.equal(wide.build().W_key.weight, fresh(wide).W_key.weight)
    assert skeleton.kept_builds() == skeleton.kept_wide_builds() == 1
    again = wide.build()
    assert torch.equal(again.W_key.weight, fresh(wide).W_key.weight)
    assert skeleton.kept_builds() == 1


def test_the_trained_pages_random_head_is_kept():
    # GPT-2 small's width, as ui/trained.random_settings builds it: 13.4 MB of weights and mask.
    gpt2 = ModuleSpec("mha", 768, 768, 1024, 0.0, num_heads=12, qkv_bias=True, seed=123)
    size = sum(t.nbytes for t in fresh(gpt2).state_dict().values())
    assert skeleton.INITIAL_MAX_BYTES < size <= skeleton.WIDE_MAX_BYTES
    first, second = gpt2.build(), gpt2.build()
    assert skeleton.kept_wide_builds() == 1
    assert first.W_query.weight is not second.W_query.weight
    assert torch.equal(second.W_query.weight, fresh(gpt2).W_query.weight)


def test_a_module_over_the_wide_cap_is_built_each_time_and_not_kept():
    huge = ModuleSpec("v2", 1200, 1200, seed=123)  # 3 x 5.8 MB
    assert torch.equal(huge.build().W_key.weight, fresh(huge).W_key.weight)
    assert skeleton.kept_builds() == 0


def test_the_wide_table_keeps_at_most_its_entries():
    for width in range(128, 128 + skeleton.WIDE_ENTRIES + 2):
        ModuleSpec("v1", width, 256, seed=123).build()  # 2 x 128 kB and more: over the small cap
    assert skeleton.kept_wide_builds() == skeleton.WIDE_ENTRIES


def test_the_cache_keeps_at_most_its_entries():
    for width in range(1, skeleton.INITIAL_ENTRIES + 5):
        ModuleSpec("v1", 3, width, seed=123).build()
    assert skeleton.kept_builds() == skeleton.INITIAL_ENTRIES


def test_threads_building_the_same_spec_each_get_their_own_equal_module():
    spec = SPECS[-1]
    reference = fresh(spec)
    modules = from_threads(spec.build, 12)
    assert len({id(m) for m in modules}) == 12
    for m in modules:
        assert torch.equal(m.out_proj.weight, reference.out_proj.weight)


def test_the_largest_kept_module_fits_its_bound_and_the_cap_is_in_the_server_bound():
    # 32 heads of context 30: the most objects a module under the tensor cap can carry.
    spec = ModuleSpec("wrapper", 16, 1, 30, 0.5, num_heads=32, qkv_bias=True, seed=123)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        spec.build()
        objects = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert skeleton.kept_builds() == 1
    tensors = sum(t.nbytes for t in fresh(spec).state_dict().values())
    assert tensors <= skeleton.INITIAL_MAX_BYTES
    assert 0 < objects <= skeleton.TEMPLATE_BYTES, objects
    bound = budget.server_bound()
    assert bound["cache: seeded modules"] == skeleton.INITIAL_ENTRIES * (
        skeleton.INITIAL_MAX_BYTES + skeleton.TEMPLATE_BYTES
    ) + skeleton.WIDE_ENTRIES * (skeleton.WIDE_MAX_BYTES + skeleton.TEMPLATE_BYTES)


@pytest.mark.parametrize("kind", ["causal", "wrapper", "mha"])
def test_one_kept_build_serves_every_dropout_rate_each_copy_with_its_own(kind):
    # nn.Dropout draws nothing when built, so the seed's weights are the same at every rate.
    specs = [ModuleSpec(kind, 8, 4, 32, rate, num_heads=2, seed=11) for rate in (0.1, 0.5, 0.0)]
    built = [spec.build() for spec in specs]
    assert skeleton.kept_builds() == 1
    for spec, module in zip(specs, built, strict=True):
        reference = fresh(spec)
        rates = [m.p for m in module.modules() if isinstance(m, torch.nn.Dropout)]
        assert rates and set(rates) == {spec.dropout}
        assert rates == [m.p for m in reference.modules() if isinstance(m, torch.nn.Dropout)]
        theirs = reference.state_dict()
        for name, tensor in module.state_dict().items():
            assert torch.equal(tensor, theirs[name]), name
    # each build's dropout modules are its own: a build at 0.5 leaves the 0.1 build at 0.1,
    # and the kept build (shared by every thread) keeps the rate it was built at
    kept = [m for table, _, _ in skeleton._KEPT for m in table.values()]
    assert [{m.p for m in k.modules() if isinstance(m, torch.nn.Dropout)} for k in kept] == [{0.1}]
    assert {m.p for m in built[0].modules() if isinstance(m, torch.nn.Dropout)} == {0.1}


def test_the_dropout_rate_still_drops_in_training_mode():
    spec = ModuleSpec("causal", 8, 8, 32, 0.5, seed=123)
    spec_off = ModuleSpec("causal", 8, 8, 32, 0.0, seed=123)
    off = spec_off.build().train()
    half = spec.build().train()
    assert skeleton.kept_builds() == 1
    x = torch.ones(1, 6, 8)
    with seeded(0):  # the project's one locked way to seed the dropout draw
        dropped = half(x)
    assert torch.equal(off(x), off(x))  # rate 0: no randomness at all
    assert not torch.equal(dropped, off(x))


@pytest.mark.parametrize("rate", [-0.1, 1.5])
def test_a_rate_outside_0_to_1_is_refused_whether_the_build_is_kept_or_not(rate):
    with pytest.raises(ValueError, match="between 0 and 1"):
        ModuleSpec("causal", 8, 8, 32, rate, seed=123).build()  # cold
    ModuleSpec("causal", 8, 8, 32, 0.1, seed=123).build()
    with pytest.raises(ValueError, match="between 0 and 1"):
        ModuleSpec("causal", 8, 8, 32, rate, seed=123).build()  # its weights are kept now
    with pytest.raises(ValueError, match="between 0 and 1"):
        skeleton.masked_shell(M.MultiHeadAttention, 3, 4, 6, rate, 2, False)
