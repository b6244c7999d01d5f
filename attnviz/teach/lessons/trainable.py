"""Pass 2 as data: what the trainable self-attention page shows, computed once from its traces.

:func:`trainable_lesson` takes the trace of the module the student picked (v1 or v2), the other
version's trace (for the v1/v2 comparison) and, when the keys are narrow, a trace at a wider
d_out (:func:`wide_settings`), so the page can name the one change that makes the 1/√d_k
matter, with the numbers. Nothing here imports Streamlit.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import cast

import torch

from attnviz import figures
from attnviz.core import book as BK
from attnviz.core import modules as M
from attnviz.core import trace as tracing
from attnviz.core.settings import Settings
from attnviz.teach import bugs, scaling
from attnviz.teach import checks as live_checks
from attnviz.teach.lessons.common import matrix_panel, scores_panel, vectors_panel, weights_panel
from attnviz.teach.lessons.heads import name_claims, spread_claim
from attnviz.teach.panel import (
    HOLDS_CHANGE,
    HOLDS_KEYS,
    HOLDS_QUERIES,
    HOLDS_SCALED,
    HOLDS_SCORES,
    HOLDS_WEIGHTS,
    Claim,
    Declared,
    Panel,
    in_steps,
)

# Below this key width the page offers one click to it: at the defaults (d_out 8) dropping the
# 1/√d_k moves a weight by about 0.03, at d_out 128 by about 0.25 (measured on the default text).
WIDE_D_OUT = bugs.WIDE_D_OUT  # 128; the no-1/√d_k bug shows the same width beside its maps

TRAINING_NOTE = (
    "Training mode is on, but SelfAttention_v1 and _v2 have no dropout: the weights on this "
    "page are exactly the ones the context used. Dropout arrives in pass 3."
)

BookBlock = tuple[str, torch.Tensor, str]

# Page 2's panels, and the parts of it that draw their numbers (attnviz.teach.panel.Declared).
_PAGE = "trainable"
_CELL = ("", 0, 0)
_SCALING, _V1_V2 = "scaling", "v1v2"  # the closed parts (ui/sections.py)
SCORES_HIST = "p2_scores_hist"  # v1 against v2: the histogram of the scaled scores
DECLARED = (
    Declared("p2_W_query", _PAGE, "W_query", story=("p2_W",)),
    Declared("p2_W_key", _PAGE, "W_key", story=("p2_W",)),
    Declared("p2_W_value", _PAGE, "W_value", story=("p2_W",)),
    Declared("p2_queries", _PAGE, "queries", story=("p2_qkv",), holds=(HOLDS_QUERIES,), step=1),
    Declared("p2_keys", _PAGE, "keys", story=("p2_qkv",), holds=(HOLDS_KEYS,), step=2),
    Declared("p2_values", _PAGE, "values", story=("p2_qkv",), step=3),
    Declared(
        "p2_scores",
        _PAGE,
        "attn_scores",
        holds=(HOLDS_SCORES,),
        same=("p2_scaled",),
        cell=_CELL,
        step=4,
    ),
    Declared("p2_scaled", _PAGE, "scaled_scores", holds=(HOLDS_SCALED,), cell=_CELL, step=5),
    Declared("p2_weights", _PAGE, "attn_weights", holds=(HOLDS_WEIGHTS,), cell=_CELL, step=6),
    Declared("p2_context", _PAGE, "context", step=7),
    # what dropping the 1/√d_k changes, at the sidebar's d_out and at a wider one
    Declared("p2_unscaled_change", _PAGE, holds=(HOLDS_CHANGE,), box=_SCALING),
    Declared("p2_unscaled_change_wide", _PAGE, story=("p2_unscaled_change",), box=_SCALING),
    # the chapter's printouts (a row of scores and weights); the scaled scores' histogram (its
    # numbers box lists every scaled score); break-it's correct weights
    Declared("p2_book", _PAGE, shows=("p2_scores", "p2_weights")),
    Declared(SCORES_HIST, _PAGE, shows=("p2_scores", "p2_scaled"), box=_V1_V2),
    Declared("p2_breakit", _PAGE, shows=("p2_weights",)),
)


@dataclass(frozen=True)
class TrainableLesson:
    labels: tuple[str, ...]
    spec: tracing.ModuleSpec
    constructor: str  # the two lines that build the module, as the student would type them
    panels: dict[str, Panel]  # W_query, W_key, W_value, queries, keys, values, scores, ...
    claims: tuple[Claim, ...]
    checks: tuple[live_checks.CheckResult, ...]  # the page's live checks (exercise 3.1 is apart)
    exercise_3_1: live_checks.CheckResult | None  # None: built without the other version
    exercise_3_1_block: BookBlock | None  # book mode: sa_v1(inputs) after the transfer
    book_blocks: tuple[BookBlock, ...]
    scaling_note: str  # where to look when there is no wide panel ("" when there is one)
    entropy_figure: figures.Chart
    gradient_figure: figures.Chart
    study_caption: str
    weights_histogram: figures.Chart | None  # None: built without the other version
    scores_histogram: figures.Chart | None
    hidden: dict[str, str | None]

    def claims_on(self, panel: str) -> tuple[Claim, ...]:
        return tuple(c for c in self.claims if c.panel == panel)

    @property
    def steps(self) -> tuple[Panel, ...]:
        """Presenter mode, in the book's order: Q, K, V, scores, scaled, softmax, context."""
        return in_steps(DECLARED, {p.key: p for p in self.panels.values()})


def wide_settings(settings: Settings, book: bool) -> Settings | None:
    """The settings one click away where scaling matters (d_out raised to WIDE_D_OUT), or None
    when d_out is already that wide or in book mode (the chapter's sizes are fixed)."""
    if book or settings.trained or settings.d_out >= WIDE_D_OUT:
        return None
    return settings.with_changes(d_out=WIDE_D_OUT)


def weight_matrix(tr: tracing.TrainableTrace, name: str) -> torch.Tensor:
    """W as used in x @ W, shape (d_in, d_out), whichever way the module stores it."""
    if tr.spec.kind == "v2":
        return tr.params[f"{name}.weight"].T  # nn.Linear stores (d_out, d_in) and computes x Wᵀ
    return tr.params[name]


def _unscaled_change(tr: tracing.TrainableTrace) -> torch.Tensor:
    """(T, T): softmax(QKᵀ) minus softmax(QKᵀ/√d_k), what dropping the scaling changes."""
    with torch.inference_mode():
        return torch.softmax(tr.attn_scores, dim=-1) - tr.attn_weights


def _change_panel(tr: tracing.TrainableTrace, key: str) -> Panel:
    change, d_k = _unscaled_change(tr), tr.keys.shape[-1]
    fill = {"d_k": d_k}
    return scores_panel(
        key, change, tr.labels, value_name="change", story="p2_unscaled_change", fill=fill
    )


def _panels(tr: tracing.TrainableTrace, wide: tracing.TrainableTrace | None) -> dict[str, Panel]:
    lab = tr.labels
    d_in, d_out = tr.spec.d_in, tr.spec.d_out
    dims_in, dims_out = (
        tuple(figures.dim_labels(d_in, "in")),
        tuple(figures.dim_labels(d_out, "out")),
    )
    out: dict[str, Panel] = {}
    for name, short in (("W_query", "q"), ("W_key", "k"), ("W_value", "v")):
        out[name] = matrix_panel(
            f"p2_{name}",
            weight_matrix(tr, name),
            dims_in,
            dims_out,
            colour="signed",
            row_name="input dim",
            col_name="output dim",
            value_name="weight",
            annotate=False,  # three to a row: too narrow for numbers in the cells
            story="p2_W",
            fill={"short": short, "d_in": d_in, "d_out": d_out},
        )
    for name, short, one in (
        ("queries", "Q", "query"),
        ("keys", "K", "key"),
        ("values", "V", "value"),
    ):
        fill = {"short": short, "lower": short.lower(), "one": one}
        vectors = getattr(tr, name)
        out[name] = vectors_panel(
            f"p2_{name}",
            vectors,
            lab,
            dims_out,
            col_name="output dim",
            annotate=False,
            story="p2_qkv",
            fill=fill,
        )
    out["scores"] = scores_panel("p2_scores", tr.attn_scores, lab)
    root = {"d_out": d_out, "root": f"{d_out**0.5:.4f}"}
    out["scaled"] = scores_panel(
        "p2_scaled", tr.scaled_scores, lab, value_name="scaled score", fill=root
    )
    out["weights"] = weights_panel("p2_weights", tr.attn_weights, lab, causal=False)
    out["context"] = vectors_panel("p2_context", tr.context, lab, dims_out, col_name="output dim")
    out["change"] = _change_panel(tr, "p2_unscaled_change")
    if wide is not None:
        out["wide_change"] = _change_panel(wide, "p2_unscaled_change_wide")
    return out


def _claims(p: dict[str, Panel], spec: tracing.ModuleSpec) -> tuple[Claim, ...]:
    claims = [Claim("Every row of A sums to 1.", "weights", "rows_sum_to_one")]
    weights = p["weights"]
    who = "These trained weights" if spec.trained else "These random weights"
    spread = spread_claim("weights", weights.values, causal=False, who=who)
    claims += [spread] if spread is not None else []
    if spec.trained is not None:
        head = (
            f"This head (layer {spec.trained.layer}, head {spec.trained.head} of the grown model)"
        )
        claims += name_claims("weights", weights.values, weights.rows, lambda _h: head)
    here = round(float(p["change"].values.abs().max()), 3) if p["change"].values.numel() else 0.0
    d_k = p["queries"].values.shape[-1]
    moved = f"by up to {here:.3f}" if here > 0 else "by less than 0.0005"
    claims.append(
        Claim(
            f"Here (d_k = {d_k}), dropping the 1/√d_k moves a weight {moved}.",
            "change",
            "largest_change_near",
            here,
        )
    )
    if "wide_change" in p:
        wide = round(float(p["wide_change"].values.abs().max()), 3)
        claims.append(
            Claim(
                f"At d_out = {WIDE_D_OUT} (the map on the right), dropping the 1/√d_k moves a "
                f"weight by up to {wide:.3f}.",
                "wide_change",
                "largest_change_near",
                wide,
            )
        )
    return tuple(claims)


def _scaling_note(
    tr: tracing.TrainableTrace, wide: tracing.TrainableTrace | None, book: bool
) -> str:
    if wide is not None:
        return ""
    if tr.spec.trained is not None:
        return (
            f"The trained head's keys are {tr.spec.d_out} wide, and trained weights fix the "
            "sizes: switch the weights to random to try wider keys."
        )
    if book:
        return (
            f"The chapter's keys are {tr.spec.d_out} wide. To see wide keys, turn off book mode "
            f"and set d_out to {WIDE_D_OUT} or more."
        )
    return f"d_out = {tr.spec.d_out} is already {WIDE_D_OUT} or wider."


# The legend of the scaled curves: words, not "÷√d_k", whose ÷ reads as + in a small legend.
SCALED = "scaled by 1/√d_k"


@functools.lru_cache(maxsize=1)
def _study_figures() -> tuple[figures.Chart, figures.Chart, str]:
    """The why-scale curves: the same for every input (shared, read-only)."""
    study = scaling.scaling_study()
    x = study.d_ks
    entropy = figures.lines(
        x,
        {
            SCALED: study.entropy_scaled,
            "unscaled": study.entropy_unscaled,
            "uniform": [study.uniform_entropy] * len(x),
        },
        title="Row entropy (bits): how spread out the weights are",
        x_name="d_k",
        y_name="bits",
        log_x=True,
    )
    gradient = figures.lines(
        x,
        {SCALED: study.grad_norm_scaled, "unscaled": study.grad_norm_unscaled},
        title="Softmax gradient norm |∂α/∂ω|",
        x_name="d_k",
        y_name="norm",
        log_x=True,
    )
    caption = (
        f"At d_k={study.d_ks[-1]}: largest weight {study.max_weight_unscaled[-1]:.3f} unscaled "
        f"against {study.max_weight_scaled[-1]:.3f} scaled."
    )
    return entropy, gradient, caption


def _exercise_3_1(v2: tracing.TrainableTrace, book: bool):
    """Both modules built with the same seed, v2's weights transposed into v1."""
    seed = BK.SEED_V1 if book else v2.spec.seed
    s1 = cast(
        M.SelfAttention_v1, tracing.ModuleSpec("v1", v2.spec.d_in, v2.spec.d_out, seed=seed).build()
    )
    s2 = (
        v2.spec
        if v2.spec.trained
        else tracing.ModuleSpec(
            "v2", v2.spec.d_in, v2.spec.d_out, qkv_bias=v2.spec.qkv_bias, seed=seed
        )
    )
    sa_v2 = cast(M.SelfAttention_v2, s2.build())
    check = live_checks.v1_equals_v2(s1, sa_v2, v2.inputs)
    if check.status == "n/a":
        return check, None
    with torch.inference_mode():
        return check, live_checks.transferred_v1(s1, sa_v2)(v2.inputs)


def _book_blocks(tr: tracing.TrainableTrace) -> tuple[BookBlock, ...]:
    if tr.spec.kind == "v2":
        return (("sa_v2(inputs), seed 789", tr.output, "sa_v2"),)
    return (
        ("query_2 = x_2 @ W_query (queries[1])", tr.queries[1], "trainable_query_2"),
        ("attn_scores_2 = query_2 @ keys.T", tr.attn_scores[1], "trainable_scores_2"),
        ("softmax(attn_scores_2 / d_k**0.5)", tr.attn_weights[1], "trainable_weights_2"),
        ("context_vec_2 (context[1])", tr.context[1], "trainable_context_2"),
        ("sa_v1(inputs), seed 123", tr.output, "sa_v1"),
    )


def trainable_lesson(
    tr: tracing.TrainableTrace,
    other: tracing.TrainableTrace | None,
    wide: tracing.TrainableTrace | None,
    book: bool,
) -> TrainableLesson:
    """Everything page 2 shows. ``tr``: the module picked; ``other``: the other version on the
    same inputs; ``wide``: the picked module at :func:`wide_settings`, or None. Without
    ``other`` (the page's first run, its v1-against-v2 part closed), exercise 3.1 and the two
    histograms are left out (None)."""
    panels = _panels(tr, wide)
    ex31 = ex31_out = weights_histogram = scores_histogram = None
    if other is not None:
        v1, v2 = (tr, other) if tr.spec.kind == "v1" else (other, tr)
        weights_of = {
            "v1": torch.cat([v1.params[n].reshape(-1) for n in ("W_query", "W_key", "W_value")]),
            "v2": torch.cat(
                [v2.params[f"{n}.weight"].reshape(-1) for n in ("W_query", "W_key", "W_value")]
            ),
        }
        ex31, ex31_out = _exercise_3_1(v2, book)
        if tr.spec.trained is not None:  # both hold the trained head (v1 its transpose)
            hist_title = "The trained head's weights, in both modules"
            hist_names = ("v1: trained Wᵀ", "v2: trained W")
        else:
            hist_title = "Initial weights"
            hist_names = ("v1: U[0, 1)", "v2: U(±1/√d_in)")
        weights_histogram = figures.histograms(
            {hist_names[0]: weights_of["v1"], hist_names[1]: weights_of["v2"]},
            title=hist_title,
            x_name="weight",
        )
        scores_histogram = figures.histograms(
            {"v1": v1.scaled_scores, "v2": v2.scaled_scores},
            title="Scaled scores they produce",
            x_name="score",
        )
    entropy, gradient, study_caption = _study_figures()
    return TrainableLesson(
        labels=tr.labels,
        spec=tr.spec,
        constructor=tr.spec.build_lines("sa"),
        panels=panels,
        claims=_claims(panels, tr.spec),
        checks=(
            live_checks.rows_sum_to_one(tr.attn_weights),
            live_checks.matches_sdpa(tr.queries, tr.keys, tr.values, tr.context, causal=False),
        ),
        exercise_3_1=ex31,
        exercise_3_1_block=(
            (
                "Exercise 3.1: sa_v1(inputs) after the transfer (both seed 123)",
                ex31_out,
                "exercise_3_1",
            )
            if book and ex31_out is not None
            else None
        ),
        book_blocks=_book_blocks(tr) if book else (),
        scaling_note=_scaling_note(tr, wide, book),
        entropy_figure=entropy,
        gradient_figure=gradient,
        study_caption=study_caption,
        weights_histogram=weights_histogram,
        scores_histogram=scores_histogram,
        hidden={bug.key: bug.hidden_at(tr.inputs, tr.spec) for bug in bugs.bugs_for("trainable")},
    )
