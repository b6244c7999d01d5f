"""The balancer serves Streamlit's static files gzipped at build time (deploy/static.lua), for
real on loopback: Debian's haproxy runs deploy/haproxy.cfg in front of one attnviz server (its
address on both server lines), once with a folder made by attnviz/deploy/precompress.py from this
venv's Streamlit (as the Compose balancer holds the app image's) and once without one.

Checked: a held file comes back gzip-encoded from HAProxy's memory, decompresses to exactly the
bytes the replica serves for that path, with the replica's content type and Streamlit's
immutable cache-control; a client that does not take gzip, a HEAD, and a path not held (a
made-up fingerprint) get the replica's own answer; without the folder HAProxy compresses on the
way out as before (and worse); the folder is the installed Streamlit's files.
(tests/deploy/test_haproxy.py checks the websocket, the sticky cookie and the CSV downloads
through the same config and folder; tests/deploy/test_first_visit.py the bytes in Chromium.)
"""

from __future__ import annotations

import gzip
import re
import urllib.error
import urllib.request
from contextlib import ExitStack

import pytest

from attnviz.deploy import precompress
from bench import live
from bench.support import haproxy

IMMUTABLE = "public, immutable, max-age=31536000"
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch(url: str, accept_encoding: str | None = "gzip, deflate", method: str = "GET"):
    """(status, body as sent, headers with lower-case names), never through a proxy. urllib
    sends ``Accept-Encoding: identity`` when none is given here."""
    request = urllib.request.Request(url, method=method)
    if accept_encoding is not None:
        request.add_header("Accept-Encoding", accept_encoding)
    try:
        with _NO_PROXY.open(request, timeout=30) as response:
            status, body, headers = response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        status, body, headers = error.code, error.read(), error.headers
    return status, body, {k.lower(): v for k, v in headers.items()}


class Setup:
    def __init__(self, replica: str, held: str, plain: str, held_log):
        self.replica = replica  # the attnviz server, straight
        self.held = held  # HAProxy with the precompressed folder
        self.plain = plain  # HAProxy without it
        self.held_log = held_log
        self.folder = haproxy.precompressed_static()
        self.manifest = precompress.read_manifest(self.folder)


@pytest.fixture(scope="module")
def setup(artifacts):
    with ExitStack() as stack:
        app = stack.enter_context(live.attnviz_server(name="static-gz"))
        log = artifacts / "static-gz-haproxy.log"
        held = stack.enter_context(haproxy.running_haproxy(app.url, app.url, log))
        plain = stack.enter_context(
            haproxy.running_haproxy(
                app.url, app.url, artifacts / "static-gz-haproxy-plain.log", precompressed=False
            )
        )
        yield Setup(app.url, held, plain, log)


def sample_paths(setup: Setup) -> list[str]:
    """The page's own entry script, the largest held file, and one of each other kind held."""
    _, page, _ = fetch(setup.replica + "/", None)
    entry = re.search(rb'src="\./(static/js/index\.[^"]+\.js)"', page).group(1).decode()
    assert entry in setup.manifest
    largest = max(setup.manifest, key=lambda p: (setup.folder / (p + ".gz")).stat().st_size)
    by_kind = {p.rsplit(".", 1)[-1]: p for p in sorted(setup.manifest)}
    return sorted({entry, largest, *by_kind.values()})


def test_a_held_file_is_served_gzipped_by_the_balancer_as_the_replica_serves_it(setup):
    paths = sample_paths(setup)
    assert {p.rsplit(".", 1)[-1] for p in paths} >= {"js", "css"}
    for path in paths:
        status, body, through = fetch(f"{setup.held}/{path}")
        _, plain, direct = fetch(f"{setup.replica}/{path}", None)
        assert status == 200, path
        assert through["content-encoding"] == "gzip", path
        assert gzip.decompress(body) == plain, path
        # The bytes written at build time, not compressed again on the way out.
        assert body == (setup.folder / (path + ".gz")).read_bytes(), path
        assert int(through["content-length"]) == len(body)
        assert through["content-type"] == direct["content-type"], path
        assert through["cache-control"] == direct["cache-control"] == IMMUTABLE, path
        assert "accept-encoding" in through["vary"].lower()
        assert "set-cookie" not in through  # no replica involved, none to stick to
        assert len(body) < 0.5 * len(plain) or path.endswith(".svg"), (path, len(body))


def test_without_gzip_in_accept_encoding_or_with_head_the_replica_answers(setup):
    path = sample_paths(setup)[0]
    _, plain, direct = fetch(f"{setup.replica}/{path}", None)
    for accept in (None, "br", "identity"):
        status, body, through = fetch(f"{setup.held}/{path}", accept)
        assert status == 200, accept
        assert "content-encoding" not in through, accept
        assert body == plain, accept
        assert through["content-type"] == direct["content-type"]
        assert through.get("etag") == direct["etag"]  # the replica's own headers
    status, body, through = fetch(f"{setup.held}/{path}", "gzip", method="HEAD")
    assert status == 200 and body == b""
    assert through.get("etag") == direct["etag"]  # answered by the replica


def test_a_path_not_held_goes_to_the_replica(setup):
    """A fingerprint the folder does not have (another Streamlit version's, or made up): the
    replica answers as it always does. Streamlit 1.67 answers an unknown path with its
    index.html (200, no-cache), not a 404."""
    path = "static/js/index.00000000.js"
    assert path not in setup.manifest
    _, plain, direct = fetch(f"{setup.replica}/{path}", None)
    status, body, through = fetch(f"{setup.held}/{path}")
    assert status == 200 == fetch(f"{setup.replica}/{path}", None)[0]
    assert direct["content-type"].startswith("text/html")
    assert through["content-type"] == direct["content-type"]
    assert through["cache-control"] != IMMUTABLE
    decoded = gzip.decompress(body) if through.get("content-encoding") == "gzip" else body
    assert decoded == plain
    assert b"<html" in plain.lower()


def test_without_the_folder_haproxy_compresses_on_the_way_out_and_less(setup):
    path = max(setup.manifest, key=lambda p: (setup.folder / (p + ".gz")).stat().st_size)
    _, plain, _ = fetch(f"{setup.replica}/{path}", None)
    status, on_the_fly, through = fetch(f"{setup.plain}/{path}")
    assert status == 200 and through["content-encoding"] == "gzip"
    assert gzip.decompress(on_the_fly) == plain
    level9 = (setup.folder / (path + ".gz")).read_bytes()
    # libslz, HAProxy's stateless compressor, against gzip -9 at build time.
    assert len(on_the_fly) > 1.2 * len(level9), (len(on_the_fly), len(level9))
    print(f"\n{path}: {len(plain)} B, on the fly {len(on_the_fly)} B, gzip -9 {len(level9)} B")


def test_the_folder_is_the_installed_streamlits_text_files(setup):
    static = precompress.streamlit_static_dir()
    scripts = sorted(p.relative_to(static).as_posix() for p in static.glob("static/js/*.js"))
    held_scripts = [p for p in setup.manifest if p.endswith(".js")]
    assert len(held_scripts) > 0.9 * len(scripts)  # the rest save less than 10 %
    assert set(held_scripts) <= set(scripts)
    assert not [p for p in setup.manifest if not p.startswith("static/")]
    assert not [p for p in setup.manifest if p.endswith((".woff2", ".png", ".gif"))]
    for path in setup.manifest:
        packed = (setup.folder / (path + ".gz")).read_bytes()
        assert gzip.decompress(packed) == (static / path).read_bytes(), path
    # The balancer read every listed file at start, and says so in its log.
    assert f"attnviz static: {len(setup.manifest)} gzipped files" in setup.held_log.read_text()
