"""Process-wide runtime settings for the server: how many threads torch may use per operation.

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

import logging
import os
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
