"""The folders are the map (issue 35): a package for each concern, the core on its own, no folder
too full to scan, and no two modules under one name."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP_FOLDERS = ("attnviz", "ui", "pages")
MOST_MODULES = 15


def app_modules() -> list[Path]:
    found = [ROOT / "app.py"]
    for folder in APP_FOLDERS:
        found += sorted((ROOT / folder).rglob("*.py"))
    return found


def imported_names(path: Path, root: Path = ROOT) -> set[str]:
    """Every module a file imports, relative imports made absolute."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names |= {base} | {f"{base}.{a.name}" for a in node.names}
    return names


def test_the_core_imports_nothing_else_of_the_project():
    core = sorted((ROOT / "attnviz" / "core").glob("*.py"))
    assert len(core) >= 8
    for path in core:
        outside = {
            n
            for n in imported_names(path)
            if n.split(".")[0] in ("attnviz", "ui", "bench", "tests")
            and not n.startswith("attnviz.core")
            and n != "attnviz"
        }
        assert not outside, f"{path.relative_to(ROOT)} imports {sorted(outside)}"


def test_the_engine_never_imports_the_streamlit_glue():
    for path in (ROOT / "attnviz").rglob("*.py"):
        glue = {n for n in imported_names(path) if n.split(".")[0] in ("ui", "streamlit")}
        assert not glue, f"{path.relative_to(ROOT)} imports {sorted(glue)}"


@pytest.mark.parametrize("folder", APP_FOLDERS)
def test_no_app_folder_holds_more_than_fifteen_modules(folder):
    for directory in [ROOT / folder, *(p for p in (ROOT / folder).rglob("*") if p.is_dir())]:
        modules = [p for p in directory.glob("*.py") if p.stem != "__init__"]
        assert len(modules) <= MOST_MODULES, (
            f"{directory.relative_to(ROOT)} holds {len(modules)} modules"
        )


def test_no_two_app_modules_share_a_name():
    stems = Counter(p.stem for p in app_modules() if p.stem != "__init__")
    assert not [s for s, n in stems.items() if n > 1]
    assert stems["modules"] == 1 and stems["render"] == 1  # the walk found the tree


PRIVATE = ("streamlit.runtime", "streamlit.elements", "streamlit.web", "streamlit.proto")


def private_importers(files, root: Path = ROOT) -> list[str]:
    return sorted(
        str(p.relative_to(root))
        for p in files
        if any(n == m or n.startswith(m + ".") for n in imported_names(p, root) for m in PRIVATE)
    )


def test_one_fenced_module_alone_touches_streamlit_s_private_modules():
    assert private_importers(app_modules()) == ["ui/charts.py"]


def test_the_private_import_check_can_fail(tmp_path):
    fake = tmp_path / "ui" / "sneaky.py"
    fake.parent.mkdir()
    fake.write_text("import streamlit as st\nfrom streamlit.runtime import scriptrunner\n")
    public = tmp_path / "ui" / "fine.py"
    public.write_text("import streamlit as st\nimport streamlit.components.v2 as c\n")
    assert private_importers([fake, public], tmp_path) == ["ui/sneaky.py"]


def test_nothing_assigns_to_an_attribute_of_a_streamlit_class_or_module():
    """No patching: no `AppSession.x = ...`, no `setattr(widget_module, ...)` in the app."""
    for path in app_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                if isinstance(target, ast.Attribute):
                    root = target.value
                    while isinstance(root, ast.Attribute):
                        root = root.value
                    assert not (isinstance(root, ast.Name) and root.id in ("st", "streamlit")), (
                        f"{path.relative_to(ROOT)}:{node.lineno} assigns to {ast.unparse(target)}"
                    )
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setattr":
                name = ast.unparse(node.args[0]) if node.args else ""
                assert "streamlit" not in name and "AppSession" not in name, (
                    f"{path.relative_to(ROOT)}:{node.lineno} setattr on {name}"
                )


# A page's own lesson module goes by `lessons` on that page: one role, one module per file.
ONE_ROLE_PER_FILE = {"lessons"}


def aliases(files) -> dict[str, set[str]]:
    """{alias: the modules or names imported under it} over ``files``."""
    found: dict[str, set[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                base = f"{node.module}." if isinstance(node, ast.ImportFrom) else ""
                for a in node.names:
                    if a.asname:
                        found.setdefault(a.asname, set()).add(base + a.name)
    return found


def test_each_import_alias_means_one_thing_across_the_app():
    found = aliases(app_modules())
    assert found["F"] == {"torch.nn.functional"} and found["st"] == {"streamlit"}
    shared = {a: sorted(m) for a, m in found.items() if len(m) > 1 and a not in ONE_ROLE_PER_FILE}
    assert not shared


def test_no_module_level_name_reuses_an_import_alias():
    """`L = cache.lesson_of(...)` beside `L`, a length elsewhere, reads as two meanings."""
    names = set(aliases(app_modules()))
    for path in app_modules():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            for target in node.targets if isinstance(node, ast.Assign) else []:
                if isinstance(target, ast.Name):
                    assert target.id not in names, f"{path.relative_to(ROOT)}:{node.lineno}"
                    assert not (len(target.id) == 1 and target.id.isupper()), (
                        f"{path.relative_to(ROOT)}:{node.lineno}: one capital letter, {target.id}"
                    )


def test_the_alias_check_can_fail(tmp_path):
    (tmp_path / "a.py").write_text("import torch.nn.functional as F\n")
    (tmp_path / "b.py").write_text("from attnviz.core import modules as F\n")
    found = aliases([tmp_path / "a.py", tmp_path / "b.py"])
    assert found["F"] == {"torch.nn.functional", "attnviz.core.modules"}


def html_markdown_calls(paths: list[Path], root: Path = ROOT) -> list[str]:
    """Each call that passes ``unsafe_allow_html`` (st.markdown, st.caption, ...), as
    "path:line": Streamlit loads its raw-HTML Markdown bundle (rehype-raw, about 60 KB
    gzipped) in every browser that meets one, on the first visit (issue 22's 3.5 MB)."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                if any(k.arg == "unsafe_allow_html" for k in node.keywords):
                    found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return found


def test_no_markdown_carries_html_html_goes_through_st_html():
    assert html_markdown_calls(app_modules()) == []


def test_the_html_markdown_check_can_fail(tmp_path):
    fake = tmp_path / "ui" / "loud.py"
    fake.parent.mkdir()
    fake.write_text('import streamlit as st\nst.markdown("<b>x</b>", unsafe_allow_html=True)\n')
    assert html_markdown_calls([fake], tmp_path) == ["ui/loud.py:2"]
