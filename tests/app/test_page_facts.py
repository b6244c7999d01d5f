"""The facts bench/support/pages.py states about each page hold on the running page: a page
drawn from the sidebar shows the sidebar's text in its charts, a page with inputs of its own
does not, and exactly the multi-head pages refuse a d_out the heads do not divide."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from bench.support.pages import app_pages

from .conftest import APP

WORD = "elephant"  # one GPT-2 token, and a word no page shows by itself
HEADS_ERROR = "is not divisible by num_heads"

pytestmark = pytest.mark.slow


def run(page: str, query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


@pytest.mark.parametrize("info", app_pages(), ids=lambda p: p.url_path)
def test_the_stated_page_facts_hold(info):
    at = run(info.path, {"text": f"The purple {WORD} sat"})
    charts = " ".join(c.proto.spec for c in at.get("plotly_chart"))
    assert (WORD in charts) == info.draws_sidebar_text, info.path
    at = run(info.path, {"d_out": "7", "heads": "2"})
    errors = " ".join(e.value.replace("\\", "") for e in at.error)  # markdown-escaped
    assert (HEADS_ERROR in errors) == info.runs_multihead, info.path
