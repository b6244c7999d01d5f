"""Moved to bench/support/pages.py (bench/ must not import tests/). Kept only so branches written
before the move still import; new code imports bench.support.pages."""

from bench.support.pages import (
    OWN_INPUTS,
    PROBE_LAYOUT,
    ROOT,
    RUNS_MULTIHEAD,
    PageInfo,
    aliases,
    app_pages,
)

__all__ = [
    "OWN_INPUTS",
    "PROBE_LAYOUT",
    "ROOT",
    "RUNS_MULTIHEAD",
    "PageInfo",
    "aliases",
    "app_pages",
]
