"""Nothing misspelt on screen: every sentence the app can generate goes through hunspell (en_US)
and the chapter's word list (terms.txt); an unknown word fails the test with where it came
from. The data files, the pages' own sentences and the bugs' texts are checked in the fast
loop; the lessons at several settings (their claims, presenter steps, check titles and
details) and the bugs' runs in the full run (tests/conftest.py marks that test slow)."""

from __future__ import annotations

import pytest

from . import sources as S
from . import spelling


def report(bad: dict[str, list[str]]) -> str:
    return "unknown words (fix the text, or add a real term to tests/words/terms.txt):\n" + (
        "\n".join(f"  {word!r}: {'; '.join(where)}" for word, where in bad.items())
    )


def static() -> list[tuple[str, str]]:
    return [*S.story(), *S.intros(), *S.pages_and_ui(), *S.bug_texts()]


def test_the_data_files_pages_and_bug_texts_are_spelt_right():
    bad = spelling.unknown(static())
    assert not bad, report(bad)


@pytest.fixture(scope="module")
def generated() -> list[tuple[str, str]]:
    found = [s for name in S.SETTINGS for s in S.lessons(name)]
    return found + list(S.bug_runs()) + list(S.learn_page())


def test_every_generated_sentence_is_spelt_right(generated):
    bad = spelling.unknown(generated)
    assert not bad, report(bad)


def test_the_generated_sentences_cover_what_the_brief_names(generated):
    """Claims at every setting, each pass's presenter steps, check titles and details, and the
    bugs' runs are all among the sentences checked."""
    sources = [source for source, _ in generated]
    for name in S.SETTINGS:
        mine = [s for s in sources if s.startswith(f"{name}: ")]
        assert any("(claim)" in s for s in mine), name
        for page in ("pass 1", "pass 2", "pass 3", "pass 4"):
            assert any(s.startswith(f"{name}: {page}.steps[") for s in mine), (name, page)
        assert any("title)" in s and "(check " in s for s in mine), name
        assert any("detail)" in s and "(check " in s for s in mine), name
    assert any(": bug dropout_in_eval run: sentences" in s for s in sources)
    assert any(": bug no_scaling run: verdict" in s for s in sources)


def test_terms_lists_only_words_the_app_uses(generated):
    """terms.txt must not become a second dictionary: each entry is used somewhere."""
    used = {word for _, text in [*static(), *generated] for word, _ in spelling.words(text)}
    lowered = {w.lower() for w in used}
    stale = sorted(t for t in spelling.terms() if t not in used and t.lower() not in lowered)
    assert not stale, f"terms.txt lists words no sentence uses: {stale}"


def test_the_check_finds_a_misspelling_and_says_where():
    bad = spelling.unknown([("pass 2 step 1", "Every token's querie vector, one row each.")])
    assert bad == {"querie": ["pass 2 step 1"]}
    # ... inside a name too, part by part.
    bad = spelling.unknown([("a caption", "The mask is `kept` in self.mask_bufer here.")])
    assert bad == {"bufer": ["a caption (in 'self.mask_bufer')"]}


def test_what_is_not_prose_is_left_out():
    text = (
        "Scores `torch.sofmax(x)` $\\mathrm{sofmax}$ for 3: ␣teh and 4: ␣qwzx <span "
        "style='font-size:12px'>(tokens 3–9 of 40)</span> at d_k = 8, GPT-2, v1, 1e-05."
    )
    assert [w for w, _ in spelling.words(text)] == [
        "Scores",
        "for",
        "and",
        "tokens",
        "of",
        "at",
        "d",
        "k",
    ]
    assert spelling.words("the chapter's 'query' and keys' rows") == [
        ("the", "the"),
        ("chapter", "chapter's"),
        ("query", "query"),
        ("and", "and"),
        ("keys", "keys"),
        ("rows", "rows"),
    ]
