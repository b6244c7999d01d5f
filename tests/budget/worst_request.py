"""Run one request at the worst allowed settings and print its peak memory growth (bytes).

Run in a fresh process by tests/budget/test_budget.py:  python worst_request.py
Prints: "<peak growth bytes> <predicted bytes>".
"""

import gc
import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from attnviz import checks, lesson  # noqa: E402
from attnviz.settings import BOUNDS, Settings, request_bytes  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")


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


def worst_settings() -> Settings:
    """The largest sizes the settings allow, with heads that divide d_out."""
    d = int(BOUNDS["d_out"][1])
    heads = max(h for h in range(1, int(BOUNDS["num_heads"][1]) + 1) if d % h == 0)
    return Settings(
        d_in=int(BOUNDS["d_in"][1]),
        d_out=d,
        num_heads=heads,
        context_length=int(BOUNDS["context_length"][1]),
        dropout=0.1,
    )


def main() -> None:
    s = worst_settings()
    text = "The quick brown fox jumps over the lazy dog. " * 60  # more than the 256-token cap
    small = Settings()
    warm = lesson.prepare("warm up the kernels", small)
    lesson.multihead(warm, small)
    gc.collect()
    before = rss()
    with PeakSampler() as sampler:
        prep = lesson.prepare(text, s)
        # What the heaviest page (multi-head) computes on a cold cache: the trace, then the
        # checks that rebuild the module, a wrapper and nn.MultiheadAttention from it.
        trace = lesson.multihead(prep, s)
        module = trace.spec.build()
        checks.wrapper_equals_split(module, trace["inputs"])
        checks.matches_torch_mha(module, trace["inputs"])
        checks.no_future_leak(module.eval(), trace["inputs"])
    growth = sampler.peak - before
    print(growth, request_bytes(s, prep.num_tokens)["total"], prep.num_tokens, s)


if __name__ == "__main__":
    main()
