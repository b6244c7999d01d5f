"""The panels' words (attnviz/teach/lessons/story.toml): each entry is complete, every field it names
must be filled, and every entry is said by some panel the lessons draw."""

from __future__ import annotations

import pytest

from attnviz.models.bottleneck import bottleneck_run, toy_language
from attnviz.teach.lessons import common, home
from attnviz.teach.lessons import multihead as ML
from attnviz.teach.lessons import pytorch as PL
from tests.pytorch import test_lesson as page6

from . import test_lessons_causal as page3
from . import test_lessons_early as early
from . import test_lessons_multihead as page4


def test_every_story_has_a_title_and_only_the_four_parts():
    assert len(common.STORY) >= 30
    for name, entry in common.STORY.items():
        assert entry.get("title"), name
        assert set(entry) <= set(common.PARTS), name


def test_a_field_the_story_names_must_be_given():
    with pytest.raises(KeyError, match="i"):
        common.told("p3_batch", after="")
    said = common.told("p3_batch", i=1, after=" after dropout (what its context used)")
    assert said["title"] == "Example 1: weights after dropout (what its context used)"
    assert said["formula"] == "A^{(1)}"
    assert said["sentence"] == "Example 1's own weights: the mask applies to each example alone."
    assert said["caption"] == ""


def test_every_story_is_told_by_some_panel(monkeypatch):
    told: set[str] = set()
    tell = common.told

    def recording(story: str, /, **fields):
        told.add(story)
        return tell(story, **fields)

    monkeypatch.setattr(common, "told", recording)
    for case in ("default", "default-training", "book"):
        early.lessons_of(case)
    for case in ("default", "default-train"):
        page3.page3(*page3.CASES[case])
    for mode in page4.MODES:
        s, use_book, trace, wrapper = page4.traces("default", mode)
        ML.build(trace, wrapper, use_book)
        [ML.head_view(trace, h) for h in range(trace.num_heads)]
    les = page6.build(*page6.CASES["default"])
    PL.head_panels(les, 0)
    # the home page's alignment of a toy sentence through the recorded encoder–decoders
    home.align_lesson(toy_language.seeded_sentence(0, 5), bottleneck_run.recorded())
    assert told == set(common.STORY)
