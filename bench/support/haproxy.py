"""The repository's deploy/haproxy.cfg, run by Debian's haproxy on loopback in front of two
replica addresses (the test of the config, the first-visit byte count, the replica benchmark).

One replica behind the same config: give its address twice. Both ``server`` lines then reach
the one process, so the balancer's own work is the same in both measurements.

As deployed by deploy/compose.yaml, the balancer serves Streamlit's static files gzipped at
build time (deploy/static.lua): ``running_haproxy`` gives it a folder made by the same code as
the image's (attnviz/deploy/precompress.py, from this venv's Streamlit), once per process in a
temporary folder; ``precompressed=False`` runs the config without it (every request goes to
the replicas, compressed on the way out by HAProxy's own gzip)."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.cookies import SimpleCookie
from pathlib import Path

from attnviz.deploy import precompress

from .network import free_port

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "deploy" / "haproxy.cfg"
STATIC_LUA = ROOT / "deploy" / "static.lua"
COOKIE = "ATTNVIZ_REPLICA"  # the config's sticky cookie
REPLICAS = ("replica-a", "replica-b")  # its cookie values, one per server line

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def haproxy_binary() -> str:
    binary = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")
    if not binary:
        raise RuntimeError("haproxy is not installed: apt-get install -y haproxy")
    return binary


def config_env(
    bind: str, replica_a: str, replica_b: str, static_gz: Path | None = None
) -> dict[str, str]:
    """The environment the config reads its addresses from (host:port each), its Lua file, and
    the precompressed folder (none: nothing held, everything goes to the replicas)."""
    return {
        **os.environ,
        "ATTNVIZ_BIND": bind,
        "ATTNVIZ_REPLICA_A": replica_a,
        "ATTNVIZ_REPLICA_B": replica_b,
        "ATTNVIZ_STATIC_LUA": str(STATIC_LUA),
        "ATTNVIZ_STATIC_GZ": str(static_gz) if static_gz else "",
    }


@functools.cache
def precompressed_static() -> Path:
    """This venv's Streamlit static files, gzipped as the image does it (attnviz/deploy/precompress.py),
    in a temporary folder removed when the process ends. Made once per process."""
    folder = Path(tempfile.mkdtemp(prefix="attnviz-static-gz-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    precompress.precompress(precompress.streamlit_static_dir(), folder)
    return folder


def _status(url: str, timeout: float = 5) -> int:
    try:
        with _NO_PROXY.open(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


# The config's health check: Streamlit's script health check, which attnviz answers 200 only
# once warm (ui/entry.py; a server without the check turned on answers its app page, 200 too).
READY = "/_stcore/script-health-check"


def sticky_values(url: str, visits: int) -> list[str]:
    """The replica cookie each of ``visits`` new visitors of ``url`` is given."""
    seen = []
    for _ in range(visits):
        with _NO_PROXY.open(url + "/", timeout=10) as response:
            cookies = response.headers.get_all("Set-Cookie") or []
        values = [m.value for c in cookies for n, m in SimpleCookie(c).items() if n == COOKIE]
        seen.append(values[0] if values else "")
    return seen


def wait_until(predicate: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except OSError:  # not listening yet
            pass
        time.sleep(0.25)
    raise RuntimeError(f"not within {seconds} s: {what}")


@contextmanager
def running_haproxy(
    replica_a: str, replica_b: str, log_path: Path, precompressed: bool = True
) -> Iterator[str]:
    """Yield the balancer's URL once it answers and routes to both server lines (each
    ``http://127.0.0.1:PORT`` or ``127.0.0.1:PORT``); stop it after. ``precompressed``: serve
    the static files gzipped at build time, as Compose deploys it (module docstring)."""
    port = free_port()
    static_gz = precompressed_static() if precompressed else None
    a, b = (r.split("://", 1)[-1] for r in (replica_a, replica_b))
    # As Compose deploys it (the balancer starts once both replicas are healthy, and healthy is
    # ready, which is warm): HAProxy 2.6 counts a server up from its start until its checks
    # fail, so a replica still warming up would get students for the first seconds.
    for replica in dict.fromkeys((a, b)):
        wait_until(
            lambda r=replica: _status(f"http://{r}{READY}", 75) == 200, 240, f"{replica} ready"
        )
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [haproxy_binary(), "-db", "-f", str(CONFIG)],
            env=config_env(f"127.0.0.1:{port}", a, b, static_gz),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until(lambda: _status(url + "/_stcore/health") == 200, 30, "HAProxy answers")
            # Both server lines pass the health check (rise 1 x downinter 2 s, once warm).
            wait_until(lambda: set(sticky_values(url, 4)) == set(REPLICAS), 30, "both servers up")
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
