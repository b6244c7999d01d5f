"""Arbitrary Unicode text and arbitrary valid settings through the engine and the figure
builders: nothing raises, and the invariants hold (bounded hypothesis runs).

Settings are drawn inside :data:`attnviz.core.settings.BOUNDS` (sizes kept small for speed: d_in up to
24, up to 8 heads, context_length from the number of tokens up), with any dropout the bounds
allow, training on or off, biases on or off and any seeds. Every lesson pass runs (the wrapper
too), the two-text batch, every check on correct code, and every public function of
``attnviz.figures`` (a guard below fails when one is added and not exercised here).
"""

from __future__ import annotations

import inspect
from dataclasses import replace

import numpy as np
import plotly.graph_objects as go
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnviz import figures
from attnviz.core import trace as tracing
from attnviz.core.seeding import rng_lock_held_by_me
from attnviz.core.settings import BOUNDS, Settings
from attnviz.core.tokens import tokenize
from attnviz.models import implementations as impl
from attnviz.teach import checks as live_checks
from attnviz.teach import prepare as lesson
from attnviz.teach.lessons import multihead as ML
from attnviz.teach.panel import Style, chart_label, token_panel
from tests.support import module_checks as MC
from tests.support.specs import as_figure, subtitle_of
from tests.support.torch_threads import single_intra_op_thread  # noqa: F401 (tiny tensors)

OK = {"pass", "documented", "n/a"}
SEED = st.integers(int(BOUNDS["seed_weights"][0]), int(BOUNDS["seed_weights"][1]))
DROPOUT = st.floats(0.0, BOUNDS["dropout"][1], allow_nan=False, allow_infinity=False)
TEXT = st.text(max_size=40)

# Every public function of attnviz.figures, each called in every example below.
FIGURE_FUNCTIONS = (
    "attention_lines",
    "axis_labels",
    "bars",
    "base_layout",
    "blank_non_finite",
    "cell_clear",
    "context_terms",
    "crop",
    "dim_labels",
    "escape_label",
    "figure_bytes",
    "grouped_bars",
    "heads_grid",
    "heatmap",
    "histograms",
    "lines",
    "matrix_frame",
    "one_line",
    "packed",
    "presenter_look",
    "ratio_to_uniform",
    "row_change",
    "row_outline",
    "scaled",
    "score_terms",
    "screen_scale",
    "short_number",
    "softmax_row",
    "stage_frame",
    "stage_numbers",
    "timing_bars",
    "title_of",
    "unpacked",
    "wrap_title",
)


def _settings(draw, n_tokens: int, max_tokens: int) -> Settings:
    heads = draw(st.integers(1, 8))
    head_dim = draw(st.integers(1, 4))
    # Mostly widths the heads divide; now and then one they do not (the multi-head pass then
    # reports it, and the single-head passes still run).
    extra = draw(st.sampled_from([0, 0, 0, 1])) if heads > 1 else 0
    return Settings(
        d_in=draw(st.integers(1, 24)),
        d_out=heads * head_dim + extra,
        num_heads=heads,
        context_length=draw(st.integers(max(n_tokens, 1), max(n_tokens, 1) + 12)),
        dropout=draw(DROPOUT),
        seed_embed=draw(SEED),
        seed_weights=draw(SEED),
        seed_dropout=draw(SEED),
        qkv_bias=draw(st.booleans()),
        training=draw(st.booleans()),
        max_tokens=max_tokens,
    )


@st.composite
def cases(draw):
    text, text2 = draw(TEXT), draw(TEXT)
    max_tokens = draw(st.integers(1, 12))
    n = min(len(tokenize(text, cap=max_tokens)), max_tokens)
    use_book = draw(st.sampled_from([False, False, False, False, True]))
    return text, text2, _settings(draw, 6 if use_book else n, max_tokens), use_book


# --- invariants ---------------------------------------------------------------------------
def _rows_sum_to_one(w: torch.Tensor) -> None:
    if w.numel():
        assert torch.allclose(w.double().sum(-1), torch.ones(w.shape[:-1], dtype=torch.float64))
    assert (w >= 0).all()


def _future_is_zero(w: torch.Tensor) -> None:
    n = w.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    assert (w[..., future] == 0).all(), "a future weight is not exactly 0"


def _dropout_invariant(tr, s: Settings, draws: bool) -> None:
    """After dropout each weight is 0 or weight / (1 - p); nothing changes when nothing draws."""
    w, dropped = tr.attn_weights, tr.weights_dropped
    assert dropped.shape == w.shape
    if not draws:
        assert torch.equal(dropped, w)
        return
    _future_is_zero(dropped)
    kept = dropped != 0
    scaled = w.double() / (1 - s.dropout)
    assert torch.allclose(dropped.double()[kept], scaled[kept], rtol=1e-5, atol=0.0)


def _causal_pass(tr, s: Settings, draws: bool, b: int, n: int) -> None:
    w = tr.attn_weights
    assert tuple(w.shape[-2:]) == (n, n) and w.shape[0] == b
    _rows_sum_to_one(w)
    _future_is_zero(w)
    _dropout_invariant(tr, s, draws)


def _ok(result: live_checks.CheckResult) -> None:
    assert result.status in OK, (result.name, result.status, result.detail)


# --- figures ------------------------------------------------------------------------------
def _labels_are_escaped_and_one_per_position(axis, n: int) -> None:
    axis = list(axis)
    assert len(axis) == len(set(axis)) == n
    assert not any("<" in label for label in axis)  # every "<" arrives as &lt;


def _heatmap_matches(spec, n_rows: int, n_cols: int) -> go.Figure:
    """The spec passes Plotly's validation and draws an (n_rows, n_cols) matrix with one
    escaped label per position; returns the validated figure."""
    fig = as_figure(spec)
    trace = fig.data[0]
    assert np.asarray(trace.z).shape == (n_rows, n_cols)
    _labels_are_escaped_and_one_per_position(trace.y, n_rows)
    _labels_are_escaped_and_one_per_position(trace.x, n_cols)
    return fig


def _every_figure(called: set, labels, weights: torch.Tensor, heads: torch.Tensor, scores) -> None:
    """Every public function of attnviz.figures on this example's numbers. ``weights`` (n, n)
    causal, ``heads`` (H, n, n), ``scores`` (n, n) with -inf above the diagonal. Every spec
    built goes through Plotly's own validation (``as_figure``)."""
    n = len(labels)

    def call(name, *args, **kwargs):
        called.add(name)
        return getattr(figures, name)(*args, **kwargs)

    for kind, z in (("weights", weights), ("signed", scores), ("mask", (weights == 0).float())):
        spec = call("heatmap", z, labels, labels, title="t", kind=kind)
        _heatmap_matches(spec, n, n)
        assert call("figure_bytes", spec) > 0
        # the label the app gives the chart (ui.charts: panel.chart_label) names its shape
        panel = token_panel("t", z, labels, "t", style=Style(colour=kind))
        assert chart_label(panel) == f"Heatmap: t, {n} × {n} (query by key)"
    spec = call("heatmap", weights[:, :1], labels, ["<b>v</b>"], title="t", outline_rows=(0,))
    fig = _heatmap_matches(spec, n, 1)
    assert fig.layout.xaxis.tickfont.color == figures.AXIS_COLOUR
    assert fig.layout.shapes[0].to_plotly_json()["y0"] == call("row_outline", 0)["y0"]
    blank = call("blank_non_finite", scores.numpy())
    assert np.isnan(blank[~torch.isfinite(scores).numpy()]).all()
    packed = call("packed", scores)
    np.testing.assert_array_equal(call("unpacked", packed), scores.numpy())

    ratio = call("ratio_to_uniform", weights)
    assert ratio.shape == (n, n)
    visible = np.tril(np.ones((n, n), dtype=bool))
    assert np.isnan(ratio[~visible]).all() and np.isfinite(ratio[visible]).all()
    _heatmap_matches(
        call(
            "heatmap",
            ratio,
            labels,
            labels,
            title="r",
            kind="relative",
            value_name=figures.RATIO_NAME,
        ),
        n,
        n,
    )

    half = list(labels)[n // 2 :]
    zoom = call(
        "heatmap",
        ratio[n // 2 :, n // 2 :],
        half,
        half,
        title="t",
        note="w",
        kind="relative",
        label_all=True,
    )
    fig = _heatmap_matches(zoom, len(half), len(half))
    _labels_are_escaped_and_one_per_position(fig.layout.yaxis.ticktext, len(half))
    assert subtitle_of(zoom) == "w"

    grid = as_figure(call("heads_grid", heads, labels, title="h"))
    grids = [t for t in grid.data if t.type == "heatmap"]
    assert len(grids) == heads.shape[0]
    for trace in grids:
        assert np.asarray(trace.z).shape == (n, n)
        _labels_are_escaped_and_one_per_position(trace.x, n)

    # presenter mode's screen: square cells in the frame the page lays out, numbers that fit
    for kind, z in (("weights", weights), ("signed", scores), ("mask", (weights == 0).float())):
        spec = call("heatmap", z, labels, labels, title="t", kind=kind, look=figures.PRESENTER)
        _heatmap_matches(spec, n, n)
        frame = call("matrix_frame", labels, labels, title="t", kind=kind)
        assert spec["layout"]["height"] == frame.height <= figures.STAGE_HEIGHT
        assert abs(frame.cell * n - frame.plot_height) < 1e-6
        numbers = call("stage_numbers", call("blank_non_finite", z.numpy()), frame.cell)
        if numbers is not None and kind != "mask" and n <= figures.ANNOTATE_MAX:
            text, size, widest = numbers
            assert spec["data"][0]["text"] == text and spec["data"][0]["textfont"]["size"] == size
            assert size * widest <= frame.cell - figures.CELL_CLEAR + 1e-6
    # and on a 1280×720 projector: the same layout at its scale, within its own stage
    assert call("scaled", figures.PROJECTOR, 1.0) is figures.PROJECTOR
    assert call("scaled", figures.PROJECTOR, 0.65).min_height == 390
    look = call("presenter_look", 1280, 720)
    assert call("screen_scale", 1280, 720) == look.scale == 0.65
    spec = call("heatmap", scores, labels, labels, title="t", kind="signed", look=look)
    frame = call("matrix_frame", labels, labels, title="t", kind="signed", look=look)
    assert spec["layout"]["height"] == frame.height <= look.stage_height
    assert frame.width <= look.stage_width
    assert abs(frame.cell * n - frame.plot_height) < 1e-6
    numbers = call("stage_numbers", call("blank_non_finite", scores.numpy()), frame.cell, look)
    if numbers is not None and n <= figures.ANNOTATE_MAX:
        text, size, widest = numbers
        assert size * widest <= frame.cell - call("cell_clear", look) + 1e-6
    first = call("short_number", float(scores[-1, 0]))
    assert first.lstrip("-")[:1] in "0123456789." and "0." not in first[:3]
    grid = as_figure(call("heads_grid", heads, labels, title="h", look=figures.PRESENTER))
    frame = call(
        "stage_frame",
        n,
        n,
        figures.axis_labels(labels),
        figures.axis_labels(labels),
        title="h",
        heads=heads.shape[0],
    )
    assert grid.layout.height == frame.height and grid.layout.yaxis.scaleanchor == "x"

    bar = as_figure(call("bars", weights[-1], labels, title="b", highlight=n - 1)).data[0]
    assert len(bar.y) == n
    _labels_are_escaped_and_one_per_position(bar.x, n)
    series = {"softmax": weights[-1].numpy(), "<i>naive</i>": weights[0].numpy()}
    grouped = as_figure(call("grouped_bars", series, labels, title="g"))
    assert len(grouped.data) == 2
    for trace in grouped.data:
        assert len(trace.y) == n
        _labels_are_escaped_and_one_per_position(trace.x, n)

    line = as_figure(
        call(
            "lines", list(range(n)), {"w": weights[-1].numpy()}, title="l", x_name="key", y_name="w"
        )
    )
    assert len(line.data[0].x) == len(line.data[0].y) == n
    hist = as_figure(
        call("histograms", {"weights": weights.numpy(), "scores": scores.numpy()}, title="h")
    )
    finite = int(torch.isfinite(scores).sum())
    assert [int(np.asarray(t.y).sum()) for t in hist.data] == [n * n, finite]
    timing = as_figure(call("timing_bars", labels, np.arange(1, n + 1), np.ones(n), title="t"))
    assert len(timing.data[0].y) == len(set(timing.data[0].y)) == n
    assert not any("<" in y for y in timing.data[0].y)

    # One cell's derivation (the last query, key 0) and the line view, on the same tokens.
    last = weights[-1]
    visible = [True] * n  # the last query sees every key
    lines = as_figure(call("attention_lines", last, labels, n - 1, visible=visible))
    keys = [t for t in lines.data if t.mode and t.mode.startswith("markers")][0]
    _labels_are_escaped_and_one_per_position(keys.hovertext, n)
    assert len([t for t in lines.data if t.mode == "lines"]) == int((last > 0).sum())
    waterfall = as_figure(
        call("score_terms", last, weights[0], query=n - 1, key=0, score=float(last @ weights[0]))
    ).data[0]
    assert len(waterfall.x) == n + 1 and waterfall.measure[-1] == "total"
    exps = torch.exp(scores[-1] - scores[-1].max())
    row = call(
        "softmax_row", scores[-1], exps, last, labels, query=n - 1, key=0,
        row_sum=float(exps.sum()), visible=visible,
    )  # fmt: skip
    _labels_are_escaped_and_one_per_position(as_figure(row).data[0].x, n)
    for chart in (
        call("context_terms", last, last.abs(), labels, query=n - 1, key=0),
        call("row_change", last, last, labels, key=0, title="c"),
    ):
        for trace in as_figure(chart).data:
            _labels_are_escaped_and_one_per_position(trace.x, n)

    assert call("axis_labels", labels) == [call("escape_label", lab) for lab in labels]
    assert call("dim_labels", n) == [f"dim {i}" for i in range(n)]
    z, rows, cols, note = call("crop", weights.numpy(), list(labels), list(labels), max_side=2)
    assert z.shape == (min(n, 2), min(n, 2)) and len(rows) == len(cols) == min(n, 2)
    assert bool(note) == (n > 2)

    # A title made of the (hostile) tokens: wrapped at word boundaries, once, and read back whole.
    text = " ".join(call("axis_labels", labels)) or "t"
    wrapped = call("wrap_title", text)
    assert call("wrap_title", wrapped) == wrapped
    layout = call("base_layout", wrapped, height=300)
    titled = go.Figure(layout=layout)
    assert titled.layout.height == 300
    assert call("title_of", {"layout": layout}) == " ".join(text.split(" "))
    assert call("one_line", wrapped) == " ".join(text.split(" "))


# --- the property -------------------------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_any_text_and_settings_run_through_every_pass_check_and_figure(case):
    text, text2, s, use_book = case
    before = torch.random.get_rng_state()
    _batch(text, text2, s, use_book)
    prep = lesson.prepare(text, s, use_book)
    if prep.empty:
        assert lesson.EMPTY_MESSAGE in prep.messages
        return
    n = prep.num_tokens
    assert n == 6 if use_book else 1 <= n <= min(s.max_tokens, s.context_length)
    assert lesson.within_context(prep, s.context_length) == (prep, None)
    assert prep.x.shape == (1, n, 3 if use_book else s.d_in)
    assert torch.isfinite(prep.x).all()
    if n > 1:  # a context shorter than the text cuts it, and says so
        cut, note = lesson.within_context(prep, n - 1)
        assert cut.num_tokens == n - 1 and cut.x.shape[1] == n - 1 and note

    draws = s.training and s.dropout > 0 and not use_book
    d_out = 2 if use_book else s.d_out
    simple = lesson.simplified(prep)
    assert tuple(simple.attn_weights.shape) == (n, n)
    assert tuple(simple.context.shape) == (n, prep.x.shape[-1])
    _rows_sum_to_one(simple.attn_weights)
    for version in ("v1", "v2"):
        tr = lesson.trainable(prep, s, version)
        assert tuple(tr.attn_weights.shape) == (n, n) and tuple(tr.output.shape) == (n, d_out)
        _rows_sum_to_one(tr.attn_weights)

    causal = lesson.causal(prep, s)
    assert tuple(causal.output.shape) == (1, n, d_out)
    _causal_pass(causal, s, draws, 1, n)
    if draws:
        mask = tracing.dropout_mask(causal)
        assert set(mask[torch.isfinite(mask)].unique().tolist()) <= {0.0, 1.0}

    multi_problem = None if use_book else s.multihead_problem()
    heads = None
    if multi_problem is None:
        H = 2 if use_book else s.num_heads
        multi = lesson.multihead(prep, s)
        assert tuple(multi.attn_weights.shape) == (1, H, n, n)
        assert tuple(multi.output.shape) == (1, n, d_out)
        _causal_pass(multi, s, draws, 1, n)
        assert len(tracing.strides_table(multi)) == 9
        wrap = lesson.wrapper(prep, s)
        per_head = 2 if use_book else s.d_out // s.num_heads
        assert tuple(wrap.output.shape) == (1, n, H * per_head)
        assert len(wrap.heads) == H
        for head in wrap.heads:
            _causal_pass(head, s, draws, 1, n)
        heads = multi.attn_weights[0]
    else:
        assert f"d_out={s.d_out}" in multi_problem and f"num_heads={s.num_heads}" in multi_problem

    if not use_book:
        _checks_on_correct_code(prep, replace(s, training=False), simple, multi_problem is None)
    called: set = set()
    weights = causal.attn_weights[0]
    scores = causal.scaled_scores[0]
    _every_figure(called, prep.labels, weights, weights[None] if heads is None else heads, scores)
    assert called == set(FIGURE_FUNCTIONS)

    assert torch.equal(torch.random.get_rng_state(), before)
    assert not rng_lock_held_by_me()


def _batch(text: str, text2: str, s: Settings, use_book: bool) -> None:
    batch = lesson.prepare_batch(text, text2, s, use_book)
    n = batch.num_tokens
    assert batch.x.shape == (2, n, 3 if use_book else s.d_in)
    assert len(batch.labels[0]) == len(batch.labels[1]) == n <= s.context_length
    tr = lesson.causal_batch(batch, s, use_book)
    assert tuple(tr.output.shape) == (2, n, 2 if use_book else s.d_out)
    _causal_pass(tr, s, s.training and s.dropout > 0 and not use_book, 2, n)
    if n and not use_book:
        _ok(live_checks.batch_rows_independent(lesson.spec_causal(s).build().eval(), batch.x))


def _checks_on_correct_code(prep, s: Settings, simple: tracing.Trace, multihead: bool) -> None:
    """Every check on the app's own (correct) code, in eval mode where the claims hold."""
    x = prep.x
    _ok(live_checks.rows_sum_to_one(simple.attn_weights))
    _ok(live_checks.weights_are_softmax(simple.attn_scores, simple.attn_weights))
    _ok(live_checks.naive_softmax_matches(simple.attn_scores))
    if simple.loop_scores is not None:
        _ok(live_checks.loops_equal_matmul(simple.inputs, simple.loop_scores))
    v1, v2 = lesson.spec_trainable(s, "v1"), lesson.spec_trainable(s)
    _ok(live_checks.v1_equals_v2(v1.build(), v2.build(), x[0]))
    trainable = lesson.trainable(prep, s)
    _ok(live_checks.weights_are_softmax(trainable.scaled_scores, trainable.attn_weights))

    causal = lesson.causal(prep, s)
    spec = lesson.spec_causal(s)
    _ok(
        live_checks.masking_routes_agree(
            tracing.renormalized_weights(causal), causal.attn_weights, causal.scaled_scores
        )
    )
    _ok(live_checks.no_future_leak(spec.build().eval(), x))
    _ok(live_checks.matches_sdpa(causal.queries, causal.keys, causal.values, causal.context, True))
    _ok(
        live_checks.eval_ignores_dropout(
            lambda m, inp: m(inp), lambda p: replace(spec, dropout=p).build(), x, s.dropout
        )
    )
    if not multihead:
        return
    multi = lesson.multihead(prep, s)
    mask = tracing.causal_mask(multi).bool()
    _ok(
        live_checks.heads_equal_loop(
            multi.queries, multi.keys, multi.values, multi.context, s.num_heads, mask
        )
    )
    _ok(
        live_checks.matches_sdpa(
            multi.queries_heads,
            multi.keys_heads,
            multi.values_heads,
            multi.context_heads,
            True,
        )
    )

    def mha():
        return lesson.spec_multihead(s).build()

    _ok(MC.wrapper_equals_split(mha(), x))
    _ok(MC.matches_torch_mha(mha(), x))
    _ok(MC.torch_mha_weights_match(mha(), x))
    _ok(live_checks.no_future_leak(mha().eval(), x))
    module = mha().eval()
    with torch.inference_mode():
        own = module(x)
    _ok(live_checks.same_output_as_mha(module, x, own, "the same module"))
    # The pages' way: the eval-mode trace and its references, computed once.
    checked = ML.eval_trace(multi)
    refs = impl.references(checked)
    side = impl.side_from(checked, refs)
    for result in (*side.checks, side.weights_check):
        _ok(result)
    for check in (impl.loop_check, impl.future_check, impl.wrapper_check):
        _ok(check(checked, refs))


# --- guards -------------------------------------------------------------------------------
def test_every_public_figure_function_is_exercised():
    public = {
        name
        for name, fn in inspect.getmembers(figures, callable)
        if not name.startswith("_")
        and not inspect.isclass(fn)
        and getattr(fn, "__module__", None) == figures.__name__
    }
    assert public == set(FIGURE_FUNCTIONS)


def test_every_check_is_run_on_correct_code(monkeypatch):
    """The property above runs every public check of attnviz.teach.checks: each is replaced by a
    spy, and one example where every pass applies goes through the same helpers."""
    public_checks = {
        name
        for name, fn in inspect.getmembers(live_checks, inspect.isfunction)
        if fn.__module__ == live_checks.__name__
        and not name.startswith("_")
        and inspect.signature(fn).return_annotation in ("CheckResult", live_checks.CheckResult)
    }
    called: set[str] = set()

    def spy(name, check):
        def run(*args, **kwargs):
            called.add(name)
            return check(*args, **kwargs)

        return run

    for name in public_checks:
        monkeypatch.setattr(live_checks, name, spy(name, getattr(live_checks, name)))
    s = Settings(d_in=8, d_out=8, num_heads=2, context_length=16, dropout=0.1)
    text = "the cat sat on the mat"
    _batch(text, "a dog ran", s, False)
    prep = lesson.prepare(text, s, False)
    simple = lesson.simplified(prep)
    _checks_on_correct_code(prep, s, simple, True)
    assert len(public_checks) >= 10
    assert public_checks - called == set()
