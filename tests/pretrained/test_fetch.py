"""scripts/fetch-gpt2 against a fake hub on 127.0.0.1: it keeps files whose hashes match what
the hub publishes, and deletes the ones that do not."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fetch-gpt2"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
CONFIG = b'{"model_type": "gpt2", "n_layer": 12}\n'
WEIGHTS = bytes(range(256)) * 300


def git_blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    """Answers like the hub: plain files with their git blob id as ETag, LFS files with a
    redirect carrying X-Linked-Etag (the SHA-256); ``served`` may differ from what is hashed."""

    def __init__(self, served_weights: bytes = WEIGHTS, served_config: bytes = CONFIG):
        hub = self
        self.requests: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, body: bool) -> None:
                hub.requests.append(f"{self.command} {self.path}")
                path = self.path
                for rev in ("main", COMMIT):
                    if path == f"/repo/resolve/{rev}/config.json":
                        self.send_response(200)
                        self.send_header("ETag", f'"{git_blob(CONFIG)}"')
                        self.send_header("X-Repo-Commit", COMMIT)
                        self.send_header("Content-Length", str(len(served_config)))
                        self.end_headers()
                        if body:
                            self.wfile.write(served_config)
                        return
                    if path == f"/repo/resolve/{rev}/model.safetensors":
                        self.send_response(302)
                        self.send_header("Location", "/cdn/weights")
                        self.send_header(
                            "X-Linked-Etag", f'"{hashlib.sha256(WEIGHTS).hexdigest()}"'
                        )
                        self.send_header("X-Repo-Commit", COMMIT)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                if path == "/cdn/weights":
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(served_weights)))
                    self.end_headers()
                    if body:
                        self.wfile.write(served_weights)
                    return
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_HEAD(self):
                self._answer(False)

            def do_GET(self):
                self._answer(True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/repo"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def run(folder: Path, hub: FakeHub) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(folder), "--base-url", hub.url],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_files_whose_hashes_match_the_published_ones_are_kept(tmp_path):
    with FakeHub() as hub:
        out = run(tmp_path / "gpt2", hub)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "gpt2" / "config.json").read_bytes() == CONFIG
    assert (tmp_path / "gpt2" / "model.safetensors").read_bytes() == WEIGHTS
    assert sorted(p.name for p in (tmp_path / "gpt2").iterdir()) == [
        "config.json",
        "model.safetensors",
    ]
    assert f"sha256 {hashlib.sha256(WEIGHTS).hexdigest()}" in out.stdout
    assert "git-blob matches" in out.stdout and "sha256 matches" in out.stdout
    # Both files are read at the commit the first answer named.
    assert f"GET /repo/resolve/{COMMIT}/model.safetensors" in hub.requests


@pytest.mark.parametrize("tampered", ["weights", "config"])
def test_a_file_that_does_not_match_is_deleted_and_the_script_fails(tmp_path, tampered):
    changed = dict(served_weights=WEIGHTS[:-1] + b"\x00")
    if tampered == "config":
        changed = dict(served_config=CONFIG.replace(b"12", b"24"))
    with FakeHub(**changed) as hub:
        out = run(tmp_path / "gpt2", hub)
    assert out.returncode == 1
    name = "model.safetensors" if tampered == "weights" else "config.json"
    assert f"{name}:" in out.stderr and "does not match the published" in out.stderr
    assert not (tmp_path / "gpt2" / name).exists()
    assert [p.name for p in (tmp_path / "gpt2").iterdir() if p.name.startswith(".")] == []


def test_no_published_hash_means_no_download(tmp_path):
    with FakeHub() as hub:
        hub.url = hub.url.replace("/repo", "/missing")
        out = run(tmp_path / "gpt2", hub)
    assert out.returncode == 1 and "answered 404" in out.stderr
