"""A developer's profiler for one page run: ``ATTNVIZ_PROFILE=/path/to/file.txt`` appends a
profile of every page run to that file. By default it is pyinstrument's (a dev requirement),
which samples wall time; with ``ATTNVIZ_PROFILE_CPU=1`` it is cProfile timed by the script
thread's own CPU clock, which a busy machine does not inflate (``ATTNVIZ_PROFILE_LINES``: how
many functions it lists, 45 by default). Off, it costs one environment lookup."""

from __future__ import annotations

import os
from contextlib import contextmanager


@contextmanager
def page_profile():
    target = os.environ.get("ATTNVIZ_PROFILE")
    if not target:
        yield
        return
    if os.environ.get("ATTNVIZ_PROFILE_CPU"):
        with _cpu_profile(target):
            yield
        return
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005)
    profiler.start()
    try:
        yield
    finally:
        profiler.stop()
        with open(target, "a", encoding="utf-8") as out:
            out.write(
                profiler.output_text(
                    unicode=False, color=False, show_all=bool(os.environ.get("ATTNVIZ_PROFILE_ALL"))
                )
            )


@contextmanager
def _cpu_profile(target: str):
    import cProfile
    import io
    import pstats
    import time

    profiler = cProfile.Profile(time.thread_time_ns, 1e-9)
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        text = io.StringIO()
        lines = int(os.environ.get("ATTNVIZ_PROFILE_LINES", "45"))
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(lines)
        with open(target, "a", encoding="utf-8") as out:
            out.write(text.getvalue())
