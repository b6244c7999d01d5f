"""Pages only pick and arrange what ui/ and the engine return, and stay short
(docs/architecture.md, "The rules")."""

from __future__ import annotations

from pathlib import Path

import pytest

PAGES = sorted((Path(__file__).resolve().parents[1] / "pages").glob("*.py"))
MOST_LINES = 199  # "each under 200 lines"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_page_file_stays_under_200_lines(page):
    lines = page.read_text(encoding="utf-8").count("\n")
    assert lines <= MOST_LINES, f"{page.name}: {lines} lines; move drawing into ui/"


def test_every_page_is_checked():
    assert len(PAGES) >= 10
