"""The docs are a map, and true (issue 35): every path and Python name they give exists.

Checked in README.md, docs/architecture.md, docs/deploy.md and bench/README.md:

- a path in backticks or in a code block (`attnviz/core/trace.py`, `deploy/`, `scripts/test`)
  whose first part is in the repository's root exists (a `*` in it must match something);
- a dotted name in backticks resolves, read from the source with ast (nothing is imported):
  a full name (`attnviz.core.trace.ModuleSpec.build`, `ui.render.show`), a name under a module
  of attnviz/ or ui/ by its file name (`render.show`: no two modules share a name), a member of
  a class defined once in attnviz/ or ui/ (`Settings.for_pass`), and `path.py`'s `name`;
- a relative link's file exists, and its #anchor is a heading there;
- the README's map of folders names real folders, and every package of attnviz/ and ui/;
- the README stays within 250 lines.

Names written without backticks are prose and are not checked (the removed modules, say).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "docs/architecture.md", "docs/deploy.md", "bench/README.md")
README_MOST_LINES = 250
# In the README's map, a line indented this far continues the description above it.
MAP_DESCRIPTION_INDENT = 12
# Made by running things, not part of the repository: a path under these is not a claim.
GENERATED = {".git", ".venv", "test-artifacts", ".pytest_cache", ".ruff_cache", ".mypy_cache"}
# A dotted word ending in one of these is a file or a host name, not a Python name.
NOT_PYTHON = {
    "py", "md", "toml", "json", "yaml", "yml", "txt", "cfg", "lua", "safetensors", "svg", "png",
    "js", "csv", "log", "env", "lock", "html", "edu", "com", "org", "net", "io",
}  # fmt: skip
PACKAGES = ("attnviz", "ui", "bench")
APP_FOLDERS = ("attnviz", "ui")

_SPAN = re.compile(r"`([^`\n]+)`")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_CALL = re.compile(r"\(.*\)$")
_OF_FILE = re.compile(r"`([\w./-]+\.py)`'s `(\w+)`")
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


# --- what the repository holds ----------------------------------------------------------------
def roots() -> set[str]:
    return {p.name for p in ROOT.iterdir()} - GENERATED


@functools.cache
def defined(path: Path) -> dict[str, set[str] | None]:
    """Top-level names of a module's source: a class maps to its members (its own and those of
    base classes defined in the same file), any other name to None."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: dict[str, set[str] | None] = {}
    classes: dict[str, ast.ClassDef] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            classes[node.name] = node
        for name in _bound(node):
            names.setdefault(name, None)

    def members(cls: ast.ClassDef, seen: frozenset[str] = frozenset()) -> set[str]:
        found = {name for item in cls.body for name in _bound(item)}
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in classes and base.id not in seen:
                found |= members(classes[base.id], seen | {cls.name})
        return found

    for name, cls in classes.items():
        names[name] = members(cls)
    return names


def _bound(node: ast.stmt) -> list[str]:
    """The names a top-level (or class-body) statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    names = []
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                names.append(sub.id)
    if isinstance(node, (ast.If, ast.Try)):  # e.g. a name defined under `if TYPE_CHECKING`
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                names += _bound(child)
    return names


def app_modules() -> list[Path]:
    return [p for folder in APP_FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))]


@functools.cache
def module_stems() -> dict[str, Path]:
    """File name -> module, for the modules of attnviz/ and ui/ (each name is unique)."""
    return {p.stem: p for p in app_modules() if p.stem != "__init__"}


@functools.cache
def class_homes() -> dict[str, list[Path]]:
    homes: dict[str, list[Path]] = {}
    for path in app_modules():
        for name, members in defined(path).items():
            if members is not None:
                homes.setdefault(name, []).append(path)
    return homes


# --- resolving one claim ----------------------------------------------------------------------
def resolve_in(path: Path, attrs: list[str]) -> bool:
    """Whether ``attrs`` (a name, then a member of it) is defined in module ``path``. Members of
    a class are read from its body; deeper than that, or of a value, nothing is checked."""
    names = defined(path)
    if not attrs:
        return True
    if attrs[0] not in names:
        return False
    members = names[attrs[0]]
    return len(attrs) == 1 or members is None or attrs[1] in members


def resolve_full(dotted: str) -> bool:
    """``attnviz.core.trace.ModuleSpec.build``: the longest prefix that is a module of the
    repository, then names defined in it."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:i])
        if base.with_suffix(".py").is_file():
            return resolve_in(base.with_suffix(".py"), parts[i:])
        if (base / "__init__.py").is_file():
            if i == len(parts):
                return True
            if not (base / f"{parts[i]}.py").exists() and not (base / parts[i]).is_dir():
                return resolve_in(base / "__init__.py", parts[i:])
    return False


def dotted_problem(span: str) -> str | None:
    """What is wrong with a backticked dotted name, or None (also for what is not one)."""
    name = _CALL.sub("", span.strip())
    if not _DOTTED.fullmatch(name):
        return None
    parts = name.split(".")
    if parts[-1] in NOT_PYTHON:
        return None
    first = parts[0]
    if first in PACKAGES:
        ok = resolve_full(name)
    elif first in module_stems():
        ok = resolve_in(module_stems()[first], parts[1:])
    elif first[0].isupper() and len(class_homes().get(first, [])) == 1:
        ok = resolve_in(class_homes()[first][0], parts)
    else:
        return None  # not ours: torch.manual_seed, st.Page, nn.Linear, server.cookieSecret
    return None if ok else f"`{span}` names nothing in the code"


def path_words(text: str) -> list[str]:
    return [w.strip("()[],;:.'\"") for w in text.split()]


def path_problem(word: str) -> str | None:
    """What is wrong with one path-like word, or None (also for what is not a repository path)."""
    word = word.split("#")[0]
    if "/" not in word or any(c in word for c in "<>=~$?{}@") or word.startswith(("/", "..")):
        return None
    if word.split("/")[0] not in roots():
        return None
    if "*" in word:
        return None if list(ROOT.glob(word.rstrip("/"))) else f"`{word}` matches nothing"
    return None if (ROOT / word).exists() else f"`{word}` does not exist"


def code_blocks(text: str) -> list[str]:
    """The lines of fenced code blocks, and of indented blocks that start after a blank line."""
    lines, found = text.splitlines(), []
    fenced, indented, previous = False, False, ""
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            found.append(line)
        elif line.startswith("    ") and (indented or not previous.strip()):
            indented = True
            found.append(line)
        else:
            indented = False
        previous = line
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, fenced = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        heading = None if fenced else _HEADING.match(line)
        if heading:
            found.add(slug(heading.group(1)))
    return found


def link_problem(doc: Path, target: str) -> str | None:
    if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
        return None
    file, _, anchor = target.partition("#")
    path = (doc.parent / file).resolve() if file else doc
    if not path.exists():
        return f"link ({target}): {file} does not exist"
    if anchor and path.suffix == ".md" and anchor not in anchors(path):
        return f"link ({target}): no heading #{anchor} in {path.relative_to(ROOT)}"
    return None


def problems(doc: Path, text: str) -> list[str]:
    """Every claim of ``text`` (the document ``doc``) that the repository does not bear out."""
    found = []
    for span in _SPAN.findall(text):
        found += [p for w in path_words(span) if (p := path_problem(w))]
        problem = dotted_problem(span)
        if problem:
            found.append(problem)
    for line in code_blocks(text):
        found += [p for w in path_words(line) if (p := path_problem(w))]
    for file, name in _OF_FILE.findall(text):
        path = ROOT / file
        if path.is_file() and not resolve_in(path, [name]):
            found.append(f"`{file}`'s `{name}`: no such name there")
    for target in _LINK.findall(text):
        problem = link_problem(doc, target)
        if problem:
            found.append(problem)
    return sorted(set(found))


# --- the tests --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", DOCS)
def test_every_path_and_name_in_the_docs_exists(name):
    doc = ROOT / name
    found = problems(doc, doc.read_text(encoding="utf-8"))
    assert not found, f"{name}:\n" + "\n".join(found)


def test_the_readme_stays_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MOST_LINES, f"README.md has {lines} lines; move detail to docs/"


def readme_map() -> list[str]:
    """The README's map of folders: each entry's path, its parents' prefixes added."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Where things are", 1)[1].split("\n## ", 1)[0]
    entries, stack = [], []  # stack: (indent, folder)
    for line in code_blocks(section):
        indent = len(line) - len(line.lstrip())
        if not line.strip() or indent >= MAP_DESCRIPTION_INDENT:
            continue  # a description's second line, under the first
        word = line.split()[0]
        while stack and stack[-1][0] >= indent:
            stack.pop()
        entries.append("".join(folder for _, folder in stack) + word)
        if word.endswith("/"):
            stack.append((indent, word))
    return entries


def test_the_readme_map_names_real_folders_and_every_package():
    entries = readme_map()
    assert "attnviz/core/" in entries and "ui/teach/" in entries, entries  # the parse worked
    missing = [e for e in entries if not (ROOT / e).exists()]
    assert not missing, f"the README's map names what does not exist: {missing}"
    for folder in APP_FOLDERS:
        for child in sorted((ROOT / folder).iterdir()):
            if (child / "__init__.py").exists():
                assert f"{folder}/{child.name}/" in entries, (
                    f"the map leaves out {folder}/{child.name}/"
                )
    for folder in ("attnviz", "ui", "pages", "bench", "deploy", "scripts", "tests", "docs"):
        assert f"{folder}/" in entries, f"the map leaves out {folder}/"


def test_a_stale_name_is_caught():
    """The checker fails on each kind of claim when it is wrong, and passes the right ones."""
    doc = ROOT / "docs" / "architecture.md"
    right = (
        "`attnviz/core/trace.py`, `ui/render.py`, `scripts/test`, `deploy/haproxy.cfg`, "
        "`tests/engine/test_lessons_*.py`, `attnviz.core.trace.ModuleSpec.build`, "
        "`ui.render.show`, `render.show`, `Settings.for_pass`, `attnviz.core.trace.CausalTrace`, "
        "`ui/render.py`'s `show`, [deploy](deploy.md#memory-per-session), "
        "`torch.manual_seed`, `model.safetensors`, `attnviz.example.edu`, `/poll?join=CODE`, `~/gpt2`\n\n"
        "    .venv/bin/python bench/live.py --sessions 50\n"
    )
    assert problems(doc, right) == []
    wrong = {
        "`attnviz/lesson.py`": "attnviz/lesson.py",
        "`ui/handover.py`": "ui/handover.py",
        "`tests/engine/test_nothing_*.py`": "matches nothing",
        "`attnviz.core.trace.ModuleSpec.built`": "ModuleSpec.built",
        "`ui.render.shown`": "ui.render.shown",
        "`attnviz.pretrained.load`": "attnviz.pretrained.load",
        "`render.panels`": "render.panels",
        "`Settings.for_passes`": "Settings.for_passes",
        "`ui/render.py`'s `shown`": "`shown`",
        "[deploy](deploy.md#no-such-part)": "#no-such-part",
        "[bench](../bench/nothing.md)": "nothing.md",
        "\n\n    scripts/no-such-script\n": "scripts/no-such-script",
    }
    for text, named in wrong.items():
        found = problems(doc, text)
        assert len(found) == 1 and named in found[0], (text, found)
