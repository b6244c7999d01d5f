"""deploy/haproxy.cfg when every replica fails its health check at once (both busy past their
checks, as at a load average of 16-20 in issue 36's pen test): students still reach the
replicas instead of a 503. Two small HTTP servers on loopback stand in for busy replicas: they
serve pages but answer their health check 503."""

from __future__ import annotations

import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from bench.support import haproxy
from bench.support.network import free_port

READY = haproxy.READY


FORWARDED: list[str] = []  # the X-Forwarded-For of every page request the replicas got


def busy_replica(name: str) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            busy = self.path.startswith(READY)
            if not busy:
                FORWARDED.append(self.headers.get("X-Forwarded-For", ""))
            body = b"not ready" if busy else name.encode()
            self.send_response(503 if busy else 200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def get(url: str, cookie: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if cookie:
        request.add_header("Cookie", f"{haproxy.COOKIE}={cookie}")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_replicas_that_fail_their_checks_still_get_students(artifacts):
    replicas = {name: busy_replica(name) for name in haproxy.REPLICAS}
    a, b = (f"127.0.0.1:{s.server_address[1]}" for s in replicas.values())
    port = free_port()
    log_path = artifacts / "haproxy-busy.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [haproxy.haproxy_binary(), "-db", "-f", str(haproxy.CONFIG)],
            env=haproxy.config_env(f"127.0.0.1:{port}", a, b),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        # Every checked line goes down: fall 3 checks, 5 s then 2 s apart.
        down = [f"Server replicas/{name} is DOWN" for name in haproxy.REPLICAS]
        down.append("backend 'replicas' has no server available")
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            if all(line in log_path.read_text() for line in down):
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"the checks never failed: {log_path.read_text()}")
        served = [get(f"http://127.0.0.1:{port}/") for _ in range(4)]
        assert [status for status, _ in served] == [200] * 4, served
        assert {body for _, body in served} == set(haproxy.REPLICAS)  # both, round robin
        # A student keeps her replica by its cookie, through the unchecked lines too.
        assert get(f"http://127.0.0.1:{port}/", "replica-b") == (200, "replica-b")
        # The replicas learn the client's address (the app's polls per address).
        assert FORWARDED == ["127.0.0.1"] * 5, FORWARDED
    finally:
        proc.terminate()
        proc.wait(10)
        for server in replicas.values():
            server.shutdown()
