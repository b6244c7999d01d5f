"""The type check covers all the app's code: pyproject's [tool.mypy] files name app.py, pages/,
attnviz/ and ui/, and nothing excludes a file of them (scripts/test and CI run ``mypy`` with no
arguments, so a path dropped from the list would go unchecked without a word)."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _mypy() -> dict:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["tool"]["mypy"]


def _app_files() -> list[str]:
    files = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
    for package in ("attnviz", "ui"):
        files += sorted((ROOT / package).rglob("*.py"))
    return [f.relative_to(ROOT).as_posix() for f in files]


def _covered(path: str, entries: list[str]) -> bool:
    for entry in entries:
        entry = entry.rstrip("/")
        if path == entry or path.startswith(entry + "/") or fnmatch.fnmatch(path, entry):
            return True
    return False


def test_the_app_code_is_all_there_to_check():
    files = _app_files()
    assert "app.py" in files
    assert any(f.startswith("pages/") for f in files)
    assert any(f.startswith("attnviz/") for f in files)
    assert any(f.startswith("ui/") for f in files)


def test_mypy_checks_app_py_every_page_and_both_packages():
    entries = _mypy()["files"]
    assert isinstance(entries, list)
    missed = [f for f in _app_files() if not _covered(f, entries)]
    assert missed == []


def test_nothing_of_the_app_is_excluded_from_the_type_check():
    config = _mypy()
    assert "exclude" not in config
    for override in config.get("overrides", []):
        assert not override.get("ignore_errors", False), override
