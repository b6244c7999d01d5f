"""Python code in a fresh process, as a server starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def python_in_a_fresh_process(code: str, env: dict[str, str], timeout: float = 120) -> str:
    """What ``python -c code`` prints, run from the project root with exactly ``env``; a
    failure shows the end of its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
