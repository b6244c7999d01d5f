"""bench/first_visit.py's byte counting, fed the browser's network events by hand (the real
count runs in Chromium in tests/deploy/test_first_visit.py)."""

from __future__ import annotations

import base64

from bench import first_visit


class FakeCDP:
    def __init__(self):
        self.handlers = {}

    def on(self, event, handler):
        self.handlers[event] = handler

    def emit(self, event, **payload):
        self.handlers[event](payload)


def response(rid, url, mime, headers, **flags):
    return {
        "requestId": rid,
        "response": {"url": url, "mimeType": mime, "status": 200, "headers": headers, **flags},
    }


def test_network_bytes_cache_hits_and_websocket_frames_are_counted_apart():
    cdp, visit = FakeCDP(), first_visit.Visit()
    first_visit._listen(cdp, visit)
    js = "http://h/static/js/a.js"
    cdp.emit("Network.requestWillBeSent", requestId="1", request={"url": js})
    cdp.emit(
        "Network.responseReceived",
        **response("1", js, "application/javascript", {"Content-Encoding": "gzip"}),
    )
    cdp.emit("Network.dataReceived", requestId="1", dataLength=3000, encodedDataLength=900)
    cdp.emit("Network.loadingFinished", requestId="1", encodedDataLength=1000)
    cached = "http://h/static/js/b.js"
    cdp.emit("Network.requestWillBeSent", requestId="2", request={"url": cached})
    cdp.emit("Network.requestServedFromCache", requestId="2")
    cdp.emit("Network.responseReceived", **response("2", cached, "application/javascript", {}))
    cdp.emit("Network.loadingFinished", requestId="2", encodedDataLength=0)
    frame = base64.b64encode(b"x" * 250).decode()
    cdp.emit(
        "Network.webSocketFrameReceived",
        requestId="3",
        response={"opcode": 2, "payloadData": frame},
    )

    assert visit.http_bytes == 1000
    assert visit.websocket_bytes == 250 and visit.websocket_frames == 1
    assert visit.total == 1250
    assert [f.url for f in visit.over_network()] == [js]
    fetched = visit.fetches["1"]
    assert fetched.encoding == "gzip" and fetched.static and fetched.decoded == 3000
    assert visit.fetches["2"].from_cache and visit.fetches["2"].wire == 0
    assert visit.by_kind()["javascript"] == 1000
