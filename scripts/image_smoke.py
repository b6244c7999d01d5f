"""Helpers for scripts/image-smoke: a loopback relay into a container that has no network, and
the checks made in Chromium through it.

The container runs with ``--network none``: it has a loopback interface and nothing else, so
nothing in it can reach any other machine. To reach its Streamlit from this machine, two
relays meet at a unix socket in a folder shared with the container:

    Chromium -> 127.0.0.1:PORT (``relay tcp-to-unix``, on this machine)
             -> app.sock (shared folder)
             -> 127.0.0.1:8501 (``relay unix-to-tcp``, inside the container) -> Streamlit

Usage (from the project root, with the project's venv):
    python scripts/image_smoke.py relay unix-to-tcp SOCKET PORT   # inside the container
    python scripts/image_smoke.py relay tcp-to-unix PORT SOCKET   # here
    python scripts/image_smoke.py pages URL                       # every page in Chromium
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

REAL_TOKENIZER = "Tokenizer: GPT-2 BPE (tiktoken)"


# --- relay (standard library only: it also runs inside the image) ----------------------------
async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except OSError:
            pass


async def _relay(mode: str, listen: str, target: str) -> None:
    async def connect():
        if mode == "unix-to-tcp":
            return await asyncio.open_connection("127.0.0.1", int(target))
        return await asyncio.open_unix_connection(target)

    async def handle(reader, writer):
        try:
            up_reader, up_writer = await connect()
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    if mode == "unix-to-tcp":
        if os.path.exists(listen):
            os.unlink(listen)
        server = await asyncio.start_unix_server(handle, path=listen)
        os.chmod(listen, 0o666)
    elif mode == "tcp-to-unix":
        server = await asyncio.start_server(handle, "127.0.0.1", int(listen))
    else:
        raise SystemExit(f"unknown relay mode {mode}")
    async with server:
        await server.serve_forever()


# --- Chromium checks -------------------------------------------------------------------------
def check_pages(url: str) -> int:
    """Open every page of the app, each as a new session, the first one a lesson link to a
    page other than the home page (the container's first visit). Print one line per page and
    return the number of problems."""
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root))
    from bench.support.browser import chromium, wait_for_app
    from bench.support.network import Blackhole
    from bench.support.pages import app_pages

    pages = sorted(app_pages(), key=lambda p: p.default)  # the home page last
    problems = 0
    blackhole = Blackhole()
    try:
        with chromium(blackhole.port) as browser:
            for page_info in pages:
                context = browser.new_context(viewport={"width": 1400, "height": 1600})
                tab = context.new_page()
                errors: list[str] = []
                tab.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                link = f"{url}{page_info.url}?text=The+cat+sat+on+the+mat"
                started = time.monotonic()
                tab.goto(link)
                found = []
                try:
                    tab.locator("h1").first.wait_for(timeout=120_000)
                    wait_for_app(tab, 120_000)
                    tab.wait_for_timeout(1000)
                except Exception as error:  # reported as a problem below
                    found.append(f"did not finish loading: {type(error).__name__}")
                seconds = time.monotonic() - started
                body = tab.locator("body").inner_text()
                headings = [h.strip() for h in tab.locator("h1").all_inner_texts()]
                exceptions = tab.locator("[data-testid='stException']").count()
                nav = [
                    a.strip()
                    for a in tab.locator("[data-testid='stSidebarNav'] a").all_inner_texts()
                ]
                if exceptions:
                    found.append(f"{exceptions} exception(s) on the page")
                if "Page not found" in body:
                    found.append('"Page not found" shown')
                if "Traceback" in body:
                    found.append("a traceback on the page")
                if REAL_TOKENIZER not in body or "fallback" in body.lower():
                    found.append("not the real GPT-2 tokenizer")
                if page_info.title not in nav:
                    found.append(f"sidebar lists {nav}")
                if not headings:
                    found.append("no heading")
                if errors:
                    found.append(f"browser errors: {errors[:2]}")
                status = "ok" if not found else "PROBLEM: " + "; ".join(found)
                print(
                    f"  {page_info.url:24s} {seconds:5.1f} s  heading {headings[:1]}  {status}",
                    flush=True,
                )
                problems += len(found)
                context.close()
    finally:
        blackhole.close()
    return problems


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[0] == "relay":
        asyncio.run(_relay(argv[1], argv[2], argv[3]))
        return 0
    if len(argv) == 2 and argv[0] == "pages":
        problems = check_pages(argv[1].rstrip("/"))
        print(json.dumps({"page_problems": problems}))
        return 1 if problems else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
