"""The app's pages, read from ``app.py``'s ``PAGES`` list without running Streamlit.

Tests, the browser checks and the load test all cover every registered page, including pages
added later, by reading the list rather than repeating it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class PageInfo:
    path: str  # the page's file, relative to app.py ("pages/simplified-attention.py")
    # Its URL path without the slash ("simplified-attention"). The default page's own url_path
    # is never served (Streamlit serves it at "/"): here it is the hidden alias app.py gives it
    # ("why-attention", see aliases()), the other path a browser opens it by.
    url_path: str
    title: str
    default: bool

    @property
    def url(self) -> str:
        """The path a browser opens: the default page lives at "/"."""
        return "/" if self.default else f"/{self.url_path}"

    @property
    def draws_sidebar_text(self) -> bool:
        """Drawn from the sidebar's text and settings (a page with inputs of its own, such as
        "Watch attention learn", says so and draws nothing until asked)."""
        return self.path not in OWN_INPUTS

    @property
    def lays_text_after_filler(self) -> bool:
        """Draws the text as the induction model reads it: filler tokens, then the text (its
        first 12 tokens) twice (attnviz.models.induction.api.probe), so its labels start at the
        filler's, not at the text's first token."""
        return self.path in PROBE_LAYOUT

    @property
    def runs_multihead(self) -> bool:
        """Runs the multi-head pass, so must refuse a d_out the heads do not divide."""
        return self.path in RUNS_MULTIHEAD


# What each page does, stated once; tests/app/test_page_facts.py checks it on the running pages.
# The poll page draws no chart from the sidebar: its questions' figures appear on the reveal;
# the concept check asks about ideas, not the sidebar's numbers.
OWN_INPUTS = frozenset(
    {"pages/watch-attention-learn.py", "pages/poll.py", "pages/concept-check.py"}
)
RUNS_MULTIHEAD = frozenset({"pages/multi-head-attention.py", "pages/against-pytorch.py"})
PROBE_LAYOUT = frozenset({"pages/grow-induction-heads.py"})


def _literal(node: ast.AST | None, default=None):
    if node is None:
        return default
    try:
        return ast.literal_eval(node)
    except ValueError:
        return default


def app_pages(app: Path = ROOT / "app.py") -> tuple[PageInfo, ...]:
    """Every page in app.py's menu, in order: the ``st.Page(...)`` calls of its ``PAGES = [...]``
    assignment, without the hidden ones (:func:`aliases`)."""
    return tuple(p for p, hidden in _pages(app) if not hidden)


def aliases(app: Path = ROOT / "app.py") -> tuple[PageInfo, ...]:
    """The hidden pages of ``PAGES``: another path to a page of the menu (not listed in it)."""
    return tuple(p for p, hidden in _pages(app) if hidden)


def _pages(app: Path) -> list[tuple[PageInfo, bool]]:
    """(page, hidden) for every ``st.Page(...)`` in app.py's list of pages: the ``PAGES = [...]``
    assignment, or the function ``make_pages`` that builds it (once per session)."""
    tree = ast.parse(app.read_text(encoding="utf-8"))
    pages: list[tuple[PageInfo, bool]] = []
    for node in ast.walk(tree):
        listed = isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "PAGES" for t in node.targets
        )
        built = isinstance(node, ast.FunctionDef) and node.name == "make_pages"
        if not (listed or built):
            continue
        for call in ast.walk(node.value if isinstance(node, ast.Assign) else node):
            if not (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "Page"
            ):
                continue
            kw = {k.arg: k.value for k in call.keywords}
            path = _literal(call.args[0] if call.args else kw.get("page"))
            if not isinstance(path, str):
                continue  # a callable page: nothing to switch to by file
            url_path = _literal(kw.get("url_path")) or Path(path).stem
            title = _literal(kw.get("title"), url_path)
            default = bool(_literal(kw.get("default"), False))
            hidden = _literal(kw.get("visibility"), "visible") == "hidden"
            pages.append((PageInfo(path, url_path, title, default), hidden))
    if not pages:
        raise RuntimeError(f"no st.Page(...) found in the PAGES list of {app}")
    if not any(p.default for p, _ in pages):
        first, hidden = pages[0]
        pages[0] = (PageInfo(first.path, first.url_path, first.title, True), hidden)
    for i, (page, hidden) in enumerate(pages):
        alias = next((a for a, h in pages if h and a.path == page.path), None)
        if page.default and alias is not None:
            pages[i] = (PageInfo(page.path, alias.url_path, page.title, True), hidden)
    return pages
