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
    url_path: str  # its URL path without the slash ("simplified-attention")
    title: str
    default: bool

    @property
    def url(self) -> str:
        """The path a browser opens: the default page lives at "/"."""
        return "/" if self.default else f"/{self.url_path}"

    def source(self) -> str:
        return (ROOT / self.path).read_text(encoding="utf-8")

    @property
    def draws_sidebar_text(self) -> bool:
        """Drawn from the sidebar's text and settings (a page with inputs of its own, such as
        "Watch attention learn", says so and draws nothing until asked)."""
        return "state.config()" in self.source()

    @property
    def runs_multihead(self) -> bool:
        """Runs the multi-head pass, so must refuse a d_out the heads do not divide (directly,
        or through the panel that stops a multi-head page)."""
        source = self.source()
        return "multihead_problem(" in source or 'causal_trace_or_stop("multihead"' in source


def _literal(node: ast.AST | None, default=None):
    if node is None:
        return default
    try:
        return ast.literal_eval(node)
    except ValueError:
        return default


def app_pages(app: Path = ROOT / "app.py") -> tuple[PageInfo, ...]:
    """Every ``st.Page(...)`` in the ``PAGES = [...]`` assignment of ``app.py``, in order."""
    tree = ast.parse(app.read_text(encoding="utf-8"))
    pages: list[PageInfo] = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "PAGES" for t in node.targets)
        ):
            continue
        for call in ast.walk(node.value):
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
            pages.append(PageInfo(path, url_path, title, bool(_literal(kw.get("default"), False))))
    if not pages:
        raise RuntimeError(f"no st.Page(...) found in the PAGES list of {app}")
    if not any(p.default for p in pages):
        pages[0] = PageInfo(pages[0].path, pages[0].url_path, pages[0].title, True)
    return tuple(pages)
