"""Retraining both runs from the seed gives the shipped files, bit for bit (slow: two runs of
4,000 steps, about a minute of CPU each on one thread, side by side)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attnviz.models.bottleneck import bottleneck_run as R

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_script_rewrites_the_shipped_files(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "train-bottleneck"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert R.SHIPPED.read_sums(tmp_path) == R.SHIPPED.read_sums(R.DATA)
