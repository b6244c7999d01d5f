"""Page 5, "Watch attention learn", as data: everything the page shows of one training run.

:func:`task_view` describes the task before anything is trained; :func:`lesson` turns one
finished run (:class:`attnviz.models.toy_tasks.LearnResult`) into panels, curves, badges and the sentences
that state properties of the weights, each a :class:`~attnviz.teach.panel.Claim` computed from the
numbers it speaks of. No Streamlit here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from attnviz import figures
from attnviz.models import toy_tasks as learn
from attnviz.teach.panel import CAUSAL_WEIGHTS, Claim, Panel, Style, token_panel

SHARP = 0.9  # a head "found" the pattern when this share of its attention is on the right key
NEARLY_EVEN = 0.1  # step-0 rows within this of an even share are called "nearly uniform"
HALF_UNIT = 0.005  # half of the last printed decimal (the maps print 2)


@dataclass(frozen=True)
class TaskView:
    """The task in words and the fixed example as a table (shown before training)."""

    sentence: str
    example: pd.DataFrame


@dataclass(frozen=True)
class SnapshotView:
    """One recorded step: a caption and one panel per head (plus the expected pattern beside a
    single head, for comparison)."""

    step: int
    caption: str
    panels: tuple[Panel, ...]


@dataclass(frozen=True)
class LearnLesson:
    """Everything the page shows of one finished run."""

    metrics: tuple[tuple[str, str], ...]  # (label, value)
    shares: tuple[tuple[str, bool], ...]  # one badge per head: (text, reached SHARP)
    share_note: str  # what the badges mean at these numbers ("" when nothing to add)
    curves: tuple[tuple[str, figures.Chart], ...]  # (key, figure): loss and accuracy per step
    snapshots: tuple[SnapshotView, ...]  # step 0 .. the last step
    compare: tuple[Panel, ...]  # the expected pattern, then each head after training
    claims: tuple[Claim, ...]
    trained_line: str  # the progress bar's closing text after a run

    @property
    def panels(self) -> dict[str, Panel]:
        found = {p.key: p for p in self.compare}
        for snap in self.snapshots:
            found.update({p.key: p for p in snap.panels})
        return found


def task_view(cfg: learn.LearnConfig) -> TaskView:
    if cfg.task == "shift":
        sentence = (
            f"**Shift**: at every position, output the symbol {cfg.k} positions earlier. The "
            f"first {cfg.k} positions have nothing to copy, so they have no target and count "
            "neither in the loss nor in the accuracy. The right attention pattern is one "
            f"off-diagonal: query i looks at key i − {cfg.k}."
        )
    else:
        sentence = (
            "**Marked**: every sequence holds exactly one marked symbol (shown with *). From the "
            "mark on, every position outputs the marked symbol; before it, the answer is “none”. "
            "The right attention pattern is the mark's column: every query at or after the mark "
            "looks at it."
        )
    rows = learn.example_rows(cfg)
    table = pd.DataFrame(
        [
            {"": name, **{str(i): cell for i, cell in enumerate(cells)}}
            for name, cells in rows.items()
        ]
    )
    return TaskView(sentence, table)


def _panel(key: str, weights: torch.Tensor, labels, title: str, **style) -> Panel:
    """One head's causal weights after training (or the expected pattern), as a panel."""
    return token_panel(
        key,
        weights,
        labels,
        title,
        formula=r"A_h",
        sentence=title,
        kind=CAUSAL_WEIGHTS if "value_name" not in style else "",
        style=Style(**style),
    )


def _largest_gap_from_even(weights: torch.Tensor) -> float:
    """Largest |w - 1/(i+1)| over the keys query i can see, over every head."""
    n = weights.shape[-1]
    seen = torch.tril(torch.ones(n, n, dtype=torch.bool))
    even = (1.0 / torch.arange(1, n + 1, dtype=torch.float64))[:, None].expand(n, n)
    return float((weights.to(torch.float64) - even).abs()[..., seen].max())


def _snapshot(res: learn.LearnResult, snap: learn.Snapshot) -> SnapshotView:
    shares = ", ".join(
        f"head {h} {share:.2f}"
        for h, share in enumerate(learn.pattern_share(snap.weights, res.expected))
    )
    if snap.step == 0:
        where = "Step 0: the freshly initialized layer, before any update"
    else:
        where = (
            f"Step {snap.step}: training loss {res.loss[snap.step - 1]:.4f}, "
            f"batch accuracy {res.accuracy[snap.step - 1]:.1%}"
        )
    caption = f"{where}. Attention on the expected key in this example: {shares}."
    panels = [
        _panel(
            f"p5_snap{snap.step}_{h}", snap.weights[h], res.labels, f"Head {h}, step {snap.step}"
        )
        for h in range(res.config.num_heads)
    ]
    if res.config.num_heads == 1:
        panels.append(
            _panel(
                f"p5_snap{snap.step}_expected",
                res.expected,
                res.labels,
                "Expected (for comparison)",
                value_name="expected",
            )
        )
    return SnapshotView(snap.step, caption, tuple(panels))


def _claims(res: learn.LearnResult, snapshots: tuple[SnapshotView, ...]) -> tuple[Claim, ...]:
    """Sentences about the weights, each chosen and worded from the numbers it speaks of."""
    claims = []
    heads = res.config.num_heads
    first = snapshots[0]
    for h in range(heads):
        who = "" if heads == 1 else f", head {h}"
        gap = math.ceil(_largest_gap_from_even(res.snapshots[0].weights[h]) * 100) / 100
        text = (
            f"At step 0{who}, every weight is within {gap:.2f} of an even share of the keys its "
            "query can see"
        )
        if gap <= NEARLY_EVEN:
            text += ": before training, the rows are nearly uniform."
        else:
            text += ": before training, some rows already lean on some keys."
        claims.append(Claim(text, first.panels[h].key, "causal_near_even", gap))
    for h in range(heads):
        # The largest gap, rounded as the maps print their weights (2 decimals), so the sentence
        # and the map agree; the claim holds it to half a unit of that last decimal.
        before = round(_largest_gap_from_even(res.snapshots[0].weights[h]), 2)
        after = round(_largest_gap_from_even(res.final_weights[h]), 2)
        text = (
            f"After {res.config.steps} steps, head {h}'s weights on this example are up to "
            f"{_printed(after)} away from an even share (at step 0: up to {_printed(before)})."
        )
        claims.append(Claim(text, f"p5_final_{h}", "causal_near_even", after + HALF_UNIT))
    return tuple(claims)


def _printed(gap: float) -> str:
    return f"{gap:.2f}" if gap > 0 else "less than 0.005"


def _curve(res: learn.LearnResult, name: str, values, what: str, y_name: str) -> figures.Chart:
    """One value per training step, as a line (markers while the steps are few enough to
    see); an accuracy is drawn on a fixed 0-1 axis."""
    steps = res.config.steps
    return figures.lines(
        list(range(1, steps + 1)),
        {name: np.asarray(values)},
        title=f"{what} on each training batch",
        x_name="step",
        y_name=y_name,
        markers=steps <= 60,
        y_range=(0.0, 1.02) if y_name == "accuracy" else None,
    )


def lesson(res: learn.LearnResult) -> LearnLesson:
    cfg = res.config
    metrics = (
        ("Held-out accuracy", f"{res.held_out_accuracy:.1%}"),
        ("Held-out loss", f"{res.held_out_loss:.4f}"),
        ("Steps", f"{cfg.steps}"),
        ("Training time", f"{res.seconds:.2f} s"),
    )
    shares = tuple((f"Head {h}: {s:.3f}", s >= SHARP) for h, s in enumerate(res.head_share))
    if cfg.num_heads > 1:
        note = (
            "With several heads, one head may solve the task while the others do something "
            "else: the output layer reads from all of them."
        )
    elif max(res.head_share) < SHARP and res.held_out_accuracy >= 0.99:
        note = (
            "The task is solved, but the attention is still blurry: once the loss is near 0 the "
            "gradients vanish, so nothing pushes the weights to sharpen further. A larger "
            "learning rate sharpens before that happens."
        )
    else:
        note = ""
    curves = (
        ("loss", _curve(res, "training loss", res.loss, "Loss", "cross-entropy")),
        ("accuracy", _curve(res, "training accuracy", res.accuracy, "Accuracy", "accuracy")),
    )
    snapshots = tuple(_snapshot(res, s) for s in res.snapshots)
    compare = (
        _panel(
            "p5_expected",
            res.expected,
            res.labels,
            "Expected: the key that solves the task",
            value_name="expected",
        ),
        *(
            _panel(
                f"p5_final_{h}",
                res.final_weights[h],
                res.labels,
                f"Learned: head {h} after {cfg.steps} steps",
            )
            for h in range(cfg.num_heads)
        ),
    )
    return LearnLesson(
        metrics=metrics,
        shares=shares,
        share_note=note,
        curves=curves,
        snapshots=snapshots,
        compare=compare,
        claims=_claims(res, snapshots),
        trained_line=f"Trained {cfg.steps} steps in {res.seconds:.2f} s.",
    )
