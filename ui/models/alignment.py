"""The home page's "Attention aligns" (issue 38): one toy sentence, picked by its length and
seed or typed, through both recorded encoder–decoders, and the attention model's alignment.

The section's three controls live in the URL under their own names (``why_words``,
``why_seed``, ``why_text``, declared in ui/url.py), so a shared link opens the same sentence.
:func:`read_url` checks them before the widgets exist, with the sidebar's reader: a value that
is not understood (a word the toy language does not have, a sentence past 40 words, a seed out of
range) is named in one warning and dropped, and its control starts from its default.

Nothing here builds or trains a model: both models are the recorded ones, loaded once per
process, and each sentence's lesson is built once in the shared cache.
"""

from __future__ import annotations

import streamlit as st

from attnviz.models.bottleneck import bottleneck_run
from attnviz.models.bottleneck import toy_language as toy
from attnviz.teach.lessons import home as why
from ui import cache, state, url
from ui import render as panels
from ui.text import md_escape

SEED_RANGE = (0, 2**31 - 1)
DEFAULT_WORDS = 20
# A typed sentence's characters: 40 of the toy's longest words (6 letters) with spaces fit in
# 280; past this a link's text is refused before it is split into words.
TEXT_LIMIT = 600


def _problem(text: str) -> str | None:
    """Why a link's typed sentence cannot be translated (short), or None."""
    return toy.parse(text).reason


PARSERS = {
    url.WHY_WORDS: url.whole(toy.MIN_LENGTH, toy.MAX_LENGTH),
    url.WHY_SEED: url.whole(*SEED_RANGE),
    url.WHY_TEXT: url.checked(TEXT_LIMIT, _problem),
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
    if typed.strip():
        parsed = toy.parse(typed)
        if parsed.message is not None:
            st.warning(md_escape(parsed.message))
            return None
        return parsed.words
    return toy.seeded_sentence(int(seed), int(length))


@st.fragment
def section() -> None:
    """One sentence through both models: the outputs, the first mistake, the alignment (only
    this fragment reruns when a control moves)."""
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
    with st.expander("Explain a row: from dot products to its largest weight"):
        rows = lesson.panels["why_align"].rows
        t = st.selectbox("Mirror word written", range(len(rows)), format_func=rows.__getitem__)
        st.markdown("\n".join(f"- {md_escape(line)}" for line in lesson.derive(int(t))))
        panels.show(lesson.panels["why_scores"], numbers=False)
