"""Let a widget ask Session State about its own key, not copy the whole state to ask.

Six of Streamlit's widget functions (``st.number_input``, ``st.radio``, ``st.selectbox``,
``st.text_input``, ``st.text_area``, and ``st.slider`` when given no value), in five modules, ask
whether their key holds ``None`` this way::

    session_state = get_session_state().filtered_state
    if key is not None and key in session_state and session_state[key] is None: ...

``filtered_state`` builds a dict of every key in the session, reading (and deserialising) each
widget's value: about 40 keys per page here, so 40 reads for each of the sidebar's seven number
boxes and the other such widgets, about 5% of a class's server CPU (bench/keyprobe-results.md).
(``st.date_input`` and ``st.time_input`` ask the same way; attnviz has none, so their module is
left as it is.)
:func:`install` gives those five modules a ``get_session_state`` whose ``filtered_state`` answers
``key in`` and ``[key]`` by looking up that one key, with Session State's own lookup: the same
answers (tests/app/test_keyprobe.py compares them where each widget asks, for plain values,
None, widget values and keys nobody set, on a first run, a rerun and after a page switch), one
read instead of forty. Everything else the modules ask of Session State goes to the real object.

It uses Streamlit internals: the five modules' ``get_session_state`` name, ``SafeSessionState``'s
``_lock`` and ``_state``, and ``SessionState.__getitem__``; tests/app/test_keyprobe.py fails
loudly if an upgrade changes how the modules use ``filtered_state``. ``ATTNVIZ_KEY_PROBE=0``
leaves Streamlit's own (for comparison).
"""

from __future__ import annotations

import importlib
from typing import Any

from streamlit.runtime.state import session_state_proxy

from ui.switches import Install

ENV = "ATTNVIZ_KEY_PROBE"
# The widget modules that read ``get_session_state().filtered_state`` only to look up their key.
MODULES = ("number_input", "radio", "selectbox", "slider", "text_widgets")
_original = session_state_proxy.get_session_state


class KeyLookup:
    """``filtered_state`` as the widget functions use it: ``key in``, then ``[key]``, answered
    by Session State for that key alone, in one read under its lock (``key in`` keeps what it
    read, so the two answers are of one moment, as they were of one copied dict)."""

    __slots__ = ("_last", "_safe")

    def __init__(self, safe: Any) -> None:
        self._safe = safe
        self._last: tuple[object, Any] | None = None

    def __contains__(self, key: object) -> bool:
        with self._safe._lock:
            try:
                value = self._safe._state[key]  # Session State's own lookup of a user key
            except KeyError:
                return False
        self._last = (key, value)
        return True

    def __getitem__(self, key: str) -> Any:
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        with self._safe._lock:
            return self._safe._state[key]


class _SessionStateView:
    """The session's state for a widget function: its ``filtered_state`` is a
    :class:`KeyLookup`; anything else is the real ``SafeSessionState``'s."""

    __slots__ = ("_safe",)

    def __init__(self, safe: Any) -> None:
        self._safe = safe

    @property
    def filtered_state(self) -> KeyLookup:
        return KeyLookup(self._safe)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._safe, name)


def _get_session_state() -> _SessionStateView:
    return _SessionStateView(_original())


def _apply() -> None:
    for name in MODULES:
        module = importlib.import_module(f"streamlit.elements.widgets.{name}")
        module.get_session_state = _get_session_state  # type: ignore[attr-defined]


# Give the widget modules the one-key lookup (once per process); False when switched off by
# ``ATTNVIZ_KEY_PROBE=0``.
install = Install(ENV, _apply)
