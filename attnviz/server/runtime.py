"""Process-wide runtime settings for the server: how many threads torch may use per operation,
and how the C allocator hands large tensors' memory back (:func:`configure_memory`).

Every student's session is a thread of one Python process, and ``torch.set_num_threads`` is
process-wide, so it is set once, at import of the app, never per session. The default is 1:
with 50 concurrent sessions on two cores, 2 threads gave no more throughput and no lower
latency than 1 (``bench/loadtest-results.md``, ``bench/loadtest-threads.md``): the server is held
at one busy core by Python (page scripts, Plotly's JSON, Streamlit), not by torch's kernels, and
one thread per operation keeps a large request from taking both cores.

``ATTNVIZ_TORCH_THREADS``: a positive integer; ``auto`` leaves torch's own choice (one thread per
core, or ``OMP_NUM_THREADS``). Anything else falls back to the default with a logged warning.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import os
import sys
import threading

ENV = "ATTNVIZ_TORCH_THREADS"
DEFAULT_THREADS = 1  # measured with bench/loadtest.py --threads 1,2 (see the docstring)

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_configured: int | None = None


def threads_from_env(value: str | None) -> int | None:
    """The thread count ``value`` asks for; ``None`` for torch's own choice."""
    if value is None or value.strip() == "":
        return DEFAULT_THREADS
    text = value.strip().lower()
    if text == "auto":
        return None
    try:
        threads = int(text)
    except ValueError:
        threads = 0
    if threads < 1 or threads > 256:
        _log.warning("%s=%r is not a positive thread count; using %d", ENV, value, DEFAULT_THREADS)
        return DEFAULT_THREADS
    return threads


def configure_threads() -> int:
    """Apply ``ATTNVIZ_TORCH_THREADS`` once per process; later calls change nothing.

    Returns the number of intra-op threads torch uses.
    """
    global _configured
    with _lock:
        if _configured is None:
            import torch

            threads = threads_from_env(os.environ.get(ENV))
            if threads is not None and torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
            _configured = torch.get_num_threads()
        return _configured


# --- memory ------------------------------------------------------------------------------------
# glibc's mallopt parameter number for M_MMAP_THRESHOLD (malloc.h).
M_MMAP_THRESHOLD = -3
# Blocks of at least this many bytes get pages of their own (mmap), handed back when freed.
MMAP_THRESHOLD = 1 << 20
# Where an operator sets the threshold themselves (glibc reads them at start): then it is left
# as they set it.
MALLOC_ENV = ("MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")
_TUNABLE = "glibc.malloc.mmap_threshold"
_memory_configured = False
_mmap_threshold: int | None = None


def configure_memory() -> int | None:
    """Fix glibc's mmap threshold at :data:`MMAP_THRESHOLD` (1 MiB), once per process; returns
    the threshold set, or None where it was left alone (not glibc, or set by ``MALLOC_ENV``).

    torch takes a CPU tensor's memory from ``malloc``. glibc gives blocks above its mmap
    threshold pages of their own and unmaps them on ``free``, but by default it raises that
    threshold to the size of every such block freed (up to 32 MiB): after the first large tensor
    of a request is freed, the next ones of up to 32 MiB come from the heap, and a freed heap
    block stays in the process's memory for reuse, where later allocations may or may not fit.
    Page 4 at the largest sizes (``tests/budget``, tensors of 1.6 to 10 MB) measured a peak
    growth of 553-815 MiB in four runs of the same code with glibc's default, 366-372 MiB with a
    fixed threshold. A fixed threshold turns that adjustment off, so a freed tensor's memory goes
    back to the system at once (at the cost of one mmap per tensor of 1 MiB or more).
    """
    global _memory_configured, _mmap_threshold
    with _lock:
        if not _memory_configured:
            _memory_configured = True
            _mmap_threshold = _set_mmap_threshold(MMAP_THRESHOLD)
        return _mmap_threshold


_heap_frozen = False


def freeze_startup_heap() -> bool:
    """Move every object alive now into Python's permanent generation (``gc.freeze()``), once
    per process; True the one time it does.

    app.py calls it after its first page run, when torch, pandas, Plotly, Streamlit and every
    page's modules are imported: some 400,000 objects that live as long as the server. Without
    it each full collection walks all of them (about 170 ms on this two-core machine), and a
    class's cold runs, which fill the caches with new long-lived objects, start one every few
    dozen page runs. Frozen, they are never scanned again; what the caches and sessions make
    later is collected as before. (Streamlit's own post-run collection stays off:
    .streamlit/config.toml.)"""
    global _heap_frozen
    with _lock:
        if _heap_frozen:
            return False
        _heap_frozen = True
    gc.collect()  # what the start-up left as garbage goes first, rather than staying forever
    gc.freeze()
    return True


def glibc() -> bool:
    """Whether this process runs on glibc (Linux's usual C library), whose allocator
    :func:`configure_memory` tunes."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (OSError, ValueError):  # musl and others do not name themselves here
        return False


def _set_mmap_threshold(size: int) -> int | None:
    operator = os.environ.get(MALLOC_ENV[0]) or _TUNABLE in os.environ.get(MALLOC_ENV[1], "")
    if operator or not glibc():
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        ok = libc.mallopt(ctypes.c_int(M_MMAP_THRESHOLD), ctypes.c_int(size))
    except (OSError, AttributeError):
        return None
    if not ok:
        _log.warning("mallopt(M_MMAP_THRESHOLD, %d) was refused; the default stays", size)
        return None
    return size
