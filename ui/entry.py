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

Ready means warm (:func:`health_check`): where the deployment turns Streamlit's script health
check on, a fresh server answers it 503 until every page has run once at its defaults, each in
a health-check run of its own (attnviz/server/warmup.py).
"""

from __future__ import annotations

import runpy
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when first needed: importing attnviz loads torch, and a page's
    # first line imports this module before app.py has drawn the navigation
    from attnviz.server import warmup

# Per script thread: each session's run has its own thread, so one session's frame never
# covers another's page.
_local = threading.local()


@contextmanager
def app_frame() -> Iterator[None]:
    """app.py runs its page inside this block; a page outside it is running alone."""
    outer = getattr(_local, "inside", False)
    _local.inside = True
    try:
        yield
    finally:
        _local.inside = outer


def inside_app() -> bool:
    return getattr(_local, "inside", False)


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


# --- ready means warm --------------------------------------------------------------------------
def is_health_check_run() -> bool:
    """Whether this run is Streamlit's script health check (its endpoint answers where
    ``server.scriptHealthCheckEnabled`` is on): the check runs app.py in a session of its
    own that no browser opened, so its run has no request headers, where every student's run
    has those of its websocket. (AppTest's runs have none either; they are never the check.)"""
    import streamlit as st

    if not st.get_option("server.scriptHealthCheckEnabled") or st.get_option("global.appTest"):
        return False
    return len(st.context.headers) == 0


def health_check_url() -> str:
    """Where this server answers its script health check, from its own address."""
    import streamlit as st

    from attnviz.server import warmup

    address = (st.get_option("server.address") or "").strip()
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(address, address)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    scheme = "https" if st.get_option("server.sslCertFile") else "http"
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    prefix = f"/{base}" if base else ""
    return f"{scheme}://{host}:{st.get_option('server.port')}{prefix}{warmup.ENDPOINT}"


# After every page at its defaults, every page once more with the values a class changes first
# moved off their defaults (a sentence of its own, the widths and heads, training mode and its
# dropout, a seed), as a link would carry them: code that only such runs reach (training-mode
# dropout, other head counts) is then loaded too. Each value inside the sidebar's bounds.
CHANGED = "?changed"
CHANGED_VALUES = {
    "text": "Every student types a sentence of their own",
    "d_out": "12",
    "heads": "3",
    "train": "true",
    "dropout": "0.3",
    "wseed": "7",
}


def warm_up_runs(url_paths: list[str]) -> list[str]:
    """The health-check runs a fresh server makes before it is ready: every page at its
    defaults, then every page with :data:`CHANGED_VALUES` (named ``<url_path>?changed``)."""
    return [*url_paths, *(p + CHANGED for p in url_paths)]


@dataclass(frozen=True)
class HealthCheck:
    """A health-check run on a server that is not warm yet: ``page`` is the URL path of the
    page it runs once ("" the home page; None when every page is claimed already and it runs
    the home page only to answer), ``pages`` what it gives st.navigation so that this page is
    the one the run opens."""

    warm: warmup.Warmup
    run: str | None  # the warm-up's name for this run: the page, maybe with CHANGED
    pages: list[Any]

    @property
    def page(self) -> str | None:
        return None if self.run is None else self.run.removesuffix(CHANGED)


def health_check(pages: list[Any]) -> HealthCheck | None:
    """For the script health check's run on a server not yet warm, which page to run; None for
    every other run (a student's, any run once the server is warm, and everywhere the check is
    off). The first health check of a process starts its warm-up (attnviz/server/warmup.py):
    from then on the server asks its own check once per page, one after another.

    The check's run opens the default page; to run another page once, that page goes first in
    the list of pages and the default one is left out (its hidden alias stays, so links to the
    home page still resolve), and st.navigation takes the first page as the default."""
    if not is_health_check_run():
        return None
    from attnviz.server import warmup

    menu = [p for p in pages if p.visibility == "visible"]
    warm = warmup.begin(warm_up_runs([p.url_path for p in menu]), health_check_url())
    if warm.ready:
        return None
    run = warm.claim()
    page = None if run is None else run.removesuffix(CHANGED)
    if not page:  # the home page, or nothing left to claim: the app's own list
        return HealthCheck(warm, run, pages)
    first = next(p for p in menu if p.url_path == page)
    return HealthCheck(warm, run, [first, *(p for p in pages if p is not first and p.url_path)])


@contextmanager
def health_check_turn(check: HealthCheck | None) -> Iterator[None]:
    """Around a health-check run's page: the page it ran is counted once it ran to its end (or
    stopped itself, as st.stop and st.rerun do: it ran as far as it goes), and the run ends by
    raising :class:`~attnviz.server.warmup.NotReady` while the server is not warm yet, so the
    check answers 503. Nothing for any other run."""
    if check is None:
        yield
        return
    if check.run is not None and check.run.endswith(CHANGED):
        import streamlit as st

        st.query_params.from_dict(CHANGED_VALUES)  # read by the frame as a link's values
    ok = False
    try:
        yield
        ok = True
    except Exception:
        raise
    except BaseException:  # Streamlit's stop and rerun: the run is over, without an error
        ok = True
        raise
    finally:
        if check.run is not None:
            check.warm.finish(check.run, ok)
        if not check.warm.ready:
            raise check.warm.not_ready()  # in place of a stop, too: the check must answer 503
