"""The home page as data: the current text as tokens and its input matrix X."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from attnviz import figures
from attnviz.core.inputs import BOOK_WORDS
from attnviz.teach.lessons.common import vectors_panel
from attnviz.teach.panel import Claim, Panel
from attnviz.teach.prepare import Prepared


@dataclass(frozen=True)
class HomeLesson:
    book: bool
    tokens: pd.DataFrame  # one row per token (book mode: per word)
    panels: dict[str, Panel]  # "x" (none when there is no text)
    count: Claim | None  # how the text became rows (above the table)
    shape: Claim | None  # X's shape (above X)

    @property
    def claims(self) -> tuple[Claim, ...]:
        return tuple(c for c in (self.count, self.shape) if c is not None)


def home_lesson(prep: Prepared) -> HomeLesson:
    """The token table and X for one prepared text (or the book's six words)."""
    if prep.book:
        table = pd.DataFrame({"position": range(len(BOOK_WORDS)), "word": BOOK_WORDS})
    else:
        table = pd.DataFrame(prep.tokens.table_rows() if prep.tokens is not None else [])
    if prep.empty:
        return HomeLesson(prep.book, table, {}, None, None)
    x = prep.x[0]
    n, d_in = x.shape
    dims = tuple(figures.dim_labels(d_in))
    panel = vectors_panel("home_x", x, prep.labels, dims, col_name="dimension")
    if prep.book:
        count = (
            "Book mode: the chapter's six 3-dimensional vectors for “Your journey starts with "
            "one step”, one per word (the book's x⁽¹⁾…x⁽⁶⁾ are rows 0…5 here)."
        )
        made = "."
    else:
        count = (
            f"GPT-2's tokenizer splits it into {n} token{'s' if n != 1 else ''}. A leading "
            "space shows as ␣, a newline as ↵; a token that holds only part of a character "
            "shows its bytes in hex, and the 'forms' column shows the character its pieces "
            "make together."
        )
        made = (
            ": a token embedding plus a position embedding, as in chapter 2 (random, fixed by "
            "the embedding seed; the same token always gets the same token row)."
        )
    shape = f"Each token becomes a row of X, shape {(n, d_in)} (tokens × d_in){made}"
    return HomeLesson(
        prep.book,
        table,
        {"x": panel},
        Claim(count, "x", "num_rows", n),
        Claim(shape, "x", "num_rows", n),
    )
