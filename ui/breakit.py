"""Break it: the pass's classic bugs (the registry in attnviz/bugs.py), each one line away from
the engine's code; turned on, its diff, what it does to the numbers and the check that catches it.
"""

from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from attnviz import bugs as B
from attnviz.panel import Panel, Style

from . import links
from .panels import badge, show
from .text import md_escape

NONE = links.NO_BUG


def bug_table(pass_kind: str, hidden: dict[str, str | None]) -> None:
    """The pass's bugs as a Markdown table (the engine's own text, escaped all the same)."""
    rows = ["| bug | caught by | what goes wrong | at these settings |", "|---|---|---|---|"]
    for bug in B.bugs_for(pass_kind):
        now = hidden[bug.key] or ("raises an error" if bug.raises else "visible")
        cells = (bug.title, bug.check, bug.symptom, now)
        rows.append("| " + " | ".join(md_escape(c) for c in cells) + " |")
    st.markdown("\n".join(rows))


def break_it(
    pass_kind: str,
    x: torch.Tensor,
    spec,
    hidden: dict[str, str | None],
    labels,
    *,
    key: tuple,
    book: bool,
) -> None:
    """List the pass's classic bugs (the registry in attnviz/bugs.py); when one is turned on,
    show its diff, the wrong result beside the right one (or the exact error it raises) and the
    badge that catches it.

    ``x`` and ``spec`` are the inputs and module the bug runs on; ``hidden`` says, per bug, why
    it cannot show at these settings (``Bug.hidden_at``); ``key`` (plain values naming ``x`` and
    ``spec``) caches each bug's outcome for every session.
    """
    from . import cache

    st.subheader("Break it")
    st.write(
        "Each classic bug below is one line away from the engine's code. Turn one on to see what "
        "it does to the numbers, and which live check catches it."
    )
    bug_table(pass_kind, hidden)
    bugs = B.bugs_for(pass_kind)
    titles = {bug.title: bug for bug in bugs}
    choice = st.selectbox(
        "Turn on a bug", [NONE, *titles], key=links.bug_key(pass_kind), bind="query-params"
    )
    if choice == NONE:
        return
    bug = titles[choice]
    st.code(bug.diff(), language="diff")
    reason = hidden[bug.key]
    if reason:
        hint = " (turn off book mode first)" if book else ""
        st.warning(md_escape(f"This bug is {reason}{hint}."))
    outcome, right_check, drawn = cache.lesson_of(
        ("bug", pass_kind, *key, bug.key), lambda: _outcome(bug.key, x, spec, labels)
    )
    if outcome.error or drawn is None or outcome.check is None:
        st.error("With this bug the pass does not run. PyTorch raises:")
        st.code(f"RuntimeError: {outcome.error}", language="text")
        if outcome.why:
            st.write(md_escape("Why: " + outcome.why + "."))
        return
    wrong, right = drawn
    left, mid = st.columns(2)
    with left:
        show(wrong, numbers=False)
        badge(outcome.check)
    with mid:
        show(right, numbers=False)
        badge(right_check)


def _outcome(bug_key: str, x: torch.Tensor, spec, labels):
    """The bug's outcome, the check on the correct code, and (unless it raised) the wrong and
    the right weights as panels on one colour scale: built once per setting and bug."""
    outcome, right_check = B.outcome(bug_key, x, spec)
    if outcome.error or outcome.wrong is None or outcome.check is None:
        return outcome, right_check, None
    wrong = _first_matrix(outcome.wrong.attn_weights)
    right = _first_matrix(outcome.right.attn_weights)
    top = float(max(1.0, np.nanmax(np.abs(wrong.numpy())) if wrong.numel() else 1.0))
    labels = tuple(labels)
    style = Style(zmax=top)
    drawn = tuple(
        Panel(f"bug_{tag}_{bug_key}", t, labels, labels, title=title, style=style)
        for tag, t, title in (
            ("w", wrong, "With the bug: weights"),
            ("r", right, "Correct: weights"),
        )
    )
    return outcome, right_check, drawn


def _first_matrix(t: torch.Tensor) -> torch.Tensor:
    while t.dim() > 2:
        t = t[0]
    return t
