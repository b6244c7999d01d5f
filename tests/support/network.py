"""Moved to bench/support/network.py (bench/ must not import tests/). Kept only so branches written
before the move still import; new code imports bench.support.network."""

from bench.support.network import (
    Blackhole,
    free_port,
    proxy_env,
)

__all__ = ["Blackhole", "free_port", "proxy_env"]
