"""Debian's ``redis-server`` on 127.0.0.1, on a free port, with nothing written to disk.

Used by the poll tests (tests/polls) and the poll benchmark (bench/polls.py). ``stop()``,
``pause()`` and ``start()`` let a test take Redis away in the middle of a class and bring it
back on the same port.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from .network import free_port


def redis_server_binary() -> str:
    binary = shutil.which("redis-server") or shutil.which("redis-server", path="/usr/bin")
    if not binary:
        raise RuntimeError("redis-server is not installed: apt-get install -y redis-server")
    return binary


class RedisServer:
    """One redis-server process. ``url`` stays the same across stop() and start()."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.dir = Path(tempfile.mkdtemp(prefix="attnviz-redis-"))
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 15) -> RedisServer:
        command = [
            redis_server_binary(),
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.dir),
            "--protected-mode",
            "yes",
            "--loglevel",
            "warning",
        ]
        log = open(self.dir / "redis.log", "a")  # the process keeps its own copy
        self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited: {(self.dir / 'redis.log').read_text()}")
            if self.answers():
                return self
            time.sleep(0.05)
        raise RuntimeError(f"redis-server on port {self.port} not answering after {timeout} s")

    def answers(self) -> bool:
        """True when a PING gets PONG (raw protocol, no client library)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)  # in case it was paused
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def pause(self) -> None:
        """Freeze the process (SIGSTOP): connections stay open and nothing answers."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
