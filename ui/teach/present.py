"""Presenter mode: one pass, one step at a time, large, for a projector.

``present=true`` in the URL (or the toggle at the top of every pass page) swaps a page's long
layout for a stepper over the same engine-built panels the page shows: the lesson object's
``steps``, in the book's order. Each step is one big figure, its formula and one sentence;
Previous / Next (also the Left / Right and PageUp / PageDown keys, which presentation clickers
send) walk the steps, and ``step=N`` in the URL opens a given step (1-based, as a teacher counts).

The keys are caught on the whole window by a small components.v2 component mounted first on the
page (:func:`keys`); until its code has loaded, the buttons' own shortcuts (← and →) do. The
step's figure stays hidden until one of the two listens: on a busy machine Streamlit loads each
element's code lazily, and a lecturer's first → pressed as the figure appeared was lost (the
second then skipped a step).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

import streamlit as st
import streamlit.components.v2 as components

from attnviz import figures
from attnviz.teach.panel import Panel, stage_frame, stage_numbers
from ui import state, url
from ui.charts import chart
from ui.teach import narrow, predict
from ui.text import md_escape

PRESENT_KEY = url.PRESENT
STEP_KEY = url.STEP
MAX_STEP = 50  # no pass has more steps; a larger step= is named in the link warning
URL_WARNING_KEY = "_attnviz_present_url_warning"
TOGGLE_LABEL = "Presenter mode"
# The pass pages (their url_path) that have a stepper.
PASS_PAGES = frozenset(
    {"simplified-attention", "trainable-attention", "causal-attention", "multi-head-attention"}
)


KEYS_KEY = "present_keys"
MOVES_KEY = "_attnviz_present_moves"  # the keys' moves not yet shown: +1 per →, −1 per ←

_parse_step = url.whole(1, MAX_STEP)
PARSERS = {PRESENT_KEY: url.parse_bool, STEP_KEY: _parse_step}


def read_url() -> None:
    """Check ``present`` and ``step`` (and the pass pages' ``predict`` and ``mystery``) as the
    sidebar's values are checked (app.py calls this before any widget exists); a rejected one
    is dropped and named in one warning."""
    warning = state.read_url({**PARSERS, **predict.PARSERS}, URL_WARNING_KEY)
    if warning:
        st.session_state[URL_WARNING_KEY] = warning


def requested(url_path: str) -> bool:
    """Whether this run presents: the toggle's value once it exists, else the URL's."""
    if url_path not in PASS_PAGES:
        return False
    if PRESENT_KEY in st.session_state:
        return bool(st.session_state[PRESENT_KEY])
    return st.query_params.get(PRESENT_KEY) == "true"


def _start_over() -> None:
    # Switching presenter mode on or off starts from step 1 and a clean URL.
    if STEP_KEY in st.query_params:
        del st.query_params[STEP_KEY]


# Presenter mode's header, one line across the screen: the page's title, the text box, Previous,
# the step counter, Next, the switches (Presenter mode, Predict first) and "Copy link"; the
# columns' shares of the 1,760 px main area at 1920 (px, as they measure there).
HEADER_COLUMNS = (400, 330, 165, 125, 135, 200, 210)
HEADER_SLOTS = ("title", "text", "prev", "counter", "next", "switches", "link")
_header: ContextVar[dict[str, Any] | None] = ContextVar("attnviz_presenter_header", default=None)


def slot(name: str):
    """The header's container ``name`` (one of HEADER_SLOTS) in this run of presenter mode; a
    new container where the page draws now when there is no header (another page, or not
    presenting)."""
    header = _header.get()
    return header[name] if header is not None else st.container()


def _toggle() -> None:
    st.toggle(
        TOGGLE_LABEL,
        value=False,
        key=PRESENT_KEY,
        on_change=_start_over,
        help="One step at a time, large, for a projector. Switch off to leave.",
        bind="query-params",
    )


def bar(url_path: str):
    """The top of a pass page: the "Presenter mode" toggle (bound to ``present`` in the URL)
    and, while presenting, the header line whose containers the page's title, the switches and
    the stepper fill (:func:`slot`); returns its container for the text box then. None on pages
    without a stepper, and when not presenting."""
    _header.set(None)
    if URL_WARNING_KEY in st.session_state:
        st.warning(st.session_state.pop(URL_WARNING_KEY))
    if url_path not in PASS_PAGES:
        return None
    if not requested(url_path):
        st.session_state.pop(MOVES_KEY, None)
        with st.container():
            _toggle()
        return None
    from ui import links

    keys()
    screen()
    line = st.container(key="present_header")
    header = dict(
        zip(
            HEADER_SLOTS,
            line.columns(list(HEADER_COLUMNS), vertical_alignment="center", gap="small"),
            strict=True,
        )
    )
    with header["switches"]:
        _toggle()
    with header["link"]:
        links.copy_link_button(key="copy_link_present")
    _header.set(header)
    return header["text"]


# The presenter's keys, caught on the whole window from the moment the component is mounted (the
# top of the page, drawn before anything else): → and PageDown (what a clicker sends) go one
# step on, ← and PageUp one back, each press sent once as a trigger value and kept from the
# buttons' own shortcuts (so a press moves once). Not while the focus is in a field that takes
# those keys itself (the text box, a slider, a question's radio buttons), nor a held key's
# repeats, nor with a modifier (Alt+← is the browser's Back). The toggles' focus does not stop
# them, as it stops Streamlit's shortcuts. ``data-presenter-keys`` on the page says they listen
# (the style below reads it).
_KEYS_JS = """
const MOVES = { ArrowRight: 1, PageDown: 1, ArrowLeft: -1, PageUp: -1 };
const OWN_INPUTS = /^(text|search|number|email|url|tel|password|radio|range)$/;
const OWN_KEYS = new RegExp(
  "^(slider|spinbutton|textbox|combobox|listbox|option|grid|gridcell|radio|radiogroup|tab|" +
  "tablist|menu|menuitem)$"
);

function takesKeys(el) {
  for (let e = el; e && e !== document.body; e = e.parentElement) {
    if (e.isContentEditable || e.tagName === "TEXTAREA" || e.tagName === "SELECT") return true;
    if (e.tagName === "INPUT" && OWN_INPUTS.test(e.type)) return true;
    if (OWN_KEYS.test(e.getAttribute("role") || "")) return true;
  }
  return false;
}

export default function (component) {
  const { setTriggerValue } = component;
  const onKey = (event) => {
    const by = MOVES[event.key];
    if (!by || event.repeat || event.altKey || event.ctrlKey || event.metaKey) return;
    if (takesKeys(event.target)) return;
    event.preventDefault();
    event.stopPropagation();
    setTriggerValue("move", by);
  };
  if (window.__attnvizPresenterKeys) {
    window.removeEventListener("keydown", window.__attnvizPresenterKeys, true);
  }
  window.__attnvizPresenterKeys = onKey;
  window.addEventListener("keydown", onKey, true);
  document.documentElement.dataset.presenterKeys = "on";
  return () => {
    window.removeEventListener("keydown", onKey, true);
    if (window.__attnvizPresenterKeys === onKey) {
      window.__attnvizPresenterKeys = null;
      delete document.documentElement.dataset.presenterKeys;
    }
  };
}
"""
_keys = components.component("attnviz_presenter_keys", js=_KEYS_JS)


def _on_key() -> None:
    """A key's move, before the run it starts: kept until the stepper draws (it knows the
    pass's steps), so a key pressed while the page's first run is still going is not lost."""
    result = st.session_state.get(KEYS_KEY)
    by = result.get("move") if result is not None else None
    if by in (1, -1):
        st.session_state[MOVES_KEY] = st.session_state.get(MOVES_KEY, 0) + by


def keys() -> None:
    """Mount the presenter's key catcher (it draws nothing: hidden by the presenter's style)."""
    _keys(key=KEYS_KEY, on_move_change=_on_key)


# The presenter's screen: the server lays the step's figure out for the browser's window (its
# inner size), which a small component reports when it differs from the size the page was laid
# out for (``data``), on its first draw and after the window is resized. Until it has, the page
# is laid out for 1920×1080 (so a projector of that size never waits for a second run).
SCREEN_KEY = "present_screen"
_SCREEN_JS = """
export default function (component) {
  const { data, setStateValue } = component;
  const report = () => {
    const width = window.innerWidth, height = window.innerHeight;
    if (!data || data[0] !== width || data[1] !== height) setStateValue("size", [width, height]);
  };
  let timer = null;
  const onResize = () => { clearTimeout(timer); timer = setTimeout(report, 300); };
  report();
  window.addEventListener("resize", onResize);
  return () => { clearTimeout(timer); window.removeEventListener("resize", onResize); };
}
"""
_screen = components.component("attnviz_presenter_screen", js=_SCREEN_JS)


def _reported() -> tuple[int, int]:
    """The window's size the screen component last reported (1920×1080 until it has)."""
    result = st.session_state.get(SCREEN_KEY)
    size = result.get("size") if result is not None else None
    if (
        isinstance(size, list)
        and len(size) == 2
        and all(isinstance(v, int) and 0 < v <= 100_000 for v in size)
    ):
        return size[0], size[1]
    return figures.SCREEN


def screen() -> None:
    """Mount the screen's reporter (it draws nothing: hidden by the presenter's style)."""
    _screen(key=SCREEN_KEY, data=list(_reported()), on_size_change=lambda: None)


def stage_look() -> figures.Look:
    """The presenter's look on the window the browser reported."""
    return figures.presenter_look(*_reported())


# Presenter mode: no sidebar (its values still apply), larger type, no per-matrix chrome, and
# one header line above the step (the title with the status line under it, the text box in
# 22 px type, the stepper and the switches), so that a 1920×1080 projector shows the whole step
# with its figure's plot on about two-thirds of the screen's height. Streamlit's own header band
# is see-through and lets clicks pass (its menu and status stay clickable, above the header
# line); the status line (shape and live checks) is 20 px dark grey (about 7:1 on white).
#
# A smaller screen (a 1280×720, 1366×768 or 1024×768 projector, a laptop) shows the same
# layout zoomed by figures.screen_scale (the media queries of :func:`_zoom_css` give it as
# ``--present-zoom``): the header stays one line and the words keep their share of the screen.
# The step's figure is not zoomed (plotly.js would measure its zoomed box and draw it smaller
# again): the server lays it out for the window's own size (:func:`stage_look`). Under 800 px
# wide (the zoom stops at figures.SCREEN_MIN) the header wraps onto a second line rather than cut
# its buttons' words, and the step's words go under its figure; a phone gets the page's own
# phone layout (ui/teach/narrow.py). From 800 px up the header and the step keep their columns
# side by side, where a tablet's page stacks them (ui/style.py). A portrait screen (a tablet
# held upright) is not zoomed: under 1600 px wide its header wraps and its figure, laid out for
# 1920×1080, narrows with the page.
_CSS = """
<style>
section[data-testid="stSidebar"], div[data-testid="stSidebarCollapsedControl"],
button[data-testid="stExpandSidebarButton"] { display: none !important; }
header[data-testid="stHeader"], header[data-testid="stHeader"] [data-testid="stToolbar"] {
  background: transparent; pointer-events: none; }
header[data-testid="stHeader"] [data-testid="stMainMenu"],
header[data-testid="stHeader"] [data-testid="stStatusWidget"],
header[data-testid="stHeader"] [data-testid="stToolbarActions"] { pointer-events: auto; }
div[data-testid="stMainBlockContainer"] { max-width: 100%; padding-top: 3rem;
  padding-bottom: 1rem; zoom: var(--present-zoom, 1); }
div[data-testid="stMainBlockContainer"] [data-testid="stElementContainer"]:has(
  [data-testid="stPlotlyChart"]) { zoom: calc(1 / var(--present-zoom, 1)); }
div[data-testid="stMainBlockContainer"] p, div[data-testid="stMainBlockContainer"] li {
  font-size: 1.45rem; line-height: 1.45; }
div[data-testid="stMainBlockContainer"] .katex { font-size: 1.6em; }
div[data-testid="stMainBlockContainer"] .katex-display { margin: 0.2em 0; }
div[data-testid="stMainBlockContainer"] h1 { font-size: 1.6rem; padding: 0; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; }
div[data-testid="stMainBlockContainer"] .st-key-present p,
div[data-testid="stMainBlockContainer"] .st-key-predict p { font-size: 1.1rem; line-height: 1.3; }
.st-key-present_header [data-testid="stColumn"]:first-child [data-testid="stVerticalBlock"] {
  gap: 0; }
.st-key-present_header [data-testid="stColumn"]:first-child [data-testid="stMarkdownContainer"],
.st-key-present_header [data-testid="stColumn"]:first-child [data-testid="stCaptionContainer"] p {
  margin-bottom: 0; }
.st-key-present_keys, .st-key-present_screen { display: none; }
html:not([data-presenter-keys]) [data-testid="stMain"]:not(:has(.st-key-present_next button))
  div[data-testid="stPlotlyChart"] { visibility: hidden; }
div[data-testid="stMainBlockContainer"] textarea { font-size: 1.375rem; line-height: 1.4; }
div[data-testid="stMainBlockContainer"] [data-testid="stCaptionContainer"],
div[data-testid="stMainBlockContainer"] [data-testid="stCaptionContainer"] p {
  font-size: 1.25rem; color: #4a4d59; }
@media (orientation: landscape) and (min-width: 800px) {
  .st-key-present_header [data-testid="stHorizontalBlock"] > [data-testid="stColumn"],
  .st-key-present_step [data-testid="stHorizontalBlock"] > [data-testid="stColumn"] {
    min-width: 0 !important; }
}
@media (orientation: landscape) and (max-width: 799px), (orientation: portrait) and (max-width: 1599px) {
  .st-key-present_header [data-testid="stHorizontalBlock"] { flex-wrap: wrap; }
  .st-key-present_header [data-testid="stColumn"] { min-width: 12rem; }
  .st-key-present_step [data-testid="stColumn"] { min-width: 100%; }
}
</style>
"""


# One step of the zoom: in a landscape window (no taller than wide) narrower or lower than
# ``width`` × ``height`` px, the main area's zoom is ``zoom``.
_ZOOM_CSS = (
    "@media (orientation: landscape) and (max-width: {width}px), "
    "(orientation: landscape) and (max-height: {height}px) "
    "{{ [data-testid='stMain'] {{ --present-zoom: {zoom}; }} }}"
)


def _zoom_css() -> str:
    """``--present-zoom`` on the main area: figures.screen_scale of the window, as media
    queries (one a step: the last that matches, the smallest, wins); none on a portrait
    screen."""
    width, height = figures.SCREEN
    rules = []
    steps = round((1 - figures.SCREEN_MIN) / figures.SCREEN_STEP)
    for k in range(1, steps + 1):
        zoom = round(1 - k * figures.SCREEN_STEP, 2)
        above = zoom + figures.SCREEN_STEP  # the window is narrower or lower than this share
        rules.append(
            _ZOOM_CSS.format(
                width=round(width * above) - 1, height=round(height * above) - 1, zoom=zoom
            )
        )
    return "\n".join(rules)


_STYLE = _CSS.replace("</style>", _zoom_css() + "\n</style>")


def style() -> None:
    st.html(_STYLE)


def step_from_url(count: int, *, quiet: bool = False) -> int:
    """The 0-based step the URL asks for (``step`` is 1-based). read_url already dropped a
    value that is not a whole number in 1–MAX_STEP; one past this pass's last step is named in
    a warning and step 1 is shown."""
    raw = st.query_params.get(STEP_KEY, "1")
    try:
        wanted = _parse_step(raw)
    except ValueError:
        wanted = 1
    if wanted > count:
        if quiet:
            return 0
        st.warning(f"This pass has {count} steps, so step={wanted} opens step 1.")
        del st.query_params[STEP_KEY]
        wanted = 1
    return wanted - 1


def _move(by: int, count: int) -> None:
    """Previous / Next: the URL's step moves before the run, so the buttons and the step drawn
    agree (an on_click callback runs before the script)."""
    index = step_from_url(count, quiet=True) + by
    st.query_params[STEP_KEY] = str(min(max(index, 0), count - 1) + 1)


def stepper(
    steps: Sequence[Panel], *, checks_line: str = "", plan: predict.Plan | None = None
) -> int:
    """Show one step of ``steps`` with Previous / Next; returns the 0-based step shown.
    ``plan``: the page's "Predict first" plan (its question steps)."""
    if not steps:
        st.info("This page has no steps to present.")
        return 0
    count = len(steps)
    index = step_from_url(count)
    moved = st.session_state.pop(MOVES_KEY, 0)
    if moved:  # the presenter's keys (keys): one step per press, within the pass
        index = min(max(index + moved, 0), count - 1)
        st.query_params[STEP_KEY] = str(index + 1)
    with slot("prev"):
        st.button(
            "◀ Previous",
            key="present_prev",
            shortcut="Left",
            disabled=index == 0,
            width="stretch",
            on_click=_move,
            args=(-1, count),
        )
    with slot("next"):
        st.button(
            "Next ▶",
            key="present_next",
            shortcut="Right",
            disabled=index == count - 1,
            width="stretch",
            type="primary",
            on_click=_move,
            args=(1, count),
        )
    step = steps[index]
    with slot("counter"):
        st.markdown(f"**Step {index + 1} of {len(steps)}**")
        st.progress((index + 1) / len(steps))
    with slot("title"):  # the status line under the page's title
        st.caption(md_escape(" · ".join(filter(None, [f"shape {step.shape}", checks_line]))))
    look = stage_look()
    if plan is not None and plan.gates_step(step):
        # "Predict first": a question step asks before it shows (ui/teach/predict.py), and a step
        # whose numbers would give a waiting question's answer away stays hidden; its sentence
        # (it may count what is asked) waits with it.
        if step.formula:
            st.latex(step.formula)
        plan.present_step(index, step, look=figures.scaled(figures.PROJECTOR, look.scale))
        return index
    # The figure as large as the screen allows (square cells), the formula, the sentence and
    # the status line beside it, or above it when the figure needs the screen's width.
    frame = stage_frame(step, look)
    share = frame.width + 16  # the columns' gap comes out of the figure's share
    body = st.container(key="present_step")
    if frame.beside:
        figure, words = body.columns([share, look.stage_width - share], vertical_alignment="center")
        with words:
            if step.formula:
                st.latex(step.formula)
            if step.sentence:
                st.write(md_escape(step.sentence))
    else:  # the sentence gets the width, so that it takes fewer lines
        maths, words = body.columns([1, 4], vertical_alignment="center")
        if step.formula:
            maths.latex(step.formula)
        if step.sentence:
            words.write(md_escape(step.sentence))
        # its own column, so that the colour bar stays beside the plot
        figure = body.columns([share, max(look.stage_width - share, 1)])[0]
    chart(step, key=f"present_{step.key}", container=figure, look=look)
    numbers = stage_numbers(step, frame, look)
    if numbers is not None:
        st.html(_numbers_css(f"present_{step.key}", frame, look, step.values.shape[-1], *numbers))
    return index


_NUMBERS_CSS = (
    "<style>.st-key-{key} {{ container-type: inline-size; }} "
    ".st-key-{key} g.heatmap-label text {{ "
    "font-size: min({size}px, calc({per_cqw:.4f}cqw - {less:.2f}px)) !important; }}</style>"
)


def _numbers_css(
    key: str, frame: figures.Frame, look: figures.Look, n_cols: int, size: int, widest: float
) -> str:
    """The figure is laid out for a 1920 px screen; on a narrower one (a 1280 px projector, a
    laptop) its square cells narrow with the page, and the cell numbers shrink with them: the
    largest size whose widest number still leaves CELL_CLEAR px of its cell, computed from the
    figure's own width (a CSS container). At 1920 px that is their size as drawn."""
    across = frame.per_row * n_cols  # cells side by side, every head's
    fixed = frame.left + frame.right + (frame.per_row - 1) * look.px(figures.HEAD_GAP)
    per_cqw = 100 / (across * widest)  # px of type per 1 % of the figure's width
    less = (fixed / across + figures.cell_clear(look)) / widest
    return _NUMBERS_CSS.format(key=key, size=size, per_cqw=per_cqw, less=less)


def show(steps: Sequence[Panel], checks=(), *, plan: predict.Plan | None = None) -> int:
    """The whole presenter view of a pass page: style, stepper, one line of live checks.
    ``plan``: the page's "Predict first" plan, which asks its questions at their steps."""
    narrow.fall_back()  # on a phone's screen: the page's own phone layout instead
    style()
    return stepper(steps, checks_line=checks_summary(checks), plan=plan)


def checks_summary(results) -> str:
    """Every live check of the page in one line: "Live checks: 5 pass, 1 n/a"."""
    counts: dict[str, int] = {}
    for result in results:
        counts[result.status] = counts.get(result.status, 0) + 1
    if not counts:
        return ""
    failed = [r.title for r in results if r.status == "fail"]
    line = "Live checks: " + ", ".join(f"{n} {status}" for status, n in counts.items())
    return line + (f" (failing: {', '.join(failed)})" if failed else "")
