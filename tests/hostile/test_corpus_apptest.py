"""The whole hostile corpus against every page, through AppTest (no browser).

For each (case, page) a student must see: no exception; a clear message where the input is
unusable (no text, a rejected URL value, heads that do not divide d_out), figures otherwise;
their own text shown literally: never as live Markdown, and HTML-escaped in every Plotly label.
"""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict

import pytest
from streamlit.testing.v1 import AppTest

from attnviz import figures
from attnviz.core.tokens import tokenize
from bench.support.pages import OWN_INPUTS, ROOT, RUNS_MULTIHEAD, app_pages
from tests.app.conftest import chart_title
from tests.app.test_pages import WHY_RUN_CHARTS

from .corpus import CASES, CASES_BY_ID, TOKEN_CAP, syntax_fragments

APP = ROOT / "app.py"
PAGES = app_pages()
MULTIHEAD = "multi-head-attention"
TEXT_PAGES = {p.url_path for p in PAGES if p.draws_sidebar_text}
HEADS_PAGES = {p.url_path for p in PAGES if p.runs_multihead}

EMPTY = "There is no text to attend over"
URL_WARNING = "Some values in the link were not understood"
HEADS_ERROR = "is not divisible by num_heads"

# Elements whose text Streamlit renders as Markdown.
MARKDOWN_KINDS = (
    "markdown",
    "caption",
    "info",
    "warning",
    "error",
    "success",
    "title",
    "header",
    "subheader",
    "toast",
)
WIDGET_KINDS = (
    "button",
    "checkbox",
    "toggle",
    "selectbox",
    "multiselect",
    "radio",
    "select_slider",
    "slider",
    "number_input",
    "text_input",
    "text_area",
)
# Plotly keys whose string arrays are drawn as labels (ticks, hover): they must be escaped.
LABEL_KEYS = {"x", "y", "ticktext", "categoryarray", "text", "labels"}
# Markup the app itself writes into hover templates and titles (never from user text).
APP_MARKUP = {"<br>", "<extra>", "</extra>", "<extra></extra>"}


def unescape_md(text: str) -> str:
    """What a student reads: the Markdown backslash escapes removed."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


def run_case(case, page) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=240)
    grouped: dict[str, list[str]] = defaultdict(list)
    for key, value in case.query:
        grouped[key].append(value)
    for key, values in grouped.items():
        at.query_params[key] = values[0] if len(values) == 1 else values
    for key, value in case.session:
        at.session_state[key] = value
    at.run()
    if case.typed is not None:
        at.sidebar.text_area(key="text").input(case.typed).run()
    if case.forced is not None:
        at.sidebar.text_area(key="text").set_value(case.forced).run()
    at.switch_page(page.path).run()
    return at


def markdown_values(at: AppTest) -> list[str]:
    values = []
    for kind in MARKDOWN_KINDS:
        values += [str(e.value) for e in getattr(at, kind)]
    values += [str(e.label) for e in at.expander]
    # Widget labels and tooltips are Markdown; so are the options of these widgets.
    for kind in WIDGET_KINDS:
        for widget in getattr(at, kind):
            values += [str(widget.label), str(getattr(widget, "help", "") or "")]
            if kind in ("radio", "select_slider"):
                values += [str(o) for o in widget.options]
    return values


def chart_specs(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def _strings(obj, key=None, in_label=False):
    """(string, is a drawn label) for every string in a Plotly spec."""
    if isinstance(obj, str):
        yield obj, in_label
    elif isinstance(obj, dict):
        if "bdata" in obj:
            return
        for k, v in obj.items():
            yield from _strings(v, k, isinstance(v, list) and k in LABEL_KEYS)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v, key, in_label)


def label_lists(spec: dict):
    for trace in spec.get("data", []):
        for axis in ("x", "y"):
            values = trace.get(axis)
            if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
                yield values


def case_page_params():
    for case in CASES:
        for page in PAGES:
            if case.pages is None or page.url_path in case.pages:
                yield pytest.param(case.id, page, id=f"{case.id}@{page.url_path}")


@pytest.fixture(scope="module")
def blackhole_start(blackhole):
    return len(blackhole.snapshot())


@pytest.mark.parametrize(("case_id", "page"), list(case_page_params()))
def test_case_on_page(case_id, page, canary, blackhole_start):
    case = CASES_BY_ID[case_id].resolve(canary.origin)
    at = run_case(case, page)

    # 1. Nothing breaks.
    assert not at.exception, [e.message for e in at.exception]

    infos = [unescape_md(i.value) for i in at.info]
    url_warnings = [unescape_md(w.value) for w in at.warning if URL_WARNING in unescape_md(w.value)]
    errors = [unescape_md(e.value) for e in at.error]
    charts = chart_specs(at)

    # 2. The right message, or figures.
    draws = page.url_path in TEXT_PAGES  # else the page has its own inputs: nothing may break
    expect = case.expect
    if expect == "heads" and page.url_path not in HEADS_PAGES:
        expect = "charts"
    if expect == "empty" and draws:
        assert any(EMPTY in i for i in infos), infos
        # The home page's "why attention, measured" reads no text: its recorded runs stay.
        drawn = [re.sub(r" \([^()]*\)$", "", chart_title(c)) for c in charts]
        kept = WHY_RUN_CHARTS if page.url_path == "why-attention" else []
        assert drawn == kept, "figures drawn for an empty text"
    elif expect == "heads":
        assert len(errors) == 1 and HEADS_ERROR in errors[0], errors
        assert not charts
    elif draws:
        assert charts, f"no figures on {page.url_path}"
        assert not any(EMPTY in i for i in infos), infos
    if expect != "heads":
        assert not errors, errors
    if expect == "url_warning":
        assert len(url_warnings) == 1, url_warnings
        named = url_warnings[0]
        for key in case.warned:
            assert f"{key} (" in named, (key, named)
        for words in case.warned_text:
            assert words in named, (words, named)
        from ui.state import FIELDS_BY_URL  # imports streamlit widgets code

        for key in case.warned:
            if key in FIELDS_BY_URL and key != "text":
                assert at.session_state[key] == FIELDS_BY_URL[key].default, key
    else:
        assert not url_warnings, url_warnings
    if draws:
        for needle in case.infos:
            assert any(needle in i for i in infos), (needle, infos)
    messages = infos + errors + [unescape_md(w.value) for w in at.warning]
    for needle in case.warns:
        assert any(needle in w for w in (unescape_md(w.value) for w in at.warning)), needle
    for url_path, needle in case.shows:
        if url_path == page.url_path:
            assert any(needle in m for m in messages), (needle, messages)

    # 3. The sidebar holds what the student gave (or what the server cut it to).
    if case.text_after is not None:
        assert at.session_state["text"] == case.text_after

    # 4. Student text is never live Markdown: its syntax shows only backslash-escaped.
    fragments = set().union(*(syntax_fragments(t) for t in case.literal)) if case.literal else set()
    fragments.add(canary.origin)
    for value in markdown_values(at):
        for fragment in fragments:
            assert fragment not in value, f"unescaped {fragment!r} in Markdown: {value[:200]!r}"

    # 5. Plotly: every drawn label is HTML-escaped; user syntax appears nowhere else raw.
    for spec in charts:
        for s, is_label in _strings(spec):
            if is_label:
                assert "<" not in s and ">" not in s, f"raw HTML in a label: {s!r}"
                assert html.escape(html.unescape(s), quote=False) == s, f"unescaped: {s!r}"
            else:
                for fragment in fragments - APP_MARKUP:
                    assert fragment not in s, f"user text {fragment!r} in a figure: {s!r}"

    # 6. The labels are the student's own tokens, one per position, shown literally.
    book = dict(case.query).get("book") == "true"
    if draws and expect == "charts" and case.text_after and not book:
        tokens = tokenize(case.text_after, cap=TOKEN_CAP)
        expected = figures.axis_labels(tokens.labels)
        if page.lays_text_after_filler:  # page 8: filler, then the text twice
            from attnviz.models.induction import api
            from attnviz.models.induction.passes import map_tokens

            laid = api.probe(map_tokens(tokens.ids).ids, tokens.displays)
            expected = figures.axis_labels(laid.labels)
        drawn = [labels for spec in charts for labels in label_lists(spec)]
        assert any(labels == expected[: len(labels)] for labels in drawn), (
            f"no figure labelled with the text's tokens; expected {expected[:6]}…, "
            f"drawn {[d[:3] for d in drawn][:6]}"
        )


def test_pages_are_classified():
    """The rules above rest on reading the pages' code: make sure that still finds them."""
    assert MULTIHEAD in HEADS_PAGES <= TEXT_PAGES
    assert {"simplified-attention", "causal-attention"} <= TEXT_PAGES
    # The page facts name files that app.py registers (a renamed page must be renamed there too).
    assert OWN_INPUTS | RUNS_MULTIHEAD <= {p.path for p in PAGES}
    assert "watch-attention-learn" not in TEXT_PAGES


def test_html_labels_are_escaped_entities(canary):
    """The HTML case, spelled out: a typed '<' is sent as '&lt;', a typed '&' as '&amp;'."""
    case = CASES_BY_ID["html-bold"].resolve(canary.origin)
    page = next(p for p in PAGES if p.url_path == "simplified-attention")
    at = run_case(case, page)
    labels = {s for spec in chart_specs(at) for lab in label_lists(spec) for s in lab}
    assert "0: &lt;" in labels
    assert any(s.endswith(": &amp;") or ": ␣&amp;" in s for s in labels), sorted(labels)


def test_presets_reach_the_largest_sizes():
    """The GPT-2 XL preset button (the largest allowed sizes) on the multi-head page."""
    page = next(p for p in PAGES if p.url_path == MULTIHEAD)
    at = AppTest.from_file(str(APP), default_timeout=240)
    at.query_params["text"] = "Hi there"
    at.run()
    at.switch_page(page.path).run()
    at.session_state["presets"] = True  # the closed box builds its buttons once opened
    at.run()
    at.button(key="preset_GPT-2 XL").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert (at.session_state["d_out"], at.session_state["heads"]) == (1600, 25)
    assert at.get("plotly_chart")
    assert "64" in " ".join(c.value for c in at.caption)  # √head_dim = √64


def test_canary_and_blackhole_received_nothing(canary, blackhole, blackhole_start):
    assert canary.snapshot() == []
    assert blackhole.snapshot()[blackhole_start:] == []


def test_every_url_in_the_corpus_points_at_the_canary():
    """A URL that escaped into the page as a live link or image would fetch from it: only the
    canary can tell, so the corpus holds no other address."""
    import re

    from .corpus import CASES

    resolved = [case.resolve("http://127.0.0.1:9") for case in CASES]
    texts = [repr(case) for case in resolved]
    urls = [u for t in texts for u in re.findall(r"[a-z][a-z0-9+.-]*://[^\s'\")>\]]*", t)]
    assert len(urls) >= 4  # the image, the Markdown image, link and autolink
    assert all(u.startswith("http://127.0.0.1:9/") for u in urls), urls
    assert any(u.endswith("/autolink") for u in urls)
