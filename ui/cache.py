"""Caches keyed by plain values (text, settings tuple), never by tensors.

Traces and figures are immutable values shared by every session, so they are held once per
process (no copy on every read, unlike ``st.cache_data``) in memos bounded in entries and in
bytes (``ui/memo.py``; the caps are in ``attnviz/budget.py``). Concurrent first calls with the
same key wait for one computation.
"""

from __future__ import annotations

import streamlit as st

from attnviz import budget, lesson
from attnviz.settings import Settings
from attnviz.tokens import get_tokenizer

from .memo import Memo

# Memory bound (see attnviz/budget.py): every shared cache is capped in bytes (and in entries).
# Light traces are small (their whole request is predicted under budget.HEAVY_BYTES); heavy ones
# can reach tens of MB each, so they get a cache of their own and cannot push out the light ones.
CAPS = budget.CACHE_BYTES
TRACE_ENTRIES = 256
HEAVY_TRACE_ENTRIES = 16
FIGURE_ENTRIES = 1024

_inputs = Memo(2 * TRACE_ENTRIES, CAPS["inputs"], "inputs")
_light = Memo(TRACE_ENTRIES, CAPS["light traces"], "light traces")
_heavy = Memo(HEAVY_TRACE_ENTRIES, CAPS["heavy traces"], "heavy traces")
# For derived values a page computes from traces (figures, tables, check results): keyed by the
# same plain values, shared read-only between sessions.
derived = Memo(FIGURE_ENTRIES, CAPS["derived"], "derived")
MEMOS = (_inputs, _light, _heavy, derived)


def clear_all() -> None:
    """Empty every shared cache (tests that need a cold start)."""
    for memo in MEMOS:
        memo.clear()


@st.cache_resource(show_spinner=False)
def tokenizer():
    """Loaded once per process (cache, then a bounded download, then the fallback)."""
    return get_tokenizer()


def settings_of(key: tuple) -> Settings:
    return Settings(*key)


def prepared(text: str, settings_key: tuple, book: bool) -> lesson.Prepared:
    """Tokens and X for a text. X reads only the text, d_in, the embedding seed and the token
    cap, so every other setting is dropped from the key: one entry serves every pass."""
    key = (text, settings_of(settings_key).for_pass("simplified").key(), book)
    return _inputs.get(("prepared", key), _prepare, key)


def _prepare(text: str, settings_key: tuple, book: bool) -> lesson.Prepared:
    return lesson.prepare(text, settings_of(settings_key), book)


def batch(text: str, text2: str, settings_key: tuple, book: bool) -> lesson.PreparedBatch:
    key = (text, text2, settings_key, book)
    return _inputs.get(("batch", key), _prepare_batch, key)


def _prepare_batch(text: str, text2: str, settings_key: tuple, book: bool):
    return lesson.prepare_batch(text, text2, settings_of(settings_key), book)


def batch_trace(text: str, text2: str, settings_key: tuple, book: bool):
    """Pass 3 on the batch of the two sidebar texts (book mode: two copies of the inputs)."""
    key = (text, text2, settings_key, book)
    tokens = batch(*key).num_tokens
    return _traced(settings_key, tokens, ("batch", key), _compute_batch_trace, key)


def _compute_batch_trace(text: str, text2: str, settings_key: tuple, book: bool):
    return lesson.causal_batch(
        batch(text, text2, settings_key, book), settings_of(settings_key), book
    )


def trace(kind: str, text: str, settings_key: tuple, book: bool, variant: str = ""):
    """One pass's trace. ``kind``: simplified, trainable, causal, multihead, wrapper."""
    key = (kind, text, settings_key, book, variant)
    tokens = prepared(text, settings_key, book).num_tokens
    return _traced(settings_key, tokens, ("trace", key), _compute_trace, key)


def _traced(settings_key: tuple, tokens: int, key: tuple, compute, args: tuple):
    if not budget.is_heavy(settings_of(settings_key), tokens):
        return _light.get(key, compute, args)
    if key in _heavy:
        return _heavy.get(key, compute, args)
    with st.spinner("Computing large attention maps…"):
        return _heavy.get(key, compute, args)


def _compute_trace(kind: str, text: str, settings_key: tuple, book: bool, variant: str):
    s = settings_of(settings_key)
    prep = prepared(text, settings_key, book)
    if kind in ("causal", "multihead", "wrapper"):
        prep, _ = lesson.within_context(prep, s.context_length)
    if kind == "simplified":
        return lesson.simplified(prep)
    if kind == "trainable":
        return lesson.trainable(prep, s, variant or "v2")
    if kind == "causal":
        if variant == "train":  # the dropout lab: training mode at the sidebar's rate and seed
            s = s.with_changes(training=True)
        return lesson.causal(prep, s)
    if kind == "multihead":
        return lesson.multihead(prep, s)
    if kind == "wrapper":
        return lesson.wrapper(prep, s)
    raise ValueError(kind)
