"""Nothing leaks on the wire: a raw websocket client (bench/loadtest.Session) runs a pass page on
a live ``streamlit run app.py`` with a question waiting, keeps every ForwardMsg's bytes, and
searches them for the hidden numbers (their 3- and 4-decimal strings, their float32 bytes as a
table would carry them, and the numbers of every chart spec, decoded) and, with "Spot the bug"
on, for the bug's key, symptom, buggy line and reveal. The same searches find what they look
for on the same page with the switch off."""

from __future__ import annotations

import asyncio
import json
import os
import struct

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from attnviz.teach import bugs
from attnviz.teach import mystery as MY
from bench import loadtest
from bench.support import aio
from bench.support.network import proxy_env
from bench.support.server import running_app
from ui.text import md_escape

from .pages import URL_PATHS, Setting, found_strings, found_values, question, secret
from .seen import chart_arrays

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(blackhole):
    env = dict(proxy_env(blackhole))
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        env["TIKTOKEN_CACHE_DIR"] = os.environ["TIKTOKEN_CACHE_DIR"]
    with running_app(env=env) as (url, _proc):
        yield url


async def _run(session: loadtest.Session, query: str, page_name: str) -> list[bytes]:
    """Every ForwardMsg of one page run, as the bytes that came over the websocket."""
    msg = BackMsg()
    msg.rerun_script.query_string = query
    msg.rerun_script.page_name = page_name
    msg.rerun_script.is_history_navigation = True
    await session.ws.send(msg.SerializeToString())
    received: list[bytes] = []
    while True:
        raw = await asyncio.wait_for(session.ws.recv(), 120)
        received.append(raw)
        fm = ForwardMsg()
        fm.ParseFromString(raw)
        if fm.WhichOneof("type") == "script_finished":
            if fm.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                continue
            return received


def page_run(url: str, query: str, page: str) -> list[bytes]:
    """Open the app's root (a fresh server's first run), then ``page`` with ``query``."""

    async def go() -> list[bytes]:
        session = loadtest.Session(url, timeout=120)
        await session.load_page("/")
        await session.connect()
        try:
            await _run(session, "", "")
            return await _run(session, query, URL_PATHS[page])
        finally:
            await session.close()

    return aio.run(go())


def charts(messages: list[bytes]) -> list[dict]:
    specs = []
    for raw in messages:
        fm = ForwardMsg()
        fm.ParseFromString(raw)
        if fm.WhichOneof("type") == "delta" and fm.delta.WhichOneof("type") == "new_element":
            element = fm.delta.new_element
            if element.WhichOneof("type") == "plotly_chart":
                specs.append(json.loads(element.plotly_chart.spec))
    return specs


def found(messages: list[bytes], hidden) -> dict[str, object]:
    """Where the hidden numbers occur in the stream: as printed strings, as float32 bytes, or
    in a chart's numbers."""
    out: dict[str, object] = {}
    text = b"".join(messages).decode("latin-1")
    strings = found_strings(text, hidden.strings)
    if strings:
        out["strings"] = sorted(strings)[:5]
    blob = b"".join(messages)
    packed = [v for v in hidden.values if struct.pack("<f", v) in blob]
    if packed:
        out["float32 bytes"] = sorted(packed)[:5]
    arrays = [a for spec in charts(messages) for a in chart_arrays(spec)]
    values = found_values(arrays, hidden.values)
    if values:
        out["charts"] = sorted(values)[:5]
    return out


CASES = [("simplified", {}), ("causal", {}), ("causal", {"book": "true"})]


@pytest.mark.parametrize(("page", "query"), CASES, ids=[f"{p}-{q}" for p, q in CASES])
def test_no_websocket_message_carries_a_hidden_number_before_the_answer(server, page, query):
    s = Setting.of(page, query)
    q = question(s, 0)
    assert q is not None
    hidden = secret(s, q)
    assert len(hidden.values) >= 5
    url_query = "&".join(f"{k}={v}" for k, v in {**query, "predict": "true"}.items())
    waiting = page_run(server, url_query, page)
    shown = b"".join(waiting).decode("latin-1")
    assert "Predict first" in shown  # the question itself went out
    assert found(waiting, hidden) == {}
    # The same search finds them with the switch off, the page's closed parts opened.
    opened = {**query, "lab": "true", "batch": "true"}
    switched_off = page_run(server, "&".join(f"{k}={v}" for k, v in opened.items()), page)
    assert found(switched_off, hidden)


def test_no_websocket_message_names_the_bug_before_the_diagnosis(server):
    page, text = "causal", "Your journey starts with one step"
    s = Setting.of(page, {"text": text})
    m = MY.pose(page, text, s.settings, False, 0)
    assert m is not None and m.answer != MY.NONE, "seed 0 poses a bug here"
    bug = bugs.BUGS_BY_KEY[m.answer]
    mystery = b"".join(page_run(server, "mystery=true", page))
    secrets = (bug.key, bug.symptom, bug.replacement.strip(), m.reveal.summary)
    for secret_text in secrets:  # as plain text, or escaped for Markdown
        for form in (secret_text, md_escape(secret_text)):
            assert form.encode() not in mystery, form
    assert b"Your diagnosis" in mystery
    lesson = b"".join(page_run(server, "", page))
    assert md_escape(bug.symptom).encode() in lesson  # the break-it table names it there
