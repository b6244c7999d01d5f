"""Class polls on the live server: a class of phones answering, the projector counting.

    .venv/bin/python bench/classpoll.py                    # 50 students, one server (~1 min)
    .venv/bin/python bench/classpoll.py --replicas 2       # two servers, HAProxy, Redis
    .venv/bin/python bench/classpoll.py --cpu              # CPU per answer and per tally update
    .venv/bin/python bench/classpoll.py --cpu --redis      # the same with the polls in Redis
    .venv/bin/python bench/classpoll.py --all              # all of them, one report (~6 min)

Everything goes over Streamlit's websocket as a browser's would (``bench/loadtest.py``'s
``Session``: the page over HTTP first, its cookies kept, so a load balancer's sticky cookie
spreads the students): the presenter opens ``/poll``, switches "I'm presenting" on, picks a pass
and presses "Ask the class" (the server writes the poll's code into the presenter's URL, read
here from the ``page_info_changed`` message, as the browser reads it; the presenter's browser
token, in its cookie, is its key to the poll); each student, a browser token of its own in a
cookie, opens the join link,
reads the form's widget ids from the deltas and sends the form (the option picked, then "Send
my answer" as a trigger), exactly what a phone's browser sends; the projector's live tally is
the ``st.fragment(run_every=0.5 s)`` the browser reruns on its timer, rerun here the same way
(``ClientState.fragment_id``, ``is_auto_rerun``).

A class (:func:`run_class`): students join spread over a few seconds and each answers after a
short think; the projector refreshes every half second all along. Then the presenter shows the
answers, and the counts it shows are compared with what was sent (0 lost, 0 counted twice);
one student changes their answer and exactly one count moves. The time from a student's
"Send" to the projector showing it is bounded from above per answer: by the end of the first
refresh that certainly showed it, one that *started after* the student's own run had finished
(so after the store had the answer), or one whose count equals every answer sent before it
ended (so none of them can be missing).

CPU (:func:`cpu_costs`): the server process's CPU (psutil, every thread) per warm run of a
lesson page, of a phone's answer, of the projector's tally refresh and of a phone's watcher,
in alternating blocks on one server (Redis's own CPU too with ``--redis``).

Loopback only; every server this starts is bound to 127.0.0.1 and stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import html
import json
import os
import platform
import random
import re
import secrets
import statistics
import sys
import time
from collections import Counter
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

from attnviz import figures  # noqa: E402
from bench import loadtest  # noqa: E402
from bench.support import aio  # noqa: E402
from bench.support.haproxy import REPLICAS, running_haproxy  # noqa: E402
from bench.support.network import Blackhole, proxy_env  # noqa: E402
from bench.support.redis_server import RedisServer  # noqa: E402
from bench.support.server import running_app  # noqa: E402
from ui.classroom.browser_token import COOKIE as BROWSER_COOKIE  # noqa: E402
from ui.classroom.poll_views import PHONE_REFRESH, PROJECTOR_REFRESH  # noqa: E402

RESULTS = ROOT / "bench" / "classpoll-results.md"
SHARED_CACHE = ROOT.parent / "shared" / "tiktoken_cache"
PAGE = "poll"
ASK = "Ask the class"
ANOTHER = "Another question"
PRESENTING = "I'm presenting"  # the switch on /poll that shows the presenter's start
SEND = "Send my answer"
SHOW = "Show the answers"
REVEAL = "Reveal the answer"
REASK = "Discuss and answer again"
CHOICE_PASS = "1. Simplified self-attention"  # at the default text: "which key ..." (6 tokens)
NUMBER_PASS = "2. Trainable self-attention"  # a score to 2 decimals, "Another question" away
STICKY = "ATTNVIZ_REPLICA"
_ANSWERED = re.compile(r"^#* *Round (\d+): (\d+) answers?$")
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


def unescape(text: str) -> str:
    """What a reader sees of the app's Markdown-escaped text."""
    return _ESCAPED.sub(r"\1", text)


# --- one run of the page, as the browser receives it -------------------------------------------
@dataclass
class Run:
    sent: float  # perf_counter() when the BackMsg went out
    finished: float  # ... when script_finished arrived
    elements: dict[tuple[int, ...], object]  # delta path -> Element, this run's
    fragments_of: dict[str, str]  # widget id -> the fragment that drew it (Delta.fragment_id)
    raw: bytes  # every ForwardMsg of the run, as received
    queries: list[str]  # page_info_changed: the URL's query string, as the server set it
    fragment: tuple[str, float] | None  # auto_rerun, the quickest: (fragment id, interval in s)
    exceptions: list[str]

    @property
    def seconds(self) -> float:
        return self.finished - self.sent

    def ordered(self) -> list:
        return [e for _, e in sorted(self.elements.items())]

    def texts(self) -> list[str]:
        """Every text a student reads in this run's elements (escapes undone)."""
        out = []
        for element in self.ordered():
            kind = element.WhichOneof("type")
            if kind == "markdown":
                out.append(unescape(element.markdown.body))
            elif kind == "text":
                out += element.text.body.splitlines()
            elif kind == "alert":
                out.append(unescape(element.alert.body))
            elif kind == "heading":
                out.append(unescape(element.heading.body))
            elif kind == "code":
                out.append(element.code.code_text)
        return out

    def widgets(self, kind: str) -> list:
        return [getattr(e, kind) for e in self.ordered() if e.WhichOneof("type") == kind]

    def button(self, label: str) -> str:
        found = [b.id for b in self.widgets("button") if b.label == label]
        if not found:
            raise LookupError(
                f"no button {label!r} among {[b.label for b in self.widgets('button')]}"
            )
        return found[0]

    def fragment_of(self, widget_id: str) -> str | None:
        """The fragment a widget belongs to: a browser reruns only that fragment when the
        widget is used (``ClientState.fragment_id``)."""
        return self.fragments_of.get(widget_id) or None

    def answered(self) -> int | None:
        """The projector's "Round r: N answers" of the round being asked (the last one)."""
        found = [m for t in self.texts() if (m := _ANSWERED.match(t.strip()))]
        return int(found[0].group(2)) if found else None

    def counts(self) -> dict[str, int]:
        """The counts the projector's tally chart draws (its last round's bars, as shown)."""
        for element in self.ordered():
            if element.WhichOneof("type") != "plotly_chart":
                continue
            spec = json.loads(element.plotly_chart.spec)
            bars = [t for t in spec.get("data", []) if t.get("type") == "bar"]
            if not bars or not spec["layout"]["yaxis"].get("tickformat") == "d":
                continue  # not a chart of counts
            last = bars[-1]
            values = figures.unpacked(last["y"]).tolist()
            return {html.unescape(x): int(v) for x, v in zip(last["x"], values, strict=True)}
        return {}


class Client(loadtest.Session):
    """loadtest's session (HTTP first, cookies kept, then the websocket), running the poll
    page with widget states, and the fragment reruns a browser's timer sends."""

    page_hash = ""  # the page the last full run ran (Navigation.page_script_hash)

    async def run(
        self,
        query: str,
        *,
        widgets: tuple = (),
        fragment_id: str | None = None,
        auto: bool = True,
        page: str = PAGE,
    ) -> Run:
        """One run: the page's (``fragment_id`` None), or one fragment's, from its timer
        (``auto``) or from a widget inside it."""
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = page
        for widget_id, kind, value in widgets:
            state = msg.rerun_script.widget_states.widgets.add()
            state.id = widget_id
            if kind == "double_array_value":
                state.double_array_value.data.extend(value)
            else:
                setattr(state, kind, value)
        if fragment_id is not None:
            msg.rerun_script.fragment_id = fragment_id
            msg.rerun_script.is_auto_rerun = auto
            # The page the fragment is on, as the browser names it in every rerun: an
            # st.rerun() inside the fragment then reruns this page, not the default one.
            msg.rerun_script.page_script_hash = self.page_hash
        sent = time.perf_counter()
        deadline = sent + self.timeout
        await self.ws.send(msg.SerializeToString())
        elements: dict[tuple[int, ...], object] = {}
        fragments_of: dict[str, str] = {}
        raw = bytearray()
        queries: list[str] = []
        fragment = None
        exceptions: list[str] = []
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"no script_finished within {self.timeout:.0f} s")
            data = await asyncio.wait_for(self.ws.recv(), remaining)
            if isinstance(data, str):
                raise loadtest.ProtocolError("text frame on the websocket")
            raw += data
            fm = ForwardMsg()
            fm.ParseFromString(data)
            kind = fm.WhichOneof("type")
            if kind == "new_session":
                elements.clear()  # a run that st.rerun() started: only its elements count
            elif kind == "navigation":  # the page st.navigation runs (the browser keeps it)
                self.page_hash = fm.navigation.page_script_hash
            elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                element = fm.delta.new_element
                elements[tuple(fm.metadata.delta_path)] = element
                which = element.WhichOneof("type")
                widget_id = getattr(getattr(element, which), "id", "") if which else ""
                if widget_id and fm.delta.fragment_id:
                    fragments_of[widget_id] = fm.delta.fragment_id
                if element.WhichOneof("type") == "exception":
                    exceptions.append(f"{element.exception.type}: {element.exception.message}")
            elif kind == "page_info_changed":
                queries.append(fm.page_info_changed.query_string)
            elif kind == "auto_rerun":  # the quickest timer: the live part (the presenter's
                # page has a slow one too, for the time its poll has left)
                if fragment is None or fm.auto_rerun.interval < fragment[1]:
                    fragment = (fm.auto_rerun.fragment_id, fm.auto_rerun.interval)
            elif kind == "page_not_found":
                raise loadtest.ProtocolError(f"page not found: {page!r}")
            elif kind == "script_finished":
                if fm.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    continue
                break
        return Run(
            sent, time.perf_counter(), elements, fragments_of, bytes(raw), queries, fragment,
            exceptions,
        )  # fmt: skip


# --- the presenter and the students ------------------------------------------------------------
class Projector:
    """The presenter's browser on the projector: opens a poll, refreshes its tally, presses
    its buttons."""

    def __init__(self, url: str, timeout: float = 60):
        self.client = Client(url, timeout)
        # The presenter's browser token, as the poll page's keeper leaves it in a cookie: the
        # poll it opens is this browser's, and the token is the key the store takes for it.
        self.secret = secrets.token_urlsafe(24)
        self.client.cookies[BROWSER_COOKIE] = self.secret
        self.query = ""
        self.code = ""
        self.last: Run | None = None
        self.fragment: tuple[str, float] | None = None
        self.runs: list[Run] = []

    async def open(self, pass_label: str = CHOICE_PASS, another: int = 0) -> Run:
        """Open /poll, switch "I'm presenting" on, pick ``pass_label``'s question (pressing
        "Another question" ``another`` times: the start's seed), press "Ask the class"."""
        await self.client.load_page(f"/{PAGE}")
        await self.client.connect()
        first = await self._run("")
        (switch,) = [t for t in first.widgets("checkbox") if t.label == PRESENTING]
        presenting = await self._run("", widgets=((switch.id, "bool_value", True),))
        (pick,) = presenting.widgets("selectbox")
        widgets: tuple = ((switch.id, "bool_value", True), (pick.id, "string_value", pass_label))
        chosen = await self._run("", widgets=widgets)
        for _ in range(another):
            press = (chosen.button(ANOTHER), "trigger_value", True)
            chosen = await self._run("", widgets=(*widgets, press))
        asked = await self._run("", widgets=(*widgets, (chosen.button(ASK), "trigger_value", True)))
        if not asked.queries:
            raise RuntimeError(f"no poll opened: {asked.texts()}")
        self.query = asked.queries[-1]
        params = parse_qs(self.query)
        if "secret" in params:
            raise RuntimeError("the presenter's address carries the poll's secret")
        self.code = params["poll"][0]
        return asked

    async def _run(self, query: str, **kw) -> Run:
        run = await self.client.run(query, **kw)
        self.runs.append(run)
        if kw.get("fragment_id") is None:
            self.last = run
            self.fragment = run.fragment
        return run

    async def full(self) -> Run:
        return await self._run(self.query)

    async def reopen(self) -> Run:
        """A real reload of the projector's page: a new websocket, so a new Streamlit session
        (on whichever replica the balancer picks when the old one is gone), with the same
        browser's cookies: its token still holds the poll's controls."""
        await self.client.close()
        await self.client.load_page(f"/{PAGE}?{self.query}")
        await self.client.connect()
        return await self.full()

    async def press(self, label: str) -> Run:
        assert self.last is not None
        return await self._run(
            self.query, widgets=((self.last.button(label), "trigger_value", True),)
        )

    async def refresh(self) -> Run:
        """The live tally's run, as the browser's run_every timer sends it."""
        if self.fragment is None:
            raise RuntimeError("the projector's page registered no live fragment")
        return await self._run(self.query, fragment_id=self.fragment[0])

    async def close(self) -> None:
        await self.client.close()


class Student:
    """One phone: opens the join link, answers with the form's own widgets."""

    def __init__(self, url: str, code: str, timeout: float = 60, token: str | None = None):
        self.client = Client(url, timeout)
        # The phone's browser token (the cookie the poll page's keeper sets): one browser, one
        # vote, however many sessions it opens.
        self.client.cookies[BROWSER_COOKIE] = token or secrets.token_urlsafe(24)
        self.query = f"join={code}"
        self.code = code
        self.view: Run | None = None
        self.watcher: tuple[str, float] | None = None  # the watcher fragment of the last full run
        self.form_fragment: str | None = None  # the fragment the answer form is drawn in
        self.runs: list[Run] = []

    def _seen(self, run: Run) -> Run:
        self.view = run
        self.runs.append(run)
        if run.fragment is not None:
            self.watcher = run.fragment
        return run

    async def join(self) -> Run:
        await self.client.load_page(f"/{PAGE}?{self.query}")
        await self.client.connect()
        return await self.reload()

    async def reload(self) -> Run:
        """The page again, in the same session (as a fragment's st.rerun() runs it)."""
        return self._seen(await self.client.run(self.query))

    async def reopen(self) -> Run:
        """A real reload: a new websocket, so a new Streamlit session (on whichever replica
        the balancer picks when the old one is gone), with the same browser's cookies."""
        await self.client.close()
        self.form_fragment = None
        self.watcher = None
        await self.client.load_page(f"/{PAGE}?{self.query}")
        await self.client.connect()
        return await self.reload()

    async def watch(self) -> Run:
        """The phone's watcher, as its timer sends it."""
        assert self.watcher is not None, "no watcher registered"
        return await self.client.run(self.query, fragment_id=self.watcher[0])

    def options(self) -> list[str]:
        """The choices as the phone shows them (escapes undone)."""
        assert self.view is not None
        (radio,) = [r for r in self.view.widgets("radio") if r.form_id]  # not the sidebar's
        return [unescape(o) for o in radio.options]

    async def answer(self, value) -> Run:
        """Send ``value``: an option's index, a number, or a row of weights."""
        assert self.view is not None
        view = self.view
        widgets: list[tuple] = []
        radios = [r for r in view.widgets("radio") if r.form_id]  # the form's, not the sidebar's
        if radios:
            widgets.append((radios[0].id, "string_value", radios[0].options[int(value)]))
        elif isinstance(value, tuple):
            mine = [s for s in view.widgets("slider") if s.form_id]
            widgets += [(s.id, "double_array_value", [v]) for s, v in zip(mine, value, strict=True)]
        else:
            (box,) = [n for n in view.widgets("number_input") if n.form_id]
            widgets.append((box.id, "double_value", float(value)))
        send = view.button(SEND)
        widgets.append((send, "trigger_value", True))
        # As the browser does: a widget inside a fragment reruns that fragment only.
        fragment = view.fragment_of(send) or self.form_fragment
        self.form_fragment = fragment
        run = await self.client.run(
            self.query, widgets=tuple(widgets), fragment_id=fragment, auto=False
        )
        return self._seen(run)

    def accepted(self) -> bool:
        return self.view is not None and any(
            t.startswith(("Answer recorded", "Answer changed")) for t in self.view.texts()
        )

    async def close(self) -> None:
        await self.client.close()


# --- a class ---------------------------------------------------------------------------------
@dataclass
class Answer:
    student: int
    option: int
    sent: float
    done: float
    accepted: bool


@dataclass
class ClassResult:
    students: int
    code: str = ""
    secret: str = ""  # the presenter's key: its browser token (a test reads the store with it)
    options: list[str] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    readings: list[Run] = field(default_factory=list)  # the projector's live refreshes
    expected: dict[str, int] = field(default_factory=dict)
    shown: dict[str, int] = field(default_factory=dict)  # the projector's counts, once shown
    answered_shown: int | None = None
    changed: tuple[str, str] = ("", "")  # one student's old and new option
    shown_after_change: dict[str, int] = field(default_factory=dict)
    join_and_answer_seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    inconsistent: list[str] = field(default_factory=list)  # a refresh showing the impossible
    errors: list[str] = field(default_factory=list)
    sticky: Counter = field(default_factory=Counter)

    @property
    def lost(self) -> int:
        return sum(max(0, self.expected[k] - self.shown.get(k, 0)) for k in self.expected)

    @property
    def counted_twice(self) -> int:
        return sum(max(0, v - self.expected.get(k, 0)) for k, v in self.shown.items())

    def moved(self) -> dict[str, int]:
        """How each count moved when one student changed their answer."""
        keys = set(self.shown) | set(self.shown_after_change)
        return {
            k: self.shown_after_change.get(k, 0) - self.shown.get(k, 0)
            for k in sorted(keys)
            if self.shown_after_change.get(k, 0) != self.shown.get(k, 0)
        }


def choice_of(i: int, options: int) -> int:
    """Student i's pick: uneven counts (squares mod the options), so a swap would show."""
    return (i * i + i // 3) % options


async def run_class(
    url: str,
    students: int = 50,
    *,
    projector_url: str | None = None,
    join_spread: float = 4.0,
    think: tuple[float, float] = (0.5, 2.5),
    seed: int = 0,
    timeout: float = 60,
) -> ClassResult:
    """A class of ``students`` on the poll page at ``url`` (a server or a load balancer)."""
    result = ClassResult(students)
    projector = Projector(projector_url or url, timeout)
    phones: list[Student] = []
    try:
        await projector.open(CHOICE_PASS)
        result.code, result.secret = projector.code, projector.secret
        stop = asyncio.Event()
        rng = random.Random(seed)
        delays = [rng.uniform(*think) for _ in range(students)]

        async def refreshing() -> None:
            interval = projector.fragment[1] if projector.fragment else 1.0
            while not stop.is_set():
                began = time.perf_counter()
                result.readings.append(await projector.refresh())
                await asyncio.sleep(max(0.0, interval - (time.perf_counter() - began)))

        async def one(i: int, start: float) -> None:
            await asyncio.sleep(max(0.0, start + i * join_spread / students - time.perf_counter()))
            phone = Student(url, projector.code, timeout)
            phones.append(phone)
            try:
                view = await phone.join()
                result.sticky[phone.client.cookies.get(STICKY, "(none)")] += 1
                if view.exceptions:
                    result.errors.append(f"student {i} join: {view.exceptions}")
                if not result.options:
                    result.options = phone.options()
                await asyncio.sleep(delays[i])
                option = choice_of(i, len(phone.options()))
                run = await phone.answer(option)
                result.answers.append(Answer(i, option, run.sent, run.finished, phone.accepted()))
                if run.exceptions:
                    result.errors.append(f"student {i} answer: {run.exceptions}")
            except (TimeoutError, loadtest.ProtocolError, OSError, LookupError) as exc:
                result.errors.append(f"student {i}: {exc!r}")

        live = asyncio.create_task(refreshing())
        start = time.perf_counter()
        await asyncio.gather(*(one(i, start) for i in range(students)))
        result.join_and_answer_seconds = (
            max((a.done for a in result.answers), default=start) - start
        )
        await asyncio.sleep(2.5)  # two more refreshes after the last answer
        stop.set()
        await live
        result.expected = dict(
            Counter(result.options[a.option] for a in result.answers if a.accepted)
        )
        shown = await projector.press(SHOW)
        result.answered_shown = shown.answered()
        result.shown = {k: v for k, v in shown.counts().items() if v}
        # One student changes their mind: exactly one count moves.
        first = next(p for p in phones if p.view is not None)
        index = phones.index(first)
        before = next(a.option for a in result.answers if a.student == index)
        after = (before + 1) % len(result.options)
        await first.answer(after)
        result.changed = (result.options[before], result.options[after])
        moved = await projector.refresh()
        result.shown_after_change = {k: v for k, v in moved.counts().items() if v}
        for run in projector.runs:
            if run.exceptions:
                result.errors.append(f"projector: {run.exceptions}")
        _latencies(result)
    finally:
        await asyncio.gather(
            projector.close(), *(p.close() for p in phones), return_exceptions=True
        )
    return result


def _latencies(result: ClassResult) -> None:
    """Per answer, from "Send" to the end of the first refresh that certainly showed it (an
    upper bound): one that began after the student's own run had finished (the answer was
    stored by then), or one whose count equals every answer sent before it ended (then none
    of those can be missing). Every refresh is also checked against what had certainly, and
    what could at most, have been stored when it ran."""
    readings = sorted(result.readings, key=lambda r: r.sent)
    sent = sorted(a.sent for a in result.answers)

    def caught_up(r: Run) -> bool:
        shown = r.answered()
        return shown is not None and shown >= sum(1 for t in sent if t <= r.finished)

    for a in result.answers:
        showing = [
            r for r in readings if r.sent >= a.done or (r.finished >= a.sent and caught_up(r))
        ]
        if showing:
            result.latencies.append(min(r.finished for r in showing) - a.sent)
        else:
            result.inconsistent.append(f"student {a.student}: no refresh after the answer")
    for r in readings:
        shown = r.answered()
        stored = sum(1 for a in result.answers if a.accepted and a.done <= r.sent)
        possible = sum(1 for a in result.answers if a.sent <= r.finished)
        if shown is None or not stored <= shown <= possible:
            result.inconsistent.append(f"a refresh showed {shown}: {stored} to {possible} possible")


# --- CPU -------------------------------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


async def cpu_costs(
    url: str,
    pid: int,
    *,
    students: int = 50,
    runs: int = 20,
    blocks: int = 3,
) -> dict[str, dict[str, float]]:
    """The server's CPU per warm run (ms; median of ``blocks`` alternating blocks of ``runs``
    runs each): a lesson page, a phone's answer, the projector's tally refresh (with
    ``students`` answers in the poll and the spread shown), a phone's view, its watcher."""
    projector = Projector(url)
    phones: list[Student] = []
    lesson = loadtest.Session(url, timeout=120)
    step = loadtest.Step(
        "default", loadtest.query_for("default"), "causal-attention", "causal-attention"
    )
    try:
        await projector.open(CHOICE_PASS)
        for i in range(students):
            phone = Student(url, projector.code)
            phones.append(phone)
            await phone.join()
            await phone.answer(choice_of(i, len(phone.options())))
        await projector.press(SHOW)
        me = phones[0]
        await lesson.connect()
        flip = [0]

        async def answer_once() -> None:
            flip[0] = 1 - flip[0]
            await me.answer(flip[0])

        async def watch_once() -> None:
            await me.watch()

        kinds = {
            "lesson page (causal-attention, warm)": lambda: lesson.rerun(step),
            "phone: answer (form sent, answer stored)": answer_once,
            "projector: tally refresh (50 answers, spread shown)": projector.refresh,
            "phone: view (join page, no answer)": me.reload,
            f"phone: watcher (every {PHONE_REFRESH:g} s)": watch_once,
        }
        samples: dict[str, list[float]] = {k: [] for k in kinds}
        for block in range(blocks):
            for name, once in kinds.items():
                for _ in range(3 if block == 0 else 1):  # warm up
                    await once()
                await asyncio.sleep(0.3)
                before = cpu_seconds(pid)
                for _ in range(runs):
                    await once()
                await asyncio.sleep(0.3)  # the server's work after script_finished counts too
                samples[name].append((cpu_seconds(pid) - before) / runs)
        return {
            name: {"app_ms": 1000 * statistics.median(values)} for name, values in samples.items()
        }
    finally:
        await asyncio.gather(
            projector.close(), lesson.close(), *(p.close() for p in phones), return_exceptions=True
        )


# --- servers ---------------------------------------------------------------------------------------
def app_env(redis_url: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ATTNVIZ_REDIS_URL"}
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or (
        str(SHARED_CACHE) if SHARED_CACHE.is_dir() else ""
    )
    if cache:
        env["TIKTOKEN_CACHE_DIR"] = cache
    if redis_url:
        env["ATTNVIZ_REDIS_URL"] = redis_url
    return env


@contextmanager
def replicas_behind_haproxy(env: dict[str, str], log_dir: Path):
    """Two ``streamlit run app.py`` on loopback behind deploy/haproxy.cfg (Debian's haproxy,
    bench/support/haproxy.py), one cookie secret for both as Compose gives them, each visited
    once. Yields (HAProxy's URL, {replica name: (url, process)})."""
    env = {**env, "STREAMLIT_SERVER_COOKIE_SECRET": "poll-" + os.urandom(16).hex()}
    with ExitStack() as stack:
        servers = {
            name: stack.enter_context(
                running_app(env=env, log_path=log_dir / f"classpoll-{name}.log")
            )
            for name in REPLICAS
        }
        url = stack.enter_context(
            running_haproxy(
                servers["replica-a"][0], servers["replica-b"][0], log_dir / "classpoll-haproxy.log"
            )
        )
        for replica_url, _ in servers.values():
            aio.run(warm(replica_url))
        yield url, servers


async def warm(url: str) -> None:
    """One visit to a fresh server (its first script run imports torch and the pages), as
    a class's first student, or the presenter checking the room, would have made."""
    client = Client(url, timeout=180)
    await client.connect()
    try:
        await client.run("", page="")
        await client.run("", page=PAGE)
    finally:
        await client.close()


# --- report ----------------------------------------------------------------------------------------
def class_lines(label: str, r: ClassResult) -> list[str]:
    p50 = loadtest.pct(r.latencies, 0.5)
    p95 = loadtest.pct(r.latencies, 0.95)
    return [
        f"| {label} | {r.students} | {sum(a.accepted for a in r.answers)} | "
        f"{r.join_and_answer_seconds:.1f} | {sum(r.expected.values())} / "
        f"{sum(r.shown.values())} | {r.lost} | {r.counted_twice} | "
        f"{', '.join(f'{k} {v:+d}' for k, v in r.moved().items()) or '–'} | "
        f"{p50:.2f} / {p95:.2f} / {max(r.latencies, default=float('nan')):.2f} | "
        f"{len(r.readings)} | {', '.join(f'{k}: {v}' for k, v in sorted(r.sticky.items()))} | "
        f"{len(r.errors) + len(r.inconsistent)} |"
    ]


def markdown(classes: list[tuple[str, ClassResult]], costs: dict, command: str) -> str:
    lines = [
        "# Class polls on the live server",
        "",
        f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, `{command}`. Machine: "
        f"{os.cpu_count()} cores, shared with other work (load average at the end "
        f"{os.getloadavg()[0]:.1f}); Python {platform.python_version()}. Every student and "
        "the projector drive the page over Streamlit's websocket as a browser does "
        "(bench/classpoll.py).",
        "",
    ]
    if classes:
        lines += [
            "## A class answering",
            "",
            "| run | students | answers accepted | join + answer (s) | sent / shown | lost | "
            "counted twice | one answer changed | Send → projector p50 / p95 / max (s) | "
            "projector refreshes | students per replica | errors |",
            "|---|---:|---:|---:|---:|---:|---:|---|---|---:|---|---:|",
        ]
        for label, r in classes:
            lines += class_lines(label, r)
        lines.append("")
    if costs:
        for label, table in costs.items():
            page = next(v for k, v in table.items() if k.startswith("lesson"))["app_ms"]
            lines += [
                f"## Server CPU per warm run ({label})",
                "",
                "The server process's user + system CPU (every thread) over "
                "the runs, median of the blocks; psutil reads it in 10 ms ticks. (Redis's own "
                "CPU per poll operation is in bench/polls-results.md: tens of µs.)",
                "",
                "| run | server CPU (ms) | / lesson page run |",
                "|---|---:|---:|",
            ]
            for name, v in table.items():
                lines.append(f"| {name} | {v['app_ms']:.2f} | {v['app_ms'] / page:.2f} |")
            answer = next(v for k, v in table.items() if "answer" in k)["app_ms"]
            view = next(v for k, v in table.items() if "view" in k)["app_ms"]
            tally = next(v for k, v in table.items() if "tally" in k)["app_ms"]
            watcher = next(v for k, v in table.items() if "watcher" in k)["app_ms"]
            per_second = tally / PROJECTOR_REFRESH + 50 * watcher / PHONE_REFRESH + 50 * answer / 10
            lines += [
                "",
                f"A class of 50 answering within 10 s, with the projector refreshing every "
                f"{PROJECTOR_REFRESH:g} s and every phone's watcher every {PHONE_REFRESH:g} s: "
                f"about {per_second:.0f} ms of server CPU a second ({tally:.1f} / "
                f"{PROJECTOR_REFRESH:g} + 50 × {watcher:.1f} / {PHONE_REFRESH:g} + 50 × "
                f"{answer:.1f} / 10), {per_second / page:.1f} lesson page runs' worth; the "
                f"class joining costs 50 × {view:.1f} ms once.",
                "",
            ]
    return "\n".join(lines) + "\n"


def measure(mode: str, args, hole: Blackhole, log_dir: Path) -> tuple[str, ClassResult | dict]:
    """One server (or two behind HAProxy) started for ``mode`` ("class", "class-redis",
    "class-replicas", "cpu", "cpu-redis"), measured, stopped: (its label, what was found)."""
    with ExitStack() as stack:
        redis_server = None
        if mode.endswith(("redis", "replicas")):
            redis_server = stack.enter_context(RedisServer())
        env = {**app_env(redis_server.url if redis_server else None), **proxy_env(hole)}
        if mode == "class-replicas":
            url, _ = stack.enter_context(replicas_behind_haproxy(env, log_dir))
            return "2 replicas behind HAProxy, Redis", aio.run(run_class(url, args.students))
        url, proc = stack.enter_context(
            running_app(env=env, log_path=log_dir / f"classpoll-{mode}.log")
        )
        aio.run(warm(url))
        label = "1 server, " + ("Redis" if redis_server else "in-process store")
        if mode.startswith("cpu"):
            costs = cpu_costs(url, proc.pid, runs=args.runs, blocks=args.blocks)
            return label, aio.run(costs)
        return label, aio.run(run_class(url, args.students))


MODES = ("class", "class-redis", "class-replicas", "cpu", "cpu-redis")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--students", type=int, default=50)
    parser.add_argument("--replicas", type=int, choices=(1, 2), default=1)
    parser.add_argument("--redis", action="store_true", help="polls in Redis (one server)")
    parser.add_argument("--cpu", action="store_true", help="CPU per run instead of a class")
    parser.add_argument("--all", action="store_true", help="every run above, one report")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if not 1 <= args.students <= 200:
        parser.error("--students must be 1–200")
    if args.cpu and args.replicas == 2:
        parser.error("--cpu measures one server: no --replicas 2")
    if args.all:
        modes = list(MODES)
    elif args.replicas == 2:
        modes = ["class-replicas"]
    else:
        modes = [("cpu" if args.cpu else "class") + ("-redis" if args.redis else "")]
    log_dir = ROOT / "test-artifacts"
    log_dir.mkdir(exist_ok=True)
    hole = Blackhole()
    classes: list[tuple[str, ClassResult]] = []
    costs: dict = {}
    command = "python " + " ".join(["bench/classpoll.py", *(argv or sys.argv[1:])])
    try:
        for mode in modes:
            print(f"{mode} …", flush=True)
            label, found = measure(mode, args, hole, log_dir)
            if isinstance(found, ClassResult):
                classes.append((label, found))
            else:
                costs[label] = found
    finally:
        hole.close()
    text = markdown(classes, costs, command)
    print(text)
    for _, r in classes:
        for problem in (r.errors + r.inconsistent)[:10]:
            print("problem:", problem)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"written to {args.output}")
    bad = any(r.errors or r.inconsistent or r.lost or r.counted_twice for _, r in classes)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
