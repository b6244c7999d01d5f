"""Screenshot every page in headless Chromium (loopback only), for looking at what we built.

    python scripts/screenshots.py [out_dir] [query string] [page ...]

Starts ``streamlit run app.py`` on 127.0.0.1 (headless) and a local blackhole proxy for Chromium.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.browser import chromium, wait_for_app  # noqa: E402
from tests.support.network import Blackhole, proxy_env  # noqa: E402
from tests.support.pages import app_pages  # noqa: E402
from tests.support.server import running_app  # noqa: E402

PAGES = [("" if p.default else p.url_path) for p in app_pages()]


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "test-artifacts" / "screens"
    query = sys.argv[2] if len(sys.argv) > 2 else ""
    pages = sys.argv[3:] or PAGES
    out.mkdir(parents=True, exist_ok=True)
    hole = Blackhole()
    shared = ROOT.parent / "shared" / "tiktoken_cache"
    env = proxy_env(hole) | ({"TIKTOKEN_CACHE_DIR": str(shared)} if shared.is_dir() else {})
    try:
        with running_app(env=env) as (url, _proc), chromium(hole.port) as browser:
            height = int(os.environ.get("SHOT_HEIGHT", "6000"))
            page = browser.new_page(viewport={"width": 1400, "height": height})
            # The first session of a fresh server goes through Streamlit's legacy pages/ lookup
            # (see README): open the root once so every later page URL resolves directly.
            page.goto(url)
            wait_for_app(page)
            page.locator(".main-svg").first.wait_for(timeout=30_000)
            for name in pages:
                page.goto(f"{url}/{name}{'?' + query if query else ''}")
                wait_for_app(page)
                charts = page.locator("[data-testid='stPlotlyChart']")
                for i in range(charts.count()):
                    charts.nth(i).locator(".main-svg").first.wait_for(timeout=30_000)
                page.wait_for_timeout(2500)
                path = out / f"{name or 'home'}.png"
                page.screenshot(path=str(path), full_page=True)
                print(path)
    finally:
        hole.close()


if __name__ == "__main__":
    main()
