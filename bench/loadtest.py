"""Load test: N concurrent students on attnviz, over HTTP and Streamlit's websocket as a browser.

    .venv/bin/python bench/loadtest.py                      # 50 sessions, all settings
    .venv/bin/python bench/loadtest.py --sessions 10 --quick   # the CI version (< 2 minutes)
    .venv/bin/python bench/loadtest.py --reference-app --threads 1,2
    .venv/bin/python bench/loadtest.py --url http://127.0.0.1:8080 --sessions 20
    .venv/bin/python bench/loadtest.py --url "HAProxy=http://127.0.0.1:8080" \
        --url "one replica=http://127.0.0.1:8501"    # one table, side by side

What it does, loopback only, bounded in sessions, reruns and time, and stopping by itself:

1. Without ``--url``: starts ``streamlit run app.py`` on 127.0.0.1 (headless, a free port, no
   file watcher), with every outbound request sent to a blackhole (nothing leaves the machine;
   any attempt is reported). With ``--url`` (repeatable, ``LABEL=URL`` names the row): drives
   whatever answers there, a server or a load balancer in front of several; the server's memory
   and CPU are then not measured.
2. Every session first loads the page over HTTP and keeps the cookies it is given (a load
   balancer's sticky cookie), then opens the websocket with them, as a browser does.
3. Reference: ONE session drives every page of ``app.py``'s ``PAGES`` at each setting (a complete
   URL query string: every sidebar value is given, so nothing depends on what ran before) and
   records each page's figure data (a digest of every Plotly spec, in order).
4. Load: N sessions connect at once and each drives every (setting, page) ``--rounds`` times in
   its own shuffled order, as a browser does: ``BackMsg.rerun_script`` with
   ``ClientState(query_string=…, page_name=<url_path>)`` (``""`` for the default page), then
   ``ForwardMsg``s until ``script_finished``. ``--downloads K`` times per session, spread over
   its plan, it then opens one matrix's "Numbers and CSV" box, picked at random (a rerun whose
   widget states say the expander is open, what the browser sends on a click), reads the CSV
   button's /media/ URL from the deltas and GETs it through the same URL with the session's
   cookies: it must answer 200 with a CSV of the figure's shape.
5. Reports errors (exceptions and error alerts in the deltas, "page not found", protocol errors,
   timeouts, failed downloads), figure data that differs from the reference, p50/p95 latency per
   page, throughput, the sessions each sticky cookie value got, and (own server only) the
   server's RSS: before the load, its peak, with the N sessions still connected and idle
   (growth per session = (idle − before) / N), and after they disconnect.

``--reference-app`` runs the same load against ``bench/reference_app.py`` (one cached 64×64
heatmap) in the same run, for scale. ``--threads 1,2`` runs attnviz once per
``ATTNVIZ_TORCH_THREADS`` value. Exit status 1 on any error, mismatch or failed download.

Protocol notes (read from streamlit 1.67's server code): ``ClientState.page_name`` is matched
against each page's ``url_pathname`` (``PagesManager._resolve_page_script``); the default page's
is ``""``. On an ordinary rerun a bound widget keeps its session value and only the first run
seeds it from the URL (``SessionState._handle_query_param_binding``); with
``is_history_navigation`` the URL wins, a missing key meaning the default. Every page run here
sets it, and every setting spells out every key as well; the box-opening rerun does not (it is
a click on the page already shown: widgets missing from its widget states keep their values).
Page-local widgets keep their value while a session stays on a page, so the plans never run one
page twice in a row. Reference messages (``ref_hash``) are sent only for hashes the client lists
in ``cached_message_hashes``; this client lists none, so every message arrives whole. A
download button with its bytes (not a callable) is stored under the session's element and
kept until that session's next run, whatever other sessions do meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import csv
import datetime
import hashlib
import io
import json
import os
import platform
import random
import statistics
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import psutil  # noqa: E402
import websockets  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

from bench.support import aio  # noqa: E402
from bench.support.network import Blackhole, proxy_env  # noqa: E402
from bench.support.pages import app_pages  # noqa: E402
from bench.support.server import running_app  # noqa: E402

RESULTS = ROOT / "bench" / "loadtest-results.md"
QUICK_RESULTS = ROOT / "test-artifacts" / "loadtest-quick.md"
URL_RESULTS = ROOT / "test-artifacts" / "loadtest-url.md"  # --url: someone else's servers
SHARED_CACHE = ROOT.parent / "shared" / "tiktoken_cache"
MAX_SESSIONS = 500  # a hard bound, whatever is asked
STICKY_COOKIE = "ATTNVIZ_REPLICA"  # deploy/haproxy.cfg's cookie: which replica a session is on
BOX_LABEL = "Numbers and CSV"  # ui/render.py's expander under every matrix

# --- settings: complete query strings ------------------------------------------------------------
BOOK_TEXT = "Your journey starts with one step"
DEFAULTS = {
    "book": "false",
    "text": BOOK_TEXT,
    "text2": "Every effort moves you forward",
    "d_in": "16",
    "d_out": "8",
    "heads": "2",
    "ctx": "32",
    "dropout": "0.1",
    "eseed": "123",
    "wseed": "123",
    "dseed": "123",
    "bias": "false",
    "train": "false",
}
LONGER_TEXT = (
    "In this chapter we implement the attention mechanism step by step: first a simplified "
    "self-attention without trainable weights, then self-attention with trainable weights, then "
    "causal attention that hides future tokens, and finally multi-head attention, the form used "
    "in GPT models, with several heads that each learn their own way of relating the tokens."
)
SETTINGS: dict[str, dict[str, str]] = {
    "default": {},
    "book": {"book": "true"},
    "longer text": {"text": LONGER_TEXT, "ctx": "128", "d_in": "32", "d_out": "16"},
    "4 heads": {
        "text": "Attention is all you need, isn't it?",
        "d_in": "64",
        "d_out": "64",
        "heads": "4",
        "bias": "true",
        "wseed": "42",
    },
    "dropout in training": {"dropout": "0.5", "train": "true", "dseed": "7"},
}
# Only when named with --settings: GPT-2 small's widths on a longer text (heavier matmuls, where
# a second torch thread could pay off).
EXTRA_SETTINGS: dict[str, dict[str, str]] = {
    "gpt2-small": {
        "text": LONGER_TEXT,
        "ctx": "128",
        "d_in": "768",
        "d_out": "768",
        "heads": "12",
    },
}
QUICK_SETTINGS = ("default", "4 heads")


def query_for(name: str) -> str:
    return urlencode({**DEFAULTS, **{**SETTINGS, **EXTRA_SETTINGS}[name]})


@dataclass(frozen=True)
class Step:
    setting: str
    query: str
    page: str  # url_path, for the report
    page_name: str  # what ClientState.page_name carries ("" for the default page)


@dataclass
class RunResult:
    step: Step
    seconds: float
    charts: tuple[str, ...]  # digests of the Plotly specs, in delta-path order
    received_bytes: int
    errors: list[str] = field(default_factory=list)
    buttons: dict[str, str] = field(default_factory=dict)  # label -> widget id, this run's
    boxes: dict[str, str] = field(default_factory=dict)  # matrix key -> its box's widget id
    csv_urls: dict[str, str] = field(default_factory=dict)  # matrix key -> its CSV's /media/ URL
    figure: str = ""  # the spec of the figure asked for (``rerun(..., figure=key)``)


@dataclass
class Download:
    """One opened box and its CSV fetched: ``problem`` is empty when all went right."""

    step: Step
    key: str
    seconds: float  # from the click to the last byte of the CSV
    problem: str = ""
    charts: tuple[str, ...] = ()  # the figures of the rerun that opened the box


def plan(steps: list[Step], rounds: int, seed: int, first_page_name: str | None = None):
    """Every step ``rounds`` times, shuffled, never the same page twice in a row (page-local
    widgets would carry over). ``first_page_name``: start there (a browser's landing page)."""
    rng = random.Random(seed)
    pool = [s for _ in range(rounds) for s in steps]
    rng.shuffle(pool)
    if first_page_name is not None:
        first = next(i for i, s in enumerate(pool) if s.page_name == first_page_name)
        pool.insert(0, pool.pop(first))
    out: list[Step] = []
    for step in pool:
        if not out or out[-1].page != step.page:
            out.append(step)
            continue
        for i in range(1, len(out)):  # a place between two other pages
            if out[i - 1].page != step.page and out[i].page != step.page:
                out.insert(i, step)
                break
        else:
            out.append(step)
    return out


# --- one websocket session --------------------------------------------------------------------------
class ProtocolError(RuntimeError):
    pass


_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_get(url: str, cookies: dict[str, str] | None = None, timeout: float = 30):
    """(status, body, headers) of a GET with ``cookies``, never through a proxy."""
    request = urllib.request.Request(url)
    if cookies:
        request.add_header("Cookie", "; ".join(f"{k}={v}" for k, v in cookies.items()))
    try:
        with _NO_PROXY.open(request, timeout=timeout) as response:
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers


def set_cookies(headers) -> dict[str, str]:
    """The cookies a response sets (name -> value)."""
    found: dict[str, str] = {}
    for header in headers.get_all("Set-Cookie") or []:
        for name, morsel in SimpleCookie(header).items():
            found[name] = morsel.value
    return found


class Session:
    """One student: the page over HTTP (its cookies kept), then the websocket with them."""

    def __init__(self, url: str, timeout: float):
        self.base = url.rstrip("/")
        self.ws_url = self.base.replace("http://", "ws://") + "/_stcore/stream"
        self.timeout = timeout
        self.cookies: dict[str, str] = {}
        self.ws = None

    async def load_page(self, path: str = "/") -> int:
        """GET a page as a browser's first request does; keep the cookies it sets."""
        status, _body, headers = await asyncio.to_thread(
            http_get, self.base + path, self.cookies, self.timeout
        )
        self.cookies.update(set_cookies(headers))
        return status

    async def connect(self) -> None:
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        self.ws = await asyncio.wait_for(
            websockets.connect(
                self.ws_url,
                subprotocols=["streamlit"],
                additional_headers={"Cookie": cookie} if cookie else None,
                max_size=2**28,
                ping_interval=None,  # an idle student sends nothing either
                open_timeout=self.timeout,
                close_timeout=5,
            ),
            self.timeout + 5,
        )

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def download(self, url: str) -> tuple[int, bytes, object]:
        """GET a /media/ URL through the same address, with this session's cookies."""
        return await asyncio.to_thread(http_get, self.base + url, self.cookies, self.timeout)

    async def rerun(
        self,
        step: Step,
        press: str | None = None,
        *,
        open_box: str | None = None,
        figure: str | None = None,
    ) -> RunResult:
        """Run ``step``'s page; ``press``: the widget id of a button to click in this run;
        ``open_box``: the widget id of an expander the student opens on the page shown (a click,
        not a new URL); ``figure``: a matrix key whose figure spec to keep."""
        msg = BackMsg()
        msg.rerun_script.query_string = step.query
        msg.rerun_script.page_name = step.page_name
        if press is not None:
            clicked = msg.rerun_script.widget_states.widgets.add()
            clicked.id = press
            clicked.trigger_value = True
        if open_box is not None:
            opened = msg.rerun_script.widget_states.widgets.add()
            opened.id = open_box
            opened.bool_value = True
        else:
            # "Open this URL": the URL, not the session's earlier widget values, sets every
            # bound widget (what a browser's back/forward between two shared links does).
            msg.rerun_script.is_history_navigation = True
        start = time.perf_counter()
        deadline = start + self.timeout
        await self.ws.send(msg.SerializeToString())
        elements: dict[tuple[int, ...], object] = {}
        boxes: dict[str, str] = {}
        errors: list[str] = []
        received = 0
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"no script_finished within {self.timeout:.0f} s")
            try:
                raw = await asyncio.wait_for(self.ws.recv(), remaining)
            except TimeoutError:
                raise TimeoutError(f"no script_finished within {self.timeout:.0f} s") from None
            if isinstance(raw, str):
                raise ProtocolError("text frame on the websocket")
            received += len(raw)
            fm = ForwardMsg()
            try:
                fm.ParseFromString(raw)
            except Exception as exc:  # a broken frame is a protocol error
                raise ProtocolError(f"undecodable ForwardMsg ({type(exc).__name__})") from None
            kind = fm.WhichOneof("type")
            if kind == "delta":
                which = fm.delta.WhichOneof("type")
                if which == "new_element":
                    elements[tuple(fm.metadata.delta_path)] = fm.delta.new_element
                elif which == "add_block" and fm.delta.add_block.WhichOneof("type") == "expandable":
                    box = fm.delta.add_block.expandable
                    if box.label == BOX_LABEL and "-numbers_" in box.id:
                        boxes[box.id.split("-numbers_", 1)[1]] = box.id
            elif kind == "ref_hash":
                raise ProtocolError("ref_hash for a message this client never cached")
            elif kind == "page_not_found":
                errors.append(f"page not found: {step.page_name!r}")
            elif kind == "script_finished":
                status = fm.script_finished
                if status in (
                    ForwardMsg.FINISHED_EARLY_FOR_RERUN,  # st.rerun(): the next run follows
                    ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
                ):
                    continue
                if status == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                    errors.append("script compile error")
                break
        seconds = time.perf_counter() - start
        charts = []
        buttons = {}
        csv_urls = {}
        spec = ""
        for _path, element in sorted(elements.items()):
            kind = element.WhichOneof("type")
            if kind == "button":
                buttons[element.button.label] = element.button.id
            elif kind == "download_button" and "-csv_" in element.download_button.id:
                csv_urls[element.download_button.id.split("-csv_", 1)[1]] = (
                    element.download_button.url
                )
            elif kind == "plotly_chart":
                charts.append(hashlib.sha1(element.plotly_chart.spec.encode()).hexdigest()[:16])
                if figure is not None and element.plotly_chart.id.endswith(f"-fig_{figure}"):
                    spec = element.plotly_chart.spec
            elif kind == "exception":
                errors.append(f"exception: {element.exception.type}: {element.exception.message}")
            elif kind == "alert" and element.alert.format == element.alert.ERROR:
                errors.append(f"error alert: {element.alert.body[:160]}")
        return RunResult(
            step, seconds, tuple(charts), received, errors, buttons, boxes, csv_urls, spec
        )


def heatmap_shape(spec: str) -> tuple[int, int, int]:
    """(heatmaps, rows, cols) of a figure's spec: a stack of heads has one heatmap per head."""
    data = json.loads(spec)["data"]
    heat = [t for t in data if t.get("type") == "heatmap"]
    if not heat:
        # A bar or line chart (panels.plot): its CSV has one row per point and one column per
        # series, as a one-matrix table of (points, series). Several series are named traces;
        # one series is the one trace, except in a line view (a trace per drawn line, none
        # named): its series is the keys' weights, carried as the markers' customdata.
        plotted = [t for t in data if t.get("type") in ("bar", "scatter")]
        named = [t for t in plotted if t.get("name")]
        weights = [t["customdata"] for t in plotted if "customdata" in t]
        if named:
            return 1, _points(named[0]), len(named)
        if weights:
            return 1, _count(weights[0]), 1
        return (1, _points(plotted[0]), len(plotted)) if plotted else (0, 0, 0)
    z = heat[0]["z"]
    if isinstance(z, dict):  # Plotly's packed array: {"dtype", "bdata", "shape": "r, c"}
        rows, cols = (int(n) for n in str(z["shape"]).split(","))
    else:
        rows, cols = len(z), len(z[0]) if z else 0
    return len(heat), rows, cols


def _points(trace: dict) -> int:
    """How many points a bar or line trace draws: its values axis (y, or x for horizontal
    bars)."""
    return _count(trace.get("x" if trace.get("orientation") == "h" else "y"))


def _count(values) -> int:
    """How many values a list or Plotly's packed array ({"dtype", "bdata"}) holds."""
    if isinstance(values, dict):
        return len(base64.b64decode(values["bdata"])) // np.dtype(values["dtype"]).itemsize
    return len(values or [])


def csv_problem(body: bytes, shape: tuple[int, int, int]) -> str:
    """What is wrong with a matrix CSV for a figure of ``shape`` (heatmaps, rows, cols); empty
    when nothing is: a header of label column(s) and ``cols`` keys, one row per (head, query),
    every cell a number (blank where the matrix has none). The load test's settings draw no
    cropped figure, so the figure's shape is the CSV's."""
    heads, rows, cols = shape
    try:
        table = list(csv.reader(io.StringIO(body.decode("utf-8"))))
    except (UnicodeDecodeError, csv.Error) as exc:
        return f"not a CSV: {exc}"
    labels = 2 if heads > 1 else 1  # a stack is indexed by (head, query)
    if not table or len(table[0]) != labels + cols:
        return f"header of {len(table[0]) if table else 0} fields, not {labels} + {cols}"
    if len(table) - 1 != heads * rows:
        return f"{len(table) - 1} rows, not {heads} × {rows}"
    for row in table[1:]:
        if len(row) != len(table[0]):
            return "ragged CSV"
        for cell in row[labels:]:
            if cell:
                try:
                    float(cell)
                except ValueError:
                    return f"not a number: {cell[:40]!r}"
    return ""


async def open_and_download(session: Session, run: RunResult, key: str) -> Download:
    """Open matrix ``key``'s box on the page ``run`` showed, then fetch its CSV."""
    start = time.perf_counter()
    step = run.step
    opened = await session.rerun(step, open_box=run.boxes[key], figure=key)

    def done(problem: str) -> Download:
        return Download(step, key, time.perf_counter() - start, problem, opened.charts)

    if opened.errors:
        return done("; ".join(opened.errors))
    url = opened.csv_urls.get(key, "")
    if not url or not opened.figure:
        return done("no CSV button in the opened box")
    status, body, headers = await session.download(url)
    if status != 200:
        return done(f"GET {url}: {status}")
    kind = headers.get("Content-Type", "") if headers else ""
    if not kind.startswith("text/csv"):
        return done(f"GET {url}: Content-Type {kind!r}")
    disposition = headers.get("Content-Disposition", "") if headers else ""
    if f"{key}.csv" not in disposition:
        return done(f"GET {url}: Content-Disposition {disposition!r}")
    return done(csv_problem(body, heatmap_shape(opened.figure)))


# --- measurements ---------------------------------------------------------------------------------
class MemorySampler:
    """The server's RSS, sampled in the background; ``peak`` is the largest sample."""

    def __init__(self, pid: int, every: float = 0.1):
        self.proc = psutil.Process(pid)
        self.every = every
        self.peak = 0
        self._task = None

    def rss(self) -> int:
        value = self.proc.memory_info().rss
        self.peak = max(self.peak, value)
        return value

    async def _run(self) -> None:
        while True:
            self.rss()
            await asyncio.sleep(self.every)

    def start(self) -> None:
        self.peak = self.rss()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


@dataclass
class Report:
    label: str
    sessions: int
    rounds: int
    settings: tuple[str, ...]
    pages: tuple[str, ...]
    reference: list[RunResult] = field(default_factory=list)
    results: list[RunResult] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # protocol errors, timeouts
    mismatches: list[str] = field(default_factory=list)
    load_seconds: float = 0.0
    cpu_seconds: float = 0.0  # the server's CPU time (user + system) during the load
    rss: dict[str, int] = field(default_factory=dict)
    outbound: list[str] = field(default_factory=list)
    torch_threads: str = ""
    loadavg: tuple[float, float] = (0.0, 0.0)  # the machine's 1-minute load, before and after
    url: str = ""  # the address driven
    downloads: list[Download] = field(default_factory=list)  # boxes opened and CSVs fetched
    sticky: Counter = field(default_factory=Counter)  # sessions per sticky cookie value

    @property
    def errors(self) -> list[str]:
        found = [f"{r.step.setting} @ {r.step.page}: {e}" for r in self.results for e in r.errors]
        found += [
            f"(reference) {r.step.setting} @ {r.step.page}: {e}"
            for r in self.reference
            for e in r.errors
        ]
        found += [
            f"CSV {d.key} ({d.step.setting} @ {d.step.page}): {d.problem}"
            for d in self.downloads
            if d.problem
        ]
        return found + self.failures

    @property
    def failed_downloads(self) -> int:
        return sum(1 for d in self.downloads if d.problem)

    @property
    def ok(self) -> bool:
        return not self.errors and not self.mismatches

    @property
    def reruns(self) -> int:
        """Script runs under load: page runs and the reruns that opened a box."""
        return len(self.results) + len(self.downloads)

    @property
    def reruns_per_second(self) -> float:
        return self.reruns / self.load_seconds if self.load_seconds else 0.0

    def growth_per_session(self) -> float:
        return (self.rss["idle"] - self.rss["before"]) / self.sessions

    def page_rows(self) -> list[tuple]:
        rows = []
        for page in self.pages:
            times = [r.seconds for r in self.results if r.step.page == page]
            single = [r.seconds for r in self.reference if r.step.page == page]
            kb = [r.received_bytes / 1024 for r in self.results if r.step.page == page]
            rows.append(
                (
                    page,
                    len(times),
                    pct(single, 0.5),
                    pct(times, 0.5),
                    pct(times, 0.95),
                    max(times, default=float("nan")),
                    statistics.mean(kb) if kb else float("nan"),
                )
            )
        return rows


def download_points(plan_length: int, downloads: int) -> list[int]:
    """Where in a session's plan to open a box: ``downloads`` points spread evenly over it."""
    if plan_length <= 0 or downloads <= 0:
        return []
    return sorted({int((k + 0.5) * plan_length / downloads) for k in range(downloads)})


async def run_load(url: str, pid: int | None, report: Report, steps: list[Step], args) -> None:
    """The reference run and the load on the server at ``url``; ``pid``: that server's process,
    for its memory and CPU (None: a server elsewhere, or a load balancer, not measured).
    ``args``: ``max_seconds``, ``timeout``, ``settle``, and optionally ``downloads`` (per
    session, 0 when missing) and ``sticky_cookie``."""
    sampler = MemorySampler(pid) if pid else None
    budget_end = time.monotonic() + args.max_seconds
    downloads = getattr(args, "downloads", 0)
    sticky = getattr(args, "sticky_cookie", STICKY_COOKIE)
    report.url = url

    def left() -> float:
        return budget_end - time.monotonic()

    if sampler:
        report.rss["start"] = sampler.rss()  # the server up, before any session
    # 1. The reference: one session, every step once, starting on the default page, after one
    # warm-up run (imports, the tokenizer) that is not counted.
    ref = Session(url, args.timeout)
    status = await ref.load_page()
    if status != 200:
        report.failures.append(f"(reference) GET /: {status}")
    await ref.connect()
    try:
        warm = await ref.rerun(steps[0])
        report.failures += [f"(warm-up) {e}" for e in warm.errors]
        for step in plan(steps, 1, seed=0, first_page_name=""):
            if left() <= 0:
                raise TimeoutError("the time budget ran out during the reference run")
            report.reference.append(await ref.rerun(step))
    finally:
        await ref.close()
    expected = {(r.step.setting, r.step.page): r.charts for r in report.reference}
    for setting in report.settings:  # a page may draw nothing until asked; a setting may not
        if not any(r.charts for r in report.reference if r.step.setting == setting):
            report.failures.append(f"(reference) {setting}: no figures on any page")
    await asyncio.sleep(1.0)

    # 2. The load: N sessions at once, each first loading the page (its cookies) over HTTP.
    if sampler:
        sampler.start()
        report.rss["before"] = sampler.rss()
    sessions = [Session(url, args.timeout) for _ in range(report.sessions)]

    async def arrive(session: Session) -> None:
        status = await session.load_page()
        if status != 200:
            raise ProtocolError(f"GET /: {status}")
        await session.connect()

    connected = await asyncio.gather(*(arrive(s) for s in sessions), return_exceptions=True)
    for i, outcome in enumerate(connected):
        if isinstance(outcome, BaseException):
            report.failures.append(f"session {i}: connect failed: {outcome!r}")
    live = [s for s, c in zip(sessions, connected, strict=True) if not isinstance(c, BaseException)]
    report.sticky.update(s.cookies.get(sticky, "(none)") for s in live)

    def compare(i: int, step: Step, charts: tuple[str, ...], what: str) -> None:
        want = expected.get((step.setting, step.page))
        if charts != want:
            report.mismatches.append(
                f"session {i} {step.setting} @ {step.page}{what}: {len(charts)} figures, "
                f"{sum(a != b for a, b in zip(charts, want or (), strict=False))} differ from "
                f"the reference's {len(want or ())}"
            )

    async def drive(i: int, session: Session) -> None:
        rng = random.Random(2000 + i)
        order = plan(steps, report.rounds, seed=1000 + i)
        points = download_points(len(order), downloads)
        for n, step in enumerate(order):
            if left() <= 0:
                report.failures.append(f"session {i}: time budget ran out")
                return
            try:
                result = await session.rerun(step)
                report.results.append(result)
                if not result.errors:
                    compare(i, step, result.charts, "")
                # A box to open now (or at the next page run that has one).
                if points and n >= points[0] and result.boxes and not result.errors:
                    points.pop(0)
                    key = rng.choice(sorted(result.boxes))
                    got = await open_and_download(session, result, key)
                    report.downloads.append(got)
                    if not got.problem:
                        compare(i, step, got.charts, f" (box {key} opened)")
            except (TimeoutError, ProtocolError, websockets.ConnectionClosed, OSError) as exc:
                report.failures.append(f"session {i} {step.setting} @ {step.page}: {exc!r}")
                return
        if points:
            report.failures.append(f"session {i}: {len(points)} CSV download(s) never tried")

    cpu_before = sum(sampler.proc.cpu_times()[:2]) if sampler else 0.0
    start = time.perf_counter()
    await asyncio.gather(*(drive(i, s) for i, s in enumerate(live)))
    report.load_seconds = time.perf_counter() - start
    if sampler:
        report.cpu_seconds = sum(sampler.proc.cpu_times()[:2]) - cpu_before

    # 3. Memory with every session still connected and idle, then after they leave.
    if sampler:
        await asyncio.sleep(args.settle)
        report.rss["idle"] = sampler.rss()
    await asyncio.gather(*(s.close() for s in live), return_exceptions=True)
    if sampler:
        await asyncio.sleep(args.settle)
        report.rss["after"] = sampler.rss()
        await sampler.stop()
        report.rss["peak"] = sampler.peak


def drive_url(label: str, url: str, steps_for, args, pid: int | None = None) -> Report:
    """The load (see the module's docstring) on whatever answers at ``url``."""
    pages = steps_for["pages"]
    report = Report(
        label,
        min(args.sessions, MAX_SESSIONS),
        args.rounds,
        steps_for["settings"],
        tuple(p for p, _ in pages),
        torch_threads=steps_for.get("threads", ""),
    )
    steps = [
        Step(name, query, page, page_name)
        for name, query in steps_for["queries"]
        for page, page_name in pages
    ]
    loadavg_before = os.getloadavg()[0]
    print(f"[{label}] {url}; {len(steps)} steps per round")
    try:
        aio.run(asyncio.wait_for(run_load(url, pid, report, steps, args), args.max_seconds + 60))
    except TimeoutError as exc:
        report.failures.append(f"time budget: {exc!r}")
    except (ProtocolError, websockets.ConnectionClosed, OSError) as exc:
        report.failures.append(f"reference run: {exc!r}")
    report.loadavg = (loadavg_before, os.getloadavg()[0])
    return report


def run_one(label: str, script: str, steps_for, args, env: dict[str, str]) -> Report:
    """Start ``script`` on loopback (outbound requests to a blackhole), load it, stop it."""
    hole = Blackhole()
    log = ROOT / "test-artifacts" / f"loadtest-{label.replace(' ', '-').replace(',', '')}.log"
    steps_for = {**steps_for, "threads": env.get("ATTNVIZ_TORCH_THREADS", "")}
    try:
        with running_app(script, env={**env, **proxy_env(hole)}, log_path=log) as (url, proc):
            print(f"[{label}] server pid {proc.pid}")
            report = drive_url(label, url, steps_for, args, proc.pid)
    finally:
        outbound = hole.snapshot()
        hole.close()
    report.outbound = outbound
    return report


# --- output ---------------------------------------------------------------------------------------
def versions() -> dict[str, str]:
    from importlib.metadata import version

    out = {"python": platform.python_version()}
    for name in ("streamlit", "torch", "plotly", "websockets", "tiktoken", "numpy", "psutil"):
        try:
            out[name] = version(name)
        except Exception:
            out[name] = "?"
    return out


def mb(n: float) -> str:
    return f"{n / 2**20:.1f}"


def tables(reports: list[Report]) -> str:
    lines = [
        "| run | sessions × rounds | page runs | boxes opened | CSV downloads ok / failed | "
        "errors | mismatches | reruns/s | load wall (s) | p50 / p95 page run (s) | "
        "sessions per sticky cookie | server CPU (cores busy) | "
        "RSS at start (MB) | before load (MB) | peak (MB) | idle, N connected (MB) | "
        "after disconnect (MB) | growth per session (MB) | machine load before/after |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in reports:
        times = [x.seconds for x in r.results]
        sticky = ", ".join(f"{k}: {v}" for k, v in sorted(r.sticky.items())) or "–"
        measured = r.load_seconds > 0
        row = (
            f"| {r.label} | {r.sessions} × {r.rounds} | {len(r.results)} | {len(r.downloads)} | "
            f"{len(r.downloads) - r.failed_downloads} / {r.failed_downloads} | "
            f"{len(r.errors)} | {len(r.mismatches)} | "
            + (
                f"{r.reruns_per_second:.2f} | {r.load_seconds:.1f} | "
                f"{pct(times, 0.5):.2f} / {pct(times, 0.95):.2f} | "
                if measured
                else "– | – | – | "
            )
            + f"{sticky} | "
        )
        if r.rss.get("idle"):
            row += (
                f"{r.cpu_seconds / r.load_seconds if r.load_seconds else 0:.2f} | "
                f"{mb(r.rss.get('start', 0))} | {mb(r.rss.get('before', 0))} | "
                f"{mb(r.rss.get('peak', 0))} | {mb(r.rss.get('idle', 0))} | "
                f"{mb(r.rss.get('after', 0))} | {r.growth_per_session() / 2**20:.2f} | "
            )
        else:  # a server elsewhere (--url): its process is not measured from here
            row += "– | – | – | – | – | – | – | "
        lines.append(row + f"{r.loadavg[0]:.1f} / {r.loadavg[1]:.1f} |")
    for r in reports:
        lines += [
            "",
            f"**{r.label}**: latency per page (seconds, from sending the rerun to "
            "`script_finished`; single session = the reference run, no other load)",
            "",
            "| page | reruns | single session | p50 under load | p95 under load | max | "
            "received per rerun (kB) |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for page, n, single, p50, p95, worst, kb in r.page_rows():
            lines.append(
                f"| {page} | {n} | {single:.3f} | {p50:.3f} | {p95:.3f} | {worst:.3f} | {kb:.0f} |"
            )
    return "\n".join(lines)


def problems(reports: list[Report], limit: int = 15) -> str:
    lines = []
    for r in reports:
        # Caught by the blackhole, so nothing left the machine; e.g. the tokenizer's vocabulary
        # download when no local cache exists (the app then runs on its fallback tokenizer).
        for line in r.outbound[:limit]:
            lines.append(f"- {r.label}: notice: outbound request caught by the blackhole: {line}")
        for kind, items in (("error", r.errors), ("mismatch", r.mismatches)):
            for item in items[:limit]:
                lines.append(f"- {r.label}: {kind}: {item}")
            if len(items) > limit:
                lines.append(f"- {r.label}: … {len(items) - limit} more {kind}s")
    return "\n".join(lines) or "None."


def write_markdown(path: Path, reports: list[Report], args, wall: float, load: tuple) -> None:
    v = versions()
    command = "python " + " ".join(["bench/loadtest.py", *args.argv])
    if args.url:
        servers = (
            "Driven at "
            + ", ".join(f"`{r.url}` ({r.label})" for r in reports)
            + (": servers started elsewhere (their memory and CPU are not measured from here)")
        )
    else:
        servers = (
            "One loopback server per run (`streamlit run … --server.address 127.0.0.1 "
            "--server.headless true --server.fileWatcherType none`)"
        )
    text = f"""# attnviz load test

{datetime.datetime.now().strftime("%Y-%m-%d %H:%M")}, `{command}`; {wall:.0f} s in all.

Machine: {os.cpu_count()} cores ({platform.machine()}), {mb(psutil.virtual_memory().total)} MB RAM;
load average before / after: {load[0]:.2f} / {load[1]:.2f} (other work on the machine slows
every number here alike). Packages: {", ".join(f"{k} {val}" for k, val in v.items())}.

{servers}, each session loading the page over HTTP (keeping its cookies) and then driving
the app over its websocket (`/_stcore/stream`) exactly as a browser does. Settings:
{", ".join(reports[0].settings) if reports else ""}; every page of `app.py`. Each session runs
every (setting, page) {args.rounds} time(s) in its own shuffled order, and {args.downloads}
time(s), spread over its plan, opens one matrix's "Numbers and CSV" box and downloads its CSV
(the button's /media/ URL, through the same address, with its cookies): each must answer 200
with a CSV of the figure's shape. Every figure is compared with a single-session reference
run. Reruns/s counts page runs and box openings alike.

{tables(reports)}

Errors and mismatches:

{problems(reports)}
"""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def parse_args(argv=None) -> argparse.Namespace:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=50, help="concurrent sessions (50)")
    parser.add_argument("--rounds", type=int, default=1, help="passes over every step (1)")
    parser.add_argument(
        "--url",
        action="append",
        default=[],
        metavar="[LABEL=]URL",
        help="drive what answers at URL (a server or a load balancer) instead of starting a "
        "server; repeat to load several in turn, reported side by side",
    )
    parser.add_argument(
        "--downloads",
        type=int,
        default=3,
        help="per session: boxes opened and CSVs downloaded, spread over its plan (3; 0: none)",
    )
    parser.add_argument(
        "--sticky-cookie",
        default=STICKY_COOKIE,
        help=f"the load balancer's cookie to count sessions by ({STICKY_COOKIE})",
    )
    parser.add_argument(
        "--quick", action="store_true", help="CI version: 10 sessions, 2 settings, 90 s budget"
    )
    parser.add_argument(
        "--reference-app", action="store_true", help="also load bench/reference_app.py"
    )
    parser.add_argument(
        "--threads",
        default=None,
        help="ATTNVIZ_TORCH_THREADS for the server; a comma list runs attnviz once per value",
    )
    parser.add_argument(
        "--settings",
        default=None,
        help="comma list of settings to use (of: "
        f"{', '.join([*SETTINGS, *EXTRA_SETTINGS])}); default: all but "
        f"{', '.join(EXTRA_SETTINGS)}",
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="per rerun, seconds")
    parser.add_argument("--max-seconds", type=float, default=1500.0, help="per run, seconds")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds before RSS readings")
    parser.add_argument("--output", type=Path, default=None, help="the Markdown report")
    args = parser.parse_args(argv)
    args.argv = argv
    if args.quick:
        if "--sessions" not in " ".join(argv):
            args.sessions = 10
        args.max_seconds = min(args.max_seconds, 90.0)
        args.timeout = min(args.timeout, 60.0)
    if not 1 <= args.sessions <= MAX_SESSIONS:
        parser.error(f"--sessions must be 1–{MAX_SESSIONS}")
    if not 1 <= args.rounds <= 20:
        parser.error("--rounds must be 1–20")
    if not 0 <= args.downloads <= 100:
        parser.error("--downloads must be 0–100")
    if args.url and (args.reference_app or args.threads):
        parser.error("--url drives servers started elsewhere: no --reference-app or --threads")
    for target in args.url:
        if not target.split("=", 1)[-1].startswith("http://"):
            parser.error(f"--url {target!r}: expected [LABEL=]http://HOST:PORT")
    names = QUICK_SETTINGS if args.quick else tuple(SETTINGS)
    if args.settings:
        names = tuple(n.strip() for n in args.settings.split(","))
        known = [*SETTINGS, *EXTRA_SETTINGS]
        unknown = [n for n in names if n not in known]
        if unknown:
            parser.error(f"unknown settings {unknown}; known: {known}")
    args.setting_names = names
    return args


def url_target(value: str) -> tuple[str, str]:
    """(label, url) of a ``--url`` value: ``LABEL=http://…`` or just the URL."""
    if not value.startswith("http://") and "=" in value:
        label, url = value.split("=", 1)
        return label, url
    return value, value


def run(args) -> tuple[list[Report], float, tuple[float, float]]:
    """Every run ``args`` asks for: (reports, wall seconds, machine load before and after)."""
    env: dict[str, str] = {}
    if SHARED_CACHE.is_dir() and "TIKTOKEN_CACHE_DIR" not in os.environ:
        env["TIKTOKEN_CACHE_DIR"] = str(SHARED_CACHE)
    names = args.setting_names
    pages = [(p.url_path, "" if p.default else p.url_path) for p in app_pages()]
    attnviz = {
        "settings": names,
        "queries": [(n, query_for(n)) for n in names],
        "pages": pages,
    }
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    if args.url:
        reports = [drive_url(*url_target(u), attnviz, args) for u in args.url]
        return reports, time.perf_counter() - started, (load_before, os.getloadavg()[0])

    seeds = ("0", "1") if args.quick else ("0", "1", "2", "3", "4")
    reference = {
        "settings": tuple(f"seed={s}" for s in seeds),
        "queries": [(f"seed={s}", f"seed={s}") for s in seeds],
        "pages": [("reference", "")],
    }
    thread_values = [t.strip() for t in args.threads.split(",")] if args.threads else [None]
    runs = []
    for t in thread_values:
        run_env = dict(env)
        label = "attnviz"
        if t is not None:
            run_env["ATTNVIZ_TORCH_THREADS"] = t
            label = f"attnviz, {t} torch thread{'s' if t != '1' else ''}"
        repeat = sum(1 for r in runs if r[0].split(" #")[0] == label)
        runs.append((f"{label} #{repeat + 1}" if repeat else label, "app.py", attnviz, run_env))
    if args.reference_app:
        runs.append(("reference app", "bench/reference_app.py", reference, dict(env)))
    no_boxes = argparse.Namespace(**{**vars(args), "downloads": 0})  # the reference app has none
    reports = [
        run_one(label, script, plan_, no_boxes if script != "app.py" else args, e)
        for label, script, plan_, e in runs
    ]
    return reports, time.perf_counter() - started, (load_before, os.getloadavg()[0])


def main(argv=None) -> int:
    args = parse_args(argv)
    output = args.output or (QUICK_RESULTS if args.quick else URL_RESULTS if args.url else RESULTS)
    reports, wall, load = run(args)
    print()
    print(tables(reports))
    print()
    print(problems(reports))
    write_markdown(output, reports, args, wall, load)
    shown = output.resolve()
    shown = shown.relative_to(ROOT) if shown.is_relative_to(ROOT) else shown
    print(f"\n{wall:.0f} s in all; written to {shown}")
    ok = all(r.ok for r in reports)
    print("OK" if ok else "FAILED: errors, mismatches or failed downloads above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
