"""Showing text safely: user text is never rendered as Markdown or HTML."""

from __future__ import annotations

import string

# Each ASCII punctuation character gets a backslash before it (CommonMark allows one before
# every such character), and a line break becomes a space: one table, applied by str.translate.
_ESCAPES = {ord(ch): "\\" + ch for ch in string.punctuation} | {ord("\r"): " ", ord("\n"): " "}


def md_escape(text: str) -> str:
    """Make ``text`` literal inside Markdown: backslash-escape every ASCII punctuation
    character (CommonMark allows it for all of them) and flatten line breaks."""
    return text.translate(_ESCAPES)


# The symbols attnviz.core.tokens puts in token labels for characters that would not show.
_SYMBOLS = (
    ("\u2423", "a space"),  # ␣
    ("\u21b5", "a line break"),  # ↵
    ("\u21e5", "a tab"),  # ⇥
    ("\u240d", "a carriage return"),  # ␍
    ("⟨U+", "an invisible character, named by its code"),
)


def token_legend(labels) -> str:
    """One line that says how to read token labels ("3: ␣the"): the position, and each symbol
    for an unseen character that these labels use."""
    used = [
        (symbol, meaning) for symbol, meaning in _SYMBOLS if any(symbol in lab for lab in labels)
    ]
    legend = "Token labels read “position: token”, positions counted from 0"
    if used:
        said = [
            f"{'⟨U+…⟩' if symbol == '⟨U+' else symbol} is {meaning}" for symbol, meaning in used
        ]
        legend += "; " + ", ".join(said)
    return legend + "."
