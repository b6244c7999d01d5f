"""A loopback canary: a tiny HTTP server every URL in the hostile corpus points at.

It answers any request with a 404 and records it. If a student's text ever made the app (or a
browser showing the app) fetch something, the request shows up in :attr:`Canary.requests`.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    def _record(self) -> None:
        self.server.canary.record(f"{self.command} {self.path}")  # type: ignore[attr-defined]
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_HEAD = do_PUT = do_OPTIONS = _record

    def log_message(self, format, *args) -> None:  # silence the default stderr log
        pass


class Canary:
    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.canary = self  # type: ignore[attr-defined]
        self.port = self._server.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self._requests: list[str] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True
        )
        self._thread.start()

    def record(self, line: str) -> None:
        with self._lock:
            self._requests.append(line)

    def snapshot(self) -> list[str]:
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=2)
