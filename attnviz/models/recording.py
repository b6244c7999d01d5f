"""What every recorded training run shares (page 8's induction runs, the home page's two
encoder-decoders): the ranges its configuration must lie in, and the SHA-256 sums of the files it
ships (``SHA256SUMS``, written by its regeneration script and read by its tests)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

SUMS = "SHA256SUMS"


def config_problems(*, lr: float, batch_size: int, steps: int, seed: int) -> list[str]:
    """What is out of range in a training run's common settings (an empty list: nothing)."""
    problems = []
    if not 0 < lr <= 1:
        problems.append(f"lr={lr} is outside (0, 1]")
    if not 1 <= batch_size <= 4096:
        problems.append(f"batch_size={batch_size} is outside 1–4096")
    if not 0 <= steps <= 100_000:
        problems.append(f"steps={steps} is outside 0–100000")
    if not 0 <= seed < 2**31:
        problems.append(f"seed={seed} is outside 0–{2**31 - 1}")
    return problems


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Shipped:
    """The files a recorded run ships (``names``, in that order) and where they lie."""

    folder: Path
    names: tuple[str, ...]

    def write_sums(self, folder: Path | None = None) -> str:
        """Write ``SHA256SUMS`` of the files in ``folder`` (default: the shipped folder); its
        text."""
        where = self.folder if folder is None else folder
        text = "".join(f"{sha256_of(where / name)}  {name}\n" for name in self.names)
        (where / SUMS).write_text(text, encoding="utf-8")
        return text

    def read_sums(self, folder: Path | None = None) -> dict[str, str]:
        """name -> SHA-256, as ``SHA256SUMS`` in ``folder`` (default: the shipped one) lists
        them."""
        where = self.folder if folder is None else folder
        sums = {}
        for line in (where / SUMS).read_text(encoding="utf-8").splitlines():
            digest, name = line.split(maxsplit=1)
            sums[name.strip()] = digest
        return sums
