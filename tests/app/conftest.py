"""Shared helpers for the AppTest suite: open the app, read what a student sees.

AppTest runs ``app.py`` (the frame every page runs in) headless, in this process. Streamlit's
caches are process-wide, so tests that count engine calls clear them first.
"""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from bench.support.pages import app_pages

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"

# Every page app.py registers, read from its PAGES list (pages added later are covered too).
REGISTERED = app_pages()

# The chapter's pages, in the order of the sidebar, with the title each shows.
PAGES = {
    "home": "pages/why-attention.py",
    "simplified": "pages/simplified-attention.py",
    "trainable": "pages/trainable-attention.py",
    "causal": "pages/causal-attention.py",
    "multihead": "pages/multi-head-attention.py",
}
TITLES = {
    "home": "Attention, step by step",
    "simplified": "1. Simplified self-attention",
    "trainable": "2. Trainable self-attention",
    "causal": "3. Causal attention and dropout",
    "multihead": "4. Multi-head attention",
}
PASS_PAGES = ("simplified", "trainable", "causal", "multihead")

TOKENIZER_CAPTION = "Tokenizer: GPT-2 BPE (tiktoken) · "
URL_WARNING = "Some values in the link were not understood"
BOOK_TEXT = "Your journey starts with one step"
# Book mode: the chapter's six words, one per 3-dimensional input row (no tokenizer).
BOOK_LABELS = ["0: Your", "1: journey", "2: starts", "3: with", "4: one", "5: step"]
# Every closed part of the pass pages opened (ui/sections.py), as a link opens them.
OPEN_PARTS = dict.fromkeys(("lab", "batch", "scaling", "v1v2", "reshape", "wrapper"), "true")
SIDEBAR_DEFAULTS = {"d_in": 8, "d_out": 8, "heads": 2, "ctx": 32, "eseed": 123, "wseed": 123}


def open_app(query: dict[str, str | list[str]] | None = None, page: str = "home") -> AppTest:
    """Run the app once with ``query`` in the URL, then switch to ``page`` and run it.

    A ``cell`` names a cell of the page the link opens; the home page, which this first run
    opens, explains cells of its own (its alignment) and drops one that is not, so for another
    page the cell joins the URL after that first run."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    held = {}
    for key, value in (query or {}).items():
        if key == "cell" and page != "home":
            held[key] = value
            continue
        at.query_params[key] = value
    at.run()
    if page != "home":
        for key, value in held.items():
            at.query_params[key] = value
        at.switch_page(PAGES[page]).run()
    return at


def go(at: AppTest, page: str) -> AppTest:
    """Switch to a chapter page by name, or to any registered page by its file."""
    return at.switch_page(PAGES.get(page, page)).run()


def unescape(markdown: str) -> str:
    """Undo the app's Markdown escaping (a backslash before each punctuation character)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


def values(elements) -> list[str]:
    """Each element's text, unescaped, a paragraph at a time: sentences the page draws in one
    element to save messages (the claims under a figure) are read as the student reads them."""
    return [p for e in elements for p in unescape(str(e.value)).split("\n\n") if p]


def exceptions(at: AppTest) -> list[str]:
    return [e.message for e in at.exception]


def spec_array(obj) -> np.ndarray:
    """Plotly's JSON arrays: ``{"dtype", "bdata", "shape"}`` base64, or plain lists."""
    if isinstance(obj, dict) and "bdata" in obj:
        a = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=np.dtype(obj["dtype"]))
        return a.reshape([int(s) for s in str(obj.get("shape", a.size)).split(",")])
    return np.asarray(obj)


def charts(at: AppTest) -> list:
    return list(at.get("plotly_chart"))


def chart_specs(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in charts(at)]


def chart_title(spec: dict) -> str:
    """The chart's title on one line (a long title is wrapped with ``<br>``, at a space), then
    its subtitle in brackets when it has one (a note: "tokens 10–20 of 60")."""
    title = spec.get("layout", {}).get("title", {})
    text = title.get("text", "").replace("<br>", " ")
    note = title.get("subtitle", {}).get("text", "")
    return f"{text} ({note})" if note else text


def chart(at: AppTest, title_prefix: str) -> dict:
    """The one chart whose title starts with ``title_prefix``."""
    found = [s for s in chart_specs(at) if chart_title(s).startswith(title_prefix)]
    titles = [chart_title(s) for s in chart_specs(at)]
    assert len(found) == 1, f"{len(found)} charts titled {title_prefix!r}* among {titles}"
    return found[0]


# One live check as the app writes it (ui/render.badge_text): the badge st.badge would write,
# then, after a hard line break, what holds in words in small type. Several such checks can
# share one Markdown element (the page's "Live checks"); under it, one st.html element holds
# the group's closed "How close, in numbers" fold (ui/render.fold_html), a line per check that
# compared numbers, named by its title.
BADGE = re.compile(
    r":(?P<colour>[a-z]+)-badge\[(?::material/[a-z_]+: )?(?P<text>(?:\\.|[^\]\\])*)\]"
    r"(?:  \n:small\[(?P<words>.*?)\](?=\n\n|$))?",
    re.S,
)
FOLD = re.compile(
    r'<details class="how-close"><summary>How close, in numbers</summary>(?P<lines>.*?)</details>',
    re.S,
)
FOLD_LINE = re.compile(r'<div><span class="check">(?P<title>.*?)</span>: (?P<numbers>.*?)</div>')


def folds(at: AppTest) -> list[dict[str, str]]:
    """Every "How close, in numbers" fold on the page, in order: check title -> its numbers."""
    out = []
    for element in at.html:
        for fold in FOLD.finditer(str(element.value)):
            lines = FOLD_LINE.finditer(fold["lines"])
            out.append({html.unescape(m["title"]): html.unescape(m["numbers"]) for m in lines})
    return out


def check_badges(at: AppTest) -> list[tuple[str, str, str, str]]:
    """Every badge on the page, in order, as (colour, text, what holds in words, the numbers
    in the fold under it), unescaped; "" for a part the badge does not have."""
    numbers = {title: n for fold in folds(at) for title, n in fold.items()}
    out = []
    for m in at.markdown:
        for match in BADGE.finditer(str(m.value)):
            text, words = (unescape(match[k] or "") for k in ("text", "words"))
            title = text.rsplit(": ", 1)[0]
            out.append((match["colour"], match["text"], words, numbers.get(title, "")))
    return out


def badges(at: AppTest) -> list[tuple[str, str]]:
    """Every badge on the page, in order, as (colour, text)."""
    return [(colour, text) for colour, text, _, _ in check_badges(at)]


def header_captions(at: AppTest) -> list[str]:
    return [c.value for c in at.caption if str(c.value).startswith("Tokenizer:")]


def assert_sidebar(at: AppTest, **expected) -> None:
    """The shared sidebar is built (app.py ran around the page) and holds these values."""
    sb = at.sidebar
    assert sb.toggle(key="book") is not None
    if expected.get("book") is True:  # book mode: a panel of the chapter's values, no controls
        assert sb.toggle(key="book").value is True
        assert [m.value for m in sb.markdown if "Book mode: the chapter" in m.value]
        assert list(sb.number_input) == [] and list(sb.text_area) == []
        return
    assert sb.text_area(key="text") is not None
    for key in ("d_in", "d_out", "heads", "ctx", "eseed", "wseed", "dseed"):
        assert sb.number_input(key=key) is not None
    assert sb.slider(key="dropout") is not None
    assert sb.toggle(key="bias") is not None and sb.toggle(key="train") is not None
    for key, value in expected.items():
        if key == "text":
            got = sb.text_area(key="text").value
        elif key in ("book", "bias", "train"):
            got = sb.toggle(key=key).value
        elif key == "dropout":
            got = sb.slider(key="dropout").value
        elif key == "text2":
            got = sb.text_input(key="text2").value
        else:
            got = sb.number_input(key=key).value
        assert got == value, f"sidebar {key}: {got!r}, expected {value!r}"


@pytest.fixture
def app():
    """``app(query, page)``: a fresh AppTest session (see :func:`open_app`)."""
    return open_app
