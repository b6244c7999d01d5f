"""glibc's mmap threshold, fixed once per process by the app: a freed large tensor's memory
goes back to the system instead of staying resident in the heap (attnviz.server.runtime)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from attnviz.server import runtime
from bench.support.pages import ROOT

# After a 20 MiB tensor is freed, glibc's default raises its mmap threshold past 8 MiB, so the
# eight 8 MiB tensors below come from the heap. Each has a 128 KiB block allocated right behind
# it, kept: too large for any small free fragment, so it lands after its tensor, and each freed
# tensor is a hole below a live block, which glibc cannot trim from the heap's top. (Earlier
# probes pinned with 4 KiB blocks, which a fragment further down could take: one CI run kept
# only 8 MiB that way.)
PROBE = """
import os, sys
import torch
from attnviz.server import runtime

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

threshold = runtime.configure_memory() if sys.argv[1] == "on" else None
if sys.argv[1] == "on":
    assert runtime.configure_memory() == threshold  # a second call changes nothing
big = torch.ones(5 * 2**20)
del big
before = rss()
tensors, pins = [], []
for i in range(8):
    tensors.append(torch.ones(2 * 2**20 + i * 4096))
    pins.append(torch.ones(32 * 1024))  # 128 KiB, kept
del tensors
print(threshold, (rss() - before) / 2**20)
"""

pytestmark = pytest.mark.skipif(not runtime.glibc(), reason="glibc's allocator only")


def run_probe(mode: str, **env: str) -> tuple[str, float]:
    clean = {k: v for k, v in os.environ.items() if k not in runtime.MALLOC_ENV}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    threshold, kept_mb = out.stdout.split()
    return threshold, float(kept_mb)


def test_freed_tensors_stay_resident_by_default_and_go_back_once_configured():
    assert run_probe("off")[1] >= 32  # glibc's own behaviour: 48 MiB measured
    threshold, kept_mb = run_probe("on")
    assert threshold == str(runtime.MMAP_THRESHOLD) == str(2**20)
    assert kept_mb < 4  # 0.0 measured


def test_an_operators_own_malloc_setting_is_left_alone():
    threshold, _ = run_probe("on", MALLOC_MMAP_THRESHOLD_="33554432")
    assert threshold == "None"


def test_other_glibc_tunables_do_not_stop_it():
    threshold, _ = run_probe("on", GLIBC_TUNABLES="glibc.cpu.hwcaps=-AVX512F")
    assert threshold == str(runtime.MMAP_THRESHOLD)
    threshold, _ = run_probe("on", GLIBC_TUNABLES="glibc.malloc.mmap_threshold=4194304")
    assert threshold == "None"
