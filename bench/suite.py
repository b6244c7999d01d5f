"""Measurements shared by the benchmark command (bench/run.py) and the CI guard (bench/guard.py).

Every figure is measured side by side in one run and quoted as a median and a ratio: this
machine is shared and noisy, so absolute times vary from run to run.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHARED_CACHE = ROOT.parent / "shared" / "tiktoken_cache"
if SHARED_CACHE.is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(SHARED_CACHE))

from bench.support.pages import app_pages  # noqa: E402

REFERENCE_APP = ROOT / "bench" / "reference_app.py"
LONG_TEXT = (
    "Attention lets every token look back at the tokens before it and decide how much of each "
    "to mix into its own representation. "
)

# The settings each page is measured at, as URL query parameters.
SETTINGS = {
    "default": {},
    "book": {"book": "true"},
    "gpt2-small, 64 tokens": {
        "d_in": "768",
        "d_out": "768",
        "heads": "12",
        "ctx": "1024",
        "text": None,
    },  # text filled to 64 tokens below
    "gpt2-small, 256 tokens": {
        "d_in": "768",
        "d_out": "768",
        "heads": "12",
        "ctx": "1024",
        "text": None,
    },
}


def text_of_tokens(n: int) -> str:
    """A text of exactly ``n`` GPT-2 tokens (or the fallback's equivalent)."""
    from attnviz.core.tokens import get_tokenizer

    tok = get_tokenizer()
    words = (LONG_TEXT * (1 + n // 10)).split(" ")
    text = ""
    for w in words:
        candidate = (text + " " + w) if text else w
        if len(tok.encode(candidate)) > n:
            break
        text = candidate
    return text


def query_for(name: str) -> dict[str, str]:
    q = dict(SETTINGS[name])
    if "text" in q:
        q["text"] = text_of_tokens(64 if "64" in name else 256)
    return q


@dataclass
class PageRun:
    page: str
    setting: str
    median_ms: float
    runs: int
    figure_bytes: int
    charts: int
    error: str | None = None


def _figure_bytes(at) -> tuple[int, int]:
    charts = at.get("plotly_chart")
    return sum(len(c.proto.spec) for c in charts), len(charts)


def _ready(page_path: str | None, query: dict, script: Path | None = None):
    """An AppTest on the page with ``query`` in its URL, run twice so every cache is warm."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(script or ROOT / "app.py"), default_timeout=300)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    if page_path:
        at.switch_page(page_path).run()
    at.run()
    return at


def measure_page(
    page_path: str | None, query: dict, reruns: int = 5, script: Path | None = None
) -> PageRun:
    """Median server-side rerun time of one page (AppTest, warm caches) and its figure bytes."""
    at = _ready(page_path, query, script)
    if at.exception:
        return PageRun(page_path or str(script), "", float("nan"), 0, 0, 0, at.exception[0].message)
    times = []
    for _ in range(reruns):
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
    size, charts = _figure_bytes(at)
    return PageRun(
        page_path or script.name, "", statistics.median(times) * 1e3, reruns, size, charts
    )


def measure_ratio(page_path: str, query: dict, reruns: int = 15) -> tuple[float, float]:
    """Median rerun times (ms) of a page and of the reference app, measured alternately, so
    that whatever else the machine is doing slows both alike."""
    page, reference = _ready(page_path, query), _ready(None, {}, REFERENCE_APP)
    if page.exception:
        raise RuntimeError(f"{page_path} raised: {page.exception[0].message}")
    times: dict[str, list[float]] = {"page": [], "reference": []}
    for _ in range(reruns):
        for name, at in (("page", page), ("reference", reference)):
            start = time.perf_counter()
            at.run()
            times[name].append(time.perf_counter() - start)
    return statistics.median(times["page"]) * 1e3, statistics.median(times["reference"]) * 1e3


def measure_reference(reruns: int = 5) -> PageRun:
    return measure_page(None, {}, reruns, script=REFERENCE_APP)


def measure_pages(settings: list[str], reruns: int = 5, pages=None) -> list[PageRun]:
    out = []
    for page in pages or app_pages():
        for name in settings:
            run = measure_page(page.path, query_for(name), reruns)
            run.page, run.setting = page.path, name
            out.append(run)
    return out


def package_versions() -> dict[str, str]:
    from importlib.metadata import version

    return {p: version(p) for p in ("streamlit", "torch", "plotly", "tiktoken", "pandas", "numpy")}


def machine() -> dict:
    import platform

    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch threads": __import__("torch").get_num_threads(),
        **package_versions(),
    }


def load_json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}
