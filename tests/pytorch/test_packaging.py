"""The classroom image leaves bench/ out, so the app must run without it: every page is run in
a fresh process in which importing ``bench`` fails, as it would in the image."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.support.pages import app_pages
from tests.test_docker import _dockerignore_rules, dockerignored

ROOT = Path(__file__).resolve().parents[2]

# Runs every page in AppTest with ``bench`` blocked; prints one JSON line per page.
_RUN_WITHOUT_BENCH = """
import importlib.abc, json, sys

class NoBench(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "bench" or name.startswith("bench."):
            raise ImportError(f"{name} is not in the classroom image")
        return None

sys.meta_path.insert(0, NoBench())
from streamlit.testing.v1 import AppTest

for page in sys.argv[1:]:
    at = AppTest.from_file("app.py", default_timeout=120)
    at.run()
    at.switch_page(page).run()
    errors = [e.message for e in at.exception]
    print(json.dumps({"page": page, "errors": errors, "titles": [t.value for t in at.title]}))
"""


def test_bench_stays_out_of_the_image():
    rules = _dockerignore_rules()
    for path in ("bench/__init__.py", "bench/run.py", "bench/results/run.json"):
        assert dockerignored(path, rules), f"{path} would be copied into the image"
    assert not dockerignored("attnviz/models/implementations.py", rules)


@pytest.mark.slow
def test_every_page_runs_in_a_process_that_cannot_import_bench():
    pages = [p.path for p in app_pages()]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _RUN_WITHOUT_BENCH, *pages],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [r["page"] for r in results] == pages
    for result in results:
        assert result["errors"] == [], result
        assert len(result["titles"]) >= 1, result
