"""attnviz/deploy/precompress.py (scripts/precompress-static), on a small stand-in of Streamlit's static
folder: which files it gzips, that the output is deterministic, and the content types it
lists. tests/deploy/test_static_gz.py runs it on the installed Streamlit behind HAProxy."""

from __future__ import annotations

import gzip
import os
import random
import subprocess
from pathlib import Path

from starlette.responses import FileResponse

from attnviz.deploy import precompress
from bench.support.pages import ROOT

SCRIPT = ROOT / "scripts" / "precompress-static"


def fake_static(root: Path) -> Path:
    """A static folder shaped like Streamlit's: index.html and manifest.json at the top (served
    no-cache), the fingerprinted files under static/."""
    static = root / "static"
    text = b"function attention(q, k) { return softmax(q @ k.T / Math.sqrt(d_k)); }\n" * 200
    noise = random.Random(0).randbytes(4000)
    files = {
        "index.html": b"<html>" + text + b"</html>",
        "manifest.json": b'{"name": "attnviz"}' * 50,
        "static/js/index.Ab12Cd34.js": text,
        "static/js/noise.Zz99Yy88.js": noise,  # saves nothing: left to the replicas
        "static/css/index.Ef56Gh78.css": b".stApp { color: red; }\n" * 100,
        "static/media/logo.Ij90Kl12.svg": b"<svg>" + b"<path d='M0 0L1 1'/>" * 100 + b"</svg>",
        "static/media/SourceSans.Mn34Op56.woff2": text,  # compressible bytes, but a font
        "static/media/icon.Qr78St90.png": text,
    }
    for name, data in files.items():
        (static / name).parent.mkdir(parents=True, exist_ok=True)
        (static / name).write_bytes(data)
    return static


def test_only_fingerprinted_text_files_that_shrink_are_gzipped(tmp_path):
    static = fake_static(tmp_path)
    out = tmp_path / "out"
    entries = precompress.precompress(static, out)
    held = precompress.read_manifest(out)
    assert sorted(held) == [
        "static/css/index.Ef56Gh78.css",
        "static/js/index.Ab12Cd34.js",
        "static/media/logo.Ij90Kl12.svg",
    ]
    assert [e.path for e in entries] == sorted(held)
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.gz"))
    assert written == [p + ".gz" for p in sorted(held)]
    # Each .gz is the file, byte for byte, and at least 10 % smaller.
    for entry in entries:
        packed = (out / (entry.path + ".gz")).read_bytes()
        assert gzip.decompress(packed) == (static / entry.path).read_bytes()
        assert len(packed) == entry.gz_size <= 0.9 * entry.size
    # No font or image, and nothing outside static/ (index.html is served no-cache).
    assert not list(out.rglob("*.woff2*")) and not list(out.rglob("*.png*"))
    assert not (out / "index.html.gz").exists() and not (out / "manifest.json.gz").exists()


def test_the_output_is_the_same_bytes_every_time(tmp_path):
    static = fake_static(tmp_path)
    first, second = tmp_path / "a", tmp_path / "b"
    precompress.precompress(static, first)
    os.utime(static / "static/js/index.Ab12Cd34.js", (1e9, 1e9))  # a different file time
    precompress.precompress(static, second)

    def contents(folder: Path) -> dict[str, bytes]:
        return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.*")}

    assert contents(first) == contents(second)
    for path, data in contents(first).items():
        if path.endswith(".gz"):
            assert data[:4] == b"\x1f\x8b\x08\x00"  # gzip, deflate, no flags (no file name)
            assert data[4:8] == b"\0\0\0\0"  # mtime 0


def test_content_types_are_the_ones_a_replica_sends(tmp_path):
    """Starlette's FileResponse after Streamlit's mimetypes registrations (bootstrap.py): .js is
    application/javascript whatever /etc/mime.types says, text types get a charset."""
    static = fake_static(tmp_path)
    out = tmp_path / "out"
    precompress.precompress(static, out)
    held = precompress.read_manifest(out)
    assert held["static/js/index.Ab12Cd34.js"] == "application/javascript"
    assert held["static/css/index.Ef56Gh78.css"] == "text/css; charset=utf-8"
    assert held["static/media/logo.Ij90Kl12.svg"] == "image/svg+xml"
    for path, kind in held.items():
        if not path.endswith(".js"):  # .js: Streamlit's own registration, not the machine's
            assert FileResponse(static / path).headers["content-type"] == kind, path


def test_the_script_writes_the_installed_streamlits_files(tmp_path):
    """scripts/precompress-static OUTDIR, on a stand-in folder (--static-dir) to stay quick."""
    static = fake_static(tmp_path)
    out = tmp_path / "out"
    result = subprocess.run(
        [str(SCRIPT), str(out), "--static-dir", str(static)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"3 files gzipped into {out}: ")
    assert len(precompress.read_manifest(out)) == 3
    installed = precompress.streamlit_static_dir()
    assert (installed / "index.html").is_file() and (installed / "static" / "js").is_dir()
