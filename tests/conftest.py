"""Fixtures every test uses (the network blackhole, the GPT-2 vocabulary cache), and the split
between the fast loop (``pytest -m "not slow"``) and the full run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from bench.support.network import Blackhole, proxy_env

ROOT = Path(__file__).resolve().parents[1]
SHARED_CACHE = ROOT.parent / "shared" / "tiktoken_cache"

# The vocabulary cache sits beside the project on this machine and in CI; never copied in.
if SHARED_CACHE.is_dir() and "TIKTOKEN_CACHE_DIR" not in os.environ:
    os.environ["TIKTOKEN_CACHE_DIR"] = str(SHARED_CACHE)

settings.register_profile(
    "attnviz", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("attnviz")

_BLACKHOLE = Blackhole()
# Set at import, before any test module loads code that might touch the network, and
# inherited by every process the tests start.
os.environ.update(proxy_env(_BLACKHOLE))
# A session's first question and mystery start from seed 0 in every app the tests run (in
# process or as a live server): the tests know what each page asks first. Unset, each session
# draws its own (attnviz.core.seeding.session_seed; tests/questions/test_sessions.py).
os.environ.setdefault("ATTNVIZ_SESSION_SEED", "0")


@pytest.fixture(scope="session", autouse=True)
def blackhole():
    """Every HTTP(S) request goes here; it answers nothing and records what it was asked."""
    yield _BLACKHOLE
    _BLACKHOLE.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    path = ROOT / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path


# The fast loop (``pytest -m "not slow"``) leaves these out; the full run keeps them. Browser
# tests, whole folders whose tests each take seconds (the budget tests run every page at the
# largest sizes in a fresh process; the hostile corpus runs hundreds of AppTest pages; the
# fallback tests reload the app without a vocabulary), live servers behind a load balancer
# under load (tests/deploy/test_haproxy.py), wall-clock budgets that need a core to themselves
# (scripts/test runs the fast set on every core at once, the slow set in one process), and
# single tests measured above ~3 s (``--durations``), each as a path or ``path::test`` prefix.
SLOW = (
    "tests/browser/",
    "tests/app/test_specs_valid.py",
    "tests/budget/",
    "tests/fallback/",
    "tests/deploy/test_haproxy.py",
    "tests/deploy/test_busy_replicas.py",  # ~7 s: waits for the health checks to fail
    "tests/deploy/test_first_visit.py",
    "tests/deploy/test_static_gz.py",
    "tests/pytorch/test_benchmark.py::test_the_timing_stays_within_its_budget",
    "tests/hostile/test_corpus_apptest.py",
    # every lesson at five settings, the bugs' runs and two short trainings (~15 s)
    "tests/words/test_spelling.py::test_every_generated_sentence_is_spelt_right",
    "tests/words/test_spelling.py::test_the_generated_sentences_cover_what_the_brief_names",
    "tests/words/test_spelling.py::test_terms_lists_only_words_the_app_uses",
    "tests/hostile/test_runtime_threads.py::test_configure_threads_applies_once_per_process",
    "tests/hostile/test_runtime_memory.py",
    "tests/hostile/test_properties_engine.py::test_any_text_and_settings_run_through_every_pass",
    "tests/learn/test_training.py::test_defaults_learn_the_task_and_attend_to_the_expected_key",
    "tests/learn/test_training.py::test_attention_starts_near_uniform_and_ends_on_the_expected",
    "tests/app/test_speed.py::test_figures_stay_within_budget_at_gpt2_sizes",
    "tests/app/test_content_late.py::test_applying_a_preset_sets_the_sidebar_and_shows",
    "tests/engine/test_bugs.py::test_no_bug_evaluation_raises_at_any_small_valid_setting",
    "tests/engine/test_package.py",
    "tests/engine/test_modules.py::test_a_copy_of_modules_py_runs_on_its_own",
    "tests/engine/test_attention_properties.py::test_attention_rows_are_positive_sum_to_one",
    "tests/engine/test_tokenizer_loading.py::test_empty_cache_without_network_falls_back",
    "tests/test_docker.py::test_vocabulary_steps_",
    "tests/test_docker.py::test_healthcheck_command_passes_against_the_running_app",
    "tests/bench/test_polls_bench.py",
    "tests/app/test_slides.py::test_the_reproduce_snippets_on_the_pages_print_the_figures_numbers",
    "tests/polls/test_class_live.py",
)


# Of the slow set, what needs the machine to itself: browser tests and these (time or memory
# budgets, live servers, images). scripts/test runs them in one process after the rest of the
# suite has run on every core (pytest-xdist).
SERIAL = (
    "tests/budget/",
    "tests/deploy/test_haproxy.py",
    "tests/polls/test_class_live.py",
    "tests/deploy/test_first_visit.py",
    "tests/deploy/test_static_gz.py",
    "tests/bench/test_soak.py",
    "tests/test_docker.py",
    "tests/pytorch/test_benchmark.py::test_the_timing_stays_within_its_budget",
    "tests/engine/test_tokenizer_loading.py::test_empty_cache_without_network_falls_back",
)


# Of the serial set, what measures time (CPU per answer, p95 latency, a wrong page list shown
# for at most a moment on a fresh server, the benchmark's time budget): scripts/test runs these
# last, one at a time, with the machine to themselves. The other serial tests wait mostly on
# browsers and servers (a browser test keeps a core about a quarter busy), so they run a few
# at once.
EXCLUSIVE = (
    "tests/polls/test_class_live.py",
    "tests/deploy/test_cold_start.py",
    "tests/induction/test_grow_live.py",
    "tests/pytorch/test_benchmark.py::test_the_timing_stays_within_its_budget",
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.path)).resolve().relative_to(ROOT).as_posix()
        node = f"{path}::{item.name}"
        if item.get_closest_marker("browser") or node.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("slow") and (
            item.get_closest_marker("browser") or node.startswith(SERIAL)
        ):
            item.add_marker(pytest.mark.serial)
        if item.get_closest_marker("serial") and node.startswith(EXCLUSIVE):
            item.add_marker(pytest.mark.exclusive)
