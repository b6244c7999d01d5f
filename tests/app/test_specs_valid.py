"""Plotly's validation, moved off the request path into the tests (issue 22).

The app builds every figure as a plain plotly.js spec (no ``graph_objects`` on the request
path), so nothing checks a property's name or value while a student waits. This test does it:
every chart every page sends, at the defaults, in book mode, in training mode with dropout 0.5,
with 4 and with 16 heads, on a 60-token text with each view (relative colour, a token window,
both), and every presenter step at the projector's size, goes through
``plotly.graph_objects.Figure`` — a misspelt property or a bad value fails here.
"""

from __future__ import annotations

import json

import pytest

from bench.support.pages import app_pages
from tests.support.specs import as_figure

from .conftest import PAGES, charts, exceptions, go, open_app
from .test_long_texts import QUERY as LONG
from .test_long_texts import RELATIVE, N

SETTINGS = {
    "defaults": {},
    "book": {"book": "true"},
    "training": {"train": "true", "dropout": "0.5"},
    "4 heads": {"heads": "4"},
    "16 heads": {"heads": "16", "d_out": "32"},
    "60 tokens": LONG,
}
PASS_PAGES = ("simplified", "trainable", "causal", "multihead")


def sent_specs(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in charts(at)]


def validated(at, where: str) -> int:
    """Validate every chart the page sent; returns how many there were."""
    assert not exceptions(at), (where, exceptions(at))
    specs = sent_specs(at)
    for spec in specs:
        try:
            as_figure(spec)
        except (ValueError, TypeError) as err:  # Plotly names the bad property
            pytest.fail(f"{where}: {spec['layout'].get('title', {}).get('text')}: {err}")
    return len(specs)


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_every_chart_of_every_page_is_a_valid_plotly_figure(setting):
    at = open_app(SETTINGS[setting])
    drawn = validated(at, f"home, {setting}")
    for page in app_pages():
        if page.default:
            continue
        go(at, f"pages/{page.url_path}.py")
        drawn += validated(at, f"{page.url_path}, {setting}")
    assert drawn >= 30  # the pass pages alone draw more than 30 charts


@pytest.mark.parametrize("page", PASS_PAGES)
def test_every_view_of_a_long_text_is_a_valid_plotly_figure(page):
    at = open_app(LONG, page=page)
    for relative, window in ((True, None), (False, (10, 30)), (True, (5, 20))):
        at.radio(key="colour").set_value(RELATIVE if relative else "weights 0 to 1")
        at.slider(key="tokens").set_value(window or (0, N - 1))
        at.run()
        assert validated(at, f"{page}, relative={relative}, window={window}") >= 3


@pytest.mark.parametrize("page", PASS_PAGES)
@pytest.mark.parametrize("setting", ["defaults", "training", "16 heads"])
def test_every_presenter_step_is_a_valid_plotly_figure_at_projector_size(page, setting):
    at = open_app({**SETTINGS[setting], "present": "true"}, page=page)
    steps = 0
    while True:
        assert validated(at, f"{page} presenter step {steps + 1}, {setting}") == 1
        (spec,) = sent_specs(at)
        assert spec["layout"]["title"]["font"]["size"] >= 28  # drawn for a projector
        steps += 1
        nxt = at.button(key="present_next")
        if nxt.disabled:
            break
        nxt.click().run()
    assert steps >= 3, PAGES[page]
