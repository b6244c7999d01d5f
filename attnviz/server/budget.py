"""Bounded cost: what the shared caches may hold, what one request may hold, and how many heavy
requests run at once.

The server's memory beyond its warm start is bounded by

    cache entries x entry size  +  (concurrent heavy requests) x one request's peak

Every shared cache (``ui/cache.py``) is capped in bytes, not only in entries: each entry is
measured with :func:`size_of` when it is stored, and the least recently used entries leave until
the cache fits its cap (:data:`CACHE_BYTES`). Every request's peak is predicted by
:func:`attnviz.core.settings.request_bytes` from its settings alone, and requests predicted above
:data:`HEAVY_BYTES` take one of :data:`HEAVY_SLOTS` slots, so a class dragging every slider to its
end at once queues instead of exhausting memory. :func:`server_bound` adds it up.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
import types
from collections.abc import Callable, Mapping
from contextlib import contextmanager

import torch

from attnviz.core import skeleton
from attnviz.core.settings import BOUNDS, Settings, request_bytes
from attnviz.models import gpt2 as pretrained
from attnviz.server import gate

HEAVY_BYTES = 48 * 2**20  # requests predicted above this are "heavy"
HEAVY_SLOTS = 2  # one per core: heavy requests are CPU-bound too
WAIT_SECONDS = 120.0

_slots = threading.BoundedSemaphore(HEAVY_SLOTS)

MB = 2**20
# A request's measured peak growth stays within this factor of request_bytes' prediction
# (tests/budget/test_budget.py runs every page at the worst settings to check it), so the bound
# below uses the prediction times this factor.
PREDICTION_MARGIN = 1.5
# Byte caps of the shared caches (ui/cache.py). Light traces are those of light requests (each
# under HEAVY_BYTES); heavy traces get a cache of their own so that one large trace cannot push
# out every small one. The caps hold dozens of default-size traces and at least four of the
# largest allowed ones (about 60 MB each at 1,600 wide, 32 heads, 256 tokens).
KB = 2**10
# Two small caches are Streamlit's st.cache_resource, kept for its spinner and for a waiting
# session that can still be stopped while a benchmark runs for a minute: it bounds entries, not
# bytes. Their entries are small results of a fixed shape (a few timings, checks and sentences),
# so each is capped at its entry count times a bound on one entry, which
# tests/budget/test_budget.py checks against real entries.
BENCH_RESULTS, BENCH_RESULT_BYTES = 16, 32 * KB  # page 6's benchmark (ui/models/comparison.py)
SPEED_REPORTS, SPEED_REPORT_BYTES = 32, 16 * KB  # page 4's wrapper-against-split timing
CACHE_BYTES = {
    "inputs": 32 * MB,  # tokens and X per text (1.6 MB at most each)
    "light traces": 192 * MB,  # and the references of light multi-head traces
    "heavy traces": 288 * MB,  # and the references of heavy ones
    "derived": 96 * MB,  # figures, tables and check results the pages derive from traces
    # Page 5's finished runs (ui/models/watch.py): 64 runs at the largest the page allows (1,000
    # steps, 4 heads) measured 126 kB each, 7.7 MB.
    "learn runs": 8 * MB,
    # Page 8's runs grown live (ui/models/growing.py): a 4,000-step run keeps a report every 25
    # steps and one per 0.4 s of training, each a few scores: under 1 MB even for a minute's
    # run (tests/induction/test_grow_page.py measures them), so at least 8 such runs fit.
    "grown runs": 8 * MB,
    "benchmark results": BENCH_RESULTS * BENCH_RESULT_BYTES,
    # The meta-device modules the references are copied from (attnviz/core/skeleton.py).
    "module templates": skeleton.TEMPLATE_ENTRIES * skeleton.TEMPLATE_BYTES,
    # The modules their seed builds, kept once each (attnviz/core/skeleton.py): tensors and objects.
    "seeded modules": skeleton.INITIAL_ENTRIES
    * (skeleton.INITIAL_MAX_BYTES + skeleton.TEMPLATE_BYTES)
    + skeleton.WIDE_ENTRIES * (skeleton.WIDE_MAX_BYTES + skeleton.TEMPLATE_BYTES),
    "wrapper timings": SPEED_REPORTS * SPEED_REPORT_BYTES,
}


def worst_settings() -> Settings:
    """The largest sizes the settings allow (heads dividing d_out), training with dropout and
    biases on: the most a single request can cost."""
    d_out = int(BOUNDS["d_out"][1])
    heads = max(h for h in range(1, int(BOUNDS["num_heads"][1]) + 1) if d_out % h == 0)
    return Settings(
        d_in=int(BOUNDS["d_in"][1]),
        d_out=d_out,
        num_heads=heads,
        context_length=int(BOUNDS["context_length"][1]),
        dropout=0.1,
        qkv_bias=True,
        training=True,
    )


def server_bound(tokens: int | None = None, gpt2_folder: str | None = None) -> dict[str, int]:
    """Bytes the server may hold beyond its warm start (torch, tokenizer, code): every cache at
    its cap, plus :data:`HEAVY_SLOTS` requests at the worst allowed settings at once, plus, when
    GPT-2's weights are configured (``ATTNVIZ_GPT2_DIR``, or ``gpt2_folder``), the model, its
    caches and its forwards.
    Sessions themselves (about 1 MB each, measured by the load test) come on top."""
    s = worst_settings()
    parts = {f"cache: {name}": cap for name, cap in CACHE_BYTES.items()}
    peak = PREDICTION_MARGIN * predicted_bytes(s, tokens or s.max_tokens)
    parts["heavy requests"] = int(HEAVY_SLOTS * peak)
    folder = gpt2_folder if gpt2_folder is not None else pretrained.weights_folder()
    if folder and not pretrained.missing_files(folder):  # the trained-heads page can load it
        parts |= pretrained.memory_bound(folder, tokens or s.max_tokens)
    parts["total"] = sum(parts.values())
    return parts


_SHARED_OBJECTS = (
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    type,
)


_ATOMS = (str, bytes, int, float, bool, type(None))
_ATOM_TYPES = frozenset(_ATOMS)


# How size_of measures each type, decided once per type (the walk meets the same few types
# thousands of times a cold page run). A plain dict shared by every thread: an entry is written
# whole, and two threads deciding the same type write the same value.
_ATOM, _SEQ, _SKIP, _TENSOR, _SCALAR, _ARRAY, _FRAME, _MAP, _COLL, _DATA, _OBJ = range(11)
_kinds: dict[type, tuple[int, tuple[str, ...]]] = {}


def _kind_of(kind: type) -> tuple[int, tuple[str, ...]]:
    decided = _kinds.get(kind)
    if decided is not None:
        return decided
    names: tuple[str, ...] = ()
    if kind in _ATOMS:
        how = _ATOM
    elif kind is tuple or kind is list:
        how = _SEQ
    elif issubclass(kind, _SHARED_OBJECTS):  # code and classes are not the value's own
        how = _SKIP
    elif issubclass(kind, torch.Tensor):
        how = _TENSOR
    elif issubclass(kind, (str, bytes, bytearray, int, float, complex, bool)):
        how = _SCALAR
    elif hasattr(kind, "nbytes"):  # numpy arrays
        how = _ARRAY
    elif hasattr(kind, "memory_usage") and hasattr(kind, "columns"):  # pandas frames
        how = _FRAME
    elif issubclass(kind, Mapping):
        how = _MAP
    elif issubclass(kind, (list, tuple, set, frozenset)):
        how = _COLL
    elif dataclasses.is_dataclass(kind):
        how, names = _DATA, tuple(f.name for f in dataclasses.fields(kind))
    else:
        how = _OBJ
    _kinds[kind] = (how, names)
    return how, names


def _frame_bytes(frame) -> int:
    """A pandas DataFrame's bytes: each column's array, and for a column of Python objects
    each object too, plus a little per column. Within a few hundred bytes of
    ``memory_usage(deep=True)``, from above, and 2-4x faster on a lesson's small tables
    (0.10-0.18 against 0.36 ms; they are measured on every cold page run)."""
    total = 64 * (frame.shape[1] + 1) + int(frame.index.nbytes)
    for _, column in frame.items():
        values = column.array
        total += int(values.nbytes)
        if column.dtype == object:
            total += sum(map(sys.getsizeof, values))
    return total


def size_of(value) -> int:
    """Bytes a cached value holds: tensor and array storage (each storage counted once), text,
    and the containers, dataclasses and objects around them. An estimate from above for the
    numbers (it counts a view's whole storage), close for the Python objects.

    It runs on every value a shared cache stores (every lesson, panel view and chart's JSON of a
    cold page run), so how to measure a type is decided once per type (:func:`_kind_of`), and a
    tuple or dict of plain numbers and strings (a panel's labels) is measured in one pass."""
    seen: set[int] = set()
    storages: set[tuple[int, int]] = set()
    getsizeof = sys.getsizeof
    atoms = _ATOM_TYPES

    def walk(v) -> int:
        kind = type(v)
        if kind in atoms:
            return getsizeof(v)
        if id(v) in seen:
            return 0
        seen.add(id(v))
        how, names = _kinds.get(kind) or _kind_of(kind)
        # Plain numbers and strings inside a container are measured where they stand, without a
        # call each: a chart's spec is dozens of small dicts and lists of them.
        if how == _SEQ or how == _COLL:
            if set(map(type, v)) <= atoms:
                return getsizeof(v) + sum(map(getsizeof, v))
            total = getsizeof(v)
            for x in v:
                total += getsizeof(x) if type(x) in atoms else walk(x)
            return total
        if how == _DATA:
            total = getsizeof(v)
            for name in names:
                x = getattr(v, name)
                total += getsizeof(x) if type(x) in atoms else walk(x)
            return total
        if how == _MAP:
            total = getsizeof(v)
            if not set(map(type, v)) <= atoms:
                return total + sum(walk(k) + walk(x) for k, x in v.items())
            total += sum(map(getsizeof, v))
            values = v.values()
            if set(map(type, values)) <= atoms:
                return total + sum(map(getsizeof, values))
            for x in values:
                total += getsizeof(x) if type(x) in atoms else walk(x)
            return total
        if how == _TENSOR:
            storage = v.untyped_storage()
            key = (storage.data_ptr(), storage.nbytes())
            if key in storages:
                return 0
            storages.add(key)
            return storage.nbytes() + 80
        if how == _SKIP:
            return 0
        if how == _SCALAR:
            return getsizeof(v)
        if how == _ARRAY:
            nbytes = getattr(v, "nbytes", None)
            return nbytes + 112 if isinstance(nbytes, int) else getsizeof(v)
        if how == _FRAME:
            return _frame_bytes(v)
        if hasattr(v, "__dict__"):
            return getsizeof(v) + walk(vars(v))
        return getsizeof(v)

    return walk(value)


class ServerBusy(RuntimeError):
    """Raised when a heavy request waited too long for a slot."""


def predicted_bytes(settings: Settings, tokens: int) -> int:
    return request_bytes(settings, tokens)["total"]


def is_heavy(settings: Settings, tokens: int) -> bool:
    return predicted_bytes(settings, tokens) > HEAVY_BYTES


@contextmanager
def heavy_slot(settings: Settings, tokens: int):
    """Run a block; if its predicted cost is heavy, first wait for one of the heavy slots."""
    if not is_heavy(settings, tokens):
        yield False
        return
    gate.give_up()  # a heavy run's length is bounded by these slots, not by the page turns
    if not _slots.acquire(timeout=WAIT_SECONDS):
        raise ServerBusy(
            f"The server is busy with other large computations; waited {WAIT_SECONDS:.0f} s. "
            "Try again, or use smaller sizes."
        )
    try:
        yield True
    finally:
        _slots.release()


@contextmanager
def heavy_work(waiting: Callable[[float], None] | None = None, seconds: float = WAIT_SECONDS):
    """Hold one of the :data:`HEAVY_SLOTS` slots for heavy work that is not a page's trace (a
    model growing live on page 8), waiting up to ``seconds`` for one, else :class:`ServerBusy`.
    ``waiting(waited)`` is called about once a second while it waits (a page says so, and its
    session can be stopped there)."""
    gate.give_up()
    start = time.monotonic()
    while not _slots.acquire(timeout=1.0):
        waited = time.monotonic() - start
        if waited >= seconds:
            raise ServerBusy(
                f"The server is busy with other large computations; waited {waited:.0f} s. "
                "Try again in a moment."
            )
        if waiting is not None:
            waiting(waited)
    try:
        yield
    finally:
        _slots.release()
