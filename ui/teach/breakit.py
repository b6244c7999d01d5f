"""Break it: the pass's classic bugs (the registry in attnviz/teach/bugs.py), each one line away from
the engine's code; turned on, its diff, what it does to the numbers and the check that catches it.
"""

from __future__ import annotations

import streamlit as st
import torch

from attnviz.teach import bugs
from attnviz.teach import checks as live_checks
from attnviz.teach.panel import Panel, Style
from ui import links, url
from ui.render import badge, show
from ui.teach.predict import Plan
from ui.text import md_escape

NONE = links.NO_BUG


INTRO = (
    "Each classic bug below is one line away from the engine's code. Turn one on to see what it "
    "does to the numbers, and which live check catches it (or the error PyTorch raises)."
)


def caught_by(bug: bugs.Bug, error: str | None) -> str:
    """The table's "caught by" cell: the error PyTorch raises when the bug makes it raise at
    these settings (no check ever runs then), else the title of the check's badge."""
    if error is not None:
        return f"PyTorch itself: it raises RuntimeError here ({_first_clause(error)})"
    return live_checks.TITLES[bug.check]


def _first_clause(error: str, limit: int = 90) -> str:
    line = error.strip().splitlines()[0] if error.strip() else "RuntimeError"
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def bug_table(
    pass_kind: str, hidden: dict[str, str | None], errors: dict[str, str | None] | None = None
) -> str:
    """The pass's bugs as a Markdown table (the engine's own text, escaped all the same). A bug
    is caught by its check's badge, named by the badge's title, or, when it makes PyTorch
    raise at these settings (``errors``: bug key -> the error, from its run), by that error;
    the last column says whether these settings hide it (what it does here is said once it is
    turned on, from its run)."""
    errors = errors or {}
    rows = [
        "| bug | caught by | what goes wrong | hidden by these settings? |",
        "|---|---|---|---|",
    ]
    for bug in bugs.bugs_for(pass_kind):
        by = caught_by(bug, errors.get(bug.key))
        cells = (bug.title, by, bug.symptom, hidden[bug.key] or "no")
        rows.append("| " + " | ".join(md_escape(c) for c in cells) + " |")
    return "\n".join(rows)


def break_it(
    pass_kind: str,
    x: torch.Tensor,
    spec,
    hidden: dict[str, str | None],
    labels,
    *,
    key: tuple,
    book: bool,
    plan: Plan | None = None,
) -> None:
    """List the pass's classic bugs (the registry in attnviz/teach/bugs.py); when one is turned on,
    show its diff, the wrong result beside the right one (or the exact error it raises) and the
    badge that catches it.

    ``x`` and ``spec`` are the inputs and module the bug runs on; ``hidden`` says, per bug, why
    it cannot show at these settings (``Bug.hidden_at``); ``key`` (plain values naming ``x`` and
    ``spec``) caches each bug's outcome for every session. ``plan``: the page's "Predict
    first" plan (while its question waits, the badges' numbers wait).
    """
    from ui import cache

    st.subheader("Break it")
    page_bugs = bugs.bugs_for(pass_kind)

    def ran(bug_key: str):
        return cache.lesson_of(
            ("bug", pass_kind, *key, bug_key), lambda: _outcome(bug_key, x, spec, labels)
        )

    # the bugs that can make PyTorch raise: run (once per setting) to know if they do here
    errors = {bug.key: ran(bug.key)[0].error for bug in page_bugs if bug.raises}
    # one element: the intro, the table
    st.markdown(INTRO + "\n\n" + bug_table(pass_kind, hidden, errors))
    titles = {bug.title: bug for bug in page_bugs}
    choice = st.selectbox(
        "Turn on a bug", [NONE, *titles], key=url.bug(pass_kind), bind="query-params"
    )
    if choice == NONE:
        return
    bug = titles[choice]
    st.code(bug.diff(), language="diff")
    reason = hidden[bug.key]
    if reason:
        hint = " (turn off book mode first)" if book else ""
        st.warning(md_escape(f"This bug is {reason}{hint}."))
    outcome, right_check, drawn = ran(bug.key)
    st.markdown(md_escape(f"At these settings: {outcome.verdict}."))
    if outcome.error or outcome.wrong is None or outcome.check is None:
        st.error("With this bug the pass does not run. PyTorch raises:")
        st.code(f"RuntimeError: {outcome.error}", language="text")
        if outcome.why:
            st.write(md_escape("Why: " + outcome.why + "."))
        return
    # The matrices that show the bug's effect (the buggy ones first, then the correct ones),
    # two to a row, each on the colour kind and scale the engine chose.
    for start in range(0, len(drawn), 2):
        for column, panel in zip(st.columns(2), drawn[start : start + 2], strict=False):
            with column:
                show(panel, numbers=False)
    for sentence in outcome.sentences:
        st.caption(md_escape(sentence))
    left, mid = st.columns(2)
    with left:
        badge(outcome.check, plan=plan)
    with mid:
        badge(right_check, plan=plan)


def _outcome(bug_key: str, x: torch.Tensor, spec, labels):
    """The bug's outcome, the check on the correct code, and (unless it raised) the matrices
    that show its effect (``BugOutcome.shown``) as panels: built once per setting and bug."""
    outcome, right_check = bugs.outcome(bug_key, x, spec)
    if outcome.error or outcome.wrong is None or outcome.check is None:
        return outcome, right_check, ()
    labels = tuple(labels)
    names = {0: f"bug_w_{bug_key}", 1: f"bug_r_{bug_key}"}
    drawn = tuple(
        Panel(
            names.get(i, f"bug_{i}_{bug_key}"),
            shown.values,
            labels,
            labels,
            title=shown.title,
            style=Style(colour=shown.kind, zmax=shown.zmax),
        )
        for i, shown in enumerate(outcome.shown)
    )
    return outcome, right_check, drawn
