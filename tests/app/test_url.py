"""Shared links: settings in the URL reach every page; values the app cannot use are named in
one warning and replaced by the defaults before any widget sees them."""

from __future__ import annotations

import pytest

from .conftest import (
    BOOK_TEXT,
    PAGES,
    PASS_PAGES,
    SIDEBAR_DEFAULTS,
    URL_WARNING,
    assert_sidebar,
    chart,
    charts,
    exceptions,
    go,
    open_app,
    values,
)

SHARED = {
    "d_out": "12",
    "heads": "3",
    "ctx": "40",
    "text": "the cat sat on the mat",
    "dropout": "0.3",
    "wseed": "7",
    "bias": "true",
}
SHARED_VALUES = dict(
    d_out=12, heads=3, ctx=40, text="the cat sat on the mat", dropout=0.3, wseed=7, bias=True
)


def url_warnings(at) -> list[str]:
    return [w for w in values(at.warning) if w.startswith(URL_WARNING)]


def test_shared_url_settings_reach_every_page_and_persist_across_switches():
    at = open_app(SHARED)
    assert url_warnings(at) == []
    for page in [*PAGES, "simplified", "home"]:
        go(at, page)
        assert not exceptions(at), page
        assert_sidebar(at, **SHARED_VALUES, d_in=8)
    # The pages compute with them.
    go(at, "trainable")
    assert chart(at, "W_q")["layout"]["title"]["text"] == "W_q (8, 12)"
    assert chart(at, "Weights A")["data"][0]["x"][-1] == "5: ␣mat"
    go(at, "causal")
    assert chart(at, "mask = triu(ones(40, 40)")
    go(at, "multihead")
    assert chart(at, "Attention weights of all 3 heads")
    assert at.selectbox(key="head").options == ["0", "1", "2"]


BAD = {
    "heads": ("abc", "heads (not a whole number)"),
    "d_out": ("-5", "d_out (outside 1–1600)"),
    "dropout": ("nan", "dropout (not a finite number)"),
    "ctx": ("99999", "ctx (outside 1–1024)"),
    "foo": ("1", "foo (unknown setting)"),
    "wseed": (["1", "2"], "wseed (given more than once)"),
    # Values Streamlit itself would turn into a number the app did not accept.
    "d_in": ("7.5", "d_in (not a whole number)"),
    "eseed": ("1e3", "eseed (not a whole number)"),
    "book": ("maybe", "book (not true or false)"),
    # Streamlit's bound toggle reads only true/false: "yes" would be dropped without a word.
    "bias": ("yes", "bias (not true or false)"),
}


def test_bad_url_values_are_named_in_one_warning_and_the_defaults_are_used():
    at = open_app({key: raw for key, (raw, _) in BAD.items()})
    assert not exceptions(at)
    (warning,) = url_warnings(at)
    for key, (_, named) in BAD.items():
        assert named in warning, f"{key} not named in {warning!r}"
    assert warning.count("(") == len(BAD)
    assert_sidebar(at, **SIDEBAR_DEFAULTS, dropout=0.1, book=False, bias=False, text=BOOK_TEXT)
    # The warning stays (once) on every page, which all still work with the defaults.
    for page in PAGES:
        go(at, page)
        assert not exceptions(at), page
        assert len(url_warnings(at)) == 1, page
        assert len(charts(at)) > 0, page
        assert_sidebar(at, **SIDEBAR_DEFAULTS, text=BOOK_TEXT)


@pytest.mark.parametrize("key", list(BAD))
def test_one_bad_url_value_is_named_alone_and_its_widget_keeps_the_default(key):
    raw, named = BAD[key]
    at = open_app({key: raw, "dseed": "5"})
    assert not exceptions(at)
    (warning,) = url_warnings(at)
    assert warning == (
        f"Some values in the link were not understood and the defaults are used instead: {named}."
    )
    assert_sidebar(
        at, **SIDEBAR_DEFAULTS, dseed=5, text=BOOK_TEXT, book=False, bias=False, dropout=0.1
    )
    # The rejected value left the link; the good one stayed.
    assert key not in at.query_params
    assert at.query_params.get("dseed") == "5"


def test_good_url_values_raise_no_warning():
    at = open_app(
        {"book": "false", "train": "true", "dropout": "0.25", "eseed": "0", "text": "x" * 2000}
    )
    assert url_warnings(at) == []
    assert_sidebar(at, train=True, dropout=0.25, eseed=0, text="x" * 2000)
    # Exactly 2,000 characters: nothing was cut, so nothing says it was.
    assert values(at.warning) == []


def test_a_link_text_longer_than_the_limit_keeps_its_first_2000_characters_and_says_so():
    given = "the cat sat " * 200  # 2,400 characters
    at = open_app({"text": given, "text2": "y" * 2001}, page="simplified")
    assert not exceptions(at)
    assert url_warnings(at) == []  # nothing was refused
    assert values(at.warning) == [
        "The link's text was 2,400 characters long: it was shortened to its first 2,000. "
        "The link's text2 was 2,001 characters long: it was shortened to its first 2,000."
    ]
    assert at.sidebar.text_area(key="text").value == given[:2000]
    assert at.sidebar.text_input(key="text2").value == "y" * 2000
    assert at.query_params["text"] == given[:2000]  # the link keeps what is used
    assert chart(at, "Weights A")["data"][0]["x"][1] == "1: ␣cat"


def test_a_paste_longer_than_the_limit_keeps_its_first_2000_characters_and_says_so():
    """A browser ignored a paste past max_chars without a word: now the whole paste arrives,
    the box keeps its first 2,000 characters and the sidebar says so, on every page."""
    at = open_app(page="simplified")
    paste = "The cat sat on the mat. " * 100  # 2,400 characters
    at.sidebar.text_area(key="text").input(paste).run()
    assert not exceptions(at)
    assert at.sidebar.text_area(key="text").value == paste[:2000]
    notice = "The text you gave had 2,400 characters: only its first 2,000 are kept."
    assert notice in values(at.sidebar.warning)
    assert chart(at, "Weights A")["data"][0]["x"][1] == "1: ␣cat"
    go(at, "causal")
    assert notice in values(at.sidebar.warning)
    # A new, shorter text: nothing was cut, and the notice goes.
    at.sidebar.text_area(key="text").input("a short text").run()
    assert not [w for w in values(at.warning) if "characters" in w]
    # The second text is cut the same way.
    at.sidebar.text_input(key="text2").input("z" * 2500).run()
    assert at.sidebar.text_input(key="text2").value == "z" * 2000
    assert "The second text you gave had 2,500 characters: only its first 2,000 are kept." in (
        values(at.sidebar.warning)
    )


def test_d_out_not_divisible_by_heads_stops_only_the_multi_head_page():
    at = open_app({"d_out": "10", "heads": "4"})
    for page in ("home", "simplified", "trainable", "causal"):
        go(at, page)
        assert not exceptions(at), page
        assert values(at.error) == [], page
        assert len(charts(at)) > 0, page
    go(at, "multihead")
    assert not exceptions(at)
    (error,) = values(at.error)
    assert error.startswith("d_out=10 is not divisible by num_heads=4: ")
    assert error.endswith("Change d_out or num_heads in the sidebar; the other pages still work.")
    assert charts(at) == []
    assert [s.key for s in at.selectbox] == []  # nothing after the error: no head, no bugs
    # and the others keep working afterwards
    go(at, "simplified")
    assert values(at.error) == [] and len(charts(at)) > 0
    assert_sidebar(at, d_out=10, heads=4)


@pytest.mark.parametrize("page", PASS_PAGES)
def test_each_pass_page_opens_directly_with_settings_from_the_url(page):
    at = open_app({"d_in": "4", "d_out": "6", "heads": "3", "text": "a b c"}, page=page)
    assert not exceptions(at)
    assert values(at.error) == []
    assert len(charts(at)) > 0
    assert_sidebar(at, d_in=4, d_out=6, heads=3, text="a b c")


def book_panel_text(at) -> str:
    return " ".join(values(at.sidebar.markdown))


def test_book_mode_sidebar_shows_the_chapter_values_and_no_control_shows_the_normal_ones():
    at = open_app({"book": "true", "d_in": "16", "d_out": "12", "heads": "3"}, page="causal")
    assert not exceptions(at)
    panel = book_panel_text(at)
    assert "Book mode: the chapter's arguments" in panel
    assert "d_in = 3, d_out = 2, context_length = 6, num_heads = 2" in panel
    assert "seed 123" in panel and "seed 789" in panel
    assert "dropout = 0.0 in the modules" in panel and "0.5 with seed 123" in panel
    # No widget shows a value the pages do not use (the d_in of the link, or the default 8).
    assert list(at.sidebar.number_input) == []
    assert [s.key for s in at.sidebar.slider] == []
    assert [t.key for t in at.sidebar.toggle] == ["book"]


def test_switching_book_mode_off_brings_the_students_values_back():
    at = open_app({"d_in": "16"}, page="multihead")
    at.sidebar.number_input(key="d_out").set_value(16).run()
    at.sidebar.number_input(key="heads").set_value(4).run()
    at.sidebar.text_area(key="text").input("the cat sat on the mat").run()
    at.sidebar.toggle(key="book").set_value(True).run()
    assert list(at.sidebar.number_input) == []
    go(at, "causal")  # a page switch in book mode keeps them too
    assert not exceptions(at)
    at.sidebar.toggle(key="book").set_value(False).run()
    assert not exceptions(at)
    assert_sidebar(at, d_in=16, d_out=16, heads=4, text="the cat sat on the mat", book=False)
    assert "Book mode: the chapter's arguments" not in book_panel_text(at)
    go(at, "multihead")
    assert chart(at, "Attention weights of all 4 heads")


def test_pages_beyond_the_book_say_nothing_of_the_sidebars_values_in_book_mode():
    at = open_app({"book": "true"})
    for page in ("home", "pages/watch-attention-learn.py", "pages/against-pytorch.py"):
        go(at, page)
        assert not exceptions(at), page
        shown = values(at.markdown) + values(at.caption) + values(at.info)
        assert not [t for t in shown if "sidebar's" in t], page
