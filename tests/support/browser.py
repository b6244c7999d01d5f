"""Moved to bench/support/browser.py (bench/ must not import tests/). Kept only so branches written
before the move still import; new code imports bench.support.browser."""

from bench.support.browser import (
    CHROMIUM_ARGS,
    SILENCED_SERVICES,
    chromium,
    chromium_path,
    wait_for_app,
)

__all__ = ["CHROMIUM_ARGS", "SILENCED_SERVICES", "chromium", "chromium_path", "wait_for_app"]
