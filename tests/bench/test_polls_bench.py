"""bench/polls.py runs end to end on a small load and prints one row per store and operation."""

from __future__ import annotations

import re
import subprocess
import sys

from bench.support.pages import ROOT


def test_the_poll_benchmark_prints_every_store_and_operation(tmp_path):
    out = tmp_path / "polls.md"
    result = subprocess.run(
        [sys.executable, "bench/polls.py", "--ops", "40", "--reads", "10", "--blocks", "2"]
        + ["--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = re.findall(
        r"^\| (.+?) \| (.+?) \| ([\d.]+) \| (\S+) \| ([\d.]+) \|", out.read_text(), re.M
    )
    assert [(store, what) for store, what, *_ in rows] == [
        ("dict update under a lock", "answer"),
        ("in process", "answer"),
        ("in process", "tally read"),
        ("in process", "phone view"),
        ("Redis (loopback)", "answer"),
        ("Redis (loopback)", "tally read"),
        ("Redis (loopback)", "phone view"),
    ]
    for store, _, app, server, _wall in rows:
        assert float(app) > 0
        assert (server == "–") != store.startswith("Redis")  # Redis's own CPU, on Redis rows
