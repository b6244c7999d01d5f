"""ATTNVIZ_TORCH_THREADS: torch's thread count for the server, set once per process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from attnviz.server import runtime
from bench.support.pages import ROOT
from tests.support.fresh_process import python_in_a_fresh_process

PROBE = (
    "from attnviz.server import runtime; import torch; "
    "a = runtime.configure_threads(); torch.set_num_threads(3); b = runtime.configure_threads(); "
    "print(a, b, torch.get_num_threads())"
)


@pytest.mark.parametrize(
    ("value", "threads"),
    [
        (None, runtime.DEFAULT_THREADS),
        ("", runtime.DEFAULT_THREADS),
        ("2", 2),
        (" 1 ", 1),
        ("auto", None),
        ("AUTO", None),
        ("0", runtime.DEFAULT_THREADS),
        ("-2", runtime.DEFAULT_THREADS),
        ("two", runtime.DEFAULT_THREADS),
        ("1.5", runtime.DEFAULT_THREADS),
        ("100000", runtime.DEFAULT_THREADS),
    ],
)
def test_the_variable_is_read_or_ignored(value, threads):
    assert runtime.threads_from_env(value) == threads


@pytest.mark.parametrize(("value", "expected"), [("2", "2"), ("1", "1"), ("nonsense", None)])
def test_configure_threads_applies_once_per_process(value, expected):
    out = python_in_a_fresh_process(PROBE, {**os.environ, runtime.ENV: value})
    first, second, now = out.split()
    assert first == (expected or str(runtime.DEFAULT_THREADS))
    assert (second, now) == (first, "3")  # a second call neither re-applies nor changes it


# The app with ATTNVIZ_TORCH_THREADS=2 in a fresh process whose torch was set to 3 threads:
# each page's first line (entry.guard) records the thread count its run sees.
PAGE_PROBE = """
import torch
from streamlit.testing.v1 import AppTest
from attnviz.server import runtime
from ui import entry

seen = []
real_guard = entry.guard


def recording_guard(page_file):
    # threads, and glibc's mmap threshold as app.py left it (runtime.configure_memory)
    seen.append(f"{torch.get_num_threads()},{runtime._mmap_threshold}")
    real_guard(page_file)


entry.guard = recording_guard
torch.set_num_threads(3)
at = AppTest.from_file("app.py", default_timeout=120)
at.run()
assert not at.exception, [e.value for e in at.exception]
print(*seen)
"""


def test_the_app_configures_threads_and_memory_before_any_page_runs():
    env = {k: v for k, v in os.environ.items() if k not in runtime.MALLOC_ENV}
    env[runtime.ENV] = "2"
    seen = python_in_a_fresh_process(PAGE_PROBE, env, timeout=300).split()
    assert seen, "no page ran"
    # not torch's 3: app.py applied the variable first; and it fixed the mmap threshold
    expected = f"2,{runtime.MMAP_THRESHOLD if runtime.glibc() else None}"
    assert set(seen) == {expected}, seen


# The start-up heap is frozen once, after the first page run (app.py): gc.get_freeze_count()
# is 0 before it and holds the start-up's objects after it; a second run freezes nothing more
# (the count only drifts as frozen objects die or are re-tracked: well under 1%).
FREEZE_PROBE = """
import gc
from streamlit.testing.v1 import AppTest
from attnviz.server import runtime

before = gc.get_freeze_count()
at = AppTest.from_file("app.py", default_timeout=120)
at.run()
assert not at.exception, [e.value for e in at.exception]
first = gc.get_freeze_count()
at.run()
print(before, first, gc.get_freeze_count(), runtime.freeze_startup_heap())
"""


def test_the_app_freezes_the_start_up_heap_once_after_its_first_page_run():
    out = subprocess.run(
        [sys.executable, "-c", FREEZE_PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    before, first, second, again = out.stdout.split()
    assert int(before) == 0
    assert int(first) > 100_000  # torch, pandas, Plotly, Streamlit and the pages' modules
    assert abs(int(second) - int(first)) < int(first) // 100 and again == "False"
