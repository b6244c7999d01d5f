"""Retraining from the seed gives the shipped files, bit for bit (slow: two runs of 4,000 steps,
about 100 s of CPU on one thread)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from attnviz.induction import recorded as R

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_retraining_the_reference_seed_reproduces_the_shipped_files_and_scores(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "train-induction"), "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert R.read_sums(tmp_path) == R.read_sums(R.DATA)
    again = R.read_run(tmp_path, "reference")
    control = R.read_run(tmp_path, "control")
    end = again.log[-1].measures
    assert end.induction >= 0.5
    assert end.loss_repeat <= 0.25 * math.log(64) and end.loss_first >= 0.8 * math.log(64)
    assert control.log[-1].measures.induction <= 0.15
    shipped = R.recorded().reference.log[-1].measures
    assert end.as_dict() == shipped.as_dict()
    assert (tmp_path / R.LOG).read_text().startswith("# scripts/train-induction")
