"""Presenter mode: ``present=true`` (or the toggle) turns a pass page into a stepper over the
lesson's panels, in the book's order; ``step=N`` opens step N; bad values fall back with the
link warning; the toggle leaves; the text box on the stepper drives the figures."""

from __future__ import annotations

import math

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from ui.teach import present

from .conftest import (
    APP,
    PAGES,
    URL_WARNING,
    assert_sidebar,
    chart,
    chart_specs,
    chart_title,
    exceptions,
    open_app,
    spec_array,
    values,
)

CAT = "The cat sat on the mat"
CAT_LABELS = ["0: The", "1: ␣cat", "2: ␣sat", "3: ␣on", "4: ␣the", "5: ␣mat"]
# Pass 3's steps: the start of each figure's title, and the formula shown above it.
CAUSAL_STEPS = [
    ("Scores Q Kᵀ (before the mask)", r"\omega = Q K^\top"),
    ("Masked scores (blank = −∞)", r"\omega_{ij} = -\infty"),
    ("Masked scores ÷ √d_k = √8", r"\omega^{\text{masked}} / \sqrt{d_k}"),
    ("Route 2: −∞ → softmax", r"A = \mathrm{softmax}"),
    ("Weights after dropout (the identity here)", r"\mathrm{dropout}(A) = A"),
    ("Context Z = A V (6, 8)", r"Z = A V"),
]


def open_on(query: dict[str, str], page: str) -> AppTest:
    """A link straight to ``page`` (its first run is that page's, as in a browser)."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    return at.switch_page(PAGES[page]).run()


def presenting(query=None, page="causal"):
    return open_on({"present": "true", "text": CAT, **(query or {})}, page)


def counter(at) -> str:
    found = [v for v in values(at.markdown) if v.startswith("**Step ")]
    assert len(found) == 1, values(at.markdown)
    return found[0].strip("*")


def only_chart(at) -> dict:
    specs = chart_specs(at)
    assert len(specs) == 1, [chart_title(s) for s in specs]
    return specs[0]


def formula(at) -> str:
    shown = [str(e.value) for e in at.latex]  # raw: LaTeX is not escaped Markdown
    assert len(shown) == 1, shown
    return shown[0]


def test_present_shows_the_stepper_without_sidebar_or_per_matrix_chrome():
    at = presenting()
    assert not exceptions(at)
    assert counter(at) == "Step 1 of 6"
    # The text box moved to the main area; the sidebar is hidden by the presenter's style.
    assert list(at.sidebar.text_area) == []
    assert at.main.text_area(key="text").value == CAT
    css = [e.proto.body for e in at.get("html")]
    assert any("stSidebar" in body and "display: none" in body for body in css)
    # One figure, no numbers toggle, no download buttons, the checks in one line.
    assert chart_title(only_chart(at)).startswith("Scores Q Kᵀ (before the mask)")
    assert at.get("download_button") == []
    assert not [t for t in at.toggle if t.label == "Show the numbers"]
    assert "shape (6, 6) · Live checks: 5 pass" in values(at.caption)
    assert at.toggle(key="present").value is True
    assert [b.label for b in at.button] == ["◀ Previous", "Next ▶"]
    assert at.button(key="present_prev").disabled is True


def test_the_causal_steps_come_in_the_books_order_with_their_formulas():
    at = presenting()
    for i, (title, latex) in enumerate(CAUSAL_STEPS, start=1):
        assert counter(at) == f"Step {i} of 6"
        assert chart_title(only_chart(at)).startswith(title), i
        assert latex in formula(at), i
        if i < 6:
            at.button(key="present_next").click().run()
    assert at.button(key="present_next").disabled is True
    at.button(key="present_prev").click().run()
    assert counter(at) == "Step 5 of 6"


def test_next_writes_the_step_into_the_url():
    at = presenting()
    at.button(key="present_next").click().run()
    assert counter(at) == "Step 2 of 6"
    assert at.query_params["step"] in ("2", ["2"])  # AppTest keeps what the app wrote


def test_step_3_opens_the_scaled_scores_with_their_formula():
    at = presenting({"step": "3"})
    assert not exceptions(at)
    assert counter(at) == "Step 3 of 6"
    spec = only_chart(at)
    assert chart_title(spec).startswith("Masked scores ÷ √d_k = √8")
    assert formula(at) == "$$\n\\omega^{\\text{masked}} / \\sqrt{d_k}\n$$"
    assert f"√8 = {math.sqrt(8):.4g}" in " ".join(values(at.markdown))
    # The scaled scores are blank (−∞) above the diagonal and finite on and below it.
    z = spec_array(spec["data"][0]["z"])
    assert z.shape == (6, 6)
    assert np.isnan(z[np.triu_indices(6, 1)]).all() and np.isfinite(z[np.tril_indices(6)]).all()


@pytest.mark.parametrize(
    ("step", "reason"), [("abc", "step (not a whole number)"), ("999", "step (outside 1–50)")]
)
def test_a_bad_step_falls_back_to_step_1_with_the_link_warning(step, reason):
    at = presenting({"step": step})
    assert not exceptions(at)
    assert counter(at) == "Step 1 of 6"
    warnings = [w for w in values(at.warning) if w.startswith(URL_WARNING)]
    assert len(warnings) == 1 and reason in warnings[0], values(at.warning)


def test_a_step_past_this_pass_falls_back_with_a_warning():
    at = presenting({"step": "7"})
    assert not exceptions(at)
    assert counter(at) == "Step 1 of 6"
    assert "This pass has 6 steps, so step=7 opens step 1." in values(at.warning)


def test_a_bad_present_value_is_named_and_the_normal_page_shows():
    at = open_on({"present": "yes", "text": CAT}, "causal")
    assert not exceptions(at)
    warnings = [w for w in values(at.warning) if w.startswith(URL_WARNING)]
    assert len(warnings) == 1 and "present (not true or false)" in warnings[0]
    assert not [v for v in values(at.markdown) if v.startswith("**Step ")]
    assert at.toggle(key="present").value is False


def test_the_toggle_leaves_presenter_mode_and_restores_the_normal_page():
    at = presenting({"step": "2"})
    normal = open_app({"text": CAT}, "causal")
    at.toggle(key="present").set_value(False).run()
    assert not exceptions(at)
    assert not [v for v in values(at.markdown) if v.startswith("**Step ")]
    assert [chart_title(s) for s in chart_specs(at)] == [
        chart_title(s) for s in chart_specs(normal)
    ]
    assert len(chart_specs(at)) > 5
    assert_sidebar(at, text=CAT)
    assert "step" not in at.query_params  # leaving also forgets the step


def test_the_toggle_turns_presenter_mode_on():
    at = open_app({"text": CAT}, "causal")
    assert at.toggle(key="present").value is False
    at.toggle(key="present").set_value(True).run()
    assert counter(at) == "Step 1 of 6"
    assert at.main.text_area(key="text").value == CAT


def test_the_stepper_text_box_changes_the_figure_labels():
    at = presenting()
    assert list(only_chart(at)["data"][0]["y"]) == CAT_LABELS
    at.main.text_area(key="text").input("A dog ran").run()
    assert not exceptions(at)
    labels = list(only_chart(at)["data"][0]["y"])
    assert labels == ["0: A", "1: ␣dog", "2: ␣ran"]
    assert counter(at) == "Step 1 of 6"


@pytest.mark.parametrize(
    ("page", "steps", "first", "last"),
    [
        ("simplified", 3, "Scores Ω = X Xᵀ", "Context Z = A X"),
        ("trainable", 7, "Q = XW_q", "Context Z = A V"),
    ],
)
def test_passes_1_and_2_step_in_the_books_order(page, steps, first, last):
    at = presenting(page=page)
    assert not exceptions(at)
    assert counter(at) == f"Step 1 of {steps}"
    assert chart_title(only_chart(at)).startswith(first)
    at = presenting({"step": str(steps)}, page=page)
    assert counter(at) == f"Step {steps} of {steps}"
    assert chart_title(only_chart(at)).startswith(last)
    assert at.button(key="present_next").disabled is True


def test_training_mode_shows_the_dropped_weights():
    at = presenting({"train": "true", "dropout": "0.5", "step": "5"})
    spec = only_chart(at)
    assert chart_title(spec).startswith("Weights after dropout (p = 0.5, survivors × 2)")
    z = spec_array(spec["data"][0]["z"])
    seen = z[np.tril_indices(6)]
    assert (seen == 0).any() and seen.max() > 1.0  # dropped weights are 0, survivors doubled
    assert "dropout zeroes each weight with probability 0.5" in " ".join(values(at.markdown))
    chart(at, "Weights after dropout")  # exactly one


def test_the_dropout_step_counts_which_zeros_are_the_mask_and_which_dropout_dropped():
    """It said "the zeros here are the dropped weights" while most were the causal mask."""
    at = presenting({"train": "true", "dropout": "0.5", "step": "5"})
    z = spec_array(only_chart(at)["data"][0]["z"]).astype(float)
    n = z.shape[0]
    future = int((z[np.triu_indices(n, 1)] == 0).sum())
    dropped = int((z[np.tril_indices(n)] == 0).sum())
    assert future == n * (n - 1) // 2 == 15 and dropped > 0
    said = " ".join(values(at.markdown))
    assert (
        f"Of the {future + dropped} zeros here, {future} are the causal mask (keys after their "
        f"query) and {dropped} are weights dropout dropped, out of the {n * (n + 1) // 2} "
        "weights the queries can see."
    ) in said
    assert "the zeros here are the dropped weights" not in said


def test_pass_2_step_1_names_each_tokens_query_vector():
    at = presenting({"step": "1"}, page="trainable")
    said = values(at.markdown)
    assert "Every token's query vector, one row each." in said
    assert not [t for t in said if "querie" in t]


@pytest.mark.parametrize("page", ["simplified", "trainable", "causal", "multihead"])
def test_book_mode_presents_the_chapters_inputs(page):
    at = open_app({"present": "true", "book": "true"}, page)
    assert not exceptions(at)
    assert counter(at).startswith("Step 1 of ")
    spec = only_chart(at)
    assert list(spec["data"][0]["y"])[:2] == ["0: Your", "1: journey"]
    assert list(at.main.text_area) == []  # book mode ignores the text: no box


def test_pages_without_a_stepper_ignore_present_and_name_a_bad_step():
    at = open_app({"present": "true", "step": "abc"}, "home")
    assert not exceptions(at)
    assert not [v for v in values(at.markdown) if v.startswith("**Step ")]
    assert [t for t in at.toggle if t.label == "Presenter mode"] == []
    assert at.sidebar.text_area(key="text") is not None
    warnings = [w for w in values(at.warning) if w.startswith(URL_WARNING)]
    assert len(warnings) == 1 and "step (not a whole number)" in warnings[0]


MULTIHEAD_STEPS = [
    ("Q (6, 8), split into 2 heads of head_dim 4", r"(b, H, T, d_{\text{head}})"),
    ("Scaled masked scores of all 2 heads (blank = −∞)", r"\sqrt{d_{\text{head}}}"),
    ("Attention weights of all 2 heads", r"A_h = \mathrm{softmax}"),
    ("Context of each of the 2 heads (6, 4)", r"Z_h = A_h V_h"),
    ("Heads merged (6, 8)", r"Z = [\,Z_0, \dots, Z_{H-1}\,]"),
    ("out_proj: the module's output (6, 8)", r"\mathrm{out\_proj}(Z) = Z W_o + b_o"),
]


def test_the_multihead_steps_come_in_the_books_order():
    at = presenting(page="multihead")
    assert not exceptions(at)
    for i, (title, latex) in enumerate(MULTIHEAD_STEPS, start=1):
        assert counter(at) == f"Step {i} of 6"
        spec = only_chart(at)
        assert chart_title(spec).startswith(title), (i, chart_title(spec))
        assert latex in formula(at), i
        if i < 6:
            at.button(key="present_next").click().run()
    # The split step's columns name each head's slice; the merged step's values are the
    # per-head contexts side by side.
    at = presenting({"step": "1"}, page="multihead")
    assert list(only_chart(at)["data"][0]["x"])[:5] == ["h0·0", "h0·1", "h0·2", "h0·3", "h1·0"]
    at = presenting({"step": "4"}, page="multihead")
    heads = [spec_array(t["z"]) for t in only_chart(at)["data"]]
    at = presenting({"step": "5"}, page="multihead")
    merged = spec_array(only_chart(at)["data"][0]["z"])
    assert len(heads) == 2 and merged.shape == (6, 8)
    np.testing.assert_allclose(merged, np.concatenate(heads, axis=1), atol=5e-3)


def test_a_per_head_step_past_the_figure_budget_draws_head_0_and_says_so():
    import torch

    from attnviz import figures
    from attnviz.teach.lessons import multihead as ML

    n = 260  # 4 heads × 260 × 260 cells is past the grid's budget
    assert 4 * n * n > ML.GRID_CELL_BUDGET
    labels = tuple(f"{i}: t" for i in range(n))
    values = torch.arange(4 * n * n, dtype=torch.float32).reshape(4, n, n)
    panel = ML._per_head("k", values, labels, labels, "Scores", "", "")
    assert panel.shape == (n, n)
    assert torch.equal(panel.values, values[0])
    assert figures.title_of(panel.figure).startswith(
        "Scores: head 0 of 4 (all heads are past the figure budget)"
    )
    small = ML._per_head("k", values[:, :6, :6], labels[:6], labels[:6], "Scores", "", "")
    assert small.shape == (4, 6, 6) and len(small.figure["data"]) == 4


# --- the presenter's keys (ui/teach/present.py: a components.v2 key catcher) -------------------
def key_catchers(at) -> list[str]:
    return [e.key for e in at.get("bidi_component") if e.key == present.KEYS_KEY]


def press(at, by: int) -> AppTest:
    """What the key catcher's trigger does before its run (its callback): one move kept."""
    at.session_state[present.MOVES_KEY] = by
    return at.run()


def test_the_key_catcher_is_mounted_in_presenter_mode_only():
    at = presenting()
    assert key_catchers(at) == [present.KEYS_KEY]
    at.toggle(key="present").set_value(False).run()
    assert key_catchers(at) == []
    assert key_catchers(open_app({"text": CAT}, "causal")) == []


def test_a_key_moves_one_step_and_writes_it_into_the_url():
    at = presenting()
    press(at, 1)
    assert not exceptions(at)
    assert counter(at) == "Step 2 of 6"
    assert chart_title(only_chart(at)).startswith("Masked scores (blank = −∞)")
    assert at.query_params["step"] in ("2", ["2"])
    at.run()  # the move was used once: a later run stays on its step
    assert counter(at) == "Step 2 of 6"
    press(at, -1)
    assert counter(at) == "Step 1 of 6"


def test_keys_stop_at_the_first_and_last_steps():
    at = presenting({"step": "6"})
    press(at, 1)
    assert counter(at) == "Step 6 of 6"
    press(at, -1)
    press(at, -1)
    assert counter(at) == "Step 4 of 6"
    at = presenting()
    press(at, -1)
    assert counter(at) == "Step 1 of 6"


def test_two_presses_before_a_run_move_two_steps():
    at = presenting()
    at.session_state[present.MOVES_KEY] = 2
    at.run()
    assert counter(at) == "Step 3 of 6"


# --- the presenter's screen (issue 36): one header line, the figure beside its words ----------
def blocks_of(node) -> list:
    """The rows of columns in the main area, in order, each as the list of its columns'
    element summaries."""
    found = []
    for child in node.children.values():
        if child.type != "flex_container":
            continue
        columns = [c for c in child.children.values() if c.type == "column"]
        if columns:
            found.append([[summary(e) for e in col.children.values()] for col in columns])
        else:
            found += blocks_of(child)
    return found


def summary(element) -> str:
    if element.type in ("button", "toggle", "text_area"):
        return f"{element.type}:{element.label}"
    if element.type in ("title", "markdown", "latex", "caption"):
        return f"{element.type}:{element.value}"
    return f"{element.type}:{getattr(element, 'key', '')}"


def test_the_presenter_header_is_one_line_of_columns():
    at = presenting()
    header = blocks_of(at.main)[0]
    assert header == [
        [
            "title:3. Causal attention and dropout",
            r"caption:shape \(6\, 6\) · Live checks\: 5 pass",
        ],
        ["text_area:Text"],
        ["button:◀ Previous"],
        ["markdown:**Step 1 of 6**", "progress:None"],
        ["button:Next ▶"],
        ["toggle:Presenter mode", "toggle:Predict first"],
        ["bidi_component:copy_link_present"],
    ]
    # the text box's label is on the page for screen readers, not drawn
    assert at.main.text_area(key="text").proto.label_visibility.value == 2  # COLLAPSED


def test_a_square_step_has_its_words_beside_the_figure_a_grid_above_it():
    at = presenting()
    figure, words = blocks_of(at.main)[-1]
    assert figure == ["plotly_chart:present_p3_step_scores"]
    assert words[0].startswith("latex:") and r"\omega = Q K^\top" in words[0]
    assert words[1].startswith("markdown:Each query scores every key")
    spec = only_chart(at)
    assert spec["layout"]["yaxis"]["scaleanchor"] == "x"  # square cells
    assert spec["data"][0]["textfont"]["size"] >= 30
    at = presenting({"step": "3"}, page="multihead")
    *_, (maths, words), (figure, rest) = blocks_of(at.main)
    assert maths[0].startswith("latex:") and "softmax" in maths[0]
    assert words[0].startswith("markdown:The heads")
    assert figure == ["plotly_chart:present_p4_grid"] and rest == []
    spec = only_chart(at)
    assert [spec["layout"][f"yaxis{s}"]["scaleanchor"] for s in ("", "2")] == ["x", "x2"]
    assert min(t["textfont"]["size"] for t in spec["data"]) >= 30


def test_the_normal_page_keeps_its_toggle_alone_and_no_header_line():
    at = open_app({"text": CAT}, "causal")
    assert key_catchers(at) == []
    first = next(iter(at.main.children.values()))
    assert first.type == "flex_container"
    assert [summary(e) for e in first.children.values()] == ["toggle:Presenter mode"]


def test_cell_numbers_keep_their_size_at_1920_and_shrink_with_a_narrower_figure():
    import re

    from attnviz import figures

    labels = [f"{i}: t{i}" for i in range(12)]
    frame = figures.matrix_frame(labels, labels, title="Scores", kind="signed")
    size, widest = 30, figures._em("-.07")
    css = present._numbers_css("present_k", frame, figures.PRESENTER, 12, size, widest)
    assert ".st-key-present_k { container-type: inline-size; }" in css
    per_cqw, less = map(float, re.search(r"calc\(([\d.]+)cqw - ([\d.]+)px\)", css).groups())

    def font(width: float) -> float:  # the CSS's size in a figure ``width`` px wide
        return min(size, per_cqw * width / 100 - less)

    assert font(frame.width + 7) == size  # the projector: as drawn
    narrow = 700  # a laptop's column: the cells narrow, the widest number still fits
    cell = (narrow - frame.left - frame.right) / 12
    assert font(narrow) == pytest.approx((cell - figures.CELL_CLEAR) / widest, abs=0.01)
    assert font(narrow) < size


@pytest.mark.parametrize(
    "screen",
    [(1920, 1080), (1919, 1080), (1600, 900), (1366, 768), (1344, 756), (1343, 800)]
    + [(1280, 800), (1280, 720), (1024, 768), (900, 700), (2560, 1440), (820, 1180)],
)
def test_the_zoom_of_the_presenter_page_is_the_scale_its_figure_is_laid_out_at(screen):
    """The media queries that zoom the header and the words agree with the scale the server
    lays the figure out at (figures.screen_scale), window size by window size."""
    import re

    from attnviz import figures

    zoom = 1.0  # the last rule that matches wins
    rules = re.findall(
        r"@media \(orientation: landscape\) and \(max-width: (\d+)px\), "
        r"\(orientation: landscape\) and \(max-height: (\d+)px\) \{ \[data-testid='stMain'\] "
        r"\{ --present-zoom: ([\d.]+); \} \}",
        present._zoom_css(),
    )
    assert len(rules) == 10
    landscape = screen[1] <= screen[0]
    for width, height, value in rules:
        if landscape and (screen[0] <= int(width) or screen[1] <= int(height)):
            zoom = float(value)
    assert zoom == figures.screen_scale(*screen)
    assert "--present-zoom" in present._STYLE and "</style>" in present._STYLE[-10:]
