"""The engine is importable without Streamlit (issue 2: the engine never imports Streamlit)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE_MODULES = tuple(
    sorted(
        ".".join(p.relative_to(ROOT / "attnviz").with_suffix("").parts)
        for p in (ROOT / "attnviz").rglob("*.py")
        if p.stem != "__init__"
    )
)


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_import_attnviz_does_not_import_streamlit():
    result = _run("import attnviz, sys; assert 'streamlit' not in sys.modules, 'streamlit loaded'")
    assert result.returncode == 0, result.stderr


def test_importing_every_engine_module_does_not_import_streamlit():
    imports = "; ".join(f"import attnviz.{name}" for name in ENGINE_MODULES)
    code = (
        f"import sys; {imports}; "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'streamlit'); "
        "assert not loaded, loaded"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr


def test_streamlit_is_installed_so_the_import_check_is_meaningful():
    # Without streamlit in the venv the two tests above could never fail.
    result = _run("import importlib.util; assert importlib.util.find_spec('streamlit')")
    assert result.returncode == 0, result.stderr


def test_the_engine_modules_were_found():
    assert {
        "core.tokens",
        "core.inputs",
        "core.modules",
        "core.trace",
        "teach.checks",
        "figures",
        "teach.lessons.causal",
        "models.induction.model",
    } <= set(ENGINE_MODULES)


def test_package_exports_the_book_names():
    import attnviz

    for name in (
        "SelfAttention_v1",
        "SelfAttention_v2",
        "CausalAttention",
        "MultiHeadAttentionWrapper",
        "MultiHeadAttention",
        "Settings",
        "SettingsError",
        "seeded",
    ):
        assert name in attnviz.__all__
        assert getattr(attnviz, name) is not None
