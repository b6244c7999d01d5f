"""Every figure reads at a phone's width: long titles wrap at spaces with the top margin grown
to fit, axes push their margins out, colour bars are thin, and the bar and line builders share
one base layout."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz import figures
from tests.support.specs import as_figure

LONG = "Scores of query 2 against every key in the sentence, before the softmax"


def lines_of(title: str) -> list[str]:
    return title.split("<br>")


def shown(line: str) -> int:
    return figures._shown_length(line)


def test_a_long_title_wraps_at_spaces_into_lines_that_fit():
    wrapped = figures.wrap_title(LONG)
    lines = lines_of(wrapped)
    assert len(lines) == 2
    assert all(shown(line) <= figures.TITLE_CHARS for line in lines), lines
    assert " ".join(lines) == LONG  # only spaces became breaks, nothing lost
    assert lines[0] == "Scores of query 2 against every key in"


def test_a_title_never_breaks_beside_an_equals_sign_or_leaves_a_number_alone():
    # Seen on page 2 ("..., d_out" then "= 8") and page 8 ("... at step" then "4,000").
    sizes = figures.wrap_title("softmax(Q K<sup>T</sup>) − softmax(Q K<sup>T</sup>/√8), d_out = 8")
    assert lines_of(sizes)[-1] == "d_out = 8"
    step = figures.wrap_title("One-layer control, all 4 heads, at step 4,000")
    assert lines_of(step) == ["One-layer control, all 4 heads, at", "step 4,000"]
    assert all(shown(line) <= figures.TITLE_CHARS for line in lines_of(step))
    assert figures.one_line(step) == "One-layer control, all 4 heads, at step 4,000"


def test_a_short_title_and_a_wrapped_title_are_left_alone():
    assert figures.wrap_title("Weights A (6, 6)") == "Weights A (6, 6)"
    once = figures.wrap_title(LONG)
    assert figures.wrap_title(once) == once


def test_tags_are_never_split_and_count_as_nothing():
    title = "Attention weights A <span style='font-size:12px'>(rows 0–255 of 300)</span>"
    wrapped = figures.wrap_title(title)
    # 39 characters drawn: fits on one line, although the text with its tag is 75 long
    assert wrapped == title
    longer = "Attention weights of head 3 after dropout " + title.split(" ", 3)[3]
    lines = lines_of(figures.wrap_title(longer))
    assert lines[1] == "dropout <span style='font-size:12px'>(rows 0–255 of 300)</span>"
    assert all(shown(line) <= figures.TITLE_CHARS for line in lines)


def test_entities_count_as_one_character_and_a_long_word_keeps_its_own_line():
    title = "&lt;b&gt; " * 8  # drawn: "<b> " eight times, 31 characters
    assert "<br>" not in figures.wrap_title(title.strip())
    word = "x" * 50
    assert lines_of(figures.wrap_title(f"a {word} b")) == ["a", word, "b"]


def test_the_top_margin_grows_a_line_per_line_the_title_takes():
    fig = as_figure(figures.bars([1.0, 2.0, 3.0], ["0: a", "1: b", "2: c"], title=LONG))
    assert fig.layout.title.text == figures.wrap_title(LONG)
    assert fig.layout.margin.t == figures.TITLE_TOP + figures.TITLE_LINE
    assert figures.one_line(fig.layout.title.text) == LONG
    # Plotly sets a wrapped title's first line on its baseline at the pad: 0.7 em more of it
    assert fig.layout.title.pad.t == figures.TITLE_PAD + round(0.7 * figures.TITLE_SIZE)
    short = as_figure(figures.bars([1.0], ["0: a"], title="Scores"))
    assert short.layout.margin.t == figures.TITLE_TOP
    assert short.layout.title.pad.t == figures.TITLE_PAD
    assert (short.layout.title.yanchor, short.layout.title.yref) == ("top", "container")


def test_a_note_is_the_subtitle_and_the_top_margin_holds_it():
    labels = [f"{i}: t" for i in range(4)]
    z = torch.zeros(4, 4)
    plain = as_figure(figures.heatmap(z, labels, labels, title="Weights"))
    noted = as_figure(figures.heatmap(z, labels, labels, title="Weights", note="tokens 1–4 of 9"))
    assert noted.layout.title.text == "Weights"
    assert noted.layout.title.subtitle.text == "tokens 1–4 of 9"
    assert noted.layout.margin.t > plain.layout.margin.t
    assert noted.layout.title.subtitle.font.color == figures.AXIS_COLOUR


def test_heatmap_titles_wrap_too_and_colour_bars_are_thin():
    z = torch.rand(4, 4, generator=torch.Generator().manual_seed(0))
    labels = [f"{i}: t" for i in range(4)]
    fig = as_figure(figures.heatmap(z, labels, labels, title=LONG))
    assert len(lines_of(fig.layout.title.text)) == 2
    # The colour bar lies flat between the title and the plot, in room of its own.
    assert fig.layout.margin.t == 50 + figures.TITLE_LINE + figures._bar_room(figures.NORMAL)
    assert fig.data[0].colorbar.thickness == figures.COLOURBAR_THICKNESS
    bar = fig.data[0].colorbar
    assert (bar.orientation, bar.yref, bar.yanchor) == ("h", "container", "top")
    assert bar.y == pytest.approx(1 - (50 + figures.TITLE_LINE + 4) / fig.layout.height)
    grid = as_figure(figures.heads_grid(torch.stack([z, z]), labels, title="heads"))
    assert grid.layout.coloraxis.colorbar.thickness == figures.COLOURBAR_THICKNESS


def test_a_narrow_matrix_bar_spans_its_plot_so_its_numbers_lie_flat():
    # Three to a row on a laptop leaves a plot about 200 px wide: a bar 0.6 of that is too
    # short for "-0.4 -0.2 0 0.2 0.4", and Plotly turned the numbers on their side.
    z = torch.rand(6, 8, generator=torch.Generator().manual_seed(0)) - 0.5
    rows, cols = [f"{i}: t" for i in range(6)], [f"out {j}" for j in range(8)]
    wide = as_figure(figures.heatmap(z, rows, cols, title="Q", kind="signed"))
    narrow = as_figure(figures.heatmap(z, rows, cols, title="Q", kind="signed", annotate=False))
    assert wide.data[0].colorbar.len == figures.BAR_SPAN == 0.6
    assert narrow.data[0].colorbar.len == figures.NARROW_BAR_SPAN == 1.0
    assert narrow.data[0].colorbar.orientation == "h"
    log = figures.heatmap(z.abs(), rows, cols, title="Q", kind="relative", annotate=False)
    assert log["data"][1]["marker"]["colorbar"]["len"] == 1.0


def test_a_mask_has_no_colour_bar_and_no_blank_band_for_one():
    labels = [f"{i}: t" for i in range(4)]
    mask = torch.triu(torch.ones(4, 4), diagonal=1)
    fig = as_figure(figures.heatmap(mask, labels, labels, title="mask", kind="mask"))
    assert fig.data[0].showscale is False and fig.data[0].colorbar.len is None
    assert fig.layout.margin.t == figures.TITLE_TOP  # the title's room only
    weights = as_figure(figures.heatmap(mask, labels, labels, title="mask"))
    assert weights.layout.margin.t == figures.TITLE_TOP + figures._bar_room(figures.NORMAL)


def every_builder():
    labels = ["0: a", "1: b", "2: c"]
    return {
        "bars": figures.bars([0.1, 0.5, 0.4], labels, title="t"),
        "grouped_bars": figures.grouped_bars({"u": [1, 2, 3], "v": [3, 2, 1]}, labels, title="t"),
        "lines": figures.lines([1, 2, 4], {"u": [1, 2, 3]}, title="t", x_name="d", y_name="e"),
        "histograms": figures.histograms({"u": np.arange(10.0)}, title="t", bins=5),
        "timing_bars": figures.timing_bars(["a", "b"], [1.0, 2.0], [1.0, 2.0], title="t"),
        "heatmap": figures.heatmap(torch.eye(3), labels, labels, title="t"),
    }


@pytest.mark.parametrize("name", list(every_builder()))
def test_every_builder_starts_from_the_base_layout_and_lets_axes_push_margins(name):
    fig = as_figure(every_builder()[name])
    layout = fig.layout
    assert layout.template.layout.to_plotly_json() == {}  # no Plotly styling
    assert layout.title.font.size == figures.TITLE_SIZE
    several = len(fig.data) > 1
    top = figures.TITLE_TOP + (figures.LEGEND_ROW if several else 0)
    if name == "heatmap":  # its colour bar lies flat above the plot
        top += figures._bar_room(figures.NORMAL)
    assert (layout.margin.l, layout.margin.t, layout.margin.b) == (10, top, 10)
    if several:  # the legend between the title and the plot, clear of the x tick labels
        assert (layout.legend.y, layout.legend.yanchor, layout.legend.orientation) == (
            1.0,
            "bottom",
            "h",
        )
    assert layout.xaxis.automargin is True and layout.yaxis.automargin is True
    assert layout.title.font.color == figures.TEXT_COLOUR
    assert layout.xaxis.tickfont.color == layout.yaxis.tickfont.color == figures.AXIS_COLOUR


def test_base_layout_passes_the_rest_through():
    layout = figures.base_layout("t", height=123, right=70, barmode="group")
    assert layout["height"] == 123 and layout["margin"]["r"] == 70
    assert layout["barmode"] == "group"


def test_a_wrapped_title_drawn_larger_gets_a_pad_for_its_size():
    labels = [f"{i}: t" for i in range(3)]
    long = LONG + " and after the scaling by the square root of d_k, for every head"
    fig = as_figure(
        figures.heatmap(torch.eye(3), labels, labels, title=long, look=figures.PROJECTOR)
    )
    assert "<br>" in fig.layout.title.text
    assert fig.layout.title.pad.t == figures.TITLE_PAD + round(0.7 * figures.PROJECTOR.title)
    assert (fig.layout.title.x, fig.layout.title.xanchor) == (0.0, "left")


def test_a_log_axis_is_labelled_at_the_measured_values_not_plotlys_minor_digits():
    """Page 2's d_k charts read "1 2 5 10 2 5 100" with plotly's own log ticks."""
    d_k = [2**i for i in range(11)]
    chart = figures.lines(d_k, {"a": np.ones(11)}, title="t", x_name="d_k", y_name="y", log_x=True)
    axis = chart.spec["layout"]["xaxis"]
    assert axis["type"] == "log" and axis["tickmode"] == "array"
    assert axis["tickvals"] == [1, 4, 16, 64, 256, 1024]
    assert axis["ticktext"] == ["1", "4", "16", "64", "256", "1024"]
    assert set(axis["tickvals"]) <= set(d_k)  # every label is a point the chart measured
    as_figure(chart.spec)  # still a valid figure
    linear = figures.lines(d_k, {"a": np.ones(11)}, title="t", x_name="d_k", y_name="y")
    assert "tickvals" not in linear.spec["layout"]["xaxis"]


# --- presenter mode's screen (issue 36: a matrix the back row reads) ---------------------------
def token_labels(n: int) -> list[str]:
    words = "The cat sat on the mat and looked at the dog again".split()
    return [f"{i}: {'' if i == 0 else '␣'}{words[i % len(words)]}" for i in range(n)]


def signed(n: int, cols: int | None = None) -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.uniform(-0.35, 0.35, size=(n, cols or n)).astype(np.float32)


@pytest.mark.parametrize("n", [6, 9, 12])
def test_a_presenter_matrix_gets_square_cells_on_most_of_the_screen(n):
    labels = token_labels(n)
    spec = figures.heatmap(
        signed(n), labels, labels, title="Scores", kind="signed", look=figures.PRESENTER
    )
    fig = as_figure(spec)  # Plotly accepts it
    layout, trace = spec["layout"], spec["data"][0]
    frame = figures.stage_frame(
        n, n, figures.axis_labels(labels), figures.axis_labels(labels), title="Scores", bar="flat"
    )
    assert frame.beside  # a square matrix leaves room for the words beside it
    assert frame.plot_height >= 0.55 * 1080 and frame.plot_width == pytest.approx(frame.plot_height)
    assert layout["height"] == frame.height <= figures.STAGE_HEIGHT
    margin = layout["margin"]
    assert (margin["l"], margin["r"], margin["t"], margin["b"]) == (
        frame.left,
        frame.right,
        frame.top,
        frame.bottom,
    )
    assert frame.width <= figures.STAGE_WIDTH - figures.SIDE_PX
    # square cells, whatever width the page gives the figure; the colour bar upright beside it
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.yaxis.scaleratio == 1
    assert fig.layout.xaxis.constrain == fig.layout.yaxis.constrain == "domain"
    assert trace["colorbar"].get("orientation", "v") == "v" and trace["colorbar"]["x"] == 1.0
    # the numbers at 30 px or more, each narrower than its cell
    size = trace["textfont"]["size"]
    assert size >= 30 and trace["texttemplate"] == "%{text}"
    widest = max(figures._em(t) for row in trace["text"] for t in row) * size
    assert widest <= frame.cell - figures.CELL_CLEAR + 1


def test_twelve_tokens_write_their_numbers_short_six_in_full():
    six = figures.heatmap(
        signed(6),
        token_labels(6),
        token_labels(6),
        title="S",
        kind="signed",
        look=figures.PRESENTER,
    )["data"][0]
    twelve = figures.heatmap(
        signed(12),
        token_labels(12),
        token_labels(12),
        title="S",
        kind="signed",
        look=figures.PRESENTER,
    )["data"][0]
    z6 = signed(6)
    assert six["text"][0][0] == f"{z6[0, 0]:.2f}" and six["textfont"]["size"] == 40
    assert all(not t.startswith(("0.", "-0.")) for row in twelve["text"] for t in row)
    assert twelve["textfont"]["size"] >= 30


def test_short_numbers_drop_the_leading_zero_and_keep_what_they_can():
    assert [figures.short_number(v) for v in (0.4213, -0.07, 0.0, 0.001, -0.004)] == [
        ".42",
        "-.07",
        "0",
        ".00",
        "-.00",
    ]
    assert [figures.short_number(v) for v in (1.0, 0.999, -2.345, 123.4)] == [
        "1.0",
        "1.0",
        "-2.3",
        "123",
    ]
    assert figures.short_number(float("nan")) == ""


def test_a_presenter_mask_has_no_numbers_and_the_normal_look_is_unchanged():
    labels = token_labels(6)
    mask = figures.heatmap(
        np.triu(np.ones((6, 6)), 1), labels, labels, title="M", kind="mask", look=figures.PRESENTER
    )
    assert "text" not in mask["data"][0] and "texttemplate" not in mask["data"][0]
    normal = figures.heatmap(signed(6), labels, labels, title="S", kind="signed")
    assert normal["data"][0]["texttemplate"] == "%{z:.2f}" and "text" not in normal["data"][0]
    assert "scaleanchor" not in normal["layout"]["yaxis"]
    assert normal["data"][0]["colorbar"]["orientation"] == "h"  # laid flat above the plot


@pytest.mark.parametrize("n", [6, 12])
def test_a_presenter_heads_grid_puts_two_heads_side_by_side_each_on_most_of_the_screen(n):
    labels = token_labels(n)
    weights = np.tril(np.ones((2, n, n), dtype=np.float32))
    weights /= weights.sum(-1, keepdims=True)
    spec = figures.heads_grid(weights, labels, title="Weights", look=figures.PRESENTER)
    as_figure(spec)
    frame = figures.matrix_frame(labels, labels, title="Weights", heads=2)
    assert frame.per_row == 2 and not frame.beside  # the words go above two heads
    assert frame.cell * n >= 0.55 * 1080
    assert spec["layout"]["height"] == frame.height <= figures.STAGE_HEIGHT - figures.STACK_PX
    for k, suffix in ((1, ""), (2, "2")):
        assert spec["layout"][f"yaxis{suffix}"]["scaleanchor"] == f"x{suffix}"
        trace = spec["data"][k - 1]
        assert trace["textfont"]["size"] >= 30
    # the two heads' plots side by side, the gap between them HEAD_GAP px
    x0, x1 = spec["layout"]["xaxis"]["domain"], spec["layout"]["xaxis2"]["domain"]
    assert x0[0] == 0 and x1[1] == pytest.approx(1.0)
    assert (x1[0] - x0[1]) * frame.plot_width == pytest.approx(figures.HEAD_GAP)


PROJECTORS = [(1920, 1080), (1600, 900), (1366, 768), (1280, 800), (1280, 720), (1024, 768)]


@pytest.mark.parametrize(
    ("screen", "scale"),
    [((1920, 1080), 1.0), ((2560, 1440), 1.0), ((1600, 900), 0.8), ((1366, 768), 0.7)]
    + [((1280, 800), 0.65), ((1280, 720), 0.65), ((1024, 768), 0.5), ((900, 700), 0.5)]
    + [((820, 1180), 1.0)],
)
def test_the_presenter_scales_by_the_screens_smaller_share_of_1920_by_1080(screen, scale):
    assert figures.screen_scale(*screen) == scale
    look = figures.presenter_look(*screen)
    assert look.scale == scale
    if screen in ((1920, 1080), (820, 1180)):  # a portrait tablet: the page narrows it
        assert look is figures.PRESENTER
    else:
        # the type at that scale; the stage the window less the scaled padding and header
        assert (look.ticks, look.cells) == (round(22 * scale), round(30 * scale))
        assert look.stage_width == round(screen[0] - 160 * scale)
        assert look.stage_height == round(screen[1] - 136 * scale)
        assert look.name != figures.PRESENTER.name  # its own cached drawings


@pytest.mark.parametrize("n", [6, 12])
@pytest.mark.parametrize("screen", PROJECTORS)
def test_a_presenter_matrix_on_a_smaller_projector_keeps_its_share_of_the_screen(screen, n):
    look = figures.presenter_look(*screen)
    labels = token_labels(n)
    spec = figures.heatmap(signed(n), labels, labels, title="Scores", kind="signed", look=look)
    frame = figures.matrix_frame(labels, labels, title="Scores", kind="signed", look=look)
    assert spec["layout"]["height"] == frame.height <= look.stage_height
    assert frame.width <= look.stage_width
    assert frame.plot_height >= 0.6 * screen[1]  # as at 1920×1080, about two-thirds
    trace = spec["data"][0]
    size = trace["textfont"]["size"]
    widest = max(figures._em(t) for row in trace["text"] for t in row) * size
    assert widest <= frame.cell - figures.cell_clear(look) + 1
    if n == 6 and screen[0] >= 1280:
        assert size >= 24


def test_a_tiny_window_gets_the_smallest_screens_layout_not_a_broken_one():
    look = figures.presenter_look(1920, 150)  # a window squeezed to a strip
    assert look == figures.presenter_look(1920, 480)
    labels = token_labels(6)
    frame = figures.matrix_frame(labels, labels, title="Scores", kind="signed", look=look)
    assert frame.cell > 20 and frame.height <= look.stage_height
