"""Page 6's shared results: ours beside PyTorch's, and the speed comparison.

Both are values shared read-only by every session, keyed by plain values.

The benchmark takes seconds (tens of seconds at the book's shape), so it runs only when a student
presses a button, and its result is shared: every session asking for the same shape reads the
one result, and a class pressing the button together runs it once. ``st.cache_resource`` gives
exactly that. Keyed on the plain shape tuple, it holds one value per key for the whole process,
and for concurrent first calls Streamlit 1.67's ``streamlit/runtime/caching/cache_utils.py``
(``CachedFunc._handle_cache_miss``) takes a per-key lock (``cache.compute_value_lock(value_key)``)
and reads the cache again once it holds it ("double-checked locking"): the first caller
computes, the others wait on that lock and then read its result (a waiting session can still be
stopped or rerun: ``_hold_compute_lock`` polls). A request for a different shape waits in
``attnviz.models.implementations`` instead, which runs one benchmark at a time so that two measurements
never slow each other down.
"""

from __future__ import annotations

import streamlit as st

from attnviz.core.settings import Settings
from attnviz.models import implementations as impl
from attnviz.server import budget
from attnviz.teach.lessons import pytorch as lessons
from ui import cache

# Benchmark results are a few numbers, checks and sentences each: bounded by their count
# (attnviz.server.budget counts RESULT_ENTRIES x BENCH_RESULT_BYTES in the server's memory bound).
RESULT_ENTRIES = budget.BENCH_RESULTS


@st.cache_resource(
    max_entries=RESULT_ENTRIES,
    show_spinner="Verifying every implementation, then timing them interleaved (up to a minute "
    "at large shapes)…",
)
def measured(shape: tuple) -> impl.BenchResult:
    """The benchmark at ``shape`` = (batch, tokens, d_in, d_out, num_heads, qkv_bias)."""
    return impl.benchmark(shape)


def lesson(text: str, settings: Settings, book: bool, training: bool) -> lessons.PytorchLesson:
    """Page 6's lesson object, built once per plain key and shared by every session. It reads
    the eval-mode trace and its references from ``ui.cache`` (shared with page 4): building it
    runs no forward."""

    def build() -> lessons.PytorchLesson:
        trace = cache.checked_trace(text, settings, book)
        side = impl.side_from(trace, cache.references(text, settings, book))
        return lessons.lesson(trace, side, training=training, book=book)

    return cache.lesson_of(("pytorch", text, settings, book, training), build)


def head_panels(les: lessons.PytorchLesson, key: tuple, head: int):
    """One head's weight panels, built once per page key and head."""
    return cache.lesson_of(("pytorch head", *key, head), lambda: lessons.head_panels(les, head))


def speed(shape: tuple) -> lessons.SpeedView:
    """The benchmark at ``shape`` (measured once per process) as the page shows it."""
    return lessons.speed_view(measured(shape))
