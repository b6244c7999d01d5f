"""Start ``streamlit run app.py`` on loopback, headless, on a free port, and stop it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from .network import free_port

ROOT = Path(__file__).resolve().parents[2]

# Every server a test, benchmark or script starts is bound to loopback and headless: headless
# Streamlit without an address looks up the machine's external IP on the internet.
LOOPBACK_FLAGS = ("--server.address", "127.0.0.1", "--server.headless", "true")


def streamlit_command(port: int, script: str = "app.py", extra: tuple[str, ...] = ()) -> list[str]:
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        script,
        *LOOPBACK_FLAGS,
        "--server.port",
        str(port),
        "--server.fileWatcherType",
        "none",
        "--browser.gatherUsageStats",
        "false",
        *extra,
    ]


# What a harness waits for before it yields a server: Streamlit's health endpoint (the server
# answers), or the readiness check the deployment asks (the script health check: on attnviz, it
# answers "ok" only once every page has run once, ui/entry.py; the server must have it on).
HEALTH = "/_stcore/health"
READY = "/_stcore/script-health-check"
_STRAIGHT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def wait_healthy(
    url: str, proc: subprocess.Popen | None = None, timeout: float = 90, path: str = HEALTH
) -> float:
    """Wait until ``url + path`` answers "ok"; the seconds it took."""
    start = time.monotonic()
    deadline = start + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with _STRAIGHT.open(f"{url}{path}", timeout=max(2.0, deadline - time.monotonic())) as r:
                if r.read() == b"ok":
                    return time.monotonic() - start
        except OSError:  # not listening yet, or 503 (urllib's HTTPError is an OSError)
            pass
        time.sleep(0.25)
    raise RuntimeError(f"server at {url} not answering ok on {path} after {timeout}s")


@contextmanager
def running_app(
    script: str = "app.py",
    env: dict[str, str] | None = None,
    command: list[str] | None = None,
    log_path: Path | None = None,
    cwd: Path = ROOT,
    ready: str = HEALTH,
    ready_seconds: float = 90,
):
    """Yield (url, process) once ``url + ready`` answers "ok" (:data:`HEALTH`, or :data:`READY`
    for a server with the script health check on). ``command`` replaces the default one (it
    must use ``{port}``)."""
    port = free_port()
    cmd = (
        [c.replace("{port}", str(port)) for c in command]
        if command
        else streamlit_command(port, script)
    )
    log_path = log_path or ROOT / "test-artifacts" / f"streamlit-{port}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # A direct urllib health check must not go to the proxy: loopback is in NO_PROXY.
    full_env = {**os.environ, **(env or {})}
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=cwd, env=full_env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, proc, ready_seconds, ready)
            yield url, proc
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
