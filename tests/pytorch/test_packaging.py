"""The classroom image holds what page 6 imports (bench/ is otherwise left out of it)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_docker import _dockerignore_rules, dockerignored

ROOT = Path(__file__).resolve().parents[2]


def _project_imports(path: Path) -> set[str]:
    """Files of this project that ``path`` imports (``from bench import implementations``...)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            for name in [None, *(a.name for a in node.names)]:
                candidate = ROOT.joinpath(*parts, *([name] if name else []))
                for file in (candidate.with_suffix(".py"), candidate / "__init__.py"):
                    if file.is_file():
                        found.add(file.relative_to(ROOT).as_posix())
    return found


def test_the_image_keeps_the_code_page_6_imports_and_leaves_bench_output_out():
    rules = _dockerignore_rules()
    needed = {"pages/against-pytorch.py", "ui/comparison.py"}
    needed |= _project_imports(ROOT / "pages/against-pytorch.py")
    needed |= _project_imports(ROOT / "ui/comparison.py")
    assert {"bench/__init__.py", "bench/implementations.py"} <= needed
    for path in sorted(needed):
        assert not dockerignored(path, rules), f"{path} is needed by page 6 but dockerignored"
    assert dockerignored("bench/results/run.json", rules)  # benchmark output stays out
