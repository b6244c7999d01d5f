"""A presenter link opened on a phone: the page's phone layout instead of the projector's.

"Copy link to this view" on a projector hands out ``present=true`` links; on a phone the
projector's type and figure (cell numbers and axis labels sized for a wall) do not fit. The
server cannot see the screen, so a small components.v2 component, mounted by presenter mode
(:func:`fall_back`), asks the browser: on a screen no wider than Streamlit's own phone breakpoint
it sends one trigger value, and its callback switches presenter mode off before the next run,
which then draws the page as every phone gets it, with one note saying why.
"""

from __future__ import annotations

import streamlit as st
import streamlit.components.v2 as components

from ui import url
from ui.style import PHONE_MAX

NARROW_KEY = "present_narrow"  # the component's key (its container is hidden: ui/style.py)
NOTICE_KEY = "_attnviz_present_narrow"
NOTICE = (
    "Presenter mode is made for a projector, so on this small screen the page is shown as "
    "usual. The link's text and settings still apply."
)

_JS = f"""
export default function (component) {{
    if (window.matchMedia("(max-width: {PHONE_MAX}px)").matches) {{
        component.setTriggerValue("narrow", window.innerWidth);
    }}
}}
"""
_narrow = components.component("attnviz_present_narrow", js=_JS)


def _on_narrow() -> None:
    """The browser's screen is a phone's: presenter mode off (the toggle bound to ``present``),
    from step 1 (``step`` dropped), and the note kept for the run this starts."""
    result = st.session_state.get(NARROW_KEY)
    if result is None or not result.get("narrow"):
        return
    st.session_state[url.PRESENT] = False
    if url.STEP in st.query_params:
        del st.query_params[url.STEP]
    st.session_state[NOTICE_KEY] = NOTICE


def fall_back() -> None:
    """Mount the check (presenter mode calls it before drawing its step)."""
    _narrow(key=NARROW_KEY, on_narrow_change=_on_narrow)


def notice() -> None:
    """The note, once, on the first run after a fall-back (app.py's header calls it)."""
    said = st.session_state.pop(NOTICE_KEY, None)
    if said:
        st.info(said, icon=":material/smartphone:")
