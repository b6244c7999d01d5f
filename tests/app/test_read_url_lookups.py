"""state.read_url reads the link's names once: it never asks the query string, name by name,
whether a control's name is in it (in Streamlit each such miss raises and catches a KeyError,
for every control of every page run)."""

from __future__ import annotations

import types

from ui import state


class CountingLink:
    """A query string that counts what read_url asks of it."""

    def __init__(self, values: dict[str, list[str]]) -> None:
        self.values = values
        self.asked_in: list[str] = []
        self.read: list[str] = []
        self.dropped: list[str] = []

    def keys(self):
        return list(self.values)

    def __contains__(self, key) -> bool:
        self.asked_in.append(key)
        return key in self.values

    def __getitem__(self, key):
        self.read.append(key)
        return self.values[key][-1]

    def __delitem__(self, key) -> None:
        self.dropped.append(key)

    def get_all(self, key):
        self.read.append(key)
        return list(self.values.get(key, []))


def parse_int(raw: str) -> int:
    return int(raw)


def test_a_page_s_controls_are_checked_from_one_read_of_the_link_s_names(monkeypatch):
    link = CountingLink({"c3": ["7"], "other": ["x"]})
    fake_st = types.SimpleNamespace(query_params=link, session_state={})
    monkeypatch.setattr(state, "st", fake_st)
    parsers = {f"c{i}": parse_int for i in range(20)}  # a page's twenty controls
    assert state.read_url(parsers) is None  # c3=7 is a whole number: nothing to say
    assert link.asked_in == []  # no name-by-name "in" on the query string
    assert link.read == ["c3"]  # only the one control the link sets is read


def test_a_rejected_value_is_still_named_and_dropped(monkeypatch):
    link = CountingLink({"c3": ["seven"]})
    reruns = []
    fake_st = types.SimpleNamespace(
        query_params=link, session_state={}, rerun=lambda: reruns.append(1)
    )
    monkeypatch.setattr(state, "st", fake_st)
    state.read_url({f"c{i}": parse_int for i in range(5)}, warning_key="w")
    assert link.dropped == ["c3"] and reruns == [1]  # dropped, then run again on the clean link
    warning = fake_st.session_state["w"]
    assert warning.startswith("Some values in the link were not understood") and "c3" in warning
    assert link.asked_in == []
