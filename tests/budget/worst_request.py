"""Run one page at the worst allowed settings and print its peak memory growth (bytes).

Run in a fresh process by tests/budget/test_budget.py:

    python worst_request.py causal-attention

Prints: "<peak growth bytes> <predicted bytes> <tokens>". The page runs as a student's request
does (AppTest through app.py, the settings in the URL, every cache cold), after a warm-up run of
the same page at the default settings so that imports and first-use allocations of torch,
Plotly and Streamlit are not counted as the request's.
"""

import gc
import os
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from attnviz.core.settings import request_bytes  # noqa: E402
from attnviz.server import budget  # noqa: E402
from attnviz.teach import prepare as lesson  # noqa: E402
from bench.support.pages import app_pages  # noqa: E402
from ui import cache  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")
# Within the text box's 2,000 characters, and more than the 256-token cap.
TEXT = "The quick brown fox jumps over the lazy dog. " * 44
TEXT2 = "Attention is all you need, said the paper in 2017. " * 38


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


class PeakSampler:
    """Samples this process's resident memory every millisecond; ``peak`` is the highest seen.
    (``ru_maxrss`` would include the peak of importing torch, before the request began.)"""

    def __init__(self) -> None:
        self.peak = rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.001):
            self.peak = max(self.peak, rss())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss())


def worst_query() -> dict[str, str]:
    s = budget.worst_settings()
    return {
        "text": TEXT,
        "text2": TEXT2,
        "d_in": str(s.d_in),
        "d_out": str(s.d_out),
        "heads": str(s.num_heads),
        "ctx": str(s.context_length),
        "dropout": str(s.dropout),
        "bias": "true",
        "train": "true",
    }


def run_page(page_file: str, query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(page_file).run()
    problems = [e.value for e in at.exception] + [e.value for e in at.error]
    assert not problems, problems
    return at


def main(url_path: str) -> None:
    page_file = next(p.path for p in app_pages() if p.url_path == url_path)
    run_page(page_file, {})  # warm-up at the defaults
    cache.clear_all()
    gc.collect()
    before = rss()
    with PeakSampler() as sampler:
        at = run_page(page_file, worst_query())
    growth = sampler.peak - before
    s = budget.worst_settings()
    tokens = lesson.prepare(TEXT, s).num_tokens
    kept = {k: at.query_params[k] for k in ("text", "text2", "d_out", "train")}
    assert kept == {"text": TEXT, "text2": TEXT2, "d_out": str(s.d_out), "train": "true"}, kept
    print(growth, request_bytes(s, tokens)["total"], tokens)


if __name__ == "__main__":
    main(sys.argv[1])
