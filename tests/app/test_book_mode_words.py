"""Book mode replaces the sidebar's controls with the chapter's arguments, so no page may speak
of "the sidebar's" text, sizes, seeds or dropout there: the sidebar does not show them."""

from __future__ import annotations

import pytest

from bench.support.pages import app_pages

from .conftest import exceptions, go, open_app, unescape, values

PAGE_FILES = [p.path for p in app_pages()]


@pytest.mark.parametrize("page", PAGE_FILES)
def test_book_mode_says_nothing_about_values_the_sidebar_does_not_show(page):
    at = go(open_app({"book": "true"}), page)
    assert not exceptions(at)
    shown = [unescape(t) for t in values(at.markdown) + values(at.caption) + values(at.info)]
    assert shown, "the page showed no text"
    assert not [t for t in shown if "sidebar's" in t], page
