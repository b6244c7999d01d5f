"""Every view a link: the pages' own view controls read their values from the URL (each bound
to its name), a value the app cannot use is named in the link warning (or beside its control
when it does not fit this text) and never raises, and the "Copy link to this view" button is on
every pass page and in presenter mode. (That the browser's URL follows the controls, and that a
copied link opens the same view, is tests/browser/test_readable.py's round trip: AppTest does
not simulate Streamlit's URL writes.)"""

from __future__ import annotations

import pytest

from ui import links, url

from .conftest import APP, PAGES, URL_WARNING, chart_specs, chart_title, exceptions, values

TEXT = "The cat sat on the mat"
RELATIVE = links.SCALES[1]


def open_app(query: dict, page: str):
    """A link straight to ``page``: its first run is that page's, as in a browser."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP), default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    return at.switch_page(PAGES[page]).run()


def warnings(at) -> list[str]:
    return values(at.warning)


def copy_buttons(at) -> int:
    """The "Copy link to this view" components drawn (a Streamlit component with its own
    script: AppTest sees the element, the browser test presses it)."""
    return len(
        [c for c in at.get("bidi_component") if c.proto.component_name == "attnviz_copy_link"]
    )


def test_a_link_opens_the_page_on_its_view_controls():
    at = open_app(
        {
            "text": TEXT,
            url.COLOUR: RELATIVE,
            url.NUMBERS: "true",
            url.QUERY: "3: ␣on",
            url.STRETCH: "5",
            url.SHIFT: "-100",
        },
        page="simplified",
    )
    assert not exceptions(at)
    assert not [w for w in warnings(at) if URL_WARNING in w]
    assert at.radio(key=url.COLOUR).value == RELATIVE
    assert at.toggle(key=url.NUMBERS).value is True
    assert at.selectbox(key=url.QUERY).value == 3
    assert at.select_slider(key=url.STRETCH).value == 5
    assert at.select_slider(key=url.SHIFT).value == -100
    # The view applies: the weights are drawn relative to an even share, tables are open.
    titles = [chart_title(s) for s in chart_specs(at)]
    weights = [s for s in chart_specs(at) if chart_title(s).startswith("Weights A")]
    assert weights and weights[0]["layout"]["title"]["subtitle"]["text"] == (
        "relative to an even share"
    ), titles
    assert len(at.dataframe) >= 3


@pytest.mark.parametrize(
    ("page", "query", "key", "value"),
    [
        ("trainable", {url.MODULE: links.MODULES["v1"]}, url.MODULE, "v1"),
        ("causal", {url.PLACEMENT: "true"}, url.PLACEMENT, True),
        ("multihead", {url.HEAD: "1"}, url.HEAD, 1),
        ("causal", {url.bug("causal"): "Renormalizing without masking"}, None, None),
    ],
)
def test_each_pass_pages_own_control_comes_from_the_link(page, query, key, value):
    at = open_app({"text": TEXT, **query}, page=page)
    assert not exceptions(at)
    assert not [w for w in warnings(at) if URL_WARNING in w]
    if key == url.MODULE:
        assert at.radio(key=key).value == value
    elif key == url.PLACEMENT:
        assert at.toggle(key=key).value is value
    elif key == url.HEAD:
        assert at.selectbox(key=key).value == value
    else:
        assert at.selectbox(key=url.bug("causal")).value == "Renormalizing without masking"
        assert any(chart_title(s).startswith("With the bug") for s in chart_specs(at))


def test_nonsense_view_values_get_the_link_warning_and_the_defaults():
    at = open_app(
        {
            "text": TEXT,
            url.COLOUR: "purple",
            url.NUMBERS: "yes",
            url.TOKENS: ["9", "2"],
            url.QUERY: "<b>x</b>",
            url.STRETCH: "7",
            url.HEAD: "-1",
            url.HEADS_SHOWN: ["head x"],
            url.bug("simplified"): "Delete everything",
        },
        page="simplified",
    )
    assert not exceptions(at)
    (warning,) = [w for w in warnings(at) if URL_WARNING in w]
    for named in (
        "colour (not one of the choices)",
        "numbers (not true or false)",
        "tokens (the first token after the last)",
        "query (not a token of the text",
        "stretch (not one of the choices)",
        "head (outside 0–31)",
        "heads_shown (not a whole number)",
        "bug_simplified (not one of the choices)",
    ):
        assert named in warning, (named, warning)
    assert "<b>" not in warning  # the link's text is shown literally
    assert at.radio(key=url.COLOUR).value == links.SCALES[0]
    assert at.toggle(key=url.NUMBERS).value is False
    assert at.selectbox(key=url.QUERY).value == 1


def test_a_well_formed_value_that_does_not_fit_this_text_is_named_beside_its_control():
    at = open_app({"text": TEXT, url.QUERY: "9: ␣far"}, page="simplified")
    assert not exceptions(at)
    assert any("The link's query=9: ␣far does not fit this text" in w for w in warnings(at))
    assert at.selectbox(key=url.QUERY).value == 1  # the default, as Streamlit drops it
    at = open_app({"text": TEXT, url.HEAD: "7"}, page="multihead")
    assert not exceptions(at)
    assert any("The link's head=7 does not fit" in w for w in warnings(at))
    assert at.selectbox(key=url.HEAD).value == 0


def test_the_copy_link_button_is_on_every_pass_page_and_in_presenter_mode():
    for page in ("simplified", "trainable", "causal", "multihead"):
        at = open_app({"text": TEXT}, page=page)
        assert copy_buttons(at) == 1, page
        at = open_app({"text": TEXT, "present": "true"}, page=page)
        assert copy_buttons(at) == 1, page
