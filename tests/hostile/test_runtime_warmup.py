"""attnviz/server/warmup.py: the bookkeeping behind "ready means warm" (no server here; the
live check is tests/deploy/test_readiness.py)."""

from __future__ import annotations

import threading

import pytest

from attnviz.server import warmup

PAGES = ("", "simplified-attention", "causal-attention")


def test_each_page_is_claimed_once_in_order_and_ready_only_when_all_ran():
    warm = warmup.Warmup(PAGES)
    assert [warm.claim(), warm.claim()] == ["", "simplified-attention"]
    warm.finish("", ok=True)
    warm.finish("simplified-attention", ok=True)
    assert not warm.ready and warm.seconds is None
    assert warm.progress() == "warming up: 2 of 3 page runs made"
    assert warm.claim() == "causal-attention"
    assert warm.claim() is None  # every page claimed: nothing more to run
    assert not warm.ready  # claimed is not run
    warm.finish("causal-attention", ok=True)
    assert warm.ready and warm.settled and not warm.gave_up
    assert warm.seconds is not None and warm.seconds >= 0
    assert warm.claim() is None


def test_a_page_that_raised_is_run_again_first_then_given_up_on():
    warm = warmup.Warmup(PAGES, attempts=2)
    assert warm.claim() == ""
    warm.finish("", ok=False)
    assert warm.claim() == ""  # back at the head of the queue
    warm.finish("", ok=False)
    assert warm.gave_up and warm.settled and not warm.ready
    assert warm.claim() is None  # nothing is run any more: the server stays not ready
    assert "gave up: home raised 2 times" in str(warm.not_ready())


def test_finishing_a_page_not_claimed_changes_nothing():
    warm = warmup.Warmup(PAGES)
    warm.finish("causal-attention", ok=True)
    warm.finish("nonsense", ok=True)
    assert warm.progress() == "warming up: 0 of 3 page runs made"


def test_pages_are_kept_once_in_order_and_an_empty_list_is_refused():
    assert warmup.Warmup(["a", "b", "a", ""]).pages == ("a", "b", "")
    with pytest.raises(ValueError):
        warmup.Warmup([])


def test_claims_from_many_threads_hand_out_each_page_once():
    pages = [f"p{i}" for i in range(200)]
    warm = warmup.Warmup(pages)
    got: list[str] = []
    lock = threading.Lock()

    def take():
        while (page := warm.claim()) is not None:
            with lock:
                got.append(page)
            warm.finish(page, ok=True)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == sorted(pages) and warm.ready


def test_drive_asks_until_ready_one_request_per_page():
    """Each request runs one page, as the health check's run does; the driver stops once the
    server is ready."""
    warm = warmup.Warmup(PAGES)
    asked: list[str] = []

    def fetch(url, timeout):
        asked.append(url)
        page = warm.claim()
        if page is not None:
            warm.finish(page, ok=True)
        return 200 if warm.ready else 503

    assert warmup.drive(warm, "http://x/_stcore/script-health-check", fetch=fetch) == 3
    assert asked == ["http://x/_stcore/script-health-check"] * 3 and warm.ready


def test_drive_asks_again_after_a_pause_when_unreachable_and_stops_at_its_deadline():
    warm = warmup.Warmup(PAGES)
    calls = []

    def refused(url, timeout):
        calls.append(timeout)
        raise ConnectionRefusedError("not listening")

    assert warmup.drive(warm, "u", fetch=refused, seconds=0.3, pause=0.05, request_seconds=9) >= 2
    assert set(calls) == {9} and not warm.ready


def test_drive_stops_when_the_warm_up_gave_up():
    warm = warmup.Warmup(PAGES, attempts=1)

    def failing(url, timeout):
        page = warm.claim()
        if page is not None:
            warm.finish(page, ok=False)
        return 503

    assert warmup.drive(warm, "u", fetch=failing, seconds=5) == 1 and warm.gave_up


def test_status_reads_the_http_status_without_a_proxy():
    """The driver asks the server's own address straight, whatever proxy the environment
    names (the tests' blackhole here), and reads a 503 as a status, not as an error."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # the standard library calls it by this name
            code = 200 if self.path.endswith("ready") else 503
            self.send_response(code)
            self.end_headers()
            self.wfile.write(b"ok" if code == 200 else b"error")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        assert warmup._status(base + "/ready", 5) == 200
        assert warmup._status(base + "/not", 5) == 503
    finally:
        server.shutdown()
        server.server_close()


def test_begin_makes_one_warm_up_per_process(monkeypatch):
    monkeypatch.setattr(warmup, "_current", None)
    assert warmup.current() is None
    first = warmup.begin(PAGES, "u", drive_it=False)
    assert warmup.begin(("other",), "v", drive_it=False) is first
    assert warmup.current() is first and first.pages == PAGES


def test_a_fresh_server_runs_every_page_at_its_defaults_then_with_a_class_s_changes():
    from ui import entry

    runs = entry.warm_up_runs(["", "causal-attention"])
    assert runs == ["", "causal-attention", "?changed", "causal-attention?changed"]
    # The changed values are a valid link's: inside the sidebar's bounds, heads dividing d_out.
    values = entry.CHANGED_VALUES
    assert int(values["d_out"]) % int(values["heads"]) == 0
    assert values["text"] and values["train"] == "true" and 0 < float(values["dropout"]) < 1


@pytest.mark.parametrize(
    ("address", "base", "cert", "url"),
    [
        ("", "", "", "http://127.0.0.1:8501/_stcore/script-health-check"),
        ("0.0.0.0", "/class/", "", "http://127.0.0.1:8501/class/_stcore/script-health-check"),
        ("::", "", "", "http://[::1]:8501/_stcore/script-health-check"),
        ("10.0.0.5", "", "c.pem", "https://10.0.0.5:8501/_stcore/script-health-check"),
    ],
)
def test_the_server_asks_its_own_check_at_its_own_address(monkeypatch, address, base, cert, url):
    import streamlit as st

    from ui import entry

    options = {
        "server.address": address,
        "server.port": 8501,
        "server.baseUrlPath": base,
        "server.sslCertFile": cert,
    }
    monkeypatch.setattr(st, "get_option", options.__getitem__)
    assert entry.health_check_url() == url


def test_the_page_guard_s_module_loads_neither_torch_nor_the_warm_up():
    """Every page's first line imports ui/entry.py, before app.py has drawn the navigation on a
    fresh server's first visit: it must stay light (torch would keep the pages/ file names in
    the sidebar for seconds, tests/deploy/test_cold_start.py)."""
    import subprocess
    import sys
    from pathlib import Path

    probe = (
        "import sys, ui.entry; print(sorted(m for m in ('torch', 'attnviz') if m in sys.modules))"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
