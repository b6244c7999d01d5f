"""A page run takes a heavy-request slot only for the heavy work it actually asks for: not from
the sidebar's sizes in book mode (the book's small sizes apply there), not on a page that runs
no pass; and a slot taken is given back when the run ends."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.core.settings import Settings
from attnviz.server import budget

from .conftest import APP

# Between the book's request (about 0.01 MB) and the default settings' (about 0.04 MB for the
# default text), so the sidebar's default sizes count as heavy and book mode does not.
THRESHOLD = 20_000


@pytest.fixture
def slots(monkeypatch):
    """Every slot taken (with its settings) and every slot given back."""
    taken, released = [], []
    real = budget.heavy_slot

    @contextmanager
    def recording(settings, tokens):
        with real(settings, tokens) as took:
            if took:
                taken.append(settings)
            try:
                yield took
            finally:
                if took:
                    released.append(settings)

    monkeypatch.setattr(budget, "HEAVY_BYTES", THRESHOLD)
    monkeypatch.setattr(budget, "heavy_slot", recording)
    yield taken, released


def run_page(page: str, query: dict[str, str], slots) -> AppTest:
    """Open the app (its home page runs), forget the slots that took, then run ``page``."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    for record in slots:
        record.clear()
    at.switch_page(page).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_the_threshold_puts_the_default_sizes_above_and_the_book_below():
    from attnviz.core.settings import BOOK, Settings

    assert budget.predicted_bytes(Settings(), 6) > THRESHOLD
    assert budget.predicted_bytes(Settings(**BOOK), 6) < THRESHOLD


def test_a_pass_page_at_heavy_sizes_takes_one_slot_and_gives_it_back(slots):
    taken, released = slots
    run_page("pages/causal-attention.py", {}, slots)
    assert len(taken) >= 1
    assert len(set(taken)) == 1 and taken[0].d_in == Settings().d_in  # the sidebar's sizes
    assert released == taken


def test_book_mode_takes_no_slot_whatever_the_sidebar_sizes(slots):
    taken, _ = slots
    at = run_page("pages/causal-attention.py", {"book": "true", "d_in": "64", "d_out": "64"}, slots)
    assert at.title[0].value == "3. Causal attention and dropout"
    assert taken == []


def test_a_page_that_runs_no_pass_takes_no_slot(slots):
    taken, _ = slots
    at = run_page("pages/watch-attention-learn.py", {"d_in": "64", "d_out": "64"}, slots)
    assert at.title[0].value == "5. Watch attention learn"
    assert taken == []
