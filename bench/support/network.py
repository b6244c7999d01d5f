"""A loopback "blackhole": it accepts connections, never answers, and records each request.

Used as the HTTP(S) proxy for the tests and every process they start, and as Chromium's proxy,
so that nothing reaches beyond 127.0.0.1 and any attempt shows up in :attr:`Blackhole.requests`.
"""

from __future__ import annotations

import socket
import threading


class Blackhole:
    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self.port = self._server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.requests: list[str] = []  # first line of each request received
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="blackhole", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        conn.settimeout(2.0)
        with self._lock:
            self._held.append(conn)  # keep it open: the client waits until its own timeout
        try:
            data = conn.recv(4096)
        except OSError:
            data = b""
        line = data.split(b"\r\n", 1)[0].decode("latin-1") if data else "<connection without data>"
        with self._lock:
            self.requests.append(line)

    def snapshot(self) -> list[str]:
        with self._lock:
            return list(self.requests)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        with self._lock:
            for conn in self._held:
                try:
                    conn.close()
                except OSError:
                    pass
        self._server.close()


def proxy_env(blackhole: Blackhole) -> dict[str, str]:
    """Environment variables that send every non-loopback request to the blackhole."""
    env = {}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = blackhole.url
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
