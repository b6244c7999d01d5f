"""Every view a link: the pages' own view controls live in the URL, and one button copies it.

The sidebar's values are in the URL already (``ui/state.py``), and so are presenter mode and
its step (``ui/teach/present.py``). The controls a page draws for itself are bound to the URL here too
(``bind="query-params"``, the widget's key is the parameter's name), so that a lecturer's link
opens the same view: the colour scale, the token window, the heads drawn, page 1's query token
and its stretch and shift, page 2's module, page 3's dropout placement, page 4's head, each
pass's bug, and the "exact numbers" toggle.

Streamlit writes a bound select box's or radio's value into the URL as the option's text (what
the student reads), so those names carry words: ``colour=relative+to+an+even+share+(log)``.

Every value read from a link is checked before any widget exists (:func:`read_url`, called by
app.py): one that is not understood is dropped and named in the link warning. A value that is
well formed but does not fit this page's data (token 9 of a 6-token text, head 5 of 2) is named
beside its control (:func:`unknown_choices`), as Streamlit would otherwise drop it silently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st
import streamlit.components.v2 as components

from attnviz.core.settings import BOUNDS
from attnviz.teach import bugs
from ui import state, url
from ui.text import md_escape

# The choices of the fixed controls (their texts are what the URL holds).
SCALES = ("weights 0 to 1", "relative to an even share (log)")
STRETCHES = (1, 2, 3, 5, 10, 20, 50)
SHIFTS = (-300, -200, -100, -50, 0, 50, 100)
MODULES = {
    "v2": "SelfAttention_v2: nn.Linear layers",
    "v1": "SelfAttention_v1: raw nn.Parameter matrices",
}
NO_BUG = "(none: the correct code)"
MAX_TOKEN = 100_000  # well past any text the app takes; the page checks its own length


def head_name(h: int) -> str:
    return f"head {h}"


def _bug_titles(pass_kind: str) -> tuple[str, ...]:
    return (NO_BUG, *(bug.title for bug in bugs.bugs_for(pass_kind)))


_HEAD_TOP = int(BOUNDS["num_heads"][1]) - 1
_ANY_CHOICE = "not one of the choices"  # the choices are long texts: not listed
PARSERS: dict[str, Callable] = {
    url.COLOUR: url.choice(SCALES, _ANY_CHOICE),
    url.TOKENS: url.span(0, MAX_TOKEN),
    url.QUERY: url.token_label(MAX_TOKEN),
    url.STRETCH: url.choice([str(v) for v in STRETCHES], _ANY_CHOICE),
    url.SHIFT: url.choice([str(v) for v in SHIFTS], _ANY_CHOICE),
    url.MODULE: url.choice(list(MODULES.values()), _ANY_CHOICE),
    url.PLACEMENT: url.parse_bool,
    url.HEAD: url.whole(0, _HEAD_TOP),
    url.NUMBERS: url.parse_bool,
    url.HEADS_SHOWN: url.named_heads(_HEAD_TOP),
    **{url.bug(kind): url.choice(_bug_titles(kind), _ANY_CHOICE) for kind in url.PASSES},
    **dict.fromkeys(url.SECTIONS, url.parse_bool),  # the pages' closed parts, opened
}
URL_WARNING_KEY = "_attnviz_view_url_warning"


def read_url() -> None:
    """Check the view controls' values in the link (app.py calls this before any widget
    exists); a rejected one is dropped and named in the link warning."""
    warning = state.read_url(PARSERS, URL_WARNING_KEY)
    if warning:
        st.session_state[URL_WARNING_KEY] = warning


def warning() -> str | None:
    """The warning naming this link's rejected view values, if any (app.py shows it)."""
    return st.session_state.get(URL_WARNING_KEY)


def unknown_choices(key: str, choices: Sequence[str], shown: str) -> None:
    """Before a bound choice is drawn: when the link gives ``key`` a value that is not one of
    this page's ``choices`` (the texts the widget shows), say so beside the control, since
    Streamlit drops such a value silently. ``shown``: what is shown instead."""
    given = st.query_params.get_all(key)
    wrong = [v for v in given if v not in choices]
    if wrong:
        st.warning(
            f"The link's {key}={md_escape(wrong[0][:80])} does not fit this text and these "
            f"settings, so {md_escape(shown)} is shown."
        )


# --- "Copy link to this view" ----------------------------------------------------------------
COPY_LABEL = "Copy link to this view"
_COPY_HTML = f"""
<div class="copy">
  <button type="button">{COPY_LABEL}</button>
  <span role="status" aria-live="polite"></span>
  <input type="text" readonly aria-label="Link to this view" hidden>
</div>
"""
_COPY_CSS = """
.copy { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem;
  font-family: inherit; font-size: 1rem; }
button { font: inherit; color: #31333f; background: #ffffff; border: 1px solid #8a8d99;
  border-radius: 0.5rem; padding: 0.25rem 0.75rem; min-height: 2.5rem; cursor: pointer; }
button:hover { border-color: #3b528b; color: #3b528b; }
button:focus-visible { outline: 2px solid #3b528b; outline-offset: 2px; }
[role=status] { color: #31333f; }
input { font: inherit; color: #31333f; width: 100%; padding: 0.25rem; }
"""
# The page's own address at the moment of the click: the sidebar's values, presenter mode and
# its step, and every control above, as the browser's address bar has them. Copied with the
# clipboard API where the page is a secure context (https, or the machine itself); elsewhere
# (a class server on plain http) the link is put in a box, selected, for Ctrl+C.
_COPY_JS = """
export default function (component) {
  const root = component.parentElement;
  const button = root.querySelector("button");
  const status = root.querySelector("[role=status]");
  const box = root.querySelector("input");
  button.onclick = async () => {
    const link = window.location.href;
    box.value = link;
    try {
      await navigator.clipboard.writeText(link);
      box.hidden = true;
      status.textContent = "Copied: paste it anywhere to open this view.";
    } catch (err) {
      box.hidden = false;
      box.select();
      status.textContent = "Copy this link (Ctrl+C):";
    }
  };
}
"""
_copy_button = components.component(
    "attnviz_copy_link", html=_COPY_HTML, css=_COPY_CSS, js=_COPY_JS
)


def copy_link_button(key: str = "copy_link") -> None:
    """The "Copy link to this view" button: it copies the page's address as the browser has it
    (every value above is in it)."""
    _copy_button(key=key)
