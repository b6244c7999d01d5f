"""Live checks in words (issue 36, point 7): each badge says what holds in a sentence a student
reads, the tolerance arithmetic waits in a closed "How close, in numbers" fold for whoever opens
it, and no page prints a check twice (pass 3 printed its two masking checks twice, page 1 two
checks under one title).
"""

from __future__ import annotations

import re

import pytest

from attnviz.teach import checks
from ui import render

from .conftest import (
    OPEN_PARTS,
    PASS_PAGES,
    check_badges,
    exceptions,
    folds,
    open_app,
    unescape,
)

# The arithmetic's words: none of them belongs in the sentence under a badge.
JARGON = re.compile(r"tolerance|eps|\|difference\||max \|value\||\d\.\d+e[-+]\d+")


@pytest.mark.parametrize("page", PASS_PAGES)
def test_every_badge_says_what_holds_in_words_and_folds_its_arithmetic(page):
    at = open_app(OPEN_PARTS, page=page)
    assert not exceptions(at)
    found = check_badges(at)
    assert len(found) >= 3, found
    titles = [text for _, text, _, _ in found]
    assert len(set(titles)) == len(titles), titles  # no check printed twice
    for _, text, words, numbers in found:
        first = words.split(" ")[0].rstrip(",:")
        assert words[0].isupper() or not first.isalpha(), words  # a sentence, or a code name
        assert words.endswith("."), words
        assert not JARGON.search(words), (text, words)
        if numbers:  # a comparison: its largest difference and tolerance, in the fold
            assert re.match(r"largest \|difference\| \S+; tolerance \S+", numbers), numbers
    assert sum(1 for *_, numbers in found if numbers) >= 3
    # The folds are closed until opened, and hold a line for each check that compared numbers
    # and for nothing else.
    lines = [title for fold in folds(at) for title in fold]
    compared = [text.rsplit(": ", 1)[0] for _, text, _, numbers in found if numbers]
    assert sorted(lines) == sorted(unescape(t) for t in compared)
    bodies = [str(h.value) for h in at.html if render.HOW_CLOSE in str(h.value)]
    assert bodies and not [b for b in bodies if "<details open" in b or "open>" in b]
    # No Markdown on the page carries HTML: that would load one more bundle in every browser.
    assert not [m for m in at.markdown if m.proto.allow_html], page


def test_pass_3_shows_its_masking_checks_once_beside_the_routes_and_names_them_after():
    at = open_app(page="causal")
    titles = [text for _, text, _, _ in check_badges(at)]
    for title in ("Both masking routes agree: pass", "No future leak: pass"):
        assert titles.count(title) == 1, titles
    (live,) = [unescape(str(m.value)) for m in at.markdown if "**Live checks**" in str(m.value)]
    assert "Shown above, beside what they check: “Both masking routes agree” (pass), “No " in live
    # ... and the live checks block holds the page's other checks, each once.
    assert "Rows sum to 1: pass" in live and "Both masking routes agree: pass" not in live


def test_page_1_names_the_walks_check_for_its_one_row():
    at = open_app(page="simplified")
    titles = [text for _, text, _, _ in check_badges(at)]
    assert titles[0] == f"{checks.NAIVE_TITLE} (query 1's row): pass"
    assert titles.count(f"{checks.NAIVE_TITLE}: pass") == 1  # every row, in the live checks


def test_a_failing_check_says_by_how_much_in_words():
    result = checks.compare(
        "x", "X", checks.torch.ones(3), checks.torch.zeros(3), 1.0, 3, "ok", "they differ"
    )
    assert result.status == "fail"
    assert result.words == "They differ. The two differ by up to 1: more than rounding."
    assert result.numbers.startswith("largest |difference| 1.00e+00; tolerance ")
    passed = checks.compare("x", "X", checks.torch.ones(3), checks.torch.ones(3), 1.0, 3, "ok", "")
    assert passed.words == "Ok. The two agree exactly."
