"""Moved to bench/support/server.py (bench/ must not import tests/). Kept only so branches written
before the move still import; new code imports bench.support.server."""

from bench.support.server import (
    LOOPBACK_FLAGS,
    ROOT,
    running_app,
    streamlit_command,
    wait_healthy,
)

__all__ = ["LOOPBACK_FLAGS", "ROOT", "running_app", "streamlit_command", "wait_healthy"]
