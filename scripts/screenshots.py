"""Screenshot every page in headless Chromium (loopback only), for looking at what we built.

    python scripts/screenshots.py [out_dir] [query string] [page ...]

Starts ``streamlit run app.py`` on 127.0.0.1 (headless) and a local blackhole proxy for Chromium.
``SHOT_SIZES`` (default ``1400``) lists the window widths, e.g. ``SHOT_SIZES=390,820,1400`` for
a phone, a tablet and a laptop; each shot is the whole page at that width (the window is made as
tall as the page, up to ``SHOT_HEIGHT``, 6000 px by default), saved as ``<width>-<page>.png``
(just ``<page>.png`` when one width is asked for).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.support.browser import chromium, wait_for_app  # noqa: E402
from bench.support.network import Blackhole, proxy_env  # noqa: E402
from bench.support.pages import app_pages  # noqa: E402
from bench.support.server import running_app  # noqa: E402

PAGES = [("" if p.default else p.url_path) for p in app_pages()]
# Streamlit scrolls its main block, not the document: a tall window shows the whole page.
MAIN_HEIGHT = "() => document.querySelector(\"[data-testid='stMain']\").scrollHeight"


def shoot(page, url: str, path: Path, width: int, max_height: int) -> None:
    """Open ``url``, wait for every chart, stretch the window to the page, save a PNG."""
    page.set_viewport_size({"width": width, "height": 1000})
    page.goto(url)
    wait_for_app(page)
    charts = page.locator("[data-testid='stPlotlyChart']")
    for i in range(charts.count()):
        charts.nth(i).locator(".main-svg").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)
    tall = min(int(page.evaluate(MAIN_HEIGHT)), max_height)
    page.set_viewport_size({"width": width, "height": max(tall, 600)})
    page.wait_for_timeout(1500)  # Plotly redraws at the new size
    page.screenshot(path=str(path))


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "test-artifacts" / "screens"
    query = sys.argv[2] if len(sys.argv) > 2 else ""
    pages = sys.argv[3:] or PAGES
    widths = [int(w) for w in os.environ.get("SHOT_SIZES", "1400").split(",")]
    max_height = int(os.environ.get("SHOT_HEIGHT", "6000"))
    out.mkdir(parents=True, exist_ok=True)
    hole = Blackhole()
    shared = ROOT.parent / "shared" / "tiktoken_cache"
    env = proxy_env(hole) | ({"TIKTOKEN_CACHE_DIR": str(shared)} if shared.is_dir() else {})
    try:
        with running_app(env=env) as (url, _proc), chromium(hole.port) as browser:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            # The first session of a fresh server goes through Streamlit's legacy pages/ lookup
            # (see README): open the root once so every later page URL resolves directly.
            page.goto(url)
            wait_for_app(page)
            page.locator(".main-svg").first.wait_for(timeout=60_000)
            for width in widths:
                for name in pages:
                    prefix = f"{width}-" if len(widths) > 1 else ""
                    path = out / f"{prefix}{name or 'home'}.png"
                    shoot(
                        page, f"{url}/{name}{'?' + query if query else ''}", path, width, max_height
                    )
                    print(path, flush=True)
    finally:
        hole.close()


if __name__ == "__main__":
    main()
