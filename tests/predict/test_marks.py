"""The answer's marks, without a page: every kind's hidden matrix with its answer marked is a
valid plotly.js spec (Plotly's own validation, as tests/app/test_specs_valid.py does for the
panels), the marks sit on the asked cells, and an answer's form is read as the engine grades it."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from attnviz import figures
from attnviz.teach import questions as Q
from ui.teach import predict

from .pages import Setting, numbers

SETTINGS = [
    Setting.of("simplified", {}),
    Setting.of("trainable", {}),
    Setting.of("trainable", {"d_out": "128"}),
    Setting.of("causal", {"train": "true", "dropout": "0.5"}),
    Setting.of("causal", {"book": "true"}),
    Setting.of("multihead", {"train": "true", "dropout": "0.5", "heads": "4"}),
]


def _questions():
    for s in SETTINGS:
        n = numbers(s)
        for kind in Q.PAGE_KINDS[s.page]:
            for seed in range(3):
                q = Q.make(kind, s.page, s.text, s.settings, s.book, seed, n)
                if q is not None:
                    yield q, n
                    break


def _wrong(q: Q.Question):
    if q.misconceptions:
        return q.misconceptions[0].answer
    if q.answer_format == Q.TOKEN:
        return (int(q.key) + 1) % len(q.choices)
    if q.answer_format in (Q.NUMBER, Q.INTEGER):
        return q.key + 1
    return q.key


def test_every_kind_is_marked_on_a_valid_spec():
    kinds = set()
    for q, n in _questions():
        panel = predict.reveal_panel(q, n)
        if q.kind == Q.SPLIT_SHAPE:
            assert panel is None
            continue
        kinds.add(q.kind)
        for look in (figures.NORMAL, figures.PROJECTOR):
            grade = Q.grade(q, _wrong(q))
            spec, caption = predict.marked_spec(q, grade, panel, look)
            go.Figure(spec)  # raises on a property plotly.js does not know
            names = [s["name"] for s in spec["layout"].get("shapes", [])]
            if q.kind in predict.CELL_KINDS:
                assert f"marked cell {q.query}, {q.other}" in names
            elif q.query is not None:
                assert f"outlined row {q.query}" in names
            if q.kind == Q.ARGMAX_KEY:
                assert f"marked cell {q.query}, {q.key}" in names
            if q.kind == Q.WEIGHT_RATIO:
                assert f"marked cell {q.query}, {q.other}" in names
            assert caption.startswith("Marked: ") or q.kind == Q.SCALING_ENTROPY
    assert kinds >= {
        Q.ARGMAX_KEY,
        Q.SCORE,
        Q.DROPOUT_SURVIVOR,
        Q.MASKED_ZEROS,
        Q.SCORE_RISES,
        Q.WEIGHT_RATIO,
        Q.SCALED_SCORE,
        Q.SCALING_ENTROPY,
    }


@pytest.mark.parametrize(
    ("text", "shape"),
    [("(1, 2, 6, 4)", (1, 2, 6, 4)), ("1,2,6,4", (1, 2, 6, 4)), (" [3, 5] ", (3, 5))],
)
def test_a_shape_is_read_from_what_a_student_types(text, shape):
    assert predict.parse_shape(text) == shape


@pytest.mark.parametrize("text", ["", "(1, 2, x, 4)", "1 2 6 4", "(-1, 2)", "(1.5, 2)"])
def test_a_shape_that_is_not_whole_numbers_gets_a_sentence(text):
    with pytest.raises(Q.AnswerError, match="whole numbers separated by commas"):
        predict.parse_shape(text)
