"""Book mode has one settings object (issue 35): attnviz.core.book.SETTINGS, made from the
preset attnviz.core.settings.BOOK, is what the sidebar's book mode hands the pages, what a
book-mode request is costed at, and the sizes of every module the chapter builds."""

from __future__ import annotations

from attnviz.core import book
from attnviz.core.settings import BOOK, Settings


def test_the_chapter_s_arguments_are_one_settings_object():
    s = book.SETTINGS
    assert s == Settings(**BOOK)
    assert (s.d_in, s.d_out, s.num_heads, s.context_length, s.dropout) == (3, 2, 2, 6, 0.0)
    assert (book.D_IN, book.D_OUT, book.CONTEXT_LENGTH) == (3, 2, 6)
    assert (book.NUM_HEADS, book.DROPOUT) == (2, 0.0)


def test_every_book_module_is_built_at_those_sizes():
    s = book.SETTINGS
    specs = [book.SPEC_V1, book.SPEC_V2, book.SPEC_MASKING_WALK, book.SPEC_CAUSAL]
    specs += [book.SPEC_WRAPPER, book.SPEC_MHA]
    for spec in specs:
        assert (spec.d_in, spec.d_out) == (s.d_in, s.d_out), spec
    for spec in specs[2:]:
        assert (spec.context_length, spec.dropout) == (s.context_length, s.dropout), spec
    assert book.SPEC_MHA.num_heads == book.SPEC_WRAPPER.num_heads == s.num_heads


def test_the_sidebar_and_the_cost_of_a_request_use_that_object():
    from ui import cache, state

    assert state.BOOK_CONFIG.settings is book.SETTINGS
    assert state.BOOK_CONFIG.book and state.BOOK_CONFIG.text == "Your journey starts with one step"
    assert cache._costed(Settings(d_in=1600), True) is book.SETTINGS
    assert cache._costed(Settings(d_in=1600), False) == Settings(d_in=1600)
    assert "d_in = 3, d_out = 2, context_length = 6, num_heads = 2, qkv_bias = False" in (
        state.book_lines()
    )
