"""ui/keyprobe.py: widgets look up their own key in Session State instead of copying it whole.

The lookup must give the answers ``filtered_state`` gives for every key a widget can have
(a plain value, None, a widget's value, a widget set to None, a key nobody set), on a first run
and on a rerun, and the widgets must still start empty when their key holds None. The Streamlit
internals it relies on are checked by name, so an upgrade that changes them fails here first.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest
from streamlit.runtime.state import session_state_proxy
from streamlit.runtime.state.safe_session_state import SafeSessionState
from streamlit.runtime.state.session_state import SessionState
from streamlit.testing.v1 import AppTest

from tests.support.installs import assert_on_by_default_once_and_off_by_switch
from ui import keyprobe

ROOT = Path(__file__).resolve().parents[2]


def _compare_script() -> None:
    """An app whose session holds every kind of key a widget can have. Where each widget is
    about to ask (and for keys no widget of this run has), it records what Streamlit's
    ``filtered_state`` says and what the one-key lookup says. The "page b" toggle draws another
    set: one key's widget under a new label (a new element id), the others not drawn."""
    import streamlit as st
    from streamlit.runtime.state.session_state_proxy import get_session_state

    from ui.keyprobe import KeyLookup

    rows = []

    def ask(key: str) -> None:
        safe = get_session_state()
        full, probe = safe.filtered_state, KeyLookup(safe)
        seen = probe[key] if key in probe else "MISSING"
        rows.append((key, key in full, full.get(key, "MISSING"), key in probe, seen))

    st.session_state.setdefault("plain", 3)
    st.session_state.setdefault("plain_none", None)
    if "boxed_none" not in st.session_state:
        st.session_state["boxed_none"] = None
    page_b = st.toggle("page b", key="page_b")
    for key in ("plain", "plain_none", "missing", "_asked"):
        ask(key)
    if not page_b:
        ask("boxed")
        st.number_input("a number", key="boxed", value=5)
        ask("boxed_none")
        st.number_input("an empty number", key="boxed_none", value=2)
        ask("typed")
        st.text_input("a text", key="typed", value="hello")
        ask("chosen")
        st.selectbox("a choice", ["x", "y"], key="chosen", index=None)
        ask("picked")
        st.radio("a radio", ["p", "q"], key="picked", index=1)
    else:
        ask("boxed")
        st.number_input("the number, on page b", key="boxed", value=6)
        for key in ("boxed_none", "typed", "chosen", "picked"):  # not drawn on page b
            ask(key)
    ask("slid")
    st.slider("a slider", 0.0, 1.0, key="slid")  # no value: the slider asks too
    st.session_state["_asked"] = rows


def _answers(at: AppTest) -> dict[str, tuple]:
    """What ``filtered_state`` said of each key where it was asked, after checking that the
    one-key lookup said the same (both whether the key is there and its value)."""
    assert not at.exception
    rows = [tuple(row) for row in at.session_state["_asked"]]
    for key, in_full, full_value, in_probe, probe_value in rows:
        assert (in_probe, probe_value) == (in_full, full_value), key
    return {row[0]: row[1:3] for row in rows}


def test_the_lookup_answers_as_filtered_state_does_where_each_widget_asks():
    at = AppTest.from_function(_compare_script, default_timeout=60)
    at.run()
    by_key = _answers(at)
    assert by_key["plain"] == (True, 3)
    assert by_key["plain_none"] == (True, None)
    assert by_key["missing"] == (False, "MISSING")
    assert by_key["_asked"] == (False, "MISSING")  # set at the end of the run
    assert by_key["boxed"] == (False, "MISSING")  # no widget yet, nothing set
    assert by_key["boxed_none"] == (True, None)  # set before its widget: it starts empty
    assert by_key["slid"] == (False, "MISSING")
    # a rerun after the student changed widgets: the values come from the last run
    at.number_input(key="boxed").set_value(9)
    at.text_input(key="typed").set_value("changed")
    at.selectbox(key="chosen").set_value("y")
    at.run()
    by_key = _answers(at)
    assert by_key["boxed"] == (True, 9)
    assert by_key["boxed_none"] == (True, None)
    assert by_key["typed"] == (True, "changed")
    assert by_key["chosen"] == (True, "y")
    assert by_key["picked"] == (True, "q")
    assert by_key["_asked"][0] is True  # set by the previous run
    # "page b": one key under another widget, the others not drawn; then back
    at.toggle(key="page_b").set_value(True)
    at.run()
    by_key = _answers(at)
    assert by_key["boxed"][0] is True and by_key["typed"][0] is True
    at.toggle(key="page_b").set_value(False)
    at.run()
    _answers(at)


def _empty_when_none_script() -> None:
    import streamlit as st

    if "seed" not in st.session_state:
        st.session_state["seed"] = None
        st.session_state["word"] = None
        st.session_state["pick"] = None
        st.session_state["kept"] = 7
    st.number_input("seed", key="seed", value=123)
    st.text_area("word", key="word", value="default")
    st.selectbox("pick", ["a", "b"], key="pick", index=0)
    st.number_input("kept", key="kept", value=1)


def test_with_the_lookup_a_widget_whose_key_holds_none_is_sent_without_a_default():
    # What the lookup decides: a widget whose key holds None is sent with no default (the
    # browser shows it empty); one whose key holds a value keeps the default it was given.
    assert keyprobe.install()  # (any AppTest of app.py in this process has installed it too)
    at = AppTest.from_function(_empty_when_none_script, default_timeout=60)
    at.run()
    assert not at.exception
    assert not at.number_input(key="seed").proto.HasField("default")
    assert not at.text_area(key="word").proto.HasField("default")
    assert not at.selectbox(key="pick").proto.HasField("default")
    kept = at.number_input(key="kept")
    assert kept.proto.HasField("default") and kept.proto.default == 1 and kept.value == 7
    assert at.number_input(key="seed").value is None and at.text_area(key="word").value is None


def test_the_widget_modules_use_filtered_state_only_to_look_up_their_key():
    """If an upgrade uses ``filtered_state`` any other way in these modules, fail here."""
    allowed = {
        "session_state = get_session_state().filtered_state",
        "if key is not None and key in session_state and session_state[key] is None:",
        "if key is not None and key in session_state:",
        "state_value = session_state[key]",
    }
    for name in keyprobe.MODULES:
        module = importlib.import_module(f"streamlit.elements.widgets.{name}")
        source = inspect.getsource(module)
        lines = {
            line.strip()
            for line in source.splitlines()
            if re.search(r"(?<![\w.])session_state\b(?!_)", line)
            and not line.strip().startswith("#")
        }
        assert "session_state = get_session_state().filtered_state" in lines, name
        assert lines <= allowed, (name, lines - allowed)
        assert "get_session_state" in vars(module), name
    # the lookup's own needs: the safe wrapper's lock and state, and a membership test that
    # reads the key the way filtered_state reads it
    safe_init = inspect.getsource(SafeSessionState.__init__)
    assert '"_state", state' in safe_init and '"_lock", threading.RLock()' in safe_init
    assert "self[key]" in inspect.getsource(SessionState.__contains__)
    assert keyprobe._original.__module__ == session_state_proxy.__name__
    assert keyprobe._original.__qualname__ == "get_session_state"


def test_the_view_hands_everything_else_to_the_real_state():
    class Fake:
        _lock = pytest.importorskip("threading").Lock()
        _state = {"k": 1}

        def reset_state_value(self, key, value):
            return ("reset", key, value)

    view = keyprobe._SessionStateView(Fake())
    assert view.reset_state_value("k", 2) == ("reset", "k", 2)
    assert "k" in view.filtered_state and view.filtered_state["k"] == 1
    assert "other" not in view.filtered_state


def test_install_is_on_by_default_once_and_off_by_switch():
    assert_on_by_default_once_and_off_by_switch(
        "keyprobe",
        keyprobe.ENV,
        "all(__import__('importlib').import_module('streamlit.elements.widgets.' + n)"
        ".get_session_state is m._get_session_state for n in m.MODULES)",
    )
