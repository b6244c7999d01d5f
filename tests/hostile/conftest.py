"""Fixtures for the hostile-input tests: the canary server."""

from __future__ import annotations

import urllib.request

import pytest

from .canary import Canary


@pytest.fixture(scope="session")
def canary():
    server = Canary()
    # The canary itself must work, or "it received nothing" would prove nothing.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        opener.open(f"{server.origin}/selftest", timeout=5)
    except urllib.error.HTTPError as err:
        assert err.code == 404
    assert server.snapshot() == ["GET /selftest"]
    server.clear()
    yield server
    server.close()
