"""ui.text.md_escape: any text a student types shows literally, whatever Markdown it holds."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as hs

from ui.text import md_escape


def one_by_one(text: str) -> str:
    """The rule, written out: a backslash before each ASCII punctuation character, a space for
    each line break, every other character as it is."""
    out = []
    for ch in text:
        if ch in string.punctuation:
            out.append("\\" + ch)
        elif ch in "\r\n":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


@settings(max_examples=400, deadline=None)
@given(hs.text(alphabet=hs.characters(codec="utf-8") | hs.sampled_from("*_[]()<>#`|\\\r\n!~")))
def test_every_punctuation_character_is_escaped_and_nothing_else_changes(text):
    escaped = md_escape(text)
    assert escaped == one_by_one(text)
    assert len(escaped) == len(text) + sum(ch in string.punctuation for ch in text)


def test_markdown_and_html_come_out_literal():
    assert md_escape("**bold** <b>x</b>\n# h") == r"\*\*bold\*\* \<b\>x\<\/b\> \# h"
    assert md_escape("<|endoftext|> 🙂 é") == r"\<\|endoftext\|\> 🙂 é"
