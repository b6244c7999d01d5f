"""Every path a student can reach a page by opens that page: the home page's own title as a path,
/why-attention, opens the home page (Streamlit serves the default page at "/" and answered its
url_path with "Page not found")."""

from __future__ import annotations

import functools

import pytest
import streamlit.commands.navigation as navigation
from streamlit.testing.v1 import AppTest, local_script_runner

from bench.support.pages import aliases, app_pages

from .conftest import APP, TITLES, assert_sidebar, exceptions


def visit(monkeypatch, path: str) -> tuple[AppTest, list]:
    """Open ``/path`` as a browser does (the page's name in the request, no page hash) and
    record every "Page not found" Streamlit would send."""
    not_found: list = []
    monkeypatch.setattr(navigation, "send_page_not_found", lambda ctx: not_found.append(ctx))
    monkeypatch.setattr(
        local_script_runner,
        "RerunData",
        functools.partial(local_script_runner.RerunData, page_name=path),
    )
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["text"] = "the cat sat"
    at.run()
    return at, not_found


def test_the_home_pages_title_as_a_path_opens_the_home_page(monkeypatch):
    at, not_found = visit(monkeypatch, "why-attention")
    assert not_found == []
    assert not exceptions(at)
    assert [t.value for t in at.title] == [TITLES["home"]]
    assert_sidebar(at, text="the cat sat")  # inside app.py's frame, the link's values kept


@pytest.mark.parametrize("page", [p for p in app_pages() if not p.default], ids=str)
def test_every_page_path_opens_without_page_not_found(monkeypatch, page):
    _, not_found = visit(monkeypatch, page.url_path)
    assert not_found == []


def test_an_unknown_path_still_says_page_not_found(monkeypatch):
    """The recorder above can fail: a path no page has is reported."""
    _, not_found = visit(monkeypatch, "no-such-page")
    assert not_found


def test_the_home_page_alias_is_hidden_and_points_at_the_home_page_file():
    home = next(p for p in app_pages() if p.default)
    assert [(a.path, a.url_path) for a in aliases()] == [(home.path, "why-attention")]
    assert (home.path, home.url_path, home.url) == ("pages/why-attention.py", "why-attention", "/")
    assert [p.title for p in app_pages()].count("Why attention") == 1  # listed once
