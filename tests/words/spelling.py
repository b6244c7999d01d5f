"""Every sentence the app can put on a screen, gathered with where it came from, and checked with
a real spell checker: Debian's hunspell (en_US), plus the chapter's own words in terms.txt.

A sentence is split into words after the parts that are not prose are taken out: code spans,
LaTeX, HTML tags, token labels (the student's text) and anything with a digit (numbers, shapes,
``v1``). A name (``d_out``, ``nn.Linear``, ``attn_weights``) is checked part by part, so a typo
inside it shows too. A word that terms.txt lists passes; every other goes to hunspell, and one
it does not know fails the test, with where it came from.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

TERMS_FILE = Path(__file__).with_name("terms.txt")
DICTIONARY = "en_US"

# Not prose: stripped before the words are read.
_CODE = re.compile(r"`[^`]*`")
_LATEX = re.compile(r"\$[^$]*\$|\\\(.*?\\\)|\\\[.*?\\\]")
_HTML = re.compile(r"<[^<>]*>")
_TOKEN_LABEL = re.compile(r"\b\d+: \S+")  # "3: ␣the": a position and the student's token
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # Markdown's backslash escapes
# A word: letters with inner apostrophes, underscores, dots or hyphens (split below).
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’_.\-]*[A-Za-z0-9]|[A-Za-z]")


def terms() -> frozenset[str]:
    """terms.txt: one word a line (case kept), ``#`` starts a comment."""
    words = set()
    for line in TERMS_FILE.read_text(encoding="utf-8").splitlines():
        word = line.split("#", 1)[0].strip()
        if word:
            words.add(word)
    return frozenset(words)


def prose(text: str) -> str:
    """``text`` without what is not prose (code, LaTeX, HTML, token labels, escapes)."""
    text = _ESCAPE.sub(r"\1", text)
    for pattern in (_CODE, _LATEX, _HTML, _TOKEN_LABEL):
        text = pattern.sub(" ", text)
    return text.replace("’", "'")


def words(text: str) -> list[tuple[str, str]]:
    """(word, the run of text it came from) for each word of ``text`` to check: names and
    hyphenated words in parts, a trailing ``'s`` or ``'`` dropped, nothing with a digit."""
    found = []
    for raw in _WORD.findall(prose(text)):
        raw = raw.strip(".'-_")
        if any(c.isdigit() for c in raw):
            continue  # numbers, shapes, v1, GPT-2, SelfAttention_v1
        for part in re.split(r"[-_.]", raw):
            part = re.sub(r"'s?$", "", part)
            if part and any(c.isalpha() for c in part):
                found.append((part, raw))
    return found


def unknown(sentences: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """word -> the sources (up to 3) of every word that neither terms.txt nor hunspell knows.
    ``sentences``: (source, text) pairs."""
    hunspell = shutil.which("hunspell")
    if hunspell is None:
        raise RuntimeError("hunspell is not installed: apt-get install hunspell hunspell-en-us")
    known = terms()
    lowered = {t.lower() for t in known}
    where: dict[str, list[str]] = defaultdict(list)
    for source, text in sentences:
        for word, run in words(text):
            if word in known or (word[:1].isupper() and word.lower() in lowered):
                continue
            said = source if run == word else f"{source} (in {run!r})"
            if len(where[word]) < 3 and said not in where[word]:
                where[word].append(said)
    checked = subprocess.run(
        [hunspell, "-l", "-d", DICTIONARY, "-i", "utf-8"],
        input="\n".join(sorted(where)) + "\n",
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    misspelt = set(checked.stdout.split())
    return {w: where[w] for w in sorted(misspelt) if w in where}
