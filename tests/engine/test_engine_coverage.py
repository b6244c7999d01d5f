"""Completeness guard: every public function of every attnviz module is called by the RNG-state
test (tests/engine/test_seeding.py) and by the thread test (tests/engine/test_threads_all.py).

A function counts as public when its name does not start with ``_``, it is callable, it is not a
class (classes are covered through the functions that build and use them), and it is defined in
the module being walked (imports from elsewhere are counted where they are defined). The calls
are keyed ``"module.function[variant]"``; the part before ``[`` is what a call covers.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
from pathlib import Path

import attnviz

from . import test_seeding, test_threads_all
from .engine_calls import ENGINE_CALLS

# Public functions neither test calls, each with the reason. Keep it short; prefer a call.
NOT_CALLED: dict[str, str] = {}


def engine_modules() -> list[types.ModuleType]:
    return [
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(attnviz.__path__, prefix="attnviz.")
    ]


def public_functions(module: types.ModuleType) -> set[str]:
    """``"module.name"`` for each public callable defined in ``module`` (classes excluded)."""
    short = module.__name__.removeprefix("attnviz.")
    found = set()
    for name, obj in vars(module).items():
        if name.startswith("_") or not callable(obj) or inspect.isclass(obj):
            continue
        if getattr(obj, "__module__", None) != module.__name__:
            continue  # imported from another module (or a typing alias)
        found.add(f"{short}.{name}")
    return found


def all_public_functions() -> set[str]:
    return set().union(*(public_functions(m) for m in engine_modules()))


def covered(calls) -> set[str]:
    return {name.split("[", 1)[0] for name in calls}


def _missing(calls) -> list[str]:
    return sorted(all_public_functions() - covered(calls) - set(NOT_CALLED))


def test_the_walk_sees_every_engine_module():
    names = {m.__name__ for m in engine_modules()}
    files = Path(attnviz.__file__).parent.glob("*.py")
    assert names == {f"attnviz.{p.stem}" for p in files} - {"attnviz.__init__"}


def test_the_guard_reports_an_uncovered_function():
    fake = types.ModuleType("attnviz.fake")
    exec(
        "import os\n"
        "from os.path import join\n"
        "def visible(): pass\n"
        "def _hidden(): pass\n"
        "class Thing: pass\n"
        "CONSTANT = 3\n",
        fake.__dict__,
    )
    assert public_functions(fake) == {"fake.visible"}
    assert "fake.visible" not in covered(ENGINE_CALLS)


def test_every_public_function_is_in_the_rng_state_test():
    missing = _missing(test_seeding.RNG_CALLS)
    assert not missing, f"not called by the RNG-state test (add to engine_calls.py): {missing}"


def test_every_public_function_is_in_the_thread_test():
    missing = _missing(test_threads_all.THREAD_CALLS)
    assert not missing, f"not called by the thread test (add to engine_calls.py): {missing}"


def test_the_rng_state_test_runs_every_listed_call():
    test = test_seeding.test_engine_function_leaves_the_global_generator_unchanged
    (mark,) = [m for m in test.pytestmark if m.name == "parametrize"]
    assert list(mark.args[1]) == list(test_seeding.RNG_CALLS)


def test_every_call_name_points_at_a_real_engine_attribute():
    stale = []
    for name in ENGINE_CALLS:
        module, *path = name.split("[", 1)[0].split(".")
        obj = importlib.import_module(f"attnviz.{module}")
        for part in path:
            obj = getattr(obj, part, None)
        if not callable(obj):
            stale.append(name)
    assert stale == []


def test_the_allow_list_is_not_stale():
    public = all_public_functions()
    for name, reason in NOT_CALLED.items():
        assert name in public, f"{name} is not a public engine function any more"
        assert name not in covered(ENGINE_CALLS), f"{name} is called now: drop it from the list"
        assert reason.strip()
