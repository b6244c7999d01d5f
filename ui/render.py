"""Building blocks every page uses: panels (through the page's view), badges, code, the book's
printouts beside ours, a page's top, panels side by side.

Charts go out through ``ui.charts``; their numbers tables and CSVs come from ``ui.numbers``;
the break-it block is ``ui.teach.breakit``.
"""

from __future__ import annotations

import html
import re
import tomllib
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

import pandas as pd
import streamlit as st
import torch

from attnviz.teach import bugs
from attnviz.teach import checks as live_checks
from attnviz.teach.panel import Panel, View
from ui import url
from ui.charts import chart
from ui.numbers import numbers_box, plot
from ui.text import md_escape

if TYPE_CHECKING:
    from ui.teach.predict import Plan
    from ui.teach.slides import PageContext


def drawn_from(plan: Plan, args: tuple, *, variant: str = "v2", head: int = 0) -> None:
    """Write on the page's ``plan`` which computation the panels drawn after this come from
    (the text, settings and book flag of the page's cache, page 2's module, page 4's head), for
    their "Reproduce" snippets (:func:`ui.teach.slides.box`)."""
    from ui.teach import slides

    plan.source = slides.PageContext(tuple(args), variant, head)


def plan_or_present(page: str, key: tuple, numbers_of, mode, cfg, lesson, checks=None) -> Plan:
    """This run's "Predict first" plan (:func:`ui.teach.predict.start`, on with ``mode``'s
    switch), made before the page lays anything out. In presenter mode the ``lesson``'s steps
    and live checks (its own, or ``checks``) are walked instead (:func:`ui.teach.present.show`,
    the plan asking its questions at their steps), and the page stops there."""
    from ui.teach import predict, present

    steps = lesson.steps if cfg.present else None
    plan = predict.start(page, key, numbers_of, on=mode.predict, steps=steps)
    if cfg.present:
        present.show(lesson.steps, lesson.checks if checks is None else checks, plan=plan)
        st.stop()
    return plan


def pass_view_controls(
    plan: Plan, args: tuple, num_tokens: int, *, variant: str = "v2"
) -> tuple[bool, View]:
    """A pass page's controls above its panels: the exact-numbers toggle, then the colour
    scale and token window for every panel below (:func:`ui.view.controls`); the run's
    computation is written on ``plan`` for the "Reproduce" snippets (:func:`drawn_from`)."""
    from ui import view

    numbers = show_numbers_toggle()
    drawn_from(plan, args, variant=variant)
    return numbers, view.controls(num_tokens)


def show_numbers_toggle(default: bool = False) -> bool:
    """One page-level view control: show each matrix's exact numbers under it. Off by default:
    small matrices already carry their values in the cells, and every table costs a rerun time.
    Bound to ``numbers`` in the URL."""

    return st.toggle(
        "Show the exact numbers under each matrix",
        value=default,
        key=url.NUMBERS,
        bind="query-params",
    )


def notes(messages) -> None:
    for message in messages:
        st.info(md_escape(message))


def matrix(
    panel: Panel, *, numbers: bool, viewed: bool = False, source: PageContext | None = None
) -> None:
    """A panel's figure and, under it, its caption and its exact numbers and CSV (see
    :func:`ui.numbers.numbers_box`); a (heads, rows, cols) stack's CSV holds every head. The
    opened box also holds the figure's downloads for slides, its LaTeX and its snippet
    (:func:`ui.teach.slides.box`; ``viewed``: the panel is the page's view of a larger one;
    ``source``: the computation it comes from, for its "Reproduce" script)."""
    from ui.teach import slides

    key = f"fig_{panel.key}"
    chart(panel, key=key)
    if panel.caption:
        st.caption(panel.caption)
    numbers_box(
        panel.values,
        panel.rows,
        panel.cols,
        key=panel.key,
        numbers=numbers,
        extras=lambda: slides.box(panel, chart_key=key, viewed=viewed, context=source),
    )


def show(panel: Panel, *, numbers: bool, view: View = View(), plan: Plan | None = None) -> None:
    """One engine-built panel: its figure, exact numbers and CSV (see :func:`matrix`), drawn
    through the page's ``view`` (``ui.view.controls``: the colour scale, the token window, and
    for a stack of heads past the grid's budget the heads picked). Each viewed panel is built
    once per panel and view, in the shared cache, and its figure drawn once from its data.
    ``plan``: the page's "Predict first" plan (``ui.teach.predict.start``), which may draw a
    question, a hidden notice or the answer in the panel's place."""
    from ui import cache
    from ui import view as page_view

    if plan is not None and plan.panel(panel, numbers=numbers, view=view):
        return  # "Predict first": a question, or its answer, stands here (ui/teach/predict.py)
    if panel.values.dim() == 3:
        heads = page_view.heads_picker(panel, view)
        if heads != (panel.heads or tuple(range(panel.values.shape[0]))):
            view = replace(view, heads=heads)
    shown = cache.panel_view(panel, view) if not view.is_default else None
    source = plan.source if plan is not None else None
    matrix(shown or panel, numbers=numbers, viewed=shown is not None, source=source)


_BADGE_LOOK: dict[str, tuple[Literal["green", "red", "orange", "gray"], str]] = {
    "pass": ("green", ":material/check_circle:"),
    "fail": ("red", ":material/cancel:"),
    "documented": ("orange", ":material/info:"),
    "n/a": ("gray", ":material/remove_circle:"),
}


# The fold under a live check's sentence that holds its arithmetic: a <details> element, which
# opens in the browser with no rerun. It goes out through st.html, one for a group of checks:
# HTML inside st.markdown would make every browser download one more Markdown bundle
# (rehype-raw, about 60 KB gzipped) on its first visit.
HOW_CLOSE = "How close, in numbers"


def badge_text(result: live_checks.CheckResult, plan: Plan | None = None) -> str:
    """One live check as Markdown: its coloured badge (the text ``st.badge`` writes), then on
    the next line, in small type, what holds in words (``CheckResult.words``). While a "Predict
    first" question of ``plan`` waits, a note stands instead of the words (the largest weight
    ... can give an answer away). Everything the check says is escaped."""
    from ui.teach import predict

    colour, icon = _BADGE_LOOK[result.status]
    label = f"{result.title}: {result.status}".replace("[", "\\[").replace("]", "\\]")
    head = f":{colour}-badge[{icon} {label}]"
    if plan is not None and plan.waiting():
        return f"{head}  \n:small[{predict.CHECK_NUMBERS_WAIT}]"
    return f"{head}  \n:small[{md_escape(result.words)}]"


def fold_html(results, plan: Plan | None = None) -> str | None:
    """The closed "How close, in numbers" fold for a group of live checks: one line per check
    that compared numbers (``CheckResult.numbers``), named by its title; None when none did, or
    while a "Predict first" question of ``plan`` waits (the numbers wait with it)."""
    if plan is not None and plan.waiting():
        return None
    lines = [
        f'<div><span class="check">{html.escape(r.title)}</span>: {html.escape(r.numbers)}</div>'
        for r in results
        if r.numbers
    ]
    if not lines:
        return None
    return f'<details class="how-close"><summary>{HOW_CLOSE}</summary>{"".join(lines)}</details>'


def _checks(parts: list[str], results, plan: Plan | None) -> None:
    """The Markdown of a group of checks, then their fold under it (two elements at most)."""
    st.markdown("\n\n".join(parts))
    fold = fold_html(results, plan)
    if fold is not None:
        st.html(fold)


def badge(*results: live_checks.CheckResult, plan: Plan | None = None) -> None:
    """Live checks: each a coloured badge and its sentence, one after the other in one element,
    their numbers folded under them."""
    _checks([badge_text(r, plan) for r in results], results, plan)


def badges(results, *, plan: Plan | None = None, above=()) -> None:
    """The page's live checks, one after the other under a bold heading, in one element (each
    element is a message of its own, on every page run), their numbers folded under them.
    ``above``: checks the page has already shown beside their panels, named in one line
    instead of again."""
    parts = ["**Live checks**"]
    if above:
        titles = ", ".join(f"“{md_escape(r.title)}” ({r.status})" for r in above)
        parts.append(f":small[Shown above, beside what they check: {titles}.]")
    parts += [badge_text(r, plan) for r in results]
    _checks(parts, results, plan)


def table(key: tuple, name: str, make: Callable[[], pd.DataFrame]) -> None:
    """A lesson's table without its index, sent as the Arrow table ``cache.arrow_table`` made
    once for every session (``st.dataframe`` converts a DataFrame again on every run). ``key``:
    the lesson's key; ``make`` builds the DataFrame on a miss."""
    from ui import cache

    st.dataframe(cache.arrow_table(key, name, make), hide_index=True)


def formatted_table(
    frame: pd.DataFrame, formats: dict[str, str], width: Literal["small"] | None = None
) -> None:
    """``frame`` without its index, each column named in ``formats`` printed in its printf
    format (``"%.4f"``, ``"%.2e"``, ...), at ``width`` when given (Streamlit's own otherwise)."""
    config = {c: st.column_config.NumberColumn(format=f, width=width) for c, f in formats.items()}
    st.dataframe(frame, hide_index=True, column_config=config)


def source(*functions, title: str = "The engine's code for this") -> None:
    """The engine's own source, so the picture and the code cannot disagree: in a closed box
    that sends the code only once opened (opening it reruns the page)."""
    with st.expander(title, key="engine_code", on_change="rerun") as box:
        if box.open:
            for fn in functions:
                st.code(bugs.source_of(fn), language="python")


def printout(label: str, tensor: torch.Tensor) -> None:
    """A tensor printed the way PyTorch prints it (4 decimals). Long rows wrap rather than
    scroll, so no printed number is ever cut off in a narrow column."""
    st.code(f"{label}\n{tensor.detach()!r}", language="text", wrap_lines=True)


# A printed row longer than this does not fit half the page at 1024 px (about 28 monospace
# characters there): such printouts are stacked, one full-width block above the other.
BESIDE_MAX_CHARS = 28


def book_beside(title: str, ours: torch.Tensor, printed_name: str) -> bool:
    """The app's tensor beside the chapter's printout (or above it, when its rows are too long
    for half the page), with a match badge. No printed number is ever cut off."""
    from attnviz.core import book

    match, worst = book.matches_printout(ours, printed_name)
    st.markdown(f"**{md_escape(title)}**")
    printed = book.printed(printed_name)
    widest = max(len(line) for t in (ours, printed) for line in repr(t.detach()).splitlines())
    if widest <= BESIDE_MAX_CHARS:
        left, right = st.columns(2)
        with left:
            printout("attnviz computed:", ours)
        with right:
            printout("the chapter printed:", printed)
    else:
        printout("attnviz computed:", ours)
        printout("the chapter printed:", printed)
    if match:
        st.badge("Matches the book", color="green", icon=":material/check_circle:")
    else:
        st.badge("Differs from the book", color="red", icon=":material/cancel:")
    st.caption(f"largest difference {worst:.1e} (the printout has 4 decimals)")
    return match


def book_blocks(blocks) -> None:
    """Each (title, our tensor, printed name) beside the chapter's printout (:func:`book_beside`)."""
    for title, tensor, printed in blocks:
        book_beside(title, tensor, printed)


def lesson_claims(lesson, panel: Panel, *, plan: Plan | None = None) -> None:
    """The sentences ``lesson`` states about ``panel`` (a lesson with ``panels`` by name and
    ``claims_on(name)``: pages 1 and 2), in small type under it, one element; none while a
    "Predict first" question of ``plan`` hides the panel."""
    if plan is not None and plan.hides(panel.key):
        return
    name = next(n for n, p in lesson.panels.items() if p.key == panel.key)
    shown = [md_escape(claim.text) for claim in lesson.claims_on(name)]
    if shown:  # one element, a paragraph each
        st.caption("\n\n".join(shown))


# --- the top of every pass page --------------------------------------------------------------
def prepared_or_stop(args):
    """The page's tokens and X; with no tokens, say so and stop the page (the sidebar stays)."""
    from ui import cache

    prep = cache.prepared(*args)
    notes(prep.messages)
    if prep.empty:
        st.stop()
    return prep


def heads_fit_or_stop(cfg, args) -> None:
    """On the multi-head page: when num_heads does not divide d_out, say so and stop."""
    problem = None if cfg.book else args[1].multihead_problem()  # the sizes the pass runs at
    if problem:
        st.error(
            md_escape(problem)
            + " Change d_out or num_heads in the sidebar; the other pages still work."
        )
        st.stop()


def causal_trace_or_stop(kind: str, cfg, args):
    """The trace of a causal pass ("causal" or "multihead") for this page, or a stop with the
    reason: d_out that the heads do not divide, no text, or (a note) a text past the context."""
    from attnviz.core import book
    from attnviz.teach import prepare
    from ui import cache

    if kind == "multihead":
        heads_fit_or_stop(cfg, args)
    prep = prepared_or_stop(args)
    context_length = book.CONTEXT_LENGTH if cfg.book else args[1].context_length
    _, context_note = prepare.within_context(prep, context_length)
    if context_note:
        st.warning(md_escape(context_note))
    return cache.trace(kind, *args)


def claims(items, *, plan: Plan | None = None) -> None:
    """Sentences about the numbers, computed by the engine (escaped: they name tokens); one
    about numbers a waiting question of ``plan`` hides waits too (ui/teach/predict.py). One
    paragraph each, in one element: every element is a message of its own on every page run."""
    items = list(items) if plan is None else plan.visible(items)
    shown = [md_escape(claim.text) for claim in items]
    if shown:
        st.markdown("\n\n".join(shown))


# --- way-finding: a jump to the weights map, and the next pass at the end ---------------------
WEIGHTS_ANCHOR = "weights"  # the heading just above a pass page's attention-weights map
WEIGHTS_HEADING = "The attention weights"
# Each pass page's next page (its file and its menu title): the four passes in the book's
# order, then the first page beyond the book.
NEXT_PAGE = {
    "simplified-attention": ("pages/trainable-attention.py", "2. Trainable self-attention"),
    "trainable-attention": ("pages/causal-attention.py", "3. Causal attention and dropout"),
    "causal-attention": ("pages/multi-head-attention.py", "4. Multi-head attention"),
    "multi-head-attention": ("pages/watch-attention-learn.py", "5. Watch attention learn"),
}


def jump_to_weights() -> None:
    """A line at the top of a long pass page: one click scrolls to its attention-weights map
    (the heading :func:`weights_heading` draws) and one to "Explain a cell"."""
    st.markdown(
        f"On this page: [{WEIGHTS_HEADING.lower()} ↓](#{WEIGHTS_ANCHOR}) · "
        "[explain a cell ↓](#explain-a-cell) · [the next pass ↓](#next-pass)"
    )


def weights_heading() -> None:
    """The heading right above a pass page's attention-weights map: where
    :func:`jump_to_weights` lands."""
    st.subheader(WEIGHTS_HEADING, anchor=WEIGHTS_ANCHOR)


def next_pass(page_file: str, *, book: bool = False) -> None:
    """The end of pass page ``page_file`` (its ``__file__``): a link to the next page. The
    sidebar's values live in the URL and go along in the link's own address, so the next pass
    opens on the same text and settings, in this tab or a new one (``book``: book mode, which
    goes along too, and has no sidebar values to say). The page's own values (a cell, a step,
    a question) stay behind."""
    target, title = NEXT_PAGE[Path(page_file).stem]
    carried = {k: v for k, v in st.query_params.to_dict().items() if k in url.SIDEBAR}
    st.subheader("Next", anchor="next-pass")
    st.page_link(
        target,
        label=f"Next: {title}",
        icon=":material/arrow_forward:",
        query_params=carried or None,
    )
    st.caption("Book mode goes with you." if book else "Your text and settings go with you.")


# --- the top of a page, and panels side by side ----------------------------------------------
def _read_intros() -> MappingProxyType[str, MappingProxyType[str, str]]:
    """ui/intros.toml, read once: each page's title, paragraph and formula, by URL path."""
    with (Path(__file__).parent / "intros.toml").open("rb") as f:
        pages = tomllib.load(f)
    return MappingProxyType(
        {
            name: MappingProxyType(
                {k: "".join(v) if k == "formula" else v for k, v in page.items()}
            )
            for name, page in pages.items()
        }
    )


INTROS = _read_intros()


def page_top(page_file: str, *, present: bool = False) -> None:
    """The title of the page in ``page_file`` (its ``__file__``), then its opening paragraph and
    formula from ui/intros.toml. ``present``: presenter mode, where the stepper tells the same
    story step by step, so only the title is drawn."""
    intro = INTROS[Path(page_file).stem]
    if present:  # on presenter mode's header line
        from ui.teach import present as presenter

        with presenter.slot("title"):
            st.title(intro["title"])
        return
    st.title(intro["title"])
    st.write(intro["text"])
    if "formula" in intro:
        formula(intro["formula"])


def pass_page_top(page_file: str, page: str, cfg, args):
    """The top of pass page ``page``: :func:`page_top`, then the "Predict first" and "Spot
    the bug" switches (their :class:`ui.teach.predict.Mode` is returned). With "Spot the bug"
    on, outside presenter mode, the mystery takes the lesson's place and the page stops here
    (or says first why the page cannot run)."""
    from ui.teach import predict

    page_top(page_file, present=cfg.present)
    if cfg.present:  # the switch sits under "Presenter mode" on the header line
        from ui.teach import present

        with present.slot("switches"):
            mode = predict.controls(present=True)
    else:
        mode = predict.controls()
    if mode.mystery and not cfg.present:
        if page == "multihead":
            heads_fit_or_stop(cfg, args)
        prepared_or_stop(args)
        predict.mystery_page(page, args)
        st.stop()
    return mode


_FORMULA_BREAK = re.compile(r",?\s*\\q?quad\s*")


def formula_lines(tex: str) -> list[str]:
    """The parts of a formula written side by side (``a, \\qquad b, \\quad c``), one a line."""
    return [part.strip().rstrip(",").strip() for part in _FORMULA_BREAK.split(tex) if part.strip()]


def formula(tex: str) -> None:
    """A display formula whose parts stand one under the other, so that no part is wider than
    a phone (390 px) and nothing scrolls: the chapter's formulas are a few short equations
    written side by side, each of which fits on its own line."""
    lines = formula_lines(tex)
    if len(lines) == 1:
        st.latex(lines[0])
    else:
        st.latex(r"\begin{gathered}" + r" \\[4pt] ".join(lines) + r"\end{gathered}")


def beside(
    *items,
    numbers: bool = False,
    view: View = View(),
    below: Callable[[Panel], None] | None = None,
    plan: Plan | None = None,
) -> None:
    """Panels or charts side by side, one equal column each. A Panel is drawn by :func:`show`
    (with ``numbers``, the page's ``view`` and its ``plan``), then ``below(panel)`` under it (its claims,
    say); a ``(key, chart)`` pair, a bar or line chart, by :func:`ui.numbers.plot` (with
    ``numbers``); a lone :class:`attnviz.figures.Chart` by :func:`ui.charts.chart`. A single
    item is drawn in place, at full width."""
    places: list[AbstractContextManager] = [nullcontext()]
    if len(items) > 1:
        places = list(st.columns(len(items)))
    for place, item in zip(places, items, strict=True):
        with place:
            if isinstance(item, Panel):
                show(item, numbers=numbers, view=view, plan=plan)
                if below is not None:
                    below(item)
            elif isinstance(item, tuple):
                plot(item[1], key=item[0], numbers=numbers)
            else:
                chart(item)


def pick_head(num_heads: int, *, key: str) -> int:
    """The head a "Head" select box picks (no box for a single head), bound to ``key`` in the
    URL; a choice left over from more heads is brought within ``num_heads``."""
    from ui import links

    if num_heads <= 1:
        return 0
    links.unknown_choices(key, [str(h) for h in range(num_heads)], "head 0")
    box = st.selectbox("Head", list(range(num_heads)), key=key, bind="query-params")
    return min(int(box), num_heads - 1)
