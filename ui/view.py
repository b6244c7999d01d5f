"""The page's view of its matrices: one colour switch and one token window for every panel.

A pass page calls :func:`controls` once near its top and passes the view it returns to
:func:`ui.render.show` (and ``beside``), which draws every panel of that page through it (``attnviz.teach.panel.viewed``): attention weights on the 0-1
scale or relative to an even share, and every token axis cut to the window, with a label on
each token shown. Stacks of heads past the heads grid's budget get a "Heads to show" picker
(:func:`heads_picker`). The defaults (0 to 1, every token) draw the panels exactly as built.
"""

from __future__ import annotations

import streamlit as st

from attnviz import figures
from attnviz.teach.panel import Panel, View, heads_that_fit
from ui import links, url

# Each control is bound to the URL under its key (ui/links.py checks the link's values).
SCALE_KEY = url.COLOUR
WINDOW_KEY = url.TOKENS
SCALES = links.SCALES
# Up to this many tokens every token already has its own labelled row (figures.py says why):
# a window is offered only past it.
WINDOW_FROM = figures.LABEL_EVERY_TOKEN_UP_TO


def controls(num_tokens: int) -> View:
    """Draw the page's view controls (and the "Copy link to this view" button); the page passes
    the view they set to every panel it shows."""
    links.copy_link_button()
    scale = st.radio(
        "Color",
        SCALES,
        horizontal=True,
        key=SCALE_KEY,
        bind="query-params",
        help=(
            "Relative: each weight times the number of keys its row can see (all T in passes "
            "1 and 2, i + 1 under the causal mask), on a log scale; white is an even share."
        ),
    )
    window = None
    if num_tokens > WINDOW_FROM:
        last = num_tokens - 1
        given = st.query_params.get_all(WINDOW_KEY)
        if given and max(int(v) for v in given) > last:  # read_url checked they are numbers
            st.warning(
                f"The link's token window ends past this text's last token ({last}), so it is "
                f"cut to end there."
            )
        # A new text (another length) starts with every token shown: Streamlit resets a
        # slider whose bounds change.
        first, end = st.slider(
            "Show tokens i to j", 0, last, (0, last), key=WINDOW_KEY, bind="query-params"
        )
        if (first, end) != (0, last):
            window = (int(first), int(end))
    return View(relative=scale == SCALES[1], window=window)


def heads_picker(panel: Panel, view: View) -> tuple[int, ...]:
    """For a (heads, rows, cols) panel past the grid's budget at this window, a "Heads to
    show" multiselect (at most as many heads as fit; at first heads 0 onward) and the heads
    chosen; every head when all of them fit (no picker then)."""
    H, rows, cols = panel.values.shape
    if view.window is not None:
        first, last = view.window
        rows = len(panel.rows[first : last + 1]) or rows
        cols = len(panel.cols[first : last + 1]) or cols
    fit = heads_that_fit(rows, cols)
    if fit >= H:
        return tuple(range(H))
    default = list(range(fit))
    key = url.HEADS_SHOWN
    if len(st.session_state.get(key) or ()) > fit:  # picked at a shorter window: fewer fit now
        st.session_state[key] = list(st.session_state[key])[:fit]
    links.unknown_choices(key, [links.head_name(h) for h in range(H)], "the first heads")
    chosen = st.multiselect(
        "Heads to show",
        list(range(H)),
        default=default,
        max_selections=fit,
        format_func=links.head_name,
        key=key,
        bind="query-params",
    )
    st.caption(f"{fit} of the {H} heads fit in one figure at {rows}×{cols} tokens.")
    if not chosen:
        st.info("No head is chosen, so the first heads are drawn.")
        return tuple(default)
    return tuple(sorted(int(h) for h in chosen))
