"""Each student's session draws its own first question and mystery: two sessions opened on the
same page with the same link do not start from the same seed (unless ATTNVIZ_SESSION_SEED fixes
it, as the tests do), and "Next question" moves on from the session's own seed."""

from __future__ import annotations

import pytest

from attnviz.core import seeding
from tests.app.conftest import exceptions, open_app

SEEDS = "_attnviz_predict_seeds"


def test_session_seeds_come_from_the_system_generator_unless_fixed(monkeypatch):
    monkeypatch.delenv(seeding.FIXED_SESSION_SEED, raising=False)
    drawn = {seeding.session_seed() for _ in range(20)}
    assert len(drawn) >= 19  # 20 draws of 2**31 values: a repeat has odds of about 1e-7
    assert all(0 <= s < seeding.SESSION_SEEDS for s in drawn)
    monkeypatch.setenv(seeding.FIXED_SESSION_SEED, "7")
    assert {seeding.session_seed() for _ in range(5)} == {7}


@pytest.mark.parametrize(("switch", "what"), [("predict", "predict"), ("mystery", "mystery")])
def test_two_sessions_on_the_same_link_start_from_different_seeds(monkeypatch, switch, what):
    monkeypatch.delenv(seeding.FIXED_SESSION_SEED, raising=False)
    seeds = []
    for _ in range(2):
        at = open_app({switch: "true"}, "simplified")
        assert not exceptions(at)
        seeds.append(at.session_state[SEEDS][(what, "simplified")])
    assert seeds[0] != seeds[1]
