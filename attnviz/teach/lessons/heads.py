"""Sentences about what attention heads do, each a :class:`~attnviz.teach.panel.Claim` chosen from the
weights drawn: how far the weights are from an even share, whether the heads differ, and what a
head is named after (only when a detector's score says so, :mod:`attnviz.models.detectors`).

Passes 2-4 use them at random weights (the chapter's, near-even) and at trained weights (the
grown induction model's, page 8); the growing page uses the naming for its heads' maps.
"""

from __future__ import annotations

import math
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
# "Far from an even share" when some visible weight lies at least this far from it; between the
# two, neither is said.
FAR_FROM_EVEN = 0.5
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


def heads_words(heads: Sequence[int], capital: bool = False) -> str:
    """ "head 2", "heads 0 and 1", "heads 0, 1 and 3" ("Head 2" with ``capital``)."""
    word = "Head" if capital else "head"
    if len(heads) == 1:
        return f"{word} {heads[0]}"
    listed = ", ".join(str(h) for h in heads[:-1])
    return f"{word}s {listed} and {heads[-1]}"


def own_pattern_heads(weights: torch.Tensor) -> tuple[int, ...]:
    """The heads of a (H, T, T) stack whose rows 1 … T−1 are at least :data:`DIFFER_AT` from
    every other head's (:func:`attnviz.models.detectors.head_distances`): the heads with a
    pattern of their own."""
    d = D.head_distances(weights[:, 1:])
    np.fill_diagonal(d, np.inf)
    return tuple(h for h in range(d.shape[0]) if float(d[h].min()) >= DIFFER_AT)


def pattern_claim(key: str, weights: torch.Tensor) -> Claim | None:
    """Which heads of a (H, T, T) stack attend with a pattern of their own, named per head: a
    head does when every other head is at least :data:`DIFFER_AT` from it
    (:func:`attnviz.models.detectors.head_distances` over rows 1 … T−1). None for one head or
    one token."""
    if weights.dim() != 3 or weights.shape[0] < 2 or weights.shape[-1] < 2:
        return None
    d = D.head_distances(weights[:, 1:])
    g, h = np.unravel_index(int(np.argmax(d)), d.shape)
    top = float(d[g, h])
    nearest = d + np.diag(np.full(d.shape[0], np.inf))
    own = own_pattern_heads(weights)
    rest = tuple(x for x in range(d.shape[0]) if x not in own)
    if own:
        least = float(min(nearest[x].min() for x in own))
        shown = f"{_floor(least):.2f}"  # "at least": rounded down
        if not rest:
            text = (
                "Each head attends over the same tokens with its own pattern: every two "
                f"heads' rows are at least {shown} apart ({DISTANCE_WORDS})."
            )
        else:
            close = float(max(nearest[x].min() for x in rest))
            one = len(own) == 1
            text = (
                f"{heads_words(own, capital=True)} {'attends' if one else 'attend'} with "
                f"{'a pattern of its own' if one else 'patterns of their own'}: "
                f"{'it is' if one else 'each is'} at least {shown} from every other head "
                f"({DISTANCE_WORDS}). {heads_words(rest, capital=True)} "
                f"{'does' if len(rest) == 1 else 'do'} not: "
                f"{'it is' if len(rest) == 1 else 'each is'} within "
                f"{_bound(close):.2f} of another head."
            )
        return Claim(text, key, "own_pattern_heads", DIFFER_AT, keys=(own,))
    shown = _printed(top, DIFFER_AT, ALIKE_BELOW)
    if top < ALIKE_BELOW:
        text = (
            f"The heads barely differ: no two heads' rows are more than {_bound(top):.2f} apart "
            f"({DISTANCE_WORDS}), so they attend almost alike."
        )
    elif top < DIFFER_AT:
        text = (
            f"The heads differ only somewhat: the two most different, heads {min(g, h)} and "
            f"{max(g, h)}, are {shown} apart ({DISTANCE_WORDS}); heads with patterns of their "
            f"own are {DIFFER_AT} or more apart."
        )
    else:
        close = float(max(nearest[x].min() for x in range(d.shape[0])))
        text = (
            f"No head attends with a pattern of its own: each is within "
            f"{_bound(close):.2f} of another head ({DISTANCE_WORDS}), though heads "
            f"{min(g, h)} and {max(g, h)} are {shown} apart."
        )
    return Claim(text, key, "largest_head_distance_near", round(top, 3))


def _gaps(weights: torch.Tensor) -> torch.Tensor:
    """(..., T, T) causal weights -> (...,): the largest |w_ij − 1/(i + 1)| over j <= i."""
    n = weights.shape[-1]
    w = weights.detach().to(torch.float64)
    seen = torch.tril(torch.ones(n, n, dtype=torch.bool))
    even_rows = (1.0 / torch.arange(1, n + 1, dtype=torch.float64))[:, None].expand(n, n)
    return (w - even_rows).abs().masked_fill(~seen, 0.0).amax(dim=(-2, -1))


def _bound(gap: float) -> float:
    """``gap`` rounded up to 2 decimals: "within 0.03" for a gap of 0.0205, never "0.02"."""
    return max(math.ceil(gap * 100 - 1e-6), 0) / 100  # float32 noise is not a cent


def _floor(value: float) -> float:
    """``value`` rounded down to 2 decimals: "at least 0.52" for 0.527, never "0.53"."""
    return math.floor(value * 100 + 1e-6) / 100


def _band(gap: float) -> str:
    if gap <= NEAR_EVEN:
        return "close"
    return "far" if gap >= FAR_FROM_EVEN else "between"


def _spread_text(who: str, verb: str, gap: float) -> str:
    band = _band(gap)
    if band == "close":
        return (
            f"{who} {verb} close to an even share: every weight is within {_bound(gap):.2f} of "
            "an even share of the keys its row can see (1/(i + 1) in row i)."
        )
    if band == "far":
        return (
            f"{who} {verb} far from an even share: a weight lies {_printed(gap, FAR_FROM_EVEN)} "
            "away from an even share of the keys its row can see (1/(i + 1) in row i)."
        )
    return (
        f"{who} {verb} neither close to an even share nor far from it: no weight is more than "
        f"{_bound(gap):.2f} from an even share of the keys its row can see (1/(i + 1) in row "
        f"i); close is within {NEAR_EVEN}, far is {FAR_FROM_EVEN} or more."
    )


def _spread_claim_of(text: str, key: str, gap: float, head: int | None = None) -> Claim:
    if _band(gap) == "far":
        return Claim(text, key, "largest_gap_to_even_near", round(gap, 3), head=head)
    return Claim(text, key, "causal_near_even", _bound(gap), head=head)


def spread_claim(key: str, weights: torch.Tensor, *, causal: bool, who: str) -> Claim | None:
    """How far attention weights are from an even share, in numbers. ``causal``: row i sees
    keys 0 … i (passes 3 and 4), else every row sees all T keys (pass 2). ``who`` starts the
    sentence ("These random weights"). A bound ("within 0.03") is the largest gap rounded up."""
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
    gap = float(_gaps(w).max())
    return _spread_claim_of(_spread_text(who, "are", gap), key, gap)


def spread_claims(key: str, weights: torch.Tensor, who: str) -> tuple[Claim, ...]:
    """:func:`spread_claim` for a (H, T, T) stack of causal weights, per head: one sentence
    for every head when all are in the same band (close, between, far), else one sentence per
    head naming it. ``who``: "These trained weights"."""
    gaps = [float(g) for g in _gaps(weights)]
    if len(gaps) == 1 or len({_band(g) for g in gaps}) == 1:
        claim = spread_claim(key, weights, causal=True, who=f"{who} (every head)")
        return (claim,) if claim is not None else ()
    out = []
    for band in ("close", "between", "far"):
        heads = [h for h, g in enumerate(gaps) if _band(g) == band]
        if len(heads) == 1:
            h = heads[0]
            text = _spread_text(f"Head {h}'s weights", "are", gaps[h])
            out.append(_spread_claim_of(text, key, gaps[h], head=h))
        elif heads and band == "far":
            least = min(gaps[h] for h in heads)
            out.append(
                Claim(
                    f"{heads_words(heads, capital=True)}'s weights are far from an even share: "
                    f"each has a weight at least {_floor(least):.2f} away from an even share of "
                    "the keys its row can see (1/(i + 1) in row i).",
                    key,
                    "heads_far_from_even",
                    _floor(least),
                    keys=(tuple(heads),),
                )
            )
        elif heads:
            most = max(gaps[h] for h in heads)
            text = _spread_text(f"{heads_words(heads, capital=True)}'s weights", "are", most)
            out.append(Claim(text, key, "heads_near_even", _bound(most), keys=(tuple(heads),)))
    return tuple(out)


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
    words: dict[str, str] | None = None,
) -> tuple[Claim, ...]:
    """What each head is named after on these tokens, from its scores alone
    (:func:`attnviz.models.detectors.name_of`: a head is named only when a score reaches 0.5), or that
    it is not named and its highest score. ``weights``: (T, T), or (H, T, T) with ``heads`` the
    heads to speak of (all by default); ``who(h)`` names the head ("Head 2"; h None for a
    single matrix). ``keys``: each detector's expected keys; by default
    :func:`expected_keys` of the labels (induction from the tokens' repeats). ``words``: what
    each detector's score measures, when not :data:`attnviz.models.detectors.DETECTORS`'."""
    keys = keys if keys is not None else expected_keys(labels)
    measures = {**D.DETECTORS, **(words or {})}
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
        measured = measures[best]
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
