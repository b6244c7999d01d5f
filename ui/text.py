"""Showing text safely: user text is never rendered as Markdown or HTML."""

from __future__ import annotations

import string

_PUNCTUATION = set(string.punctuation)


def md_escape(text: str) -> str:
    """Make ``text`` literal inside Markdown: backslash-escape every ASCII punctuation
    character (CommonMark allows it for all of them) and flatten line breaks."""
    out = []
    for ch in text:
        if ch in _PUNCTUATION:
            out.append("\\" + ch)
        elif ch in "\r\n":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)
