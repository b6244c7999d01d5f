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

from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from ui import url

# Each part's title (its header when drawn open) and what its closed box says it holds.
TITLES = {
    url.LAB: ("Dropout lab", "what nn.Dropout does to the weights in training"),
    url.BATCH: ("A batch of two texts", "both sidebar texts through the module at once"),
    url.SCALING: ("Why divide by √d_k", "the softmax at growing widths, and on your text"),
    url.V1_V2: ("SelfAttention_v1 against v2", "their initial weights, and exercise 3.1"),
    url.RESHAPE: ("The reshape walk", "view, transpose and contiguous, with this run's strides"),
    url.WRAPPER: ("The wrapper against the weight split", "two ways to compute the heads"),
}


def label(key: str) -> str:
    """The closed box's label: the part's title, then what it holds."""
    title, holds = TITLES[key]
    return f"{title}: {holds}"


@contextmanager
def section(key: str, *, force: bool = False) -> Iterator[bool]:
    """The part of the page named ``key`` (:data:`TITLES`): yields whether to draw it now.
    Closed (the default), it is one box labelled :func:`label` and yields False; opened, it
    yields True inside the box. With ``force`` (a "Predict first" question is asked in it, or
    the link names a cell of it) the part is drawn as a plain section under its title."""
    if force:
        st.header(TITLES[key][0])
        yield True
        return
    with st.expander(label(key), key=key, on_change="rerun", bind="query-params") as box:
        yield bool(box.open)
