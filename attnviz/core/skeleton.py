"""Modules on PyTorch's meta device, built once per class and arguments, handed out as copies.

The references the checks compare against (our module holding a trace's weights, the wrapper
holding its head slices, ``nn.MultiheadAttention``) are modules on the meta device then given
real tensors. Building on the meta device runs the module's ``__init__`` under a device mode that
sends every tensor operation through PyTorch's Python reference implementations: about a
millisecond a module, on every cold page run. The structure only depends on the class and the
constructor's arguments, so :func:`on_meta` builds it once (a template: a small module is built
for real, which is cheaper, then moved to the meta device) and hands each caller a copy of its
structure: new module objects with their own parameter, buffer and child tables, which the
caller fills with its tensors. The templates are never changed after they are built
(every assignment goes to a copy's own tables), so sessions share them without a lock beyond the
table's own.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

import torch
from torch import nn

from attnviz.core import modules as chapter
from attnviz.core.seeding import seeded

AnyModule = TypeVar("AnyModule", bound=nn.Module)

TEMPLATE_ENTRIES = 16  # distinct (class, arguments) kept; a class uses a few at a time
# Bytes one template holds: Python objects only (meta tensors have no storage). The largest the
# app can build, a 32-head wrapper at the widest sizes, measured 0.53 MB with tracemalloc (torch's
# first-use caches included; tests/engine/test_skeleton.py checks this bound).
TEMPLATE_BYTES = 1024 * 1024

_templates: OrderedDict[tuple, nn.Module] = OrderedDict()
_lock = threading.Lock()

# A module's own containers: each copy gets new ones, so nothing it registers reaches the
# template. (The hook tables stay empty here; copies get their own all the same.)
_TABLES = ("_parameters", "_buffers", "_modules")


def on_meta(cls: type[AnyModule], *args) -> AnyModule:
    """A new ``cls(*args)`` on the meta device, ready to be given real tensors: a copy of the
    template for (``cls``, ``args``), built the first time they are asked for."""
    key = (cls, args)
    with _lock:
        template = _templates.get(key)
        if template is not None:
            _templates.move_to_end(key)
    if template is None:
        template = _template(cls, args)
        with _lock:
            _templates[key] = template
            while len(_templates) > TEMPLATE_ENTRIES:
                _templates.popitem(last=False)
    return _copy(template)  # type: ignore[return-value]


def masked_shell(cls: type[AnyModule], d_in, d_out, context_length, dropout, *rest) -> AnyModule:
    """``on_meta(cls, d_in, d_out, context_length, dropout, *rest)`` for a caller that gives
    every mask buffer a tensor of its own (the references: a trace's mask): one template serves
    every context length and dropout rate, since neither changes the structure. The copy's
    masks are 1x1 meta tensors until the caller sets them (a forward before fails loudly) and
    its dropout modules have ``p = dropout``. A class's students each pick a dropout rate: keyed
    by it, a template would be rebuilt for most cold runs (about 2% of a class's CPU)."""
    return with_dropout(on_meta(cls, d_in, d_out, 1, 0.0, *rest), dropout)


def with_dropout(module: AnyModule, p: float) -> AnyModule:
    """``module`` (a copy: its children are its own) with every ``nn.Dropout``'s rate ``p``,
    checked as ``nn.Dropout`` checks it when built (a kept build may have been built at another
    rate, so its own check is not this rate's)."""
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    for m in module.modules():
        if isinstance(m, nn.Dropout):
            m.p = p
    return module


def _copy(module: nn.Module) -> nn.Module:
    new = object.__new__(type(module))
    state = dict(module.__dict__)
    for name, value in state.items():
        if name not in _TABLES and isinstance(value, (dict, set, list)):
            # hook tables and the like: never shared. Their own .copy() is copy.copy's shallow
            # copy of the same type, without the pickle protocol (5x faster on a module's ~12)
            state[name] = value.copy()
    state["_parameters"] = dict(module._parameters)
    state["_buffers"] = dict(module._buffers)
    state["_modules"] = {
        name: None if child is None else _copy(child) for name, child in module._modules.items()
    }
    new.__dict__.update(state)
    return new


# A template is built where it is cheaper, and ends on the meta device either way. A small module
# built for real and moved to the meta device costs 0.16-0.38 ms (its weights drawn under
# seeding.seeded(None): locked, the global stream untouched); on the meta device, 0.24-1.7 ms,
# most of it the causal mask's torch.triu in PyTorch's Python reference kernels. A class changes
# sizes often (each student's own d_out and heads), so misses are common. Wide modules (GPT-2
# small's width: 16 ms to draw) are built on the meta device.
REAL_BUILD_ELEMENTS = 65_536  # tensor elements (256 kB of float32) a real build may draw


def _template(cls: type[AnyModule], args: tuple) -> AnyModule:
    elements = _elements(cls, args)
    if elements is not None and elements <= REAL_BUILD_ELEMENTS:
        with seeded(None):
            built = cls(*args)
        return built.to(device="meta")
    with torch.device("meta"):
        return cls(*args)


def _elements(cls: type, args: tuple) -> int | None:
    """About how many tensor elements ``cls(*args)`` holds, from above; None when unknown."""
    if issubclass(cls, nn.MultiheadAttention):
        widths = [a for a in (args[:1] + args[6:8]) if isinstance(a, int)]
        return 4 * max(widths) ** 2 + 4 * max(widths) if widths else None
    if len(args) < 3 or not all(type(a) is int for a in args[:3]):
        return None
    d_in, d_out, context = args[:3]
    # the chapter's modules: (d_in, d_out, context_length, dropout, [num_heads], qkv_bias); the
    # wrapper holds a CausalAttention (three projections and a mask) per head
    wrapper = issubclass(cls, chapter.MultiHeadAttentionWrapper)
    copies = args[4] if wrapper and len(args) > 4 else 1
    if type(copies) is not int:
        return None
    return copies * (3 * d_in * d_out + 3 * d_out + context * context) + d_out * d_out + d_out


# --- modules as their seed builds them -------------------------------------------------------
# A module built under a seed (ModuleSpec.build) gets the same weights every time, and a class
# builds the same few (a page's pass at the sidebar's sizes, the checks' copies of it) for every
# new text. The first build of each is kept (never handed out), and every build, the first
# included, is a copy of its structure given clones of its parameters and buffers: 0.2 against
# 0.5 ms for page 3's CausalAttention, built eight times a cold run. Two tables keep them: the
# small modules of the lesson pages (up to INITIAL_MAX_BYTES of tensors, INITIAL_ENTRIES of them)
# and a few wide ones (up to WIDE_MAX_BYTES, WIDE_ENTRIES of them), such as the trained-heads
# page's random head at GPT-2 small's width: 13.4 MB of weights and mask whose seeded draw costs
# 11-20 ms on every new text, against about 3 ms for the clones. Larger modules are built
# directly each time.
INITIAL_ENTRIES = 16
INITIAL_MAX_BYTES = 128 * 1024  # tensors; a kept module's Python objects are within TEMPLATE_BYTES
WIDE_ENTRIES = 3
WIDE_MAX_BYTES = 16 * 1024 * 1024
_built: OrderedDict[Hashable, nn.Module] = OrderedDict()
_built_wide: OrderedDict[Hashable, nn.Module] = OrderedDict()
# (table, the most tensor bytes a module in it holds, how many it keeps), smallest first
_KEPT = ((_built, INITIAL_MAX_BYTES, INITIAL_ENTRIES), (_built_wide, WIDE_MAX_BYTES, WIDE_ENTRIES))


def seeded_build(key: Hashable, make: Callable[[], AnyModule]) -> AnyModule:
    """The module ``make()`` builds (a module under a seed: the same weights every time),
    without building it again for the same ``key``."""
    kept = None
    with _lock:
        for table, _, _ in _KEPT:
            kept = table.get(key)
            if kept is not None:
                table.move_to_end(key)
                break
    if kept is None:
        kept = make()
        size = sum(t.nbytes for t in kept.state_dict().values())
        fits = [(table, entries) for table, most, entries in _KEPT if size <= most]
        if not fits:
            return kept  # too large to keep: built each time
        table, entries = fits[0]
        with _lock:
            table[key] = kept
            while len(table) > entries:
                table.popitem(last=False)
    return _with_clones(_copy(kept))  # type: ignore[return-value]


def _with_clones(module: nn.Module) -> nn.Module:
    """``module`` (a structure copy: its tables are its own) with clones of its tensors in
    place of the kept module's."""
    for m in module.modules():
        for name, p in m._parameters.items():
            if p is not None:
                m._parameters[name] = nn.Parameter(p.detach().clone(), p.requires_grad)
        for name, b in m._buffers.items():
            if b is not None:
                m._buffers[name] = b.clone()
    return module


def templates() -> int:
    """How many templates are held (for tests)."""
    with _lock:
        return len(_templates)


def kept_builds() -> int:
    """How many seeded modules are kept (for tests)."""
    with _lock:
        return len(_built) + len(_built_wide)


def kept_wide_builds() -> int:
    """How many of them are wide (for tests)."""
    with _lock:
        return len(_built_wide)


def clear() -> None:
    with _lock:
        _templates.clear()
        _built.clear()
        _built_wide.clear()
