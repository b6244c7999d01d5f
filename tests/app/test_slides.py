"""For slides, in each matrix's opened "Numbers and CSV" box: the LaTeX shown is
``export.bmatrix`` of the very numbers and labels the box's table holds (the figure's), and the
"Reproduce" snippet shown, run in a separate ``python -I``, prints exactly those numbers (every
float32 digit) — at the defaults, with page 2's v1 module, in training mode (the dropout lab) and
for a chosen head of page 4. A closed box builds none of it. (The SVG and PNG downloads are drawn
in the browser: tests/browser/test_cells_in_chromium.py.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz.teach import export
from tests.derive.test_reproduce import _numbers, run_snippets
from ui.numbers import shown_texts

from .conftest import exceptions, open_app
from .test_content_late import numbers_box, open_numbers, table_in

TRAIN = {"train": "true", "dropout": "0.5", "dseed": "7"}


def codes(at, key: str, language: str) -> list[str]:
    return [c.value for c in numbers_box(at, key).code if c.language == language]


def test_a_closed_box_builds_no_latex_snippet_or_download():
    at = open_app(page="causal")
    assert not [c for c in at.code if c.language == "latex"]
    assert not [c for c in at.code if c.value.startswith("# attnviz, ")]
    names = {c.proto.component_name for c in at.get("bidi_component")}
    assert "attnviz_figure_export" not in names


@pytest.mark.parametrize(
    "page, query, key",
    [
        ("simplified", {}, "p1_weights"),
        ("causal", {}, "p3_masked"),  # −∞ above the diagonal
        ("causal", {"text": "a_b & 50% <b>$x$</b> {y} ~z^"}, "p3_route2"),  # LaTeX specials
    ],
)
def test_the_latex_shown_is_the_bmatrix_of_the_figures_numbers_and_labels(page, query, key):
    at = open_numbers(open_app(query, page), key)
    assert not exceptions(at)
    table = table_in(at, key)
    (latex,) = codes(at, key, "latex")
    values = torch.from_numpy(shown_numbers(table))
    assert latex == export.bmatrix(values, list(table.index), list(table.columns))
    if key == "p3_masked":
        assert r"-\infty" in latex


def shown_numbers(table) -> np.ndarray:
    """A numbers table's values as float32: a table holding a masked score is sent as text
    ("−∞", each value to 4 decimals)."""
    named = {"−∞": "-inf", "+∞": "inf"}
    return table.map(lambda v: named.get(v, v) if isinstance(v, str) else v).to_numpy(
        dtype=np.float32
    )


def test_the_latex_of_the_heads_grid_has_one_bmatrix_per_head():
    at = open_numbers(open_app({"d_out": "12", "heads": "3"}, "multihead"), "p4_grid")
    table = table_in(at, "p4_grid")
    (latex,) = codes(at, "p4_grid", "latex")
    stack = torch.from_numpy(table.to_numpy(dtype=np.float32)).reshape(3, 6, 6)
    labels = list(table.columns)
    assert latex == "\n\n".join(export.bmatrices(stack, labels, labels))
    assert [line for line in latex.splitlines() if line.startswith(r"\text{head")] == [
        rf"\text{{head {h}}}\quad" for h in range(3)
    ]


def snippet_numbers(tmp_path, snippets: list[str]) -> list[list[float]]:
    """Run each snippet as its own __main__ in one fresh ``python -I``; the numbers of each one's
    last line (its ``.tolist()``: every digit)."""
    outputs = run_snippets(tmp_path, [(f"snippet{k}", code) for k, code in enumerate(snippets)])
    return [_numbers(lines[-1]) for lines in outputs]


def snippet_and_numbers(at, key: str, head: int | None = None) -> tuple[str, np.ndarray]:
    """The box's Reproduce snippet and the numbers its table holds (of ``head`` for a stack)."""
    (code,) = [c for c in codes(at, key, "python") if c.startswith("# attnviz, ")]
    table = table_in(at, key).to_numpy()
    if head is not None:
        n = table.shape[1]
        table = table[head * n : (head + 1) * n]
    return code, table


def test_the_reproduce_snippets_on_the_pages_print_the_figures_numbers(tmp_path):
    cases = []
    at = open_numbers(open_app(page="simplified"), "p1_weights")
    cases.append(snippet_and_numbers(at, "p1_weights"))
    at = open_app({"book": "true"}, "trainable")
    at.radio(key="module").set_value("v1").run()
    at = open_numbers(at, "p2_scaled")
    cases.append(snippet_and_numbers(at, "p2_scaled"))
    at = open_numbers(open_app({**TRAIN, "lab": "true"}, "causal"), "p3_dropped")
    cases.append(snippet_and_numbers(at, "p3_dropped"))
    at = open_app({"d_out": "12", "heads": "3"}, "multihead")
    at.selectbox(key="head").set_value(2).run()
    at = open_numbers(at, "p4_scores")
    cases.append(snippet_and_numbers(at, "p4_scores"))
    at = open_numbers(at, "p4_grid")
    at.selectbox(key="reproduce_head_p4_grid").set_value(1).run()
    cases.append(snippet_and_numbers(at, "p4_grid", head=1))
    assert not exceptions(at)
    printed = snippet_numbers(tmp_path, [code for code, _ in cases])
    for (code, numbers), got in zip(cases, printed, strict=True):
        title = code.splitlines()[0]
        got = np.float32(got).reshape(numbers.shape)
        if numbers.dtype.kind == "f":  # every digit
            np.testing.assert_array_equal(got, numbers.astype(np.float32), title)
        else:  # a table holding −∞ is sent as the text it shows: 4 decimals
            assert shown_texts(got) == [str(v) for v in numbers.ravel()], title
    assert "head 2's masked scores" in cases[3][0].splitlines()[0]
    assert "head 1's weights the context used" in cases[4][0].splitlines()[0]
    assert "SelfAttention_v1" in cases[1][0] and "book mode" in cases[1][0]


def test_with_the_grown_models_weights_the_box_says_why_there_is_no_snippet():
    at = open_numbers(open_app({"weights": "trained"}, "causal"), "p3_route2")
    assert not exceptions(at)
    assert not [c for c in codes(at, "p3_route2", "python") if c.startswith("# attnviz, ")]
    notes = [c.value for c in numbers_box(at, "p3_route2").caption]
    assert any(n.startswith("No Reproduce script with the grown model's weights") for n in notes)
    assert codes(at, "p3_route2", "latex")  # the LaTeX of the numbers drawn is still there
