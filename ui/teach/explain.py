"""The "Explain a cell" block and the line view of each pass page (issue 27).

:func:`block` draws a grid of one weights matrix (a small components.v2 component,
``ui/teach/cell_grid.js``): its cells are reachable with the arrow keys and open on Enter, Space or a
click; a click on a cell of any scores or weights heatmap of the page opens it too (the same
component listens to Plotly's click event on those charts in the browser, so no figure is built
again). The cell chosen lives in the URL (``cell=q2k1``, ``cell=h1q2k1`` for a head,
``cell=lab.q2k1`` for page 3's dropout lab, ``cell=batch.b1q2k1`` for its batch), checked
against the page's tokens and heads, so a link opens it. Its derivation, with the student's
numbers, is drawn under the grid: the score as the sum of its terms, the division by √d_k, the
mask, the row's softmax with the cell marked, dropout, the context row's terms, each step with
the line of ``modules.py`` that computed it; then one slider on a component of q_i that
recomputes the whole row inside a fragment (only the fragment reruns).

:func:`lines` is the line view: one query's weights as lines to every key, in reading order.

The home page's alignment uses the same grid, clicks and ``cell=`` link (:func:`picked`), with
its own derivation (``ui/models/alignment.py``).

With no cell chosen, a cold page run pays for the grid's data (at most GRID_MAX × GRID_MAX
numbers) and one small line chart; every derivation, chart and table is built once per cell in
the shared cache.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import streamlit as st

from attnviz.core import trace as tracing
from attnviz.teach import declared, derive
from attnviz.teach.lessons import cell as cell_lesson
from ui import url
from ui.numbers import plot
from ui.text import md_escape

if TYPE_CHECKING:
    from ui.teach.predict import Plan

CELL_PARAM = url.CELL
GRID_MAX = 24  # tokens a side: past it the grid shows the page's token window (or the first 24)
_CSS = """
:host { display: block; }
.cells { overflow-x: auto; max-width: 100%; padding: 2px; }
table { border-collapse: collapse; font-family: inherit; font-size: 13px; color: #31333f; }
th { font-weight: normal; color: #4a4d59; padding: 2px 6px; white-space: nowrap;
     max-width: 8.5em; overflow: hidden; text-overflow: ellipsis; }
th[scope=row] { text-align: right; }
th.col { vertical-align: bottom; padding: 4px 2px; max-width: none; }
th.col span { display: inline-block; writing-mode: vertical-rl; transform: rotate(180deg);
              max-height: 8.5em; overflow: hidden; text-overflow: ellipsis; }
th.corner { font-size: 11px; vertical-align: bottom; }
td { min-width: 2.7em; height: 2em; text-align: center; border: 1px solid #ffffff;
     cursor: pointer; font-variant-numeric: tabular-nums; }
td:focus { outline: 3px solid #ff2b2b; outline-offset: -3px; }
td[aria-selected=true] { box-shadow: inset 0 0 0 3px #fde725; font-weight: bold; }
.hint { margin: 0 0 4px; font-size: 14px; color: #5e5d5b; }
.hint[hidden] { display: none; }
"""
# Over the grid when it is wider than its box (a phone, a long text): it scrolls sideways.
GRID_HINT = "Swipe or scroll the grid sideways to reach every key →"
_HTML = f'<p class="hint" hidden>{GRID_HINT}</p><div class="cells"></div>'
_JS = (Path(__file__).parent / "cell_grid.js").read_text(encoding="utf-8")
_picker = st.components.v2.component("attnviz_cell_grid", html=_HTML, css=_CSS, js=_JS)


@dataclass(frozen=True)
class Cell:
    """One weight: ``attn_weights[batch, head, query, key]`` of the trace ``source`` names."""

    source: str  # "" the page's own trace; "lab", "batch" (page 3)
    head: int
    batch: int
    query: int
    key: int

    def encode(self) -> str:
        prefix = f"{self.source}." if self.source else ""
        head = f"h{self.head}" if self.head else ""
        batch = f"b{self.batch}" if self.source == "batch" else ""
        return f"{prefix}{head}{batch}q{self.query}k{self.key}"

    def as_data(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "head": self.head,
            "batch": self.batch,
            "query": self.query,
            "key": self.key,
        }


def parse_cell(raw: str) -> Cell:
    """A cell from its URL text (``q2k1``, ``h1q2k1``, ``lab.q2k1``, ``batch.b1q2k1``), or
    ValueError saying what is wrong with it."""
    return Cell(*url.parse_cell(raw))


@dataclass(frozen=True)
class Source:
    """A trace whose weights can be explained: ``key`` names it in the shared cache (plain
    values), ``what`` says which computation it is."""

    trace: tracing.Trace
    key: tuple
    what: str = ""

    @property
    def heads(self) -> int:
        tr = self.trace
        if isinstance(tr, tracing.WrapperTrace):
            return len(tr.heads)
        return tr.num_heads if isinstance(tr, tracing.MultiHeadTrace) else 1

    @property
    def batches(self) -> int:
        tr = self.trace
        if isinstance(tr, (tracing.CausalTrace, tracing.MultiHeadTrace)):
            return int(tr.inputs.shape[0])
        return 1

    @property
    def num_tokens(self) -> int:
        return len(self.trace.labels)


def check(cell: Cell, sources: dict[str, Source]) -> str | None:
    """Why ``cell`` does not exist on this page (a sentence), or None when it does."""
    source = sources.get(cell.source)
    if source is None:
        return f"this page has no “{cell.source}” weights"
    if cell.head >= source.heads:
        last = source.heads - 1
        return f"there is no head {cell.head} (heads 0–{last})" if last else "there is one head"
    if cell.batch >= source.batches:
        return f"there is no example {cell.batch} in the batch"
    n = source.num_tokens
    for name, value in (("query", cell.query), ("key", cell.key)):
        if value >= n:
            return f"there is no {name} {value}: the text has {n} tokens (0–{n - 1})"
    return None


GRID_KEY = "explain_grid"


def _from_pick(pick: Any) -> Cell | None:
    """The cell the browser picked, or None when it is not one (the page then checks it
    against its tokens and heads, as it checks a link's)."""
    if not isinstance(pick, dict):
        return None
    try:
        numbers = [pick[name] for name in ("head", "batch", "query", "key")]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
            return None
        cell = Cell(str(pick["source"]), *numbers)
        return parse_cell(cell.encode())  # the same text a link would carry
    except (KeyError, TypeError, ValueError):
        return None


def _on_pick() -> None:
    """A pick, before the run it starts: the URL names the cell, so the grid is drawn with it
    marked and a reload or a shared link opens the same cell."""
    result = st.session_state.get(GRID_KEY)
    cell = _from_pick(result.get("pick") if result is not None else None)
    if cell is not None:
        st.query_params[CELL_PARAM] = cell.encode()


def _grid_part(
    source: Source, head: int, window: tuple[int, int] | None
) -> tuple[dict[str, Any], str]:
    """The grid's data (weights to 4 decimals, None where the mask hides a key) and a note when
    it shows only part of the tokens."""
    weights, labels = derive.weights_of(source.trace, head)
    n = len(labels)
    first, last = 0, n - 1
    if window is not None:
        first, last = window
    last = min(last, first + GRID_MAX - 1, n - 1)
    causal = isinstance(
        source.trace, (tracing.CausalTrace, tracing.MultiHeadTrace, tracing.WrapperTrace)
    )
    rows = []
    for i in range(first, last + 1):
        row = weights[i, first : last + 1].tolist()
        rows.append([None if causal and first + j > i else round(v, 4) for j, v in enumerate(row)])
    shown = list(labels[first : last + 1])
    note = ""
    if (first, last) != (0, n - 1):
        note = (
            f"The grid shows tokens {first}–{last} of {n}; narrow the token window above to "
            "reach others, or click a cell of any map above."
        )
    whose = f" of head {head}" if source.heads > 1 else ""
    grid = {
        "rows": shown,
        "cols": shown,
        "values": rows,
        "row0": first,
        "col0": first,
        "source": "",
        "head": head,
        "batch": 0,
        "label": f"Attention weights{whose}, a query per row and a key per column",
    }
    return grid, note


def _picked_cell(
    sources: dict[str, Source], panels: dict[str, tuple[str, int | None, int]], grid: dict
) -> Cell | None:
    """Draw the grid component and return the cell the URL names, checked against the page's
    traces (:func:`picked`)."""
    return picked(grid, panels, lambda cell: check(cell, sources))


def picked(
    grid: dict,
    panels: dict[str, tuple[str, int | None, int]],
    problem: Callable[[Cell], str | None],
) -> Cell | None:
    """Draw the grid component and return the cell the URL names (a pick has put it there,
    :func:`_on_pick`), checked by ``problem`` (why the cell is not on this page, or None): a
    cell that is not on this page is named and dropped. ``grid``: the grid's labels, values
    and first row's and column's numbers; ``panels``: the heatmaps a click opens a cell on."""
    data = {
        "grid": grid,
        "panels": [
            {"chart": f"fig_{key}", "source": s, "head": h, "batch": b}
            for key, (s, h, b) in panels.items()
        ],
        "selected": None,
    }
    raw = st.query_params.get(CELL_PARAM)
    cell = None
    if raw is not None:
        try:
            cell = parse_cell(raw)
            wrong = problem(cell)
        except ValueError as err:
            wrong = str(err)
        if wrong:
            st.warning(
                f"The link's cell “{md_escape(raw[:40])}” is not on this page "
                f"({md_escape(wrong)}), so none is open."
            )
            del st.query_params[CELL_PARAM]
            cell = None
    if cell is not None:
        data["selected"] = cell.as_data()
    _picker(key=GRID_KEY, data=data, on_pick_change=_on_pick)
    return cell


WAITS = "Its numbers wait until you answer the prediction question above."


def _waits(plan: Plan | None) -> bool:
    """Whether a "Predict first" question of the page's ``plan`` waits: the grid, the
    derivation and the line view show the weights and scores it asks about, so they wait too
    (with a note)."""
    if plan is not None and plan.waiting():
        st.caption(WAITS)
        return True
    return False


def block(
    sources: dict[str, Source],
    panels: dict[str, tuple[str, int | None, int]],
    *,
    head: int = 0,
    window: tuple[int, int] | None = None,
    numbers: bool = False,
    plan: Plan | None = None,
) -> None:
    """The "Explain a cell" block. ``sources``: the traces whose weights the page draws, by name
    ("" is the page's own); ``panels``: each scores or weights heatmap of the page (its panel
    key) -> (source, head or None for a heads grid, batch row), so a click on it opens the cell;
    ``head``: the head whose weights the grid shows; ``window``: the page's token window;
    ``plan``: the page's "Predict first" plan (while its question waits, the block waits)."""
    from ui import cache

    st.header("Explain a cell")
    st.write(
        "Every number behind one attention weight, with your numbers. Click a cell of any "
        "scores or weights map above, or use this grid: Tab into it, move with the arrow keys "
        "and press Enter."
    )
    if _waits(plan):
        return
    main = sources[""]
    grid, note = cache.lesson_of(
        ("cell grid", *main.key, head, window), lambda: _grid_part(main, head, window)
    )
    cell = _picked_cell(sources, panels, grid)
    if note:
        st.caption(note)
    if cell is None:
        return
    source = sources[cell.source]
    lesson = cache.lesson_of(
        ("cell", *source.key, cell),
        lambda: cell_lesson.cell_lesson(source.trace, cell.query, cell.key, cell.head, cell.batch),
    )
    derivation(lesson, cell, source, numbers=numbers)


def close() -> None:
    """The derivation's Close button: the URL names no cell."""
    if CELL_PARAM in st.query_params:
        del st.query_params[CELL_PARAM]


def derivation(
    lesson: cell_lesson.CellLesson, cell: Cell, source: Source, *, numbers: bool
) -> None:
    """One cell's derivation, step by step, each with its line of modules.py."""
    d = lesson.derivation
    with st.container(border=True, key="explain_derivation"):
        st.subheader("The derivation")
        st.text(lesson.heading)
        if source.what:
            st.caption(md_escape(source.what))
        st.button("Close", key="explain_close", on_click=close, icon=":material/close:")
        charts = {"score": lesson.score_chart, "softmax": lesson.softmax_chart}
        charts["context"] = lesson.context_chart
        tag = cell.encode().replace(".", "_")
        for step in lesson.steps:
            # one element: the title, then the sentence (it names tokens: escaped)
            st.markdown(f"**{md_escape(step.title)}.** {md_escape(step.sentence)}")
            if step.code:
                st.code(code_block(step.code), language="python")
            if step.name in charts:
                plot(charts[step.name], key=f"explain_{step.name}_{tag}", numbers=numbers)
            if step.name in lesson.sums:
                st.caption(md_escape(lesson.sums[step.name]))
            if step.name == "context":
                terms_box(lesson, tag)
        slider(d, tag, ("cell slider", *source.key, cell), numbers=numbers)


TERMS_LABEL = "Every term, their sum and the module's context row"


def terms_box(lesson: cell_lesson.CellLesson, tag: str) -> None:
    """The context terms α_ij v_j as a table ending with their sum and the module's row, in a
    closed box built only when opened (a table costs a run a few ms)."""
    with st.expander(TERMS_LABEL, key=f"explain_terms_{tag}", on_change="rerun") as box:
        if box.open:
            st.dataframe(lesson.context_table)
            if lesson.table_note:
                st.caption(lesson.table_note)


def code_block(lines: tuple[derive.CodeLine, ...]) -> str:
    """A step's lines of modules.py in file order, under one comment naming where they are:
    "# attnviz/core/modules.py, CausalAttention.forward, lines 127, 128 and 131"."""
    ordered = sorted(set(lines), key=lambda line: line.lineno)
    numbers = [str(line.lineno) for line in ordered]
    which = numbers[0] if len(numbers) == 1 else ", ".join(numbers[:-1]) + " and " + numbers[-1]
    owners = ", ".join(dict.fromkeys(line.owner for line in ordered))
    word = "line" if len(numbers) == 1 else "lines"
    head = f"# {ordered[0].path}, {owners}, {word} {which}"
    return "\n".join([head, *(line.text for line in ordered)])


@st.fragment
def slider(d: derive.Derivation, tag: str, cache_key: tuple, *, numbers: bool) -> None:
    """One component of q_i, moved: the whole row again (only this fragment reruns)."""
    from ui import cache

    q = "x" if d.shared_input else "q"
    st.markdown(f"**Move one component of {md_escape(f'{q}_{d.query}')}**")
    if d.shared_input:
        st.caption(
            f"In pass 1 the query is the input row x_{d.query} itself, which is also key "
            f"{d.query} and value {d.query}: they move with it, as in a fresh forward."
        )
    dim = (
        0
        if d.d_k < 2
        else st.select_slider(
            "Component",
            list(range(d.d_k)),
            format_func=lambda n: md_escape(f"{q}_{d.query}[{n}] = {float(d.q[n]):.4f}"),
            key=f"explain_dim_{tag}",
        )
    )
    now = float(d.q[dim])
    reach = max(1.0, 2 * float(d.q.abs().max()))
    reach = float(round(reach + 0.5))
    value = st.slider(
        md_escape(f"New value of {q}_{d.query}[{dim}]"),
        min_value=-reach,
        max_value=reach,
        value=max(-reach, min(reach, round(now, 3))),
        step=reach / 200,
        key=f"explain_value_{tag}_{dim}",
    )
    lesson = cache.derived.get(
        (*cache_key, int(dim), float(value)),
        lambda: cell_lesson.slider_lesson(d, int(dim), float(value)),
    )
    st.text(lesson.sentence)
    plot(lesson.chart, key=f"explain_slider_{tag}", numbers=numbers)


# Page 3 draws weights of three traces: its own, the dropout lab's and the batch's.
LAB = "The dropout lab's weights: the causal pass in training mode, at the sidebar's rate and seed."
BATCH = "The batch of the two sidebar texts (both cut to the shorter one)."


def linked_source() -> str | None:
    """The source ("", "lab" or "batch") of the cell the link names, or None (no cell, or
    one that does not parse: :func:`block` says so). A page opens the closed part that holds
    it (ui/sections.py)."""
    raw = st.query_params.get(CELL_PARAM)
    if raw is None:
        return None
    try:
        return parse_cell(raw).source
    except ValueError:
        return None


def heatmaps(page: str, sources, head: int = 0) -> dict[str, tuple[str, int | None, int]]:
    """The scores and weights heatmaps of ``page`` (a pass) whose trace is among ``sources``,
    as :func:`block` takes them: what each panel's declaration says about its cells
    (``attnviz.teach.declared``); ``head``: the head page 4's "Head" box picked."""
    return declared.cells(page, sources, head)


def lines(
    source: Source,
    *,
    page: str,
    head: int | None = None,
    window: tuple[int, int] | None = None,
    numbers: bool = False,
    plan: Plan | None = None,
) -> None:
    """The line view: a query token's weights (what its context used) as lines to every key,
    in the reading direction of the text; of head ``head`` for a multi-head trace (page 4
    passes the head its "Head" box picked)."""
    from ui import cache

    labels = source.trace.labels
    n = len(labels)
    causal = isinstance(source.trace, (tracing.CausalTrace, tracing.MultiHeadTrace))
    h = min(head or 0, source.heads - 1)
    st.subheader("One query's weights as lines" + (f", head {h}" if source.heads > 1 else ""))
    if _waits(plan):
        return
    # A select slider, not a select box: in Streamlit 1.67 a select box costs a page run about
    # 1.5 ms of server CPU, a slider about 0.1 ms; the arrow keys move it as well.
    query = (
        0
        if n < 2
        else st.select_slider(
            "Query token for the line view",
            list(range(n)),
            value=n - 1 if causal else 1,
            # a select slider's options are Markdown: the tokens are escaped
            format_func=lambda i: md_escape(labels[i]),
            key=f"lines_query_{page}_{n}",
        )
    )
    chart, sentence = cache.lesson_of(
        ("lines", *source.key, h, int(query), window),
        lambda: cell_lesson.line_chart(source.trace, int(query), int(h), 0, window),
    )
    plot(chart, key=f"lines_{page}", numbers=numbers)
    st.caption(md_escape(sentence))
