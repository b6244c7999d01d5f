"""A developer's profiler for one page run: ``ATTNVIZ_PROFILE=/path/to/file.txt`` appends a
pyinstrument profile of every page run to that file (pyinstrument is a dev requirement).
Off, it costs one environment lookup."""

from __future__ import annotations

import os
from contextlib import contextmanager


@contextmanager
def page_profile():
    target = os.environ.get("ATTNVIZ_PROFILE")
    if not target:
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
