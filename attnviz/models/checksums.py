"""SHA-256 sums of a recorded run's shipped files: the ``SHA256SUMS`` file that its
regeneration script writes and its tests read (page 8's induction runs, the home page's two
encoder-decoders)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

SUMS = "SHA256SUMS"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_sums(folder: Path, names: Iterable[str]) -> str:
    """Write ``folder/SHA256SUMS`` for ``names``, in that order, and return its text."""
    text = "".join(f"{sha256_of(folder / name)}  {name}\n" for name in names)
    (folder / SUMS).write_text(text, encoding="utf-8")
    return text


def read_sums(folder: Path) -> dict[str, str]:
    """name -> SHA-256, as ``folder/SHA256SUMS`` lists them."""
    sums = {}
    for line in (folder / SUMS).read_text(encoding="utf-8").splitlines():
        digest, name = line.split(maxsplit=1)
        sums[name.strip()] = digest
    return sums
