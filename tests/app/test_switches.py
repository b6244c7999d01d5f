"""ui/switches.py: a process-wide change is applied once, however many runs ask at once, and
not at all when its switch says off."""

from __future__ import annotations

import threading

import pytest

from tests.threads import from_threads
from ui.switches import Install, switched_on


@pytest.mark.parametrize(
    ("value", "on"),
    [(None, True), ("", True), ("1", True), ("yes", True), ("nonsense", True)]
    + [("0", False), ("false", False), (" Off ", False), ("NO", False)],
)
def test_the_switch_reads_off_words_and_nothing_else(monkeypatch, value, on):
    if value is None:
        monkeypatch.delenv("ATTNVIZ_TEST_SWITCH", raising=False)
    else:
        monkeypatch.setenv("ATTNVIZ_TEST_SWITCH", value)
    assert switched_on("ATTNVIZ_TEST_SWITCH") is on


def test_many_first_calls_at_once_apply_it_once(monkeypatch):
    monkeypatch.delenv("ATTNVIZ_TEST_SWITCH", raising=False)
    applied = []

    def apply():
        applied.append(threading.get_ident())

    install = Install("ATTNVIZ_TEST_SWITCH", apply)
    assert from_threads(install, 8) == [True] * 8  # the threads start together
    assert len(applied) == 1
    assert install() is True and len(applied) == 1


def test_switched_off_it_is_never_applied(monkeypatch):
    monkeypatch.setenv("ATTNVIZ_TEST_SWITCH", "0")
    applied = []
    install = Install("ATTNVIZ_TEST_SWITCH", lambda: applied.append(1))
    assert install() is False and install() is False
    assert applied == []
