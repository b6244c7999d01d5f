"""American spelling in everything a student reads (issue 37: British and American spellings were
mixed on one page): normalize, not normalise; color, not colour. Every sentence the spell check
gathers (tests/words/sources.py) and every sentence-like string literal of the engine's modules
is scanned for the British forms below; terms.txt may not let one through either.

URL parameter names are not prose and stay as they are, so shared links keep working
(``colour=…``): a code span or a one- or two-word key is not scanned."""

from __future__ import annotations

import re

from . import sources as S
from . import spelling

# British forms and the American word a sentence should use instead.
BRITISH = {
    r"colour(s|ed|ing|ful|less)?": "color",
    r"(re)?normalis(e|es|ed|ing|ation|ations)": "normalize",
    r"centre(s|d)?": "center",
    r"initialis(e|es|ed|ing|ation)": "initialize",
    r"learnt": "learned",
    r"optimis(e|es|ed|ing|er|ers|ation)": "optimize",
    r"behaviour(s)?": "behavior",
    r"labell(ed|ing)": "labeled",
    r"favour(s|ed|ite)?": "favor",
    r"recognis(e|es|ed|ing)": "recognize",
    r"summaris(e|es|ed|ing)": "summarize",
    r"visualis(e|es|ed|ing|ation)": "visualize",
    r"organis(e|es|ed|ing|ation)": "organize",
    r"analys(e|es|ed|ing)": "analyze",
    r"modell(ed|ing)": "modeled",
    r"cancell(ed|ing)": "canceled",
    r"serialis(e|es|ed|ing|ation)": "serialize",
    r"tokenis(e|es|ed|ing|er|ation)": "tokenize",
    r"(mis)?spelt": "spelled",
    r"grey": "gray",
    r"whilst": "while",
    r"amongst": "among",
    r"licence": "license",
    r"artefacts?": "artifact",
}
_PATTERN = re.compile(r"\b(" + "|".join(BRITISH) + r")\b", re.IGNORECASE)
_CODE = re.compile(r"`[^`]*`")


def british(sentences) -> dict[str, list[str]]:
    """British word -> where it was found, in the prose of ``sentences`` ((where, text) pairs)."""
    found: dict[str, list[str]] = {}
    for where, text in sentences:
        prose = _CODE.sub(" ", text)
        for match in _PATTERN.finditer(prose):
            found.setdefault(match.group(0), []).append(where)
    return found


def report(found: dict[str, list[str]]) -> str:
    return "British spellings on screen (write the American word):\n" + "\n".join(
        f"  {word!r}: {'; '.join(where[:5])}" for word, where in found.items()
    )


def engine_literals():
    """The sentence-like string literals of the engine's modules (lessons, models, polls):
    what they put on a page, apart from the lesson objects sources.py builds."""
    for path in sorted((S.ROOT / "attnviz").rglob("*.py")):
        yield from S._literals(path)


def test_the_pages_data_files_and_bug_texts_are_american():
    found = british([*S.story(), *S.intros(), *S.pages_and_ui(), *S.bug_texts()])
    assert not found, report(found)


def test_the_engines_sentences_are_american():
    found = british(engine_literals())
    assert not found, report(found)


def test_the_lessons_at_the_defaults_are_american():
    found = british([*S.lessons("defaults"), *S.lessons("book"), *S.learn_page()])
    assert not found, report(found)


def test_terms_lets_no_british_spelling_through():
    listed = [(f"terms.txt: {t}", t) for t in spelling.terms()]
    found = british(listed)
    assert not found, report(found)


def test_the_scan_finds_what_it_should():
    found = british(
        [("a", "The weights are normalised; the colour scale"), ("b", "use `colour=log` here")]
    )
    assert set(found) == {"normalised", "colour"}
    assert found["colour"] == ["a"]  # a code span (a URL name) is not prose
