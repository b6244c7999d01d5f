"""One vocabulary for links (issue 35): ui/url.py declares every name the app reads from a link,
and its parsers are the only ones that turn a link's text into a value or a refusal."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from ui import links, state, url
from ui.classroom import poll_views
from ui.models import alignment, growing, watch
from ui.teach import explain, predict, present

ROOT = Path(__file__).resolve().parents[2]


# --- the three parsers ---------------------------------------------------------------------------
@pytest.mark.parametrize(("raw", "value"), [("true", True), ("FALSE", False), ("True", True)])
def test_the_boolean_parser_reads_true_and_false_in_any_case(raw, value):
    assert url.parse_bool(raw) is value


@pytest.mark.parametrize("raw", ["1", "0", "yes", "", " true", "truee"])
def test_the_boolean_parser_refuses_what_a_bound_toggle_would_drop(raw):
    with pytest.raises(ValueError, match="^not true or false$"):
        url.parse_bool(raw)


def test_the_integer_parser_reads_a_whole_number_within_its_bounds():
    assert url.parse_int(" 7 ", 1, 50) == 7
    assert url.parse_int("1", 1, 50) == 1 and url.parse_int("50", 1, 50) == 50
    assert url.parse_int("75", 25, 4000, every=25) == 75


@pytest.mark.parametrize(
    ("raw", "low", "high", "every", "reason"),
    [
        ("7.5", 1, 50, 1, "not a whole number"),
        ("1e3", 1, 50, 1, "not a whole number"),
        ("abc", 1, 50, 1, "not a whole number"),
        ("", 1, 50, 1, "not a whole number"),
        ("0", 1, 50, 1, "outside 1–50"),
        ("51", 1, 50, 1, "outside 1–50"),
        ("-1", 0, 2**31 - 1, 1, "outside 0–2147483647"),
        ("1601", 1.0, 1600.0, 1, "outside 1–1600"),  # the sidebar's bounds, said with :g
        ("30", 25, 4000, 25, "not a multiple of 25"),
    ],
)
def test_the_integer_parser_names_what_is_wrong(raw, low, high, every, reason):
    with pytest.raises(ValueError) as info:
        url.parse_int(raw, low, high, every)
    assert str(info.value) == reason


def test_the_choice_parser_reads_text_as_written_and_numbers_as_numbers():
    assert url.parse_choice("trained", ("random", "trained")) == "trained"
    assert url.parse_choice(" marked ", ("shift", "marked"), strip=True) == "marked"
    assert url.parse_choice("0.010", (0.003, 0.01, 0.1)) == 0.01
    assert url.parse_choice(" 4", (1, 2, 4)) == 4


@pytest.mark.parametrize(
    ("raw", "choices", "refusal", "reason"),
    [
        ("Trained", ("random", "trained"), "", "not one of random, trained"),
        (" marked", ("shift", "marked"), "", "not one of shift, marked"),
        ("maybe", ("random", "trained"), "not random or trained", "not random or trained"),
        ("3", (1, 2, 4), "", "not one of 1, 2, 4"),
        ("4.0", (1, 2, 4), "", "not a number"),
        ("fast", (0.003, 0.01), "", "not a number"),
        ("0.5", (0.003, 0.01), "", "not one of 0.003, 0.01"),
    ],
)
def test_the_choice_parser_refuses_what_is_not_a_choice(raw, choices, refusal, reason):
    with pytest.raises(ValueError) as info:
        url.parse_choice(raw, choices, refusal)
    assert str(info.value) == reason


def test_the_sidebar_reads_its_fields_with_the_three_parsers():
    by_url = state.FIELDS_BY_URL
    assert state.parse_value(by_url["bias"], "TRUE") is True
    assert state.parse_value(by_url["heads"], " 3") == 3
    assert state.parse_value(by_url["weights"], "trained") == "trained"
    assert state.parse_value(by_url["text"], "x" * 2001) == "x" * 2000
    for key, raw, reason in [
        ("bias", "yes", "not true or false"),
        ("d_in", "7.5", "not a whole number"),
        ("d_out", "-5", "outside 1–1600"),
        ("dropout", "nan", "not a finite number"),
        ("dropout", "0.95", "outside 0–0.9"),
        ("weights", "learned", "not random or trained"),
    ]:
        with pytest.raises(ValueError) as info:
            state.parse_value(by_url[key], raw)
        assert str(info.value) == reason, key


# --- one module declares every name, and makes every parser ---------------------------------------
READERS = {
    "sidebar": state._SIDEBAR_PARSERS,
    "views": links.PARSERS,
    "presenter": present.PARSERS,
    "predict": predict.PARSERS,
    "page 5": watch.PARSERS,
    "page 8": growing.PARSERS,
    "home": alignment.PARSERS,
}


def test_the_sidebar_fields_are_the_names_ui_url_declares_for_it():
    assert {f.url for f in state.FIELDS} == url.SIDEBAR
    assert set(state._SIDEBAR_PARSERS) == url.SIDEBAR


def test_every_declared_name_is_read_and_every_name_read_is_declared():
    read = {name for parsers in READERS.values() for name in parsers}
    read |= {explain.CELL_PARAM, poll_views.JOIN, poll_views.POLL, poll_views.SECRET}
    assert read == url.NAMES
    assert not url.SIDEBAR & url.PAGE_NAMES
    assert not url.NAMES & url.STREAMLIT


def test_every_parser_a_page_hands_read_url_is_made_in_ui_url():
    for reader, parsers in READERS.items():
        for name, parse in parsers.items():
            assert parse.__module__ == "ui.url", f"{reader}: {name} is read by {parse.__module__}"
    assert explain.parse_cell("lab.h1q2k0") == explain.Cell("lab", 1, 0, 2, 0)
    with pytest.raises(ValueError, match="not a cell such as q2k1"):
        explain.parse_cell("q2")


def _app_sources() -> list[Path]:
    found = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
    return found + sorted((ROOT / "ui").rglob("*.py"))


def _module_name(path: Path) -> str | None:
    """The importable name of a ui module (pages and app.py run when imported: None)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts).removesuffix(".__init__") if parts[0] == "ui" else None


def _aliases(tree: ast.Module) -> dict[str, str]:
    """A file's imported names: the alias a file uses -> the module or object it names."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                found[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    found[a.asname] = a.name
                else:  # ``import ui.models.watch`` binds ``ui``
                    found[a.name.split(".")[0]] = a.name.split(".")[0]
    return found


def _resolve(node: ast.expr, module, aliases: dict[str, str]):
    """The value of a constant name a file uses (``STEP_KEY``, ``url.PLACEMENT``), or None
    when it is not a module-level constant (a function's own variable)."""
    if isinstance(node, ast.Constant):
        return node.value
    chain = []
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    chain.append(node.id)
    head, *rest = reversed(chain)
    if module is not None and hasattr(module, head):
        value = getattr(module, head)
    elif head in aliases:
        target = aliases[head]
        try:
            value = importlib.import_module(target)
        except ImportError:
            owner, _, attr = target.rpartition(".")
            value = getattr(importlib.import_module(owner), attr, None)
    else:
        return None
    for attr in rest:
        value = getattr(value, attr, None)
    return value


def _is_query_params(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "query_params"


def _names_read(tree: ast.Module) -> list[ast.expr]:
    """Every expression a file uses as a link's name: ``st.query_params[X]``, ``.get(X)``,
    ``.get_all(X)``, ``X in st.query_params``, and a URL-bound widget's ``key=X``."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_query_params(node.value):
            found.append(node.slice)
        elif isinstance(node, ast.Compare) and any(_is_query_params(c) for c in node.comparators):
            found.append(node.left)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and _is_query_params(func.value) and node.args:
                if func.attr in ("get", "get_all"):
                    found.append(node.args[0])
            words = {k.arg: k.value for k in node.keywords}
            bind = words.get("bind")
            if isinstance(bind, ast.Constant) and bind.value == "query-params" and "key" in words:
                found.append(words["key"])
    return found


def test_every_name_the_app_reads_from_a_link_is_declared_in_ui_url():
    checked = 0
    for path in _app_sources():
        if path.name == "url.py" and path.parent.name == "ui":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        name = _module_name(path)
        module = importlib.import_module(name) if name else None
        aliases = _aliases(tree)
        for expr in _names_read(tree):
            value = _resolve(expr, module, aliases)
            where = f"{path.relative_to(ROOT)}:{expr.lineno}"
            if isinstance(expr, ast.Constant):
                assert value in url.NAMES, f"{where}: the link name {value!r} is not in ui/url.py"
            if isinstance(value, str):
                assert value in url.NAMES, f"{where}: the link name {value!r} is not in ui/url.py"
                checked += 1
    assert checked >= 25  # the walk found the pages' controls and the modules' reads


REFUSALS = ("not true or false", "not a whole number", "not a number", "not a finite number")


def test_no_other_module_words_a_refusal_of_its_own():
    """A parser of its own would say why it refused a value: only ui/url.py says these."""
    for path in _app_sources():
        if path.name == "url.py" and path.parent.name == "ui":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                said = node.value.strip()
                assert not said.startswith(REFUSALS), f"{path.relative_to(ROOT)}: {said!r}"
                assert not said.startswith("outside "), f"{path.relative_to(ROOT)}: {said!r}"
            if isinstance(node, ast.JoinedStr) and node.values:
                first = node.values[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    assert not first.value.startswith("outside "), path.relative_to(ROOT)


def test_the_sidebar_check_leaves_every_page_s_names_to_its_page(monkeypatch):
    """Page 5's, page 8's and a cell's names are not "unknown" to the sidebar's check, even on
    the first run of a fresh server, before the module that draws them was ever imported (they
    used to be registered by that import, so such a link lost its values)."""
    import types

    class Link(dict):
        def get_all(self, key):
            return list(self[key])

        def __delitem__(self, key):
            dropped.append(key)

    dropped: list[str] = []
    link = Link(task=["marked"], lseed=["5"], gstep=["300"], cell=["q1k0"], embed=["true"])
    link["heads"] = ["3"]
    link["foo"] = ["1"]
    fake_st = types.SimpleNamespace(query_params=link, session_state={}, rerun=lambda: None)
    monkeypatch.setattr(state, "st", fake_st)
    state.read_url()
    assert dropped == ["foo"]
    assert fake_st.session_state[state.URL_WARNING_KEY] == (
        "Some values in the link were not understood and the defaults are used instead: "
        "foo \\(unknown setting\\)."
    )


FIRST_VISIT = """
from streamlit.testing.v1 import AppTest
at = AppTest.from_file("app.py", default_timeout=120)
at.switch_page("pages/watch-attention-learn.py")
at.query_params["task"] = "marked"
at.query_params["lseed"] = "5"
at.run()
print(repr([w.value for w in at.warning]))
print(at.radio(key="task").value, at.number_input(key="lseed").value)
"""


def test_a_page_5_link_opens_its_view_on_a_fresh_server_s_first_visit():
    """In a new process (nothing imported yet), /watch-attention-learn?task=marked&lseed=5
    opens page 5 with those values and no warning."""
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", FIRST_VISIT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ.copy(),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-2:] == ["[]", "marked 5"]
