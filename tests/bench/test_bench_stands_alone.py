"""bench/ runs without tests/: a benchmark, the speed guard and the load client import only the
app, bench/ itself and installed packages (the tests import the shared helpers from bench/)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_file_in_bench_imports_tests():
    offenders = {
        path.relative_to(ROOT).as_posix(): sorted(
            m for m in imported_modules(path) if m == "tests" or m.startswith("tests.")
        )
        for path in sorted((ROOT / "bench").rglob("*.py"))
    }
    offenders = {path: mods for path, mods in offenders.items() if mods}
    assert offenders == {}


def test_the_check_sees_an_import_of_tests(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nfrom tests.support.rng import x\nimport tests.engine\n")
    assert {"tests.support.rng", "tests.engine"} <= imported_modules(sample)
