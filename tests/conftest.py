"""Fixtures every test uses: the network blackhole and the GPT-2 vocabulary cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.support.network import Blackhole, proxy_env

ROOT = Path(__file__).resolve().parents[1]
SHARED_CACHE = ROOT.parent / "shared" / "tiktoken_cache"

# The vocabulary cache sits beside the project on this machine and in CI; never copied in.
if SHARED_CACHE.is_dir() and "TIKTOKEN_CACHE_DIR" not in os.environ:
    os.environ["TIKTOKEN_CACHE_DIR"] = str(SHARED_CACHE)

settings.register_profile(
    "attnviz", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("attnviz")

_BLACKHOLE = Blackhole()
# Set at import, before any test module loads code that might touch the network, and
# inherited by every process the tests start.
os.environ.update(proxy_env(_BLACKHOLE))


@pytest.fixture(scope="session", autouse=True)
def blackhole():
    """Every HTTP(S) request goes here; it answers nothing and records what it was asked."""
    yield _BLACKHOLE
    _BLACKHOLE.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    path = ROOT / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path
