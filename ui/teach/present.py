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

import streamlit as st
import streamlit.components.v2 as components

from attnviz import figures
from attnviz.teach.panel import Panel
from ui import state, url
from ui.charts import chart
from ui.teach import predict
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


def bar(url_path: str):
    """The top of a pass page: the "Presenter mode" toggle (bound to ``present`` in the URL)
    and, while presenting, a container for the text box. None on pages without a stepper."""
    if URL_WARNING_KEY in st.session_state:
        st.warning(st.session_state.pop(URL_WARNING_KEY))
    if url_path not in PASS_PAGES:
        return None
    presenting = requested(url_path)
    left, right = st.columns([1, 5]) if presenting else (st.container(), None)
    if presenting:
        keys()
    else:
        st.session_state.pop(MOVES_KEY, None)
    with left:
        st.toggle(
            TOGGLE_LABEL,
            value=False,
            key=PRESENT_KEY,
            on_change=_start_over,
            help="One step at a time, large, for a projector. Switch off to leave.",
            bind="query-params",
        )
        if presenting:
            from ui import links

            links.copy_link_button(key="copy_link_present")
    return right


# The presenter's keys, caught on the whole window from the moment the component is mounted (the
# top of the page, drawn before anything else): → and PageDown (what a clicker sends) go one
# step on, ← and PageUp one back, each press sent once as a trigger value and kept from the
# buttons' own shortcuts (so a press moves once). Not while the focus is in a field that takes
# those keys itself (the text box, a slider), nor a held key's repeats, nor with a modifier
# (Alt+← is the browser's Back). The toggles' focus does not stop them, as it stops Streamlit's
# shortcuts. ``data-presenter-keys`` on the page says they listen (the style below reads it).
_KEYS_JS = """
const MOVES = { ArrowRight: 1, PageDown: 1, ArrowLeft: -1, PageUp: -1 };
const TEXT_INPUTS = /^(text|search|number|email|url|tel|password)$/;
const OWN_KEYS = /^(slider|spinbutton|textbox|combobox|listbox|option|grid|gridcell)$/;

function takesKeys(el) {
  for (let e = el; e && e !== document.body; e = e.parentElement) {
    if (e.isContentEditable || e.tagName === "TEXTAREA" || e.tagName === "SELECT") return true;
    if (e.tagName === "INPUT" && TEXT_INPUTS.test(e.type)) return true;
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


# Presenter mode: no sidebar (its values still apply), larger type, no per-matrix chrome, and
# little above the figure, so that a 1920×1080 projector shows the whole step with the figure
# on at least half the screen: a smaller page title, the text box one line high in 22 px type,
# the status line (shape and live checks) in 20 px dark grey (about 7:1 on white).
_CSS = """
<style>
section[data-testid="stSidebar"], div[data-testid="stSidebarCollapsedControl"],
button[data-testid="stExpandSidebarButton"] { display: none !important; }
div[data-testid="stMainBlockContainer"] { max-width: 100%; padding-top: 3.5rem;
  padding-bottom: 1rem; }
div[data-testid="stMainBlockContainer"] p, div[data-testid="stMainBlockContainer"] li {
  font-size: 1.45rem; line-height: 1.45; }
div[data-testid="stMainBlockContainer"] .katex { font-size: 1.6em; }
div[data-testid="stMainBlockContainer"] .katex-display { margin: 0.2em 0; }
div[data-testid="stMainBlockContainer"] h1 { font-size: 1.9rem; padding: 0; }
.st-key-present_keys { display: none; }
html:not([data-presenter-keys]) div[data-testid="stMain"]:not(:has(.st-key-present_next button))
  div[data-testid="stPlotlyChart"] { visibility: hidden; }
div[data-testid="stMainBlockContainer"] textarea { font-size: 1.375rem; line-height: 1.4; }
div[data-testid="stMainBlockContainer"] [data-testid="stCaptionContainer"],
div[data-testid="stMainBlockContainer"] [data-testid="stCaptionContainer"] p {
  font-size: 1.25rem; color: #4a4d59; }
</style>
"""


def style() -> None:
    st.html(_CSS)


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
    left, middle, right = st.columns([1, 4, 1], vertical_alignment="center")
    with left:
        st.button(
            "◀ Previous",
            key="present_prev",
            shortcut="Left",
            disabled=index == 0,
            width="stretch",
            on_click=_move,
            args=(-1, count),
        )
    with right:
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
    with middle:
        # The counter and the status line (shape and live checks) share one line, the progress
        # bar under them: the whole step stays on one 1080-pixel screen.
        counter, status = st.columns([1, 4], vertical_alignment="center")
        counter.markdown(f"**Step {index + 1} of {len(steps)}**")
        status.caption(md_escape(" · ".join(filter(None, [f"shape {step.shape}", checks_line]))))
        st.progress((index + 1) / len(steps))
    if plan is not None and plan.gates_step(step):
        # "Predict first": a question step asks before it shows (ui/teach/predict.py), and a step
        # whose numbers would give a waiting question's answer away stays hidden; its sentence
        # (it may count what is asked) waits with it.
        if step.formula:
            st.latex(step.formula)
        plan.present_step(index, step)
        return index
    if step.formula and step.sentence:  # side by side: one line less above the figure
        maths, words = st.columns([2, 3], vertical_alignment="center")
        maths.latex(step.formula)
        words.write(md_escape(step.sentence))
    elif step.formula:
        st.latex(step.formula)
    elif step.sentence:
        st.write(md_escape(step.sentence))
    chart(step, key=f"present_{step.key}", look=figures.PROJECTOR)  # drawn for a projector
    return index


def show(steps: Sequence[Panel], checks=(), *, plan: predict.Plan | None = None) -> int:
    """The whole presenter view of a pass page: style, stepper, one line of live checks.
    ``plan``: the page's "Predict first" plan, which asks its questions at their steps."""
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
