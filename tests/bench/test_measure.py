"""bench/measure.py's parts that need no server: the CPU clock, the new sentences, the
own-sentence class's plans and the paired ratios."""

from __future__ import annotations

import os
import random
import time
from urllib.parse import parse_qsl

import pytest

from attnviz.core.settings import Settings, SettingsError
from bench import measure
from ui.state import FIELDS, parse_value

BY_URL = {f.url: f for f in FIELDS}


def test_the_process_clock_reads_this_process_cpu_time():
    start_own, start = time.process_time(), measure.cpu_seconds(os.getpid())
    deadline = time.process_time() + 0.05
    while time.process_time() < deadline:
        pass
    spent, read = time.process_time() - start_own, measure.cpu_seconds(os.getpid()) - start
    assert spent >= 0.05
    assert abs(read - spent) < 0.01  # nanoseconds, not 10 ms ticks


def test_sentences_are_new_five_to_eight_words_and_differ_between_seeds():
    first = measure.Sentences(1)
    texts = [first() for _ in range(300)]
    assert len(set(texts)) == 300
    assert all(5 <= len(t.split()) <= 8 for t in texts)
    assert all(w.lower() in measure.WORDS for t in texts for w in t.split())
    again = measure.Sentences(2, avoid=tuple(texts))
    assert not {again() for _ in range(300)} & set(texts)


def settings_of(query: str) -> Settings:
    """The Settings a URL query gives: each value parsed as the sidebar parses it."""
    names = {f.url: f.setting for f in FIELDS if f.setting}
    values = {names[k]: parse_value(BY_URL[k], v) for k, v in parse_qsl(query) if k in names}
    return Settings(**values)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_each_student_changes_one_valid_value_at_each_of_six_runs(seed):
    plans = measure.app_class_plan(12, seed)
    assert len(plans) == 12
    texts = set()
    for plan in plans:
        assert len(plan) == measure.CLASS_RUNS
        states = [dict(parse_qsl(step.query)) for step in plan]
        texts.add(states[0]["text"])
        for before, after in zip(states, states[1:], strict=False):
            changed = {k for k in after if before.get(k) != after[k]}
            assert len(changed) == 1, (before, after)
        for step in plan:
            s = settings_of(step.query)  # raises on a value out of bounds
            assert s.multihead_problem() is None
        # Six different pages, never the same one twice in a row.
        assert len({step.page for step in plan}) == measure.CLASS_RUNS
    assert len(texts) == 12  # a sentence of its own each


def test_settings_of_rejects_what_the_sidebar_rejects():
    with pytest.raises(ValueError):
        settings_of("d_out=0")
    with pytest.raises(SettingsError):
        Settings(dropout=1.5)


def test_the_trivial_class_never_repeats_a_seed_and_has_six_runs_each():
    plans = measure.trivial_class_plan(50, 3)
    seeds = [step.query for plan in plans for step in plan]
    assert len(seeds) == len(set(seeds)) == 300
    assert all(len({s.page for s in plan}) == measure.CLASS_RUNS for plan in plans)


def test_class_pages_are_the_six_pages_drawn_from_the_sidebar():
    pages = [p.url_path for p in measure.class_pages()]
    assert pages == [
        "why-attention",
        "simplified-attention",
        "trainable-attention",
        "causal-attention",
        "multi-head-attention",
        "against-pytorch",
    ]


def test_a_pair_ratio_is_the_median_of_per_pair_ratios():
    pp = measure.PagePairs("p", cold=[10, 30, 200], trivial_cold=[10, 10, 100])
    assert pp.cold_ratio == 2.0  # ratios 1, 3, 2


def test_student_changes_cover_the_named_controls():
    keys = set()
    for i in range(40):
        states = measure.student_changes(random.Random(i), "A b c d e")
        keys |= set(states[-1])
    assert {"text", "d_out", "heads", "train", "dropout"} <= keys
    assert keys & {"eseed", "wseed", "dseed"}
