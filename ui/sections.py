"""A page's later parts in closed boxes that build nothing until opened.

A class's clicks are mostly cold runs (each student's own sentence): every element a page sends
and every number it computes is paid again on each. The parts of a pass page that go deeper
than its main story (page 3's dropout lab and batch, page 2's "why divide by √d_k" and v1
against v2, page 4's wrapper and reshapes) stand in a closed box under their title; opening it
reruns the page, and only then is the part computed and drawn. Each box is bound to the URL
under its key (``lab=true``), so a lecturer's link opens the same parts.

A box opens by itself, drawn as a plain section, when a "Predict first" question is asked in it
(its home is one of the section's panels: the question must be seen) or when the link names a
cell of it for "Explain a cell".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import streamlit as st

# The URL names of the closed parts: page 3's, page 2's, page 4's.
LAB = "lab"
BATCH = "batch"
SCALING = "scaling"
V1_V2 = "v1v2"
RESHAPE = "reshape"
WRAPPER = "wrapper"
KEYS = (LAB, BATCH, SCALING, V1_V2, RESHAPE, WRAPPER)


@contextmanager
def section(
    title: str, key: str, *, homes: Iterable[str] = (), force: bool = False
) -> Iterator[bool]:
    """A part of the page under ``title``: yields whether to draw it now. Closed (the
    default), it is one box labelled ``title`` and yields False; opened, it yields True inside
    the box. ``homes``: the panel keys (and predict sections) drawn in it; when a waiting or
    answered "Predict first" question is asked at one of them, or ``force`` (the link names a
    cell of it), the part is drawn as a plain section with a header instead."""
    from . import predict

    if force or predict.asks_at(homes):
        st.header(title)
        yield True
        return
    with st.expander(title, key=key, on_change="rerun", bind="query-params") as box:
        yield bool(box.open)
