"""Streamlit's fingerprinted static files, gzipped once at level 9, for the balancer to serve.

    python -m attnviz.deploy.precompress OUTDIR     (scripts/precompress-static OUTDIR)

Streamlit 1.67 serves its JavaScript uncompressed, and HAProxy's own compressor (libslz, the
only one in Debian's build and the official image) is stateless: it leaves a first visit's
JavaScript at 45 % of its size, where gzip -9 reaches 29 % (bench/first-visit-results.md). So
the image gzips the files once, here, and deploy/static.lua serves these bytes to browsers that
accept gzip.

What is written, for the installed Streamlit (found without importing it):

- ``OUTDIR/<path relative to streamlit/static>.gz`` for every text file under ``static/`` (the
  folder served at ``/static/...`` with ``public, immutable``), gzip level 9 with mtime 0 and
  no file name, so the same input gives the same bytes; only where it saves at least 10 %.
  ``index.html`` and ``manifest.json`` sit outside it: they are served ``no-cache`` and go to
  the replicas as before. Fonts and images are already compressed and never listed.
- ``OUTDIR/manifest.tsv``: one line per file, ``<relative path>\\t<content type>``, the content
  type the replica itself sends (``content_type``). Lines starting with ``#`` are comments (the
  Streamlit version). The Lua service reads only the files this lists.

Standard library only: the script runs in the image's build with nothing else at hand.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.metadata
import importlib.util
import mimetypes
import sys
from dataclasses import dataclass
from pathlib import Path

TEXT_SUFFIXES = (".js", ".css", ".html", ".json", ".svg", ".txt")
MIN_SAVING = 0.10  # keep a .gz only when it is at least this much smaller
SERVED_FOLDER = "static"  # streamlit/static/static, served at /static/... as immutable
MANIFEST = "manifest.tsv"


@dataclass(frozen=True)
class Entry:
    path: str  # relative to streamlit/static, with "/" separators: the URL path less its "/"
    content_type: str
    size: int  # bytes as served by the replica
    gz_size: int  # bytes written


def streamlit_static_dir() -> Path:
    """The installed Streamlit's ``static`` folder (the package is located, not imported)."""
    spec = importlib.util.find_spec("streamlit")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("streamlit is not installed in this Python")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


# The types Streamlit registers with ``mimetypes`` when it starts (streamlit/web/bootstrap.py),
# whatever the machine's /etc/mime.types says: a replica sends .js as application/javascript.
STREAMLIT_TYPES = {
    ".html": "text/html",
    ".js": "application/javascript",
    ".mjs": "application/javascript",
    ".css": "text/css",
}


def content_type(name: str) -> str:
    """The Content-Type a replica sends for this file name: Streamlit's registered type or the
    ``mimetypes`` guess, and Starlette's FileResponse adds a charset to a ``text/`` type."""
    suffix = Path(name).suffix.lower()
    guessed = STREAMLIT_TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "text/plain"
    if guessed.startswith("text/") and "charset=" not in guessed:
        guessed += "; charset=utf-8"
    return guessed


def gzip_bytes(data: bytes) -> bytes:
    """gzip at level 9, deterministic: no time stamp, no file name in the header."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def precompress(static_dir: Path, out_dir: Path) -> list[Entry]:
    """Write the .gz files and the manifest of the text files under ``static_dir/static``;
    return what was written, in path order."""
    served = static_dir / SERVED_FOLDER
    if not served.is_dir():
        raise SystemExit(f"no {served}: is this Streamlit's static folder?")
    entries = []
    for source in sorted(served.rglob("*")):
        if not source.is_file() or source.suffix.lower() not in TEXT_SUFFIXES:
            continue
        data = source.read_bytes()
        packed = gzip_bytes(data)
        if len(packed) > (1 - MIN_SAVING) * len(data):
            continue
        relative = source.relative_to(static_dir).as_posix()
        target = out_dir / (relative + ".gz")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(packed)
        entries.append(Entry(relative, content_type(source.name), len(data), len(packed)))
    try:
        version = importlib.metadata.version("streamlit")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    lines = [f"# gzip -9 of streamlit {version}'s static files: path, content type"]
    lines += [f"{e.path}\t{e.content_type}" for e in entries]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / MANIFEST).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return entries


def read_manifest(out_dir: Path) -> dict[str, str]:
    """relative path -> content type, as the Lua service reads it."""
    held = {}
    for line in (out_dir / MANIFEST).read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            path, kind = line.split("\t")
            held[path] = kind
    return held


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, help="folder to write the .gz files into")
    parser.add_argument(
        "--static-dir",
        type=Path,
        default=None,
        help="Streamlit's static folder (default: the installed Streamlit's)",
    )
    args = parser.parse_args(argv)
    static_dir = args.static_dir or streamlit_static_dir()
    entries = precompress(static_dir, args.out_dir)
    size, packed = sum(e.size for e in entries), sum(e.gz_size for e in entries)
    print(
        f"{len(entries)} files gzipped into {args.out_dir}: {size / 1e6:.2f} MB -> "
        f"{packed / 1e6:.2f} MB ({packed / max(size, 1):.0%})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
