"""A panel is declared once (attnviz/teach/declared.py): every declaration is complete and
consistent with what the lessons build and the pages lay out, and no panel key is spread over
the app's files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnviz.core import trace as tracing
from attnviz.teach import declared as D
from attnviz.teach import questions as Q
from attnviz.teach import reproduce
from attnviz.teach.lessons import common
from attnviz.teach.lessons import multihead as ML
from attnviz.teach.panel import HOLDS, PICKED_HEAD, Panel
from ui import url

from . import test_lessons_causal as page3
from . import test_lessons_early as early
from . import test_lessons_multihead as page4

ROOT = Path(__file__).resolve().parents[2]
PAGE_FILES = {
    "simplified": "pages/simplified-attention.py",
    "trainable": "pages/trainable-attention.py",
    "causal": "pages/causal-attention.py",
    "multihead": "pages/multi-head-attention.py",
}
_KEY = r"[\"'\[](p[0-9]_[a-z0-9_]+)[\"'\]]"


def app_files() -> dict[Path, str]:
    """app.py and every .py, .toml and .js file under attnviz/, ui/ and pages/."""
    files = [ROOT / "app.py"] + [
        p
        for d in ("attnviz", "ui", "pages")
        for p in sorted((ROOT / d).rglob("*"))
        if p.suffix in (".py", ".toml", ".js")
    ]
    return {p: p.read_text(errors="replace") for p in files if p.exists()}


def spread_keys() -> list[tuple[int, str]]:
    """Panel keys named in more app files than allowed: 2, or 3 when one is a .toml data file
    (a panel's words)."""
    texts = app_files()
    keys: set[str] = set()
    for text in texts.values():
        keys |= set(re.findall(_KEY, text))
    spread = []
    for key in keys:
        where = [p for p, t in texts.items() if re.search(r"[\"'\[]" + key + r"[\"'\]]", t)]
        limit = 3 if any(p.suffix == ".toml" for p in where) else 2
        if len(where) > limit:
            spread.append((len(where), key))
    return sorted(spread, reverse=True)


def test_no_panel_key_is_named_in_more_than_two_app_files():
    assert spread_keys() == []


def test_the_spread_check_counts_files_and_can_fail(tmp_path, monkeypatch):
    """The check sees a key named in three .py files (and allows a fourth, .toml, one)."""
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text('x = "p9_spread"\n')
    monkeypatch.setattr(
        "tests.engine.test_declarations.app_files",
        lambda: {p: p.read_text() for p in sorted(tmp_path.iterdir())},
    )
    assert spread_keys() == [(3, "p9_spread")]
    (tmp_path / "words.toml").write_text("[p9_spread]\n")
    assert spread_keys() == [(4, "p9_spread")]
    (tmp_path / "c.py").write_text("")
    assert spread_keys() == []


def test_keys_are_unique_and_each_page_declares_its_own():
    keys = [d.key for d in D.every()]
    assert len(keys) == len(set(keys)) == sum(len(D.of_page(p)) for p in D.ALL_PAGES)
    for page in D.ALL_PAGES:
        prefix = f"p{D.PAGES.index(page) + 1}_" if page in D.PAGES else "why_"
        for d in D.of_page(page):
            assert d.page == page and d.key.startswith(prefix), d.key
    assert D.find("p3_dropped").page == "causal"
    with pytest.raises(KeyError, match="p3_nothing"):
        D.find("p3_nothing")


def test_every_field_is_a_matrix_of_its_page_s_trace():
    for d in D.every():
        if d.field:
            assert d.field in reproduce.MATRICES[d.page], d.key
            assert not d.is_section, d.key
    assert reproduce.PANELS["p3_dropped"] == reproduce.PanelSource(
        "causal", "weights_dropped", lab=True
    )
    assert reproduce.PANELS["p4_grid"] == reproduce.PanelSource(
        "multihead", "weights_dropped", per_head=True
    )
    assert "p3_uniform" not in reproduce.PANELS


def test_every_word_is_in_the_story_and_every_pass_story_has_a_panel():
    told = {story for d in D.every() for story in d.stories}
    assert told <= set(common.STORY)
    passes = {name for name in common.STORY if re.match(r"p[1-4]_", name)}
    assert passes <= told
    for d in D.every():
        if d.is_section:
            assert d.stories == () and d.key not in common.STORY  # told by the page


def test_what_a_declaration_names_is_declared_on_its_page():
    for d in D.every():
        page = {x.key: x for x in D.of_page(d.page)}
        for other in (*d.same, *d.shows, *([d.stands_for] if d.stands_for else [])):
            assert other in page and not page[other].is_section, (d.key, other)
        assert d.key not in d.same
        assert set(d.holds) <= set(HOLDS) and set(d.held(True)) <= set(HOLDS), d.key
        if d.is_section:
            assert not (d.holds or d.holds_dropped or d.same or d.cell or d.step), d.key
        if d.cell is not None:
            source, head, batch = d.cell
            assert source in ("", "lab", "batch") and batch >= 0, d.key
            assert head is None or head == PICKED_HEAD or head >= 0, d.key
        assert d.box in ("", *url.SECTIONS), d.key


@pytest.mark.parametrize("dropped", [False, True])
def test_each_kind_of_question_hides_exactly_one_panel(dropped):
    for page in D.PAGES:
        for what in HOLDS:
            holders = [d.key for d in D.of_page(page) if what in d.held(dropped)]
            assert len(holders) <= 1, (page, what, holders)
        for kind in Q.PAGE_KINDS[page]:
            if kind in (Q.DROPOUT_SURVIVOR, Q.DROPOUT_ROW_SUM) and page == "multihead":
                if not dropped:
                    continue  # no dropout acts: no such question
            hidden = D.holding(page, Q.READS[kind], dropped=dropped)
            assert D.find(hidden).page == page
    assert D.holding("multihead", Q.READS[Q.ARGMAX_KEY], dropped=True) == "p4_weights_before"
    assert D.holding("multihead", Q.READS[Q.ARGMAX_KEY], dropped=False) == "p4_weights"
    assert D.holding("causal", Q.READS[Q.DROPOUT_SURVIVOR], dropped=False) == "p3_dropped"


def test_the_steps_are_numbered_one_to_n():
    for page in D.PAGES:
        steps = sorted(d.step for d in D.of_page(page) if d.step)
        assert steps == list(range(1, len(steps) + 1)), page


def test_the_cells_of_each_page():
    assert D.cells("simplified", {""}) == {"p1_scores": ("", 0, 0), "p1_weights": ("", 0, 0)}
    assert list(D.cells("causal", {"", "batch"})) == [
        "p3_masked",
        "p3_route1",
        "p3_route2",
        "p3_uniform",
        "p3_batch0",
        "p3_batch1",
    ]
    assert D.cells("causal", {"lab"}) == {"p3_dropped": ("lab", 0, 0)}
    assert D.cells("home", {""}) == {"why_align": ("", 0, 0)}
    assert D.cells("multihead", {""}, head=2) == {
        "p4_grid": ("", None, 0),
        "p4_scores": ("", 2, 0),
        "p4_weights_before": ("", 2, 0),
        "p4_weights": ("", 2, 0),
    }


def _keys(found) -> set[str]:
    """Every panel key in a lesson object (its fields, nested parts, dicts and tuples)."""
    out: set[str] = set()
    if isinstance(found, Panel):
        return {found.key}
    if isinstance(found, dict):
        for value in found.values():
            out |= _keys(value)
    elif isinstance(found, (tuple, list)):
        for value in found:
            out |= _keys(value)
    elif hasattr(found, "__dataclass_fields__"):
        for name in found.__dataclass_fields__:
            out |= _keys(getattr(found, name))
        for name in ("panels", "steps"):
            if isinstance(getattr(type(found), name, None), property):
                out |= _keys(getattr(found, name))
    return out


@pytest.fixture(scope="module")
def built() -> dict[str, set[str]]:
    """Every pass page's panel keys its lessons build, in eval and training mode and book
    mode."""
    out: dict[str, set[str]] = {page: set() for page in D.PAGES}
    for case in ("default", "default-training", "book"):
        for lesson in early.lessons_of(case):
            for key in _keys(lesson):
                page = {"p1": "simplified", "p2": "trainable"}.get(key[:2])
                if page:
                    out[page].add(key)
    for case in ("default", "default-train", "book"):
        out["causal"] |= _keys(page3.page3(*page3.CASES[case]))
    for mode in page4.MODES:
        _, use_book, trace, wrapper = page4.traces("default", mode)
        out["multihead"] |= _keys(ML.build(trace, wrapper, use_book))
        out["multihead"] |= _keys(ML.head_view(trace, 0))
    return out


def test_every_key_a_lesson_builds_is_declared_and_every_panel_is_built(built):
    for page in D.PAGES:
        panels = {d.key for d in D.of_page(page) if not d.is_section}
        assert built[page] == panels, page


def test_every_section_is_laid_out_by_its_page_or_a_part_of_it():
    layout = "\n".join(
        (ROOT / f).read_text() for f in (*PAGE_FILES.values(), "ui/parts.py")
    ) + "\n".join((ROOT / "attnviz/teach/lessons" / f"{p}.py").read_text() for p in D.PAGES)
    for d in D.every():
        if d.is_section:
            assert d.key in layout, d.key


def test_the_presenter_steps_are_the_declared_ones_in_order(built):
    _, _, trace, wrapper = page4.traces("default", "training")
    lessons = {
        "causal": page3.page3(*page3.CASES["default-train"]),
        "multihead": ML.build(trace, wrapper, False),
    }
    for lesson in early.lessons_of("default"):
        if hasattr(lesson, "steps") and lesson.steps:
            lessons[{"p1": "simplified", "p2": "trainable"}[lesson.steps[0].key[:2]]] = lesson
    for page, lesson in lessons.items():
        want = [d.key for d in sorted(D.of_page(page), key=lambda d: d.step) if d.step]
        assert [p.key for p in lesson.steps] == want, page
    assert isinstance(trace, tracing.MultiHeadTrace)
