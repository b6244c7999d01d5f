"""What a student's browser downloads: a first visit to a lesson link, then a second one.

    .venv/bin/python bench/first_visit.py            # through deploy/haproxy.cfg (with and
                                                     # without the precompressed files) and
                                                     # straight to the replica, side by side

Streamlit 1.67 serves its static files (about 9 MB of JavaScript) uncompressed; the repository's
HAProxy config serves them itself, gzipped at level 9 when the image was built (deploy/static.lua;
here a folder made from this venv's Streamlit by attnviz/deploy/precompress.py, as in Compose), and
compresses anything else on the way out. This counts the bytes on the wire in Debian's
Chromium (Playwright), from the browser's own network log (Chrome DevTools Protocol):

- every HTTP response: ``Network.loadingFinished``'s ``encodedDataLength`` (headers and body as
  received, compressed when the response was), and whether it came from the browser's cache;
- the websocket: the payload of every frame received (``Network.webSocketFrameReceived``), the
  page's content; an upper bound of its wire bytes, as the frames may be deflated on the wire.

A first visit opens the link in a fresh browser context (an empty cache) and waits until every
chart is drawn; the second visit opens the same link in a new tab of the same context, as a
student coming back to the lesson does. Loopback only; Chromium's own traffic goes to the
blackhole.
"""

from __future__ import annotations

import base64
import datetime
import os
import sys
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import live  # noqa: E402
from bench.support.browser import chromium, settle  # noqa: E402
from bench.support.haproxy import running_haproxy  # noqa: E402
from bench.support.network import Blackhole  # noqa: E402

LESSON = "/causal-attention?text=The+cat+sat+on+the+mat&dropout=0.5&train=true"
RESULTS = ROOT / "bench" / "first-visit-results.md"


@dataclass
class Fetch:
    url: str
    mime: str = ""
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    from_cache: bool = False
    wire: int = 0  # bytes received on the network for it (0 when served from the cache)
    decoded: int = 0  # its body's bytes once decoded (what it would be uncompressed)
    finished: bool = False

    @property
    def static(self) -> bool:
        """One of Streamlit's fingerprinted static files (served as immutable)."""
        return "/static/" in self.url

    @property
    def encoding(self) -> str:
        return self.headers.get("content-encoding", "")


@dataclass
class Visit:
    fetches: dict[str, Fetch] = field(default_factory=dict)  # CDP request id -> fetch
    websocket_bytes: int = 0
    websocket_frames: int = 0

    @property
    def http_bytes(self) -> int:
        return sum(f.wire for f in self.fetches.values())

    @property
    def total(self) -> int:
        return self.http_bytes + self.websocket_bytes

    def over_network(self) -> list[Fetch]:
        return [f for f in self.fetches.values() if not f.from_cache and f.wire > 0]

    def by_kind(self) -> Counter:
        kinds: Counter = Counter()
        for f in self.fetches.values():
            kind = f.mime.split("/")[-1] if f.mime else "other"
            kinds[kind] += f.wire
        kinds["websocket"] += self.websocket_bytes
        return kinds


def _listen(cdp, visit: Visit) -> None:
    def fetch(request_id: str) -> Fetch:
        return visit.fetches.setdefault(request_id, Fetch(url=""))

    def on_request(event) -> None:
        fetch(event["requestId"]).url = event["request"]["url"]

    def on_response(event) -> None:
        f = fetch(event["requestId"])
        response = event["response"]
        f.url = response["url"]
        f.mime = response.get("mimeType", "")
        f.status = response.get("status", 0)
        f.headers = {k.lower(): v for k, v in response.get("headers", {}).items()}
        if response.get("fromDiskCache") or response.get("fromPrefetchCache"):
            f.from_cache = True

    def on_cached(event) -> None:
        fetch(event["requestId"]).from_cache = True

    def on_data(event) -> None:
        fetch(event["requestId"]).decoded += int(event.get("dataLength", 0))

    def on_finished(event) -> None:
        f = fetch(event["requestId"])
        f.finished = True
        f.wire = 0 if f.from_cache else int(event.get("encodedDataLength", 0))

    def on_frame(event) -> None:
        response = event["response"]
        data = response.get("payloadData", "")
        size = len(base64.b64decode(data)) if response.get("opcode") == 2 else len(data)
        visit.websocket_bytes += size
        visit.websocket_frames += 1

    cdp.on("Network.requestWillBeSent", on_request)
    cdp.on("Network.responseReceived", on_response)
    cdp.on("Network.requestServedFromCache", on_cached)
    cdp.on("Network.dataReceived", on_data)
    cdp.on("Network.loadingFinished", on_finished)
    cdp.on("Network.webSocketFrameReceived", on_frame)


def charts_drawn(page, timeout_s: float = 120) -> int:
    """Wait until the run has ended and every chart is drawn (bench/support/browser.settle)."""
    return settle(page, timeout_ms=int(timeout_s * 1000))


def visit(context, url: str) -> Visit:
    """Open ``url`` in a new tab of ``context``, counting every byte, until the charts are
    drawn and the network has been quiet for a moment."""
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    seen = Visit()
    _listen(cdp, seen)
    try:
        page.goto(url)
        charts_drawn(page)
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(500)
    finally:
        cdp.detach()
        page.close()
    return seen


def two_visits(browser, url: str) -> tuple[Visit, Visit]:
    """A first visit in a fresh context (empty cache), then a second one in the same context."""
    context = browser.new_context(viewport={"width": 1400, "height": 2000})
    try:
        return visit(context, url), visit(context, url)
    finally:
        context.close()


def mb(n: int) -> str:
    return f"{n / 1e6:.2f}"


def describe(label: str, first: Visit, second: Visit) -> str:
    kinds = first.by_kind()
    top = ", ".join(f"{k} {mb(v)}" for k, v in kinds.most_common() if v >= 10_000)
    again = [f for f in second.over_network() if f.static]
    return (
        f"| {label} | {mb(first.total)} | {mb(first.http_bytes)} | {mb(first.websocket_bytes)} | "
        f"{sum(1 for f in first.over_network() if f.static)} | {top} | {mb(second.total)} | "
        f"{len(again)} |"
    )


HEADER = (
    "| served | first visit (MB) | HTTP (MB) | websocket payload (MB) | static files fetched | "
    "first visit by type (MB) | second visit (MB) | static files fetched again |\n"
    "|---|---:|---:|---:|---:|---|---:|---:|"
)


def main() -> int:
    with ExitStack() as stack:
        app = stack.enter_context(live.attnviz_server())
        proxy = stack.enter_context(
            running_haproxy(app.url, app.url, ROOT / "test-artifacts" / "first-visit-haproxy.log")
        )
        # The same config without the precompressed folder: HAProxy's on-the-fly gzip only.
        on_the_fly = stack.enter_context(
            running_haproxy(
                app.url,
                app.url,
                ROOT / "test-artifacts" / "first-visit-haproxy-plain.log",
                precompressed=False,
            )
        )
        hole = Blackhole()
        stack.callback(hole.close)
        browser = stack.enter_context(chromium(hole.port))
        browser_version = browser.version
        rows, exact = [], []
        for label, base in (
            ("through HAProxy", proxy),
            ("through HAProxy, on-the-fly gzip only", on_the_fly),
            ("straight to the replica", app.url),
        ):
            first, second = two_visits(browser, base + LESSON)
            rows.append(describe(label, first, second))
            exact.append(f"{label} {first.total:,} B")
            print(rows[-1], flush=True)
    text = (
        f"# A first and a second visit, bytes on the wire\n\n"
        f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, `python bench/first_visit.py`; "
        f"Chromium {browser_version}, load average {os.getloadavg()[0]:.1f}. Lesson link: "
        f"`{LESSON}`; HAProxy runs deploy/haproxy.cfg (Debian's haproxy) with deploy/static.lua "
        "and the precompressed static files, in front of one server as deployed (bench/live.py). "
        "Websocket: the frames' payload (an upper bound).\n\n"
        f"{HEADER}\n" + "\n".join(rows) + "\n\nFirst visit, exactly: " + "; ".join(exact) + ".\n"
    )
    print("\n" + text)
    RESULTS.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
