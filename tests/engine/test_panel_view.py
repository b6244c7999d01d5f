"""How a page's view turns a panel (attnviz.teach.panel.viewed): which panels are attention weights,
which axes are tokens, and what a window and the relative scale do to the numbers and labels."""

from __future__ import annotations

import numpy as np
import torch

from attnviz import figures
from attnviz.core.settings import Settings
from attnviz.teach import prepare as lesson
from attnviz.teach.lessons.causal import causal_lesson
from attnviz.teach.lessons.simplified import simplified_lesson
from attnviz.teach.panel import CAUSAL_WEIGHTS, WEIGHTS, Panel, Style, View, is_token_axis, viewed
from tests.support.specs import as_figure, subtitle_of, z_of

TEXT = "The quick brown fox jumps over the lazy dog while the cat sleeps on the mat. " * 2


def page3(s: Settings):
    prep, _ = lesson.within_context(lesson.prepare(TEXT, s, False), s.context_length)
    trace = lesson.causal(prep, s)
    lab = lesson.causal(prep, s.with_changes(training=True))
    batch = lesson.prepare_batch(TEXT, "A short one", s, False)
    bt = lesson.causal_batch(batch, s, False)
    return trace, causal_lesson(trace, lab, bt, batch.labels, settings=s, book=False)


def test_weights_panels_are_told_apart_from_scores_masks_and_ratios():
    s = Settings(context_length=64, dropout=0.3)
    _, L = page3(s)
    assert L.lab is not None and L.lab.mask is not None and L.lab.dropped is not None
    assert L.route1.weights_kind == L.route2.weights_kind == CAUSAL_WEIGHTS
    assert L.lab.dropped.weights_kind == CAUSAL_WEIGHTS  # after dropout: still weights
    for not_weights in (L.masked_scores, L.mask, L.uniform, L.lab.mask, L.lab.values):
        assert not_weights.weights_kind == "", not_weights.key
    simple = simplified_lesson(lesson.simplified(lesson.prepare(TEXT, s, False)), False)
    assert simple.panels["weights"].weights_kind == WEIGHTS
    assert simple.panels["scores"].weights_kind == ""


def test_token_axes_are_labels_that_start_with_their_own_position():
    assert is_token_axis(("0: The", "1: ␣cat", "2 (unused)"))
    assert not is_token_axis(("1: The", "2: cat"))  # not counted from 0
    assert not is_token_axis(figures.dim_labels(4))
    assert not is_token_axis(())


def test_the_default_view_and_dimension_only_panels_stay_as_built():
    values = torch.arange(16, dtype=torch.float32).reshape(4, 4) / 16
    dims = tuple(figures.dim_labels(4))
    panel = Panel("w", values, dims, dims, title="W")
    assert viewed(panel, View()) is None
    assert viewed(panel, View(relative=True, window=(1, 2))) is None


def test_the_relative_scale_counts_the_keys_of_the_whole_row_before_the_window():
    trace, L = page3(Settings(context_length=64))
    n = trace.num_tokens
    shown = viewed(L.route2, View(relative=True, window=(10, 20)))
    assert shown is not None and shown.shape == (11, 11)
    weights = L.route2.values.to(torch.float32).numpy()
    seen = np.arange(1, n + 1, dtype=np.float32)[:, None]
    expected = np.where(np.tri(n) > 0, weights * seen, np.nan)[10:21, 10:21]
    np.testing.assert_allclose(shown.values.numpy(), expected, rtol=1e-6)
    assert shown.rows == shown.cols == L.route2.rows[10:21]
    z = z_of(shown)
    np.testing.assert_array_equal(z, shown.values.numpy())
    spec = shown.figure
    assert figures.title_of(spec) == figures.one_line(L.route2.title)
    assert subtitle_of(spec) == f"tokens 10–20 of {n}, relative to an even share"
    fig = as_figure(spec)  # Plotly accepts the view's spec
    assert fig.data[0].hovertemplate.endswith(f"{figures.RATIO_NAME} %{{z:.4f}}<extra></extra>")
    assert list(fig.layout.yaxis.ticktext) == [
        figures.escape_label(r) for r in L.route2.rows[10:21]
    ]
    assert z_of(L.route2).shape == (n, n)  # the shared panel is left alone


def test_a_window_past_a_short_axis_leaves_that_axis_whole():
    _, L = page3(Settings(context_length=64))
    short = L.batch.panels[1]  # "A short one": 3 tokens
    assert viewed(short, View(window=(10, 20))) is None
    assert viewed(short, View(window=(1, 20))).shape == (2, 2)


def test_row_outlines_move_with_the_window():
    values = torch.zeros(8, 8)
    labels = tuple(f"{i}: t" for i in range(8))
    panel = Panel("a", values, labels, labels, title="A", style=Style(outline_rows=(1, 5)))
    shown = viewed(panel, View(window=(4, 7)))
    assert shown is not None
    outlines = [(s.y0, s.y1) for s in as_figure(shown).layout.shapes]
    assert outlines == [(0.5, 1.5)]  # row 5 is the window's second row
