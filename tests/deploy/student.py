"""A student as a browser is one, over plain HTTP and Streamlit's websocket, loopback only.

Unlike bench/loadtest.py (which talks to one server it starts itself), a student here goes
through whatever answers at a URL, a load balancer included, and behaves like a browser in the
ways a load balancer sees: it loads the page first (and keeps the cookies it is given), opens
the websocket with those cookies, and downloads a CSV the way the CSV button does (a
backend operation over the websocket returns a /media/ URL, then an HTTP GET fetches it).
"""

from __future__ import annotations

import asyncio
import csv
import io
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from http.cookies import SimpleCookie

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_get(url: str, cookies: dict[str, str] | None = None, timeout: float = 30):
    """(status, body bytes, Set-Cookie values) of a GET, with no proxy."""
    request = urllib.request.Request(url)
    if cookies:
        request.add_header("Cookie", "; ".join(f"{k}={v}" for k, v in cookies.items()))
    try:
        with _NO_PROXY.open(request, timeout=timeout) as response:
            return response.status, response.read(), response.headers.get_all("Set-Cookie") or []
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers.get_all("Set-Cookie") or []


@dataclass
class PageRun:
    seconds: float
    downloads: list[str]  # deferred file ids of the CSV buttons the run drew
    problems: list[str]


@dataclass
class Student:
    base: str  # http://127.0.0.1:PORT
    cookies: dict[str, str] = field(default_factory=dict)
    session_id: str = ""
    _ws: object = None

    async def load_page(self, path: str = "/") -> int:
        status, _body, set_cookies = await asyncio.to_thread(
            http_get, self.base + path, self.cookies
        )
        for header in set_cookies:
            for name, morsel in SimpleCookie(header).items():
                self.cookies[name] = morsel.value
        return status

    async def connect(self) -> None:
        url = self.base.replace("http://", "ws://") + "/_stcore/stream"
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        self._ws = await websockets.connect(
            url,
            subprotocols=["streamlit"],
            additional_headers=headers if self.cookies else None,
            max_size=2**28,
            open_timeout=30,
        )

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
            self._ws = None

    async def _receive(self, timeout: float) -> ForwardMsg:
        message = ForwardMsg()
        message.ParseFromString(await asyncio.wait_for(self._ws.recv(), timeout))
        return message

    async def run_page(self, page_name: str, query: str, timeout: float = 120) -> PageRun:
        """One page run, as a browser asks for it; the CSV buttons it drew, and any problem."""
        back = BackMsg()
        back.rerun_script.query_string = query
        back.rerun_script.page_name = page_name
        started = time.monotonic()
        await self._ws.send(back.SerializeToString())
        downloads, problems = [], []
        while True:
            message = await self._receive(timeout)
            kind = message.WhichOneof("type")
            if kind == "new_session":
                self.session_id = message.new_session.initialize.session_id
            elif kind == "page_not_found":
                problems.append(f"page not found: {page_name!r}")
            elif kind == "delta" and message.delta.WhichOneof("type") == "new_element":
                element = message.delta.new_element
                which = element.WhichOneof("type")
                if which == "exception":
                    problems.append(f"exception: {element.exception.message[:200]}")
                elif which == "download_button" and element.download_button.deferred_file_id:
                    downloads.append(element.download_button.deferred_file_id)
            elif kind == "script_finished":
                # 0 = finished successfully; a rerun or a stop is reported as a problem.
                if message.script_finished != 0:
                    problems.append(f"script finished with status {message.script_finished}")
                return PageRun(time.monotonic() - started, downloads, problems)

    async def csv_url(self, file_id: str, timeout: float = 60) -> str:
        """Ask for a CSV as the button does; return the URL the server answers with."""
        back = BackMsg()
        request = back.backend_operation_request
        request.request_id = str(uuid.uuid4())
        request.session_id = self.session_id
        request.deferred_file.file_id = file_id
        await self._ws.send(back.SerializeToString())
        while True:
            message = await self._receive(timeout)
            if message.WhichOneof("type") != "backend_operation_response":
                continue
            response = message.backend_operation_response
            if response.request_id != request.request_id:
                continue
            if response.error_msg:
                raise RuntimeError(f"CSV request refused: {response.error_msg}")
            return response.deferred_file.url

    async def download(self, url: str) -> tuple[int, bytes]:
        status, body, _ = await asyncio.to_thread(http_get, self.base + url, self.cookies)
        return status, body


def csv_shape(body: bytes) -> tuple[int, int]:
    """(rows, columns) of a matrix CSV: a header row, rows as long as it, numbers in them (some
    CSVs carry more than one label column, and blank cells where a matrix has no value)."""
    rows = list(csv.reader(io.StringIO(body.decode("utf-8"))))
    assert len(rows) >= 2, body[:200]
    assert all(len(row) == len(rows[0]) for row in rows), "ragged CSV"
    numbers = 0
    for row in rows[1:]:
        for value in row:
            try:
                float(value)
                numbers += 1
            except ValueError:
                pass
    assert numbers >= len(rows) - 1, "a CSV row without a number"
    return len(rows) - 1, len(rows[0]) - 1
