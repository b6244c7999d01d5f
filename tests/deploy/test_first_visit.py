"""A light first visit: through deploy/haproxy.cfg (Debian's haproxy, on loopback) in Chromium,
the bytes on the wire of a first visit to a lesson link and of a second visit in the same
browser (bench/first_visit.py counts them from the browser's own network log).

Streamlit 1.67 serves its static files uncompressed. The balancer serves them itself, gzipped
at level 9 when the image was built (deploy/static.lua, a folder made by attnviz/deploy/precompress.py
as in Compose), where its own on-the-fly compressor (libslz, the only one in Debian's build and
the official image) left the JavaScript at 45 % of its size. Measured (bench/first_visit.py,
2026-12-01): 10.03 MB straight to the server, 3.49 MB through HAProxy (JavaScript 2.71, fonts
0.69, already compressed, websocket 0.08); with on-the-fly compression only it was 4.98 MB.
FIRST_VISIT_MB is issue 22's target, 3.5 MB: the measured first visit, 3,486,098 B, is only
13,902 B (0.4 %) under it, so a Streamlit upgrade with larger bundles fails this test (as it
should: the target is then missed).
"""

from __future__ import annotations

import fcntl
import os
import pickle
from contextlib import ExitStack

import pytest

from bench import first_visit, live
from bench.support.browser import chromium
from bench.support.haproxy import running_haproxy

# Issue 22's target (measured 3.49 MB, module docstring). Markdown that carries HTML loads one
# more bundle (rehype-raw, about 60 KB gzipped): the live checks' folds once did, and the first
# visit read 3,522,494 B; they go through st.html now (tests/test_structure.py keeps it so).
FIRST_VISIT_MB = 3.5
SECOND_VISIT_MB = 0.2  # measured 0.08 MB: the page's HTML and its websocket
TEXT_TYPES = ("javascript", "css", "html", "json", "svg")


def measure_visits(blackhole, artifacts) -> tuple[first_visit.Visit, first_visit.Visit]:
    with ExitStack() as stack:
        app = stack.enter_context(live.attnviz_server(name="first-visit"))
        proxy = stack.enter_context(
            running_haproxy(app.url, app.url, artifacts / "first-visit-haproxy.log")
        )
        browser = stack.enter_context(chromium(blackhole.port))
        first, second = first_visit.two_visits(browser, proxy + first_visit.LESSON)
    print("\n" + first_visit.HEADER + "\n" + first_visit.describe("HAProxy", first, second))
    return first, second


@pytest.fixture(scope="module")
def visits(blackhole, artifacts, tmp_path_factory):
    """The two visits, measured once per test run: the serial run spreads this module's tests
    over several workers (pytest-xdist), and a deployment and a browser take a minute to start,
    so the first worker to get here measures (under a file lock) and the others read its result
    from the run's shared temporary folder."""
    base = tmp_path_factory.getbasetemp()  # a new folder each run
    # Under xdist each worker's base is a folder of the run's own (popen-gw0, ...).
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with open(shared / "first-visit.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        kept = shared / "first-visit.pickle"
        if kept.exists():
            return pickle.loads(kept.read_bytes())
        result = measure_visits(blackhole, artifacts)
        kept.write_bytes(pickle.dumps(result))
        return result


def test_the_first_visit_through_haproxy_is_compressed_and_light(visits):
    first, _ = visits
    fetched = first.over_network()
    text = [f for f in fetched if any(t in f.mime for t in TEXT_TYPES) and f.wire > 1000]
    assert len(text) > 20  # Streamlit's bundles, Plotly's chart bundle among them
    assert any("PlotlyChart" in f.url for f in text)
    assert [f.url for f in text if f.encoding != "gzip"] == []
    js = [f for f in text if "javascript" in f.mime]
    wire, decoded = sum(f.wire for f in js), sum(f.decoded for f in js)
    assert decoded > 8e6  # the ~9.2 MB of JavaScript a first visit needs
    # gzip -9 from the balancer's memory (measured 29 %); on-the-fly libslz 45 %.
    assert wire < 0.35 * decoded, (wire, decoded)
    assert first.total < FIRST_VISIT_MB * 1e6, first_visit.mb(first.total)


def test_compressed_static_files_keep_streamlits_immutable_cache_headers(visits):
    first, _ = visits
    static = [f for f in first.over_network() if f.static and f.encoding == "gzip"]
    assert static
    for f in static:
        assert f.headers.get("cache-control") == "public, immutable, max-age=31536000", f.url
        assert "accept-encoding" in f.headers.get("vary", "").lower(), f.url


def test_a_second_visit_fetches_no_static_file_again(visits):
    first, second = visits
    assert [f.url for f in second.over_network() if f.static] == []
    assert sum(1 for f in second.fetches.values() if f.static and f.from_cache) > 20
    assert second.total < SECOND_VISIT_MB * 1e6, first_visit.mb(second.total)
    assert second.total < first.total / 20
