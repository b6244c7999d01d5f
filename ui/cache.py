"""Caches keyed by plain values (text, settings tuple), never by tensors.

Traces and figures are immutable values shared by every session, so they are held in
``st.cache_resource`` (no copy on every read, unlike ``st.cache_data``) with a bounded number of
entries. Concurrent first calls with the same key wait for one computation.
"""

from __future__ import annotations

import streamlit as st

from attnviz import budget, lesson
from attnviz.settings import Settings
from attnviz.tokens import get_tokenizer

from .memo import Memo

# Memory bound (see attnviz/budget.py): light traces are small (their whole request is predicted
# under budget.HEAVY_BYTES), heavy ones can reach hundreds of MB, so they get few entries.
TRACE_ENTRIES = 48
HEAVY_TRACE_ENTRIES = 4
FIGURE_ENTRIES = 512


@st.cache_resource(show_spinner=False)
def tokenizer():
    """Loaded once per process (cache, then a bounded download, then the fallback)."""
    return get_tokenizer()


def settings_of(key: tuple) -> Settings:
    return Settings(*key)


def prepared(text: str, settings_key: tuple, book: bool) -> lesson.Prepared:
    """Tokens and X for a text. X reads only the text, d_in, the embedding seed and the token
    cap, so every other setting is dropped from the key: one entry serves every pass."""
    return _prepared(text, settings_of(settings_key).for_pass("simplified").key(), book)


@st.cache_resource(max_entries=TRACE_ENTRIES, show_spinner=False)
def _prepared(text: str, settings_key: tuple, book: bool) -> lesson.Prepared:
    return lesson.prepare(text, settings_of(settings_key), book)


@st.cache_resource(max_entries=TRACE_ENTRIES, show_spinner=False)
def batch(text: str, text2: str, settings_key: tuple, book: bool) -> lesson.PreparedBatch:
    return lesson.prepare_batch(text, text2, settings_of(settings_key), book)


@st.cache_resource(max_entries=TRACE_ENTRIES, show_spinner=False)
def batch_trace(text: str, text2: str, settings_key: tuple, book: bool):
    """Pass 3 on the batch of the two sidebar texts (book mode: two copies of the inputs)."""
    return lesson.causal_batch(
        batch(text, text2, settings_key, book), settings_of(settings_key), book
    )


def trace(kind: str, text: str, settings_key: tuple, book: bool, variant: str = ""):
    """One pass's trace. ``kind``: simplified, trainable, causal, multihead, wrapper."""
    tokens = prepared(text, settings_key, book).num_tokens
    if budget.is_heavy(settings_of(settings_key), tokens):
        return _heavy_trace(kind, text, settings_key, book, variant)
    return _light_trace(kind, text, settings_key, book, variant)


@st.cache_resource(max_entries=TRACE_ENTRIES, show_spinner=False)
def _light_trace(kind: str, text: str, settings_key: tuple, book: bool, variant: str):
    return _compute_trace(kind, text, settings_key, book, variant)


@st.cache_resource(max_entries=HEAVY_TRACE_ENTRIES, show_spinner="Computing large attention maps…")
def _heavy_trace(kind: str, text: str, settings_key: tuple, book: bool, variant: str):
    return _compute_trace(kind, text, settings_key, book, variant)


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


# For derived values a page computes from traces (figures, tables, check results): keyed by the
# same plain values, shared read-only between sessions.
derived = Memo(FIGURE_ENTRIES)
