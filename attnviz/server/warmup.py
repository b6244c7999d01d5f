"""Ready means warm: a fresh server says it is ready only once every page has run once.

A server that has just started has imported nothing heavy yet (torch, Plotly, the pages'
modules, Streamlit's own element code) and holds nothing in its caches, so the first students'
page runs pay for all of it, each several times the cost of a run on a server that has taught
for an hour. The deployment's readiness check (Streamlit's script health check,
``/_stcore/script-health-check``, which runs ``app.py`` once in a session of its own and answers
200, or 503 when the run raised) is what decides when students are sent to a server; this
module is the bookkeeping behind its answer:

- :class:`Warmup` lists the pages still to run. Each health-check run of a server not yet warm
  :meth:`claims <Warmup.claim>` one page and runs it at its defaults, then reports it
  :meth:`finished <Warmup.finish>`. The server is :attr:`~Warmup.ready` when every page has run
  once without an error; until then every health-check run ends by raising :class:`NotReady`,
  so the check answers 503.
- :func:`drive` asks the check again and again from a thread of the server's own, one request
  at a time, so the pages are run one after another right after the first check, instead of
  one per probe period. It stops once the server is ready, or when the warm-up gave up.

No Streamlit here: ``ui/entry.py`` tells a health-check run from a student's and runs the
claimed page (app.py).
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, deque
from collections.abc import Callable, Sequence

ENDPOINT = "/_stcore/script-health-check"  # Streamlit's script health check, under the base path
ATTEMPTS = 3  # runs of one page that may raise before the warm-up gives up on the server
DRIVE_SECONDS = 600.0  # the longest the server asks itself (then the probes go on alone)
REQUEST_SECONDS = 75.0  # one check: Streamlit waits up to 60 s for its run

_log = logging.getLogger(__name__)


class NotReady(Exception):
    """Raised at the end of a health-check run while the server is not warm yet (the check
    answers 503); its message says how far the warm-up is."""


class Warmup:
    """The runs a fresh server still has to make once (each a page, named by its URL path, ""
    for the home page, maybe with a mark of its own such as ``?changed``: ui/entry.py), which
    are running now, and which have run."""

    def __init__(self, pages: Sequence[str], attempts: int = ATTEMPTS) -> None:
        if not pages:
            raise ValueError("a warm-up needs at least one page")
        self.pages = tuple(dict.fromkeys(pages))  # in order, each once
        self.attempts = attempts
        self._waiting: deque[str] = deque(self.pages)
        self._running: set[str] = set()
        self._done: set[str] = set()
        self._errors: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self.seconds: float | None = None  # from the first check to ready

    def claim(self) -> str | None:
        """The next page to run once (it is then running), or None when every page has been
        claimed (or the warm-up gave up)."""
        with self._lock:
            if self._gave_up() or not self._waiting:
                return None
            page = self._waiting.popleft()
            self._running.add(page)
            return page

    def finish(self, page: str, ok: bool) -> None:
        """``page``'s run ended: ``ok`` when it ran to its end (a page that stops itself early,
        as a page does in presenter mode, has run too). A run that raised puts the page back
        at the head of the queue, up to :data:`attempts` runs in all."""
        with self._lock:
            if page not in self._running:
                return
            self._running.discard(page)
            if ok:
                self._done.add(page)
                if self.ready and self.seconds is None:
                    self.seconds = time.monotonic() - self.started
                    _log.warning(
                        "attnviz is warm: %d page runs made in %.1f s",
                        len(self.pages),
                        self.seconds,
                    )
                return
            self._errors[page] += 1
            if self._errors[page] >= self.attempts:
                _log.error(
                    "warm-up: page %r raised %d times; the server stays not ready",
                    page,
                    self.attempts,
                )
            else:
                self._waiting.appendleft(page)

    @property
    def ready(self) -> bool:
        """Every page has run once without an error."""
        return len(self._done) == len(self.pages)

    def _gave_up(self) -> bool:
        return any(n >= self.attempts for n in self._errors.values())

    @property
    def gave_up(self) -> bool:
        """A page raised in every one of its attempts: the server will not become ready."""
        with self._lock:
            return self._gave_up()

    @property
    def settled(self) -> bool:
        """Ready, or given up: nothing more to run."""
        return self.ready or self.gave_up

    def progress(self) -> str:
        with self._lock:
            done, total = len(self._done), len(self.pages)
            failed = [p or "home" for p, n in self._errors.items() if n >= self.attempts]
        # a run of the home page is named by its mark alone ("?changed")
        failed = [p if not p.startswith("?") else "home" + p for p in failed]
        if failed:
            return f"the warm-up gave up: {', '.join(failed)} raised {self.attempts} times"
        return f"warming up: {done} of {total} page runs made"

    def not_ready(self) -> NotReady:
        return NotReady(f"attnviz is not ready yet ({self.progress()})")


def drive(
    warmup: Warmup,
    url: str,
    *,
    seconds: float = DRIVE_SECONDS,
    request_seconds: float = REQUEST_SECONDS,
    fetch: Callable[[str, float], int] | None = None,
    pause: float = 0.5,
) -> int:
    """Ask the health check at ``url`` until ``warmup`` is settled or ``seconds`` have passed,
    one request at a time (each runs one page); returns the number of requests made. A check
    that answers 503 (the server not warm yet) is asked again at once; one that cannot be
    reached is asked again after ``pause`` seconds."""
    fetch = fetch or _status
    deadline = time.monotonic() + seconds
    asked = 0
    while not warmup.settled and time.monotonic() < deadline:
        asked += 1
        try:
            fetch(url, request_seconds)
        except OSError as err:  # not listening, refused, timed out: ask again a moment later
            _log.info("warm-up: %s did not answer (%s)", url, err)
            time.sleep(pause)
    return asked


def _status(url: str, timeout: float) -> int:
    """GET ``url`` straight (no proxy: it is this server's own address); its HTTP status."""
    handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
    if url.startswith("https:"):  # its own certificate, maybe for another name: loopback
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        handlers.append(urllib.request.HTTPSHandler(context=context))
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(url, timeout=timeout) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


# --- once per process ------------------------------------------------------------------------
_lock = threading.Lock()
_current: Warmup | None = None


def begin(pages: Sequence[str], url: str, *, drive_it: bool = True) -> Warmup:
    """This process's warm-up, made at the first call (and, with ``drive_it``, driven from a
    daemon thread that asks the health check at ``url``); later calls return the same one."""
    global _current
    with _lock:
        if _current is None:
            _current = Warmup(pages)
            if drive_it:
                threading.Thread(
                    target=drive, args=(_current, url), name="attnviz-warmup", daemon=True
                ).start()
        return _current


def current() -> Warmup | None:
    """This process's warm-up, None before the first health check."""
    return _current
