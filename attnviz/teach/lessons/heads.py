"""Sentences about what attention heads do, each a :class:`~attnviz.teach.panel.Claim` chosen from the
weights drawn: how far the weights are from an even share, whether the heads differ, and what a
head is named after (only when a detector's score says so, :mod:`attnviz.models.detectors`).

Passes 2-4 use them at random weights (the chapter's, near-even) and at trained weights (the
grown induction model's, page 8); the growing page uses the naming for its heads' maps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from attnviz.core import trace as tracing
from attnviz.models import detectors as D
from attnviz.teach.panel import Claim

# Two heads "attend with patterns of their own" when their rows differ by at least this mean
# total-variation distance (issue 24's target for trained heads); below ALIKE they barely differ.
DIFFER_AT = 0.5
ALIKE_BELOW = 0.1
# Weights are "close to an even share" when every visible weight is within NEAR_EVEN of its row's
# even share (causal rows: 1/(i + 1)), or, with no mask, when the largest weight is at most
# NEAR_EVEN_RATIO times an even share.
NEAR_EVEN = 0.1
NEAR_EVEN_RATIO = 1.5
DISTANCE_WORDS = (
    "the mean total-variation distance between their rows 1 … T−1: 0 when two heads attend "
    "alike, 1 when they put their weight on different keys"
)


def _printed(value: float, *thresholds: float) -> str:
    """``value`` to 2 decimals, or to 3 when 2 would put it on the other side of a threshold
    the wording was chosen by (0.497 is not "0.50" next to a 0.5 threshold)."""
    two = round(value, 2)
    if any((value < t) != (two < t) for t in thresholds):
        return f"{value:.3f}"
    return f"{two:.2f}"


def pattern_claim(key: str, weights: torch.Tensor) -> Claim | None:
    """Whether the heads of a (H, T, T) stack differ, with the largest distance between two of
    them (:func:`attnviz.models.detectors.head_distances` over rows 1 … T−1); None for one head or one
    token. "its own pattern" is said only at :data:`DIFFER_AT` or more."""
    if weights.dim() != 3 or weights.shape[0] < 2 or weights.shape[-1] < 2:
        return None
    d = D.head_distances(weights[:, 1:])
    g, h = np.unravel_index(int(np.argmax(d)), d.shape)
    top = float(d[g, h])
    shown = _printed(top, DIFFER_AT, ALIKE_BELOW)
    if top >= DIFFER_AT:
        text = (
            "Each head attends over the same tokens with its own pattern: heads "
            f"{min(g, h)} and {max(g, h)} differ by {shown} ({DISTANCE_WORDS})."
        )
    elif top < ALIKE_BELOW:
        text = (
            f"The heads barely differ: no two heads' rows are more than {shown} apart "
            f"({DISTANCE_WORDS}), so they attend almost alike."
        )
    else:
        text = (
            f"The heads differ only somewhat: the two most different, heads {min(g, h)} and "
            f"{max(g, h)}, are {shown} apart ({DISTANCE_WORDS}); heads with patterns of their "
            f"own are {DIFFER_AT} or more apart."
        )
    return Claim(text, key, "largest_head_distance_near", round(top, 3))


def spread_claim(key: str, weights: torch.Tensor, *, causal: bool, who: str) -> Claim | None:
    """How far attention weights are from an even share, in numbers. ``causal``: row i sees
    keys 0 … i (passes 3 and 4), else every row sees all T keys (pass 2). ``who`` starts the
    sentence ("These random weights")."""
    n = weights.shape[-1]
    if n == 0:
        return None
    w = weights.detach().to(torch.float64)
    if not causal:
        top = float(w.max())
        even = 1.0 / n
        near = top <= NEAR_EVEN_RATIO * even
        words = "close to" if near else "far from"
        return Claim(
            f"{who} are {words} an even share: the largest weight in any row is {top:.3f}, "
            f"where an even share of the {n} keys is 1/{n} = {even:.3f}.",
            key,
            "max_near",
            round(top, 3),
        )
    seen = torch.tril(torch.ones(n, n, dtype=torch.bool))
    even_rows = (1.0 / torch.arange(1, n + 1, dtype=torch.float64))[:, None].expand(n, n)
    gap = float((w - even_rows).abs()[..., seen].max())
    shown = _printed(gap, NEAR_EVEN)
    if gap <= NEAR_EVEN:
        text = (
            f"{who} are close to an even share: every weight is within {shown} of an even "
            "share of the keys its row can see (1/(i + 1) in row i)."
        )
    else:
        text = (
            f"{who} are far from an even share: a weight lies {shown} away from an even share "
            "of the keys its row can see (1/(i + 1) in row i)."
        )
    return Claim(text, key, "largest_gap_to_even_near", round(gap, 3))


def repeat_ids(labels: Sequence[str]) -> tuple[int, ...]:
    """One id per position, the same for positions that hold the same token: the order in which
    each token (its label after ``"i: "``) first appears. What the induction detector needs."""
    order: dict[str, int] = {}
    return tuple(order.setdefault(str(label).split(": ", 1)[-1], len(order)) for label in labels)


def expected_keys(labels: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """Each detector's expected key per query on these tokens (:mod:`attnviz.models.detectors`)."""
    n = len(labels)
    keys = {
        "previous": D.previous_keys(n),
        "current": D.current_keys(n),
        "first": D.first_keys(n),
        "induction": D.induction_keys(list(repeat_ids(labels))),
    }
    return {name: tuple(int(k) for k in t.tolist()) for name, t in keys.items()}


def _score(weights: torch.Tensor, keys: tuple[int, ...]) -> float:
    return float(D.expected_key_score(weights, torch.tensor(keys, dtype=torch.long))[()])


def article(noun: str) -> str:
    return "an" if noun[:1] in "aeiou" else "a"


def name_claims(
    key: str,
    weights: torch.Tensor,
    labels: Sequence[str],
    who: Callable[[int | None], str],
    heads: Sequence[int] | None = None,
    keys: dict[str, tuple[int, ...]] | None = None,
) -> tuple[Claim, ...]:
    """What each head is named after on these tokens, from its scores alone
    (:func:`attnviz.models.detectors.name_of`: a head is named only when a score reaches 0.5), or that
    it is not named and its highest score. ``weights``: (T, T), or (H, T, T) with ``heads`` the
    heads to speak of (all by default); ``who(h)`` names the head ("Head 2"; h None for a
    single matrix). ``keys``: each detector's expected keys; by default
    :func:`expected_keys` of the labels (induction from the tokens' repeats)."""
    keys = keys if keys is not None else expected_keys(labels)
    stack = weights.dim() == 3
    which = list(heads if heads is not None else range(weights.shape[0])) if stack else [None]
    out = []
    for h in which:
        w = weights[h] if h is not None else weights
        scores = {name: _score(w, k) for name, k in keys.items()}
        finite = {k: v for k, v in scores.items() if np.isfinite(v)}
        if not finite:
            continue
        best = max(finite, key=lambda k: finite[k])
        name = D.name_of(finite)
        measured = D.DETECTORS[best]
        if name is not None:
            out.append(
                Claim(
                    f"{who(h)} is {article(name)} {name} on this text; the score is its {measured}.",
                    key,
                    "named_by_score",
                    round(finite[best], 2),
                    head=h,
                    keys=(keys[best],),
                )
            )
        else:
            out.append(
                Claim(
                    f"{who(h)} is not named: no detector's score reaches {D.NAMED_AT} on this "
                    f"text (its highest, the {D.NAMES[best].removesuffix(' head')} score, is "
                    f"{finite[best]:.2f}).",
                    key,
                    "named_by_none",
                    round(finite[best], 2),
                    head=h,
                    keys=tuple(keys[k] for k in finite),
                )
            )
    return tuple(out)


# --- what the weights are, said on passes 2-4 -------------------------------------------------
MODULES = {
    "trainable": "SelfAttention_v2",
    "causal": "CausalAttention",
    "multihead": "MultiHeadAttention",
}


def trained_note(kind: str, spec: tracing.ModuleSpec) -> str:
    """Pass ``kind``'s module with trained weights (``spec.trained``), in words: what it holds,
    the sizes that fixes and the rule that maps the student's tokens into the model's
    vocabulary."""
    from attnviz.models.induction import passes

    if spec.trained is None:
        raise ValueError("the module holds random weights")
    whole = kind == "multihead"
    sizes = f"d_in = {spec.d_in}, d_out = {spec.d_out}" + (
        f" ({spec.num_heads} heads)" if whole else " (one head)"
    )
    if kind != "trainable":
        sizes += f", context_length = {spec.context_length}"
    return (
        f"Trained weights: this {MODULES[kind]} holds {spec.trained.words(whole)}, a model of "
        "two layers of the chapter's MultiHeadAttention grown on page 8 to continue repeated "
        f"tokens. The model fixes the sizes: {sizes}, no qkv_bias. X is the model's own token "
        "plus position embedding of your tokens, mapped into its vocabulary by one rule. "
        + passes.RULE
    )
