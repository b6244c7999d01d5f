"""Keep every page inside app.py's frame, even on a fresh server's first visit.

Streamlit decides once per process, before any script has run, whether the app uses the legacy
``pages/`` folder: it does whenever a ``pages/`` folder sits beside ``app.py``. Until the first
run calls ``st.navigation``, a visit is resolved against that folder's file names, and the
file it finds runs alone, without ``app.py`` (no sidebar, no settings).

Two rules together make that first visit clean, whatever serves the app (``streamlit run``, the
image with or without its health check, a proxy, Kubernetes):

1. Each page file is named after its URL path (``pages/causal-attention.py`` is served at
   ``/causal-attention``). The legacy lookup then finds the same page, with the same page id,
   that ``app.py`` registers, so no "Page not found" is ever sent.
2. Each page file starts with ``entry.guard(__file__)``. When the page runs alone, the guard
   runs ``app.py`` in its place, in the same run: ``app.py`` switches the process to its own
   navigation, draws the sidebar and runs the page. Inside ``app.py`` (every later run of a
   server; every AppTest run goes the legacy way first) it does nothing.

Adding a page: create ``pages/<url-path>.py`` starting with the two guard lines, and add
``st.Page("pages/<url-path>.py", title=..., url_path="<url-path>")`` to ``PAGES`` in app.py.
"""

from __future__ import annotations

import runpy
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# Per script thread: each session's run has its own thread, so one session's frame never
# covers another's page.
_local = threading.local()


@contextmanager
def app_frame(page: str = "") -> Iterator[None]:
    """app.py runs its page inside this block; a page outside it is running alone. ``page``:
    the url_path of the page this run shows (:func:`current_page`)."""
    outer = getattr(_local, "inside", False), getattr(_local, "page", "")
    _local.inside, _local.page = True, page
    try:
        yield
    finally:
        _local.inside, _local.page = outer


def inside_app() -> bool:
    return getattr(_local, "inside", False)


def current_page() -> str:
    """The url_path of the page this thread's run shows ("" outside app.py's frame)."""
    return getattr(_local, "page", "")


def guard(page_file: str) -> None:
    """First line of every page: a page that runs without app.py runs app.py instead.

    app.py's ``st.navigation`` (public API) switches the whole process from the legacy
    ``pages/`` lookup to the app's own pages, replacing the file-name list in the sidebar, and
    runs this same page (same URL path, same page id) inside its frame. ``st.stop`` then ends
    the outer, frameless run. All of it happens in the run the visitor asked for, so nothing it
    carried (the link's settings, a pressed button) is lost.
    """
    if inside_app():
        return
    import streamlit as st

    app = Path(page_file).resolve().parents[1] / "app.py"  # pages/<url-path>.py sits beside it
    runpy.run_path(str(app), run_name="__main__")
    st.stop()
