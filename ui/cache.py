"""Caches keyed by plain values (text, the frozen Settings, book mode), never by tensors.

Traces and figures are immutable values shared by every session, so they are held once per
process (no copy on every read, unlike ``st.cache_data``) in memos bounded in entries and in
bytes (``ui/memo.py``; the caps are in ``attnviz/server/budget.py``). Concurrent first calls with the
same key wait for one computation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import ExitStack, contextmanager
from typing import TypeVar

import pandas as pd
import pyarrow as pa
import streamlit as st

from attnviz.core.book import SETTINGS as BOOK_SETTINGS
from attnviz.core.settings import Settings
from attnviz.core.tokens import get_tokenizer
from attnviz.models import implementations as impl
from attnviz.server import budget
from attnviz.teach import prepare
from attnviz.teach.panel import Panel, View, viewed
from ui.memo import Memo

# Memory bound (see attnviz/server/budget.py): every shared cache is capped in bytes (and in entries).
# Light traces are small (their whole request is predicted under budget.HEAVY_BYTES); heavy ones
# can reach tens of MB each, so they get a cache of their own and cannot push out the light ones.
CAPS = budget.CACHE_BYTES
TRACE_ENTRIES = 256
HEAVY_TRACE_ENTRIES = 16
FIGURE_ENTRIES = 1024

_inputs = Memo(2 * TRACE_ENTRIES, CAPS["inputs"], "inputs")
_light = Memo(TRACE_ENTRIES, CAPS["light traces"], "light traces")
_heavy = Memo(HEAVY_TRACE_ENTRIES, CAPS["heavy traces"], "heavy traces", long_work=True)
# For derived values a page computes from traces (figures, tables, check results): keyed by the
# same plain values, shared read-only between sessions.
Built = TypeVar("Built")
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


def prepared(text: str, settings: Settings, book: bool) -> prepare.Prepared:
    """Tokens and X for a text. X reads only the text, d_in, the embedding seed, the token
    cap and whether the weights are trained (then X is the trained model's embedding), so
    every other setting is dropped from the key: one entry serves every pass."""
    key = (text, settings.for_pass("inputs"), book)
    prep = _inputs.get(("prepared", key), prepare.prepare, key)
    _take_heavy_slot(_costed(settings, book), prep.num_tokens)  # a pass page asks for it first
    return prep


def batch(text: str, text2: str, settings: Settings, book: bool) -> prepare.PreparedBatch:
    key = (text, text2, settings, book)
    return _inputs.get(("batch", key), prepare.prepare_batch, key)


def batch_trace(text: str, text2: str, settings: Settings, book: bool):
    """Pass 3 on the batch of the two sidebar texts (book mode: two copies of the inputs)."""
    key = (text, text2, settings, book)
    tokens = batch(*key).num_tokens
    return _traced(_costed(settings, book), tokens, ("batch", key), _compute_batch_trace, key)


def _compute_batch_trace(text: str, text2: str, settings: Settings, book: bool):
    return prepare.causal_batch(batch(text, text2, settings, book), settings, book)


def trace(kind: str, text: str, settings: Settings, book: bool, variant: str = ""):
    """One pass's trace. ``kind``: simplified, trainable, causal, multihead, wrapper."""
    key = (kind, text, settings, book, variant)
    tokens = prepared(text, settings, book).num_tokens
    return _traced(_costed(settings, book), tokens, ("trace", key), _compute_trace, key)


def checked_trace(text: str, settings: Settings, book: bool):
    """The multi-head trace the live checks read: eval mode, where the chapter's claims hold
    (the sidebar's trace itself unless training mode is on)."""
    return trace("multihead", text, _eval(settings), book)


def references(text: str, settings: Settings, book: bool) -> impl.References:
    """What the multi-head checks compare :func:`checked_trace` with (PyTorch's attention, the
    wrapper, our module on a changed input), computed once per setting and cached like a trace:
    pages 4 and 6 read it, so building their lessons runs no forward."""
    key = (text, _eval(settings), book)
    tokens = prepared(text, settings, book).num_tokens
    cost = _costed(key[1], book)
    return _traced(cost, tokens, ("references", key), _compute_references, key)


def _eval(settings: Settings) -> Settings:
    return settings.with_changes(training=False) if settings.training else settings


def _compute_references(text: str, settings: Settings, book: bool) -> impl.References:
    return impl.references(checked_trace(text, settings, book))


# --- heavy requests ---------------------------------------------------------------------------
# A page run that asks for a heavy trace (cached or not) takes one of budget.HEAVY_SLOTS slots
# and holds it until the run ends (the figures drawn from that trace cost memory too). The
# slot follows the trace actually asked for, so book mode (the book's small sizes, whatever
# the sidebar says) and pages that run no pass never take one.
_run = threading.local()


def _costed(settings: Settings, book: bool) -> Settings:
    """The sizes a request really computes at: book mode keys on the defaults but runs the
    book's 6×3 inputs and arguments."""
    return BOOK_SETTINGS if book else settings


@contextmanager
def page_run():
    """Wrap one page run (app.py): releases the heavy slot the run took, if any."""
    with ExitStack() as stack:
        _run.stack, _run.heavy = stack, False
        try:
            yield
        finally:
            _run.stack = None


def _take_heavy_slot(settings: Settings, tokens: int) -> None:
    """Take a slot for this page run if ``settings`` at ``tokens`` is heavy and it holds none.
    Pages ask for their inputs (:func:`prepared`) before any derived value, so the slot is
    taken before any memo's per-key lock is held."""
    stack = getattr(_run, "stack", None)
    if stack is None or _run.heavy:  # outside a page run (tests, benchmarks), or held already
        return
    if budget.is_heavy(settings, tokens):
        _run.heavy = stack.enter_context(budget.heavy_slot(settings, tokens))  # or ServerBusy


def _traced(cost: Settings, tokens: int, key: tuple, compute, args: tuple):
    if not budget.is_heavy(cost, tokens):
        return _light.get(key, compute, args)
    _take_heavy_slot(cost, tokens)
    if key in _heavy:
        return _heavy.get(key, compute, args)
    with st.spinner("Computing large attention maps…"):
        return _heavy.get(key, compute, args)


def _compute_trace(kind: str, text: str, settings: Settings, book: bool, variant: str):
    s = settings
    prep = prepared(text, settings, book)
    if kind in ("causal", "multihead", "wrapper"):
        prep, _ = prepare.within_context(prep, s.context_length)
    if kind == "simplified":
        return prepare.simplified(prep)
    if kind == "trainable":
        return prepare.trainable(prep, s, variant or "v2")
    if kind == "causal":
        if variant == "train":  # the dropout lab: training mode at the sidebar's rate and seed
            s = s.with_changes(training=True)
        return prepare.causal(prep, s)
    if kind == "multihead":
        return prepare.multihead(prep, s)
    if kind == "wrapper":
        return prepare.wrapper(prep, s)
    raise ValueError(kind)


def lesson_of(key: tuple, build: Callable[[], Built]) -> Built:
    """A page's lesson object (its panels, checks and claims), built once per ``key`` (plain
    values: the page's name, text, settings, book flag ...) and shared read-only by every
    session. ``build`` fetches the traces it needs from this module and calls the engine."""
    return derived.get(("lesson", *key), build)


def arrow_table(key: tuple, name: str, make: Callable[[], pd.DataFrame]) -> pa.Table:
    """The table ``name`` of the lesson stored under ``key`` (``make`` builds it as a DataFrame,
    on a miss only) as an Arrow table made once and shared, its index left out: for
    ``st.dataframe(..., hide_index=True)``. Given a DataFrame, ``st.dataframe`` converts it to
    Arrow on every run, warm or cold; given this, it only writes it out."""
    return derived.get(
        ("arrow", *key, name),
        # nthreads=1: Arrow's thread pool costs more than it saves on a lesson's small tables
        # (0.4 against 1.1 ms for page 4's strides), and the server has other sessions' runs
        # to serve; the table is the same, pandas metadata included.
        lambda: pa.Table.from_pandas(make(), preserve_index=False, nthreads=1),
    )


def panel_view(panel: Panel, view: View) -> Panel | None:
    """``panel`` as the page's ``view`` shows it (None: unchanged), built once per panel
    (its serial number, never reused) and view, and shared read-only by every session."""
    return derived.get(("panel view", panel.serial, panel.key, view), viewed, (panel, view))
