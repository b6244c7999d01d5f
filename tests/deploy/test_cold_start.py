"""A fresh server's first visit is clean, whichever lesson link it is.

Streamlit resolves the first visit of a process against the ``pages/`` folder's file names
before app.py has ever run (see ui/entry.py). Each test here starts a new ``streamlit run
app.py`` (the laptop command: no health check, no warm-up) and makes a lesson link its very
first request. While the page loads, a MutationObserver in the page records every dialog and
every list of sidebar page links that appears, so a notice or a file-name list that shows for
a moment and then goes away is still caught.
"""

from __future__ import annotations

import ast
import contextlib
import json
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from bench.support.browser import chromium, wait_for_app
from bench.support.network import proxy_env
from bench.support.pages import ROOT, aliases, app_pages
from bench.support.server import running_app

pytestmark = pytest.mark.browser

PAGES = app_pages()
# The heading each page shows (its st.title). A new page adds its line here.
HEADINGS = {
    "why-attention": "Attention, step by step",
    "simplified-attention": "1. Simplified self-attention",
    "trainable-attention": "2. Trainable self-attention",
    "causal-attention": "3. Causal attention and dropout",
    "multi-head-attention": "4. Multi-head attention",
    "watch-attention-learn": "5. Watch attention learn",
    "against-pytorch": "6. Your module against PyTorch's",
    "trained-heads": "Trained heads: GPT-2's weights in your module",
    "grow-induction-heads": "8. Grow an induction head",
    "poll": "Class poll",
    "concept-check": "Did I learn it?",
}
# The longest a wrong page list may show in the sidebar (see check_clean). Before the fix the
# file names stayed about 2 s; after it 0-45 ms on a quiet machine, and up to ~0.4 s on a
# two-core machine running other test servers at the same time.
FLASH_MS = 1000
# A lesson link carries settings; the first visit must keep them.
LESSON_QUERY = "text=The+cat+sat+on+the+mat"

RECORDER = """
window.__firstVisit = {dialogs: [], navs: []};
const record = () => {
  for (const d of document.querySelectorAll("[role='dialog'], [data-testid='stDialog']")) {
    const text = (d.textContent || "").trim();
    if (text && !window.__firstVisit.dialogs.includes(text)) window.__firstVisit.dialogs.push(text);
  }
  const nav = document.querySelector("[data-testid='stSidebarNav']");
  if (nav) {
    const links = [...nav.querySelectorAll("a")].map(a => (a.textContent || "").trim());
    const key = JSON.stringify(links);
    const navs = window.__firstVisit.navs;
    if (links.length && (!navs.length || navs[navs.length - 1][1] !== key)) {
      navs.push([performance.now(), key]);
    }
  }
};
new MutationObserver(record).observe(document, {subtree: true, childList: true, characterData: true});
"""


def first_visit(url: str, proxy_port: int, path: str, heading: str, text: str = "") -> dict:
    """Open ``url + path`` as the first request and wait for the page's heading and the run's
    end (and, given ``text``, for the sidebar's text box to hold it, up to 30 s); return what
    the page showed along the way and at the end."""
    if shutil.which("chromium") is None:
        pytest.fail("chromium is not on PATH: apt-get install -y chromium")
    with chromium(proxy_port) as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1200})
        page.add_init_script(RECORDER)
        page.goto(url + path)
        page.locator("h1", has_text=heading).first.wait_for(timeout=120_000)
        wait_for_app(page, 120_000)
        page.wait_for_timeout(1500)  # a late notice or navigation message would land by now
        if text:
            # A run that the page's first component value restarts can leave the page between
            # two runs here, its sidebar not drawn yet: wait for the text box to hold the link's
            # text (a page that never shows it still fails below, with what it showed).
            with contextlib.suppress(PlaywrightTimeout):
                page.locator("[data-testid='stSidebar'] textarea").first.wait_for(timeout=30_000)
                page.wait_for_function(
                    "t => [...document.querySelectorAll('textarea')].some(e => e.value === t)",
                    arg=text,
                    timeout=30_000,
                )
        seen = page.evaluate("() => window.__firstVisit")
        final = page.evaluate(
            """() => ({
                url: location.pathname + location.search,
                h1: [...document.querySelectorAll('h1')].map(h => h.textContent.trim()),
                nav: [...document.querySelectorAll("[data-testid='stSidebarNav'] a")]
                        .map(a => a.textContent.trim()),
                body: document.body.innerText,
                inputs: [...document.querySelectorAll('input, textarea')].map(e => e.value),
            })"""
        )
    return {
        "dialogs": seen["dialogs"],
        # (milliseconds since the page opened, the sidebar's page links from then on)
        "navs": [(at, json.loads(links)) for at, links in seen["navs"]],
        **final,
    }


def check_clean(result: dict, path: str, heading: str, titles: list[str]) -> float:
    """Assert the first visit was clean; return how long (ms) a wrong page list showed."""
    assert result["dialogs"] == [], f"{path}: a dialog appeared: {result['dialogs']}"
    assert "Page not found" not in result["body"], path
    assert heading in result["h1"], f"{path}: headings {result['h1']}, expected {heading!r}"
    assert result["nav"] == titles, f"{path}: sidebar shows {result['nav']}"
    # The sidebar never lists file names for longer than a blink. Streamlit itself sends the
    # legacy file-name list in a fresh process's first run, before any of the app's code can
    # run; the page's guard replaces it within that run (it used to stay about 2 s, while
    # torch loaded, when app.py ran late).
    flash = 0.0
    following = result["navs"][1:] + [(None, None)]
    for (at, links), (until, _) in zip(result["navs"], following, strict=True):
        if links != titles:
            assert until is not None, f"{path}: the sidebar stayed at {links}"
            assert until - at <= FLASH_MS, f"{path}: {links} shown for {until - at:.0f} ms"
            flash += until - at
    assert "Traceback" not in result["body"]
    return flash


def note_flash(artifacts: Path, path: str, ms: float) -> None:
    with open(artifacts / "cold-start-flashes.txt", "a") as out:
        out.write(f"{path}\t{ms:.0f} ms\n")


def _server_env(blackhole) -> dict[str, str]:
    env = dict(proxy_env(blackhole))
    cache = ROOT.parent / "shared" / "tiktoken_cache"
    if cache.is_dir():
        env.setdefault("TIKTOKEN_CACHE_DIR", str(cache))
    return env


def test_every_page_has_a_heading_to_check():
    assert {p.url_path for p in PAGES} <= set(HEADINGS), "add the new page's heading"


def test_page_files_are_named_after_their_url_paths():
    """The rule the first visit depends on (ui/entry.py): the legacy lookup must find, under
    the requested URL path, the very page app.py registers there."""
    for p in PAGES:
        assert Path(p.path).parent == Path("pages"), p.path
        assert Path(p.path).stem == p.url_path, f"{p.path} is served at /{p.url_path}"


def test_every_page_file_starts_with_the_guard():
    """Rule 2 of ui/entry.py, for every page: its first statement after ``from ui import entry``
    is ``entry.guard(__file__)``. With rule 1 (above) this is what makes any page's first visit
    clean; the fresh-server test below opens a few pages of each kind for real."""
    for p in PAGES:
        body = ast.parse((ROOT / p.path).read_text(encoding="utf-8")).body
        code = [
            n for n in body if not isinstance(n, ast.Expr) or not isinstance(n.value, ast.Constant)
        ]
        first, second = code[0], code[1]
        assert ast.unparse(first) == "from ui import entry", (p.path, ast.unparse(first))
        assert ast.unparse(second) == "entry.guard(__file__)", (p.path, ast.unparse(second))


# A fresh server per case (about 10-25 s each): a pass page drawn from the link's text, a page
# with inputs of its own, page 8 and the poll page (both added after the guard), and below, the
# root and the hidden alias. Every other page starts with the same guard (the test above).
FRESH = ("causal-attention", "watch-attention-learn", "grow-induction-heads", "poll")


@pytest.mark.parametrize(
    "page", [p for p in PAGES if p.url_path in FRESH], ids=lambda p: p.url_path
)
def test_a_lesson_link_as_a_fresh_servers_first_request_opens_cleanly(page, blackhole, artifacts):
    titles = [p.title for p in PAGES]
    # The page's address as the sidebar links it: the home page lives at "/" (its own name,
    # /why-attention, is app.py's hidden alias: the test below).
    path = f"{page.url}?{LESSON_QUERY}"
    log = artifacts / f"cold-start-{page.url_path}.log"
    with running_app(env=_server_env(blackhole), log_path=log) as (url, _proc):
        text = "The cat sat on the mat" if page.draws_sidebar_text else ""
        result = first_visit(url, blackhole.port, path, HEADINGS[page.url_path], text)
    note_flash(artifacts, path, check_clean(result, path, HEADINGS[page.url_path], titles))
    assert result["url"].split("?")[0] == page.url, result["url"]
    if page.draws_sidebar_text:
        assert "The cat sat on the mat" in result["inputs"], (
            "the link's text was lost",
            {k: result[k] for k in ("url", "h1", "nav", "inputs")},
            result["body"][:600],
        )


def test_the_root_as_a_fresh_servers_first_request_opens_cleanly(blackhole, artifacts):
    titles = [p.title for p in PAGES]
    home = next(p for p in PAGES if p.default)
    log = artifacts / "cold-start-root.log"
    with running_app(env=_server_env(blackhole), log_path=log) as (url, _proc):
        result = first_visit(url, blackhole.port, "/", HEADINGS[home.url_path])
    note_flash(artifacts, "/", check_clean(result, "/", HEADINGS[home.url_path], titles))


@pytest.mark.parametrize("alias", aliases(), ids=[a.url_path for a in aliases()])
def test_a_hidden_alias_opens_its_page_first_on_a_fresh_server_and_again_warm(
    alias, blackhole, artifacts
):
    """/why-attention, the home page's own title as a path, answered "Page not found" on a
    fresh server and on a warm one: both visits now open the home page, settings kept."""
    titles = [p.title for p in PAGES]
    page = next(p for p in PAGES if p.path == alias.path)
    path = f"/{alias.url_path}?{LESSON_QUERY}"
    log = artifacts / f"cold-start-alias-{alias.url_path}.log"
    with running_app(env=_server_env(blackhole), log_path=log) as (url, _proc):
        for visit in ("cold", "warm"):
            result = first_visit(
                url, blackhole.port, path, HEADINGS[page.url_path], "The cat sat on the mat"
            )
            ms = check_clean(result, path, HEADINGS[page.url_path], titles)
            note_flash(artifacts, f"{path} ({visit})", ms)
            assert result["url"].split("?")[0] == f"/{alias.url_path}", result["url"]
            assert "The cat sat on the mat" in result["inputs"], (
                f"{visit} visit: the link's text was lost",
                {k: result[k] for k in ("url", "h1", "nav", "inputs")},
                result["body"][:600],
            )
