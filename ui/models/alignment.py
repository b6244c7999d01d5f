"""The home page's "Attention aligns" (issue 38): one toy sentence, picked by its length and
seed or typed, through both recorded encoder–decoders, and the attention model's alignment.

The section's three controls live in the URL under their own names (``why_words``,
``why_seed``, ``why_text``, declared in ui/url.py), so a shared link opens the same sentence.
:func:`read_url` checks them before the widgets exist, with the sidebar's reader: a value that
is not understood (a word the toy language does not have, a sentence past 40 words, a seed out of
range) is named in one warning and dropped, and its control starts from its default.

The alignment is a panel like the pass pages' (declared in ``attnviz/teach/lessons/home.py``):
"Explain a cell" opens a cell clicked on it, or named by a ``cell=`` link (``cell=q3k38``: Mirror
word 3 against English word 38, counted from 1 as the page counts the words), on its
derivation from the decoder's and the encoder's states.

Nothing here builds or trains a model: both models are the recorded ones, loaded once per
process, and each sentence's lesson is built once in the shared cache.
"""

from __future__ import annotations

import streamlit as st

from attnviz.models.bottleneck import bottleneck_run
from attnviz.models.bottleneck import toy_language as toy
from attnviz.teach.lessons import home as why
from ui import cache, links, state, url
from ui import render as panels
from ui.numbers import plot
from ui.teach import explain
from ui.text import md_escape

SEED_RANGE = (0, 2**31 - 1)
DEFAULT_WORDS = 20
# A typed sentence's characters: 40 of the toy's longest words (6 letters) with spaces fit in
# 280; past this a link's text is refused before it is split into words.
TEXT_LIMIT = 600


def _text_problem(text: str) -> str | None:
    """Why a link's typed sentence cannot be translated (short), or None."""
    return toy.parse(text).reason


PARSERS = {
    url.WHY_WORDS: url.whole(toy.MIN_LENGTH, toy.MAX_LENGTH),
    url.WHY_SEED: url.whole(*SEED_RANGE),
    url.WHY_TEXT: url.checked(TEXT_LIMIT, _text_problem),
}
URL_WARNING_KEY = "_why_url_warning"


def read_url() -> str | None:
    """Check the section's values in the link (the sidebar's reader, with these names); the
    warning naming what was dropped, or None."""
    return state.read_url(PARSERS, URL_WARNING_KEY)


def sentence() -> tuple[str, ...] | None:
    """The section's controls, bound to the URL; the sentence they name (None, with a message
    on the page, when the typed one cannot be translated)."""
    left, right = st.columns(2)
    length = left.slider(
        "Words in the sentence",
        toy.MIN_LENGTH,
        toy.MAX_LENGTH,
        DEFAULT_WORDS,
        key=url.WHY_WORDS,
        bind="query-params",
    )
    seed = right.number_input(
        "Sentence seed",
        SEED_RANGE[0],
        SEED_RANGE[1],
        0,
        step=1,
        key=url.WHY_SEED,
        bind="query-params",
    )
    typed = st.text_input(
        "Or type an English sentence in the toy's words (it replaces the picked one)",
        key=url.WHY_TEXT,
        bind="query-params",
        max_chars=TEXT_LIMIT,
        placeholder="big red fox sees small cat",
    )
    st.caption("The toy's English words: " + ", ".join(toy.SOURCE_WORDS) + ".")
    links.copy_link_button(key="copy_link_why")  # the address holds the sentence: share it
    if typed.strip():
        parsed = toy.parse(typed)
        if parsed.message is not None:
            st.warning(md_escape(parsed.message))
            return None
        return parsed.words
    return toy.seeded_sentence(int(seed), int(length))


@st.fragment
def section(held_out: str) -> None:
    """One sentence through both models: the outputs, the first mistake, the alignment and
    ``held_out`` (how often the recorded model aligns on held-out sentences), then "Explain a
    cell" (only this fragment reruns when a control moves)."""
    words = sentence()
    if words is None:
        return
    lesson = cache.lesson_of(
        ("home", "why", "align", words),
        lambda: why.align_lesson(words, bottleneck_run.recorded()),
    )
    st.write(md_escape("English: " + " ".join(words)))
    st.write(md_escape(lesson.outcome))
    panels.table(("home", "why", "align", words), "outputs", lambda: lesson.table)
    panels.show(lesson.panels["why_align"], numbers=False)
    st.caption(md_escape(lesson.argmax))
    st.write(md_escape(held_out))
    explain_cell(lesson)


# --- "Explain a cell" on the alignment ------------------------------------------------------------
def _grid(panel) -> dict:
    """The grid of the alignment's weights (to 4 decimals), its rows and columns counted from 1
    as the page counts the toy's words (a cell's URL names them: cell=q3k38)."""
    return {
        "rows": list(panel.rows),
        "cols": list(panel.cols),
        "values": [[round(v, 4) for v in row] for row in panel.values.tolist()],
        "row0": 1,
        "col0": 1,
        "source": "",
        "head": 0,
        "batch": 0,
        "label": "Alignment weights, a Mirror word written per row and an English word per column",
    }


def _cell_problem(cell: explain.Cell, n: int) -> str | None:
    """Why ``cell`` is not a cell of an ``n``-word sentence's alignment (a sentence), or None."""
    if cell.source or cell.head or cell.batch:
        return "the alignment is one matrix: its cells read as q3k5"
    for name, value in (("Mirror word", cell.query), ("English word", cell.key)):
        if not 1 <= value <= n:
            return f"there is no {name} {value}: the sentence has {n} words (1–{n})"
    return None


def explain_cell(lesson: why.AlignLesson) -> None:
    """The app's "Explain a cell" on the alignment: a grid of its weights, a click on a cell of
    the grid or of the heatmap (or a ``cell=`` link) opens the cell's derivation, from the
    states' dot products to the weight."""
    st.subheader("Explain a cell")
    st.write(
        "Every number behind one weight of the alignment. Click a cell of the alignment above, "
        "or use this grid: Tab into it, move with the arrow keys and press Enter."
    )
    words = lesson.words
    grid = cache.lesson_of(
        ("home", "why", "grid", words), lambda: _grid(lesson.panels["why_align"])
    )
    n = len(words)
    cell = explain.picked(grid, explain.heatmaps("home", {""}), lambda c: _cell_problem(c, n))
    if cell is None:
        return
    t, j = cell.query - 1, cell.key - 1
    derived = cache.lesson_of(("home", "why", "cell", words, t, j), lambda: lesson.cell(t, j))
    with st.container(border=True, key="explain_derivation"):
        st.subheader("The derivation")
        st.text(derived.heading)
        st.button("Close", key="explain_close", on_click=explain.close, icon=":material/close:")
        charts = {"score": derived.score_chart, "softmax": derived.softmax_chart}
        for step in derived.steps:
            # one element: the title, then the sentence (it names the toy's words: escaped)
            st.markdown(f"**{md_escape(step.title)}.** {md_escape(step.sentence)}")
            if step.name in charts:
                plot(charts[step.name], key=f"explain_{step.name}_{cell.encode()}", numbers=False)
