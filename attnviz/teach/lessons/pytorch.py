"""Page 6, "Your module against PyTorch's", as data.

:func:`lesson` turns the multi-head trace and the side-by-side run
(:func:`attnviz.models.implementations.side_by_side`) into the panels, checks and sentences the page
shows; :func:`head_panels` draws one head's weights (ours beside nn.MultiheadAttention's);
:func:`speed_view` turns one benchmark into its chart, table and sentences, including what the
measurement says about the chapter's wrapper against its weight split. No Streamlit here.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from attnviz import figures
from attnviz.core.trace import MultiHeadTrace
from attnviz.models import implementations as impl
from attnviz.teach import checks as live_checks
from attnviz.teach.lessons.common import vectors_panel, weights_panel
from attnviz.teach.panel import Claim, Panel


@dataclass(frozen=True)
class Output:
    """One implementation's output: a panel, or why it does not apply here."""

    name: str
    panel: Panel | None
    not_applicable: str = ""


@dataclass(frozen=True)
class PytorchLesson:
    training_note: str  # "" unless the sidebar asks for training mode (this page runs eval)
    code: str  # the calls compared, with this page's constructor arguments
    outputs: tuple[Output, ...]  # ours, SDPA, nn.MultiheadAttention
    num_heads: int
    weights_na: str  # why nn.MultiheadAttention cannot hold our weights, or ""
    side: impl.SideBySide
    labels: tuple[str, ...]
    claims: tuple[Claim, ...]  # about head 0's weights (see :func:`head_panels`)
    here_shape: impl.Shape
    here_caption: str

    @property
    def checks(self) -> tuple[live_checks.CheckResult, ...]:
        """Ours against SDPA and nn.MultiheadAttention, on the outputs."""
        return self.side.checks

    @property
    def weights_check(self) -> live_checks.CheckResult:
        """Our weights against nn.MultiheadAttention's (n/a when it cannot hold ours)."""
        return self.side.weights_check

    @property
    def panels(self) -> dict[str, Panel]:
        found = {o.panel.key: o.panel for o in self.outputs if o.panel is not None}
        for h in range(self.num_heads):
            found.update({p.key: p for p in head_panels(self, h)})
        return found


def lesson(
    trace: MultiHeadTrace, side: impl.SideBySide, *, training: bool, book: bool = False
) -> PytorchLesson:
    """``training``: the sidebar's training switch (False in book mode): the page compares in
    eval mode either way and says so."""
    spec, labels = trace.spec, tuple(trace.labels)
    out_dims = tuple(figures.dim_labels(spec.d_out, "out"))
    top = float(side.ours.abs().max()) or 1.0  # one colour scale for all three
    outputs = []
    for name, tensor, key in (
        ("Ours: MultiHeadAttention", side.ours, "ours"),
        ("SDPA (+ the same projections)", side.sdpa, "sdpa"),
        ("nn.MultiheadAttention", side.torch_mha, "torch"),
    ):
        if tensor is None:
            outputs.append(Output(name, None, f"Not applicable: {side.not_applicable}."))
            continue
        panel = vectors_panel(
            f"p6_{key}",
            tensor[0],
            labels,
            out_dims,
            col_name="output dim",
            zmax=top,
            annotate=spec.d_out <= 4,
            story="p6_output",
            fill={"name": name},
        )
        outputs.append(Output(name, panel))
    note = ""
    if training:
        note = (
            "Training mode is on in the sidebar. This page compares in eval mode, where dropout "
            "is the identity: each implementation would draw its own dropout mask, so in "
            "training mode no two of them give the same numbers."
        )
    code = (
        f"torch.manual_seed({spec.seed})\n"
        f"mha = {spec.constructor_call()}.eval()\n"
        f"ours = mha(x)  # x: {tuple(trace.inputs.shape)}\n\n"
        "context = F.scaled_dot_product_attention(queries, keys, values, is_causal=True)"
        "  # (b, H, T, head_dim)\n\n"
        "ref = nn.MultiheadAttention(d_out, num_heads, bias=True, batch_first=True)"
        "  # + our weights\n"
        "future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)"
        "  # True = may not attend\n"
        "theirs, weights = ref(x, x, x, attn_mask=future, need_weights=True, "
        "average_attn_weights=False)"
    )
    n, heads = trace.num_tokens, spec.num_heads
    here_shape: impl.Shape = (1, n, spec.d_in, spec.d_out, heads, spec.qkv_bias)
    timing_s = impl.seconds_per_impl_for(here_shape) * len(impl.KEYS)
    here_caption = (
        f"1 × {n} tokens, d_in {spec.d_in}, d_out {spec.d_out}, {heads} heads: about "
        f"{timing_s:.0f} s of timing, plus building and checking."
    )
    weights_na = ""
    if side.torch_weights is None:
        where = "book mode uses the chapter's sizes: turn it off and" if book else "in the sidebar,"
        weights_na = (
            f"Not applicable: {side.not_applicable}. To compare weights, {where} set d_in "
            "equal to d_out."
        )
    claims = (
        Claim(
            "Every row of our weights sums to 1: this page runs in eval mode, where dropout is "
            "the identity, so the weights drawn are the ones the context used.",
            "p6_ours_w_0",
            "rows_sum_to_one",
        ),
        Claim(
            "Every weight above the diagonal is exactly 0: no query attends to a later token.",
            "p6_ours_w_0",
            "future_is_zero",
        ),
    )
    return PytorchLesson(
        training_note=note,
        code=code,
        outputs=tuple(outputs),
        num_heads=heads,
        weights_na=weights_na,
        side=side,
        labels=labels,
        claims=claims,
        here_shape=here_shape,
        here_caption=here_caption,
    )


def head_panels(les: PytorchLesson, head: int) -> tuple[Panel, ...]:
    """Head ``head``'s weights: ours, and nn.MultiheadAttention's when it applies."""
    labels, side = les.labels, les.side
    found = []
    for name, weights, key in (
        ("Ours", side.ours_weights, "ours_w"),
        ("nn.MultiheadAttention", side.torch_weights, "torch_w"),
    ):
        if weights is None:
            continue
        fill = {"name": name, "head": head}
        found.append(
            weights_panel(
                f"p6_{key}_{head}",
                weights[0, head],
                labels,
                causal=True,
                story="p6_head_weights",
                fill=fill,
            )
        )
    return tuple(found)


# --- speed --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpeedView:
    figure: figures.Chart | None
    sentences: str  # what the measurement shows, in words
    table: pd.DataFrame
    caption: str


def matmul_counts(num_heads: int) -> tuple[int, int]:
    """Projection matmuls per forward: the wrapper runs one per head and role (3·H), the weight
    split one per role (3); both then add one out_proj here."""
    return 3 * num_heads + 1, 3 + 1


def wrapper_sentence(result: impl.BenchResult) -> str:
    """The chapter's efficiency claim against what this measurement shows."""
    wrapper, split = result.timing("wrapper"), result.timing("weight_split")
    if wrapper.median_s is None or split.median_s is None:
        return ""
    wrapper_s, split_s = wrapper.median_s, split.median_s
    heads = result.shape[4]
    many, few = matmul_counts(heads)
    count = (
        f"The chapter's claim is about work done in separate calls: the wrapper runs {many} "
        f"matrix multiplications for the projections and out_proj ({heads} heads × 3 roles + "
        f"1), the weight split {few}."
    )
    both = f"{impl.fmt_ms(wrapper_s)} against {impl.fmt_ms(split_s)}"
    outcome = impl.compare(split, wrapper)
    if outcome == "faster":
        return (
            f"{count} Here the weight split was {wrapper_s / split_s:.2f}× as fast as the "
            f"wrapper ({impl.fmt_ms(split_s)} against {impl.fmt_ms(wrapper_s)}), as the "
            "chapter says."
        )
    if outcome == "slower":
        return (
            f"{count} Here, though, the wrapper was faster ({both}), against the chapter's "
            "claim: at batch 1 each head's matmuls are small enough to stay in the CPU's "
            "caches, while the weight split pays for the view, the two transposes and the "
            "contiguous copy that split and merge the heads. The count of matmuls stays as the "
            "chapter says; which one is faster depends on the shape and the machine."
        )
    return (
        f"{count} This measurement shows no clear difference between them ({both}; "
        f"{impl.why_unclear(wrapper, split)})."
    )


def speed_view(result: impl.BenchResult) -> SpeedView:
    timed = sorted((t for t in result.timings if t.timed), key=lambda t: t.median_s or 0.0)
    figure = None
    if timed:
        figure = figures.timing_bars(
            [t.label for t in timed],
            [t.ms for t in timed],
            [t.ratio for t in timed],
            low_ms=[(t.low_s or 0.0) * 1e3 for t in timed],
            high_ms=[(t.high_s or 0.0) * 1e3 for t in timed],
            highlight={i for i, t in enumerate(timed) if t.key in ("weight_split", "sdpa")},
            title="Median time per forward pass (whiskers: middle half of the samples)",
        )
    sentences = " ".join(s for s in (result.verdict(), wrapper_sentence(result)) if s)
    rows = []
    for t in result.timings:
        rows.append(
            {
                "implementation": t.label,
                "status": t.status,
                "median (ms)": None if t.ms is None else round(t.ms, 4),
                "middle half (ms)": (
                    f"{(t.low_s or 0) * 1e3:.4g}–{(t.high_s or 0) * 1e3:.4g}" if t.timed else ""
                ),
                "× fastest": None if t.ratio is None else round(t.ratio, 2),
                "largest difference from ours": (
                    None if t.check is None or t.check.max_diff is None else t.check.max_diff
                ),
                "tolerance": None if t.check is None else t.check.tol,
                "note": "" if t.status == "verified" else t.reason,
            }
        )
    b, tokens, d_in, d_out, heads, bias = result.shape
    caption = (
        f"Batch {b}, {tokens} tokens, d_in {d_in}, d_out {d_out}, {heads} heads"
        f"{', qkv_bias' if bias else ''}; median of {result.rounds} interleaved rounds "
        f"({result.calls_per_sample} call{'s' if result.calls_per_sample > 1 else ''} per "
        f"sample); {result.threads} CPU thread{'s' if result.threads > 1 else ''}, torch "
        f"{result.torch_version}; the whole measurement took {result.seconds:.0f} s. "
        "Measured once in this server process and shared by every session; other students' "
        "requests running at the same time make every number larger."
    )
    return SpeedView(figure, sentences, pd.DataFrame(rows), caption)
