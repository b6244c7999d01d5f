"""What each head of the recorded run does, and which layer-0 heads layer 1's induction rests
on: measured on the model itself at one checkpoint, on the held-out sequences, never assumed.

**Roles.** A head's scores are measured separately on two parts of each sequence, because a
head can do one thing in the repeat and another before it:

- *inside the repeat*: the queries of its second copy, ``T−L … T−1``;
- *before the repeat*: the queries ``1 … T−L−1`` (query 0 sees only itself).

In each part, per head (the mean over that part's queries of every held-out sequence):

- **previous-token**: the weight on key ``i − 1``;
- **duplicate-token**: the total weight on the earlier positions that hold the query's own
  token, over the queries that have one (inside the repeat every query does: its first copy);
- **current-token**: the weight on key ``i`` (the query itself);
- **induction** (inside the repeat only): the weight on key ``i − L + 1``, the token after the
  earlier copy of the query's own token.

A head is named in a part after its highest score there when that reaches
:data:`attnviz.models.detectors.NAMED_AT` (:meth:`Role.name_in`).

**Ablation.** Layer 1's induction score (its best head's, as the page's curves give it) with
every non-empty set of layer-0 heads zeroed (:attr:`Mechanism.zeroed`); the carriers
(:attr:`Mechanism.carriers`) are the fewest layer-0 heads that, kept alone with every other
layer-0 head zeroed, keep at least :data:`KEEPS` of the score. The carriers are then zeroed
only inside the repeat and only before it (:attr:`Mechanism.zeroed_inside`,
:attr:`Mechanism.zeroed_before`): which positions their work is needed at.
"""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import torch

from attnviz.models import detectors as D
from attnviz.models.induction import train as trainer
from attnviz.models.induction.model import run
from attnviz.models.induction.recorded import recorded

Tensor = torch.Tensor
PARTS = ("inside", "before")  # inside the repeat; before it
ROLES = ("previous", "duplicate", "current", "induction")
ROLE_NAMES = {
    "previous": "previous-token",
    "duplicate": "duplicate-token",
    "current": "current-token",
    "induction": "induction",
}
PART_WORDS = {"inside": "inside the repeat", "before": "before the repeat"}
KEEPS = 0.9  # carriers kept alone keep at least this share of layer 1's induction score


# --- the scores, per part ---------------------------------------------------------------------
def part_masks(num_tokens: int, repeat: Tensor) -> dict[str, Tensor]:
    """(b, T) boolean masks of the queries inside the repeat and before it."""
    i = torch.arange(num_tokens)[None, :]
    inside = i >= num_tokens - repeat[:, None]
    return {"inside": inside, "before": (~inside) & (i >= 1)}


def key_masks(tokens: Tensor, repeat: Tensor) -> dict[str, Tensor]:
    """(b, T, T) boolean masks of each role's keys for every query (row) of every sequence."""
    b, n = tokens.shape
    i = torch.arange(n)
    earlier = i[None, :] < i[:, None]  # (T, T): key j before query i
    previous = (i[None, :] == i[:, None] - 1).expand(b, n, n)
    current = (i[None, :] == i[:, None]).expand(b, n, n)
    duplicate = (tokens[:, :, None] == tokens[:, None, :]) & earlier
    induction = i[None, None, :] == (i[None, :, None] - repeat[:, None, None] + 1)
    return {
        "previous": previous,
        "duplicate": duplicate,
        "current": current,
        "induction": induction & earlier,
    }


def part_scores(weights: Tensor, tokens: Tensor, repeat: Tensor) -> dict[str, dict[str, Tensor]]:
    """part -> role -> (layers, heads) scores, from (b, layers, heads, T, T) weights on
    ``tokens`` (b, T) whose last ``repeat[s]`` tokens repeat the ones before. The induction
    score is measured inside the repeat only."""
    w = weights.detach().to(torch.float64)
    n = tokens.shape[1]
    parts, keys = part_masks(n, repeat), key_masks(tokens, repeat)
    out: dict[str, dict[str, Tensor]] = {}
    for part, queries in parts.items():
        out[part] = {}
        for role, on in keys.items():
            if role == "induction" and part != "inside":
                continue
            asked = queries & on.any(-1)  # (b, T): the part's queries that have such a key
            total = (w * on[:, None, None].to(w.dtype)).sum(-1)  # (b, layers, heads, T)
            q = asked[:, None, None].to(w.dtype)
            count = q.sum(dim=(0, 3))
            out[part][role] = (total * q).sum(dim=(0, 3)) / count.clamp(min=1)
    return out


# --- one head's role ------------------------------------------------------------------------
@dataclass(frozen=True)
class Role:
    """One head's scores inside the repeat and before it (part -> role -> score)."""

    layer: int
    head: int
    scores: Mapping[str, Mapping[str, float]]

    def best_in(self, part: str) -> tuple[str, float]:
        """The role with the highest score in ``part``, and that score."""
        s = self.scores[part]
        role = max(s, key=lambda k: s[k])
        return role, s[role]

    def name_in(self, part: str) -> str | None:
        """What the head is in ``part``: "duplicate-token" when its highest score there reaches
        :data:`attnviz.models.detectors.NAMED_AT`, else None."""
        role, score = self.best_in(part)
        return ROLE_NAMES[role] if score >= D.NAMED_AT else None

    def label(self) -> str:
        """The head in words, from its scores: what it is named in each part (with the score),
        or its highest score where nothing reaches 0.5."""

        def one(part: str) -> str:
            role, score = self.best_in(part)
            name = self.name_in(part)
            if name is not None:
                return f"{name} head {PART_WORDS[part]} ({score:.2f})"
            return f"not named {PART_WORDS[part]} (highest: {ROLE_NAMES[role]}, {score:.2f})"

        inside, before = self.name_in("inside"), self.name_in("before")
        if inside is not None and inside == before:
            a, b = self.scores["inside"][self.best_in("inside")[0]], self.best_in("before")[1]
            return f"{inside} head inside and before the repeat ({a:.2f} and {b:.2f})"
        return f"{one('inside')}; {one('before')}"


# --- every head's role at one step -------------------------------------------------------------
_LOCK = threading.Lock()


@functools.lru_cache(maxsize=64)
def _roles(step: int) -> tuple[Role, ...]:
    r = recorded().reference
    test, cfg = trainer.held_out(r.config), r.config.model
    with torch.inference_mode():
        weights = run(r.model(step), test.tokens).attn_weights  # (b, layers, heads, T, T)
    scores = part_scores(weights, test.tokens, test.repeat)
    return tuple(
        Role(
            layer,
            head,
            MappingProxyType(
                {
                    part: MappingProxyType({k: float(v[layer, head]) for k, v in s.items()})
                    for part, s in scores.items()
                }
            ),
        )
        for layer in range(cfg.layers)
        for head in range(cfg.num_heads)
    )


def _checked(step: int) -> None:
    if step not in recorded().reference.steps:
        raise ValueError(f"no checkpoint at step {step}")


def roles_at(step: int) -> tuple[Role, ...]:
    """Every head's :class:`Role` at checkpoint ``step`` of the reference run, layer by layer:
    one forward over the held-out sequences, once per process and step, shared read-only."""
    _checked(step)
    with _LOCK:
        return _roles(step)


# --- which layer-0 heads carry layer 1's induction ------------------------------------------------
@dataclass(frozen=True)
class Mechanism:
    """The ablations of the reference run at one checkpoint, and every head's role."""

    step: int
    base: float  # layer 1's induction score, every head on
    roles: tuple[Role, ...]  # every head, layer by layer
    zeroed: Mapping[tuple[int, ...], float]  # layer-0 heads zeroed -> layer 1's induction score
    carriers: tuple[int, ...]  # the fewest layer-0 heads that keep KEEPS of it alone
    zeroed_inside: float  # the carriers zeroed only at the repeat's positions
    zeroed_before: float  # the carriers zeroed only before the repeat

    @property
    def heads(self) -> int:
        return sum(1 for k in self.zeroed if len(k) == 1)

    def kept(self, heads: tuple[int, ...]) -> float:
        """Layer 1's induction score with only ``heads`` of layer 0 on."""
        others = tuple(h for h in range(self.heads) if h not in heads)
        return self.base if not others else self.zeroed[others]

    def role(self, layer: int, head: int) -> Role:
        return next(r for r in self.roles if (r.layer, r.head) == (layer, head))


def _layer_induction(measures: trainer.Measures) -> float:
    return float(measures.scores["induction"][-1].max())


def _carriers(base: float, zeroed: Mapping[tuple[int, ...], float], heads: int) -> tuple[int, ...]:
    """The fewest layer-0 heads that, kept alone, keep at least KEEPS of ``base`` (of several
    as few, the one that keeps the most); every head when no smaller set does."""

    def kept(on: tuple[int, ...]) -> float:
        others = tuple(h for h in range(heads) if h not in on)
        return base if not others else zeroed[others]

    for size in range(1, heads):
        fits = [c for c in itertools.combinations(range(heads), size) if kept(c) >= KEEPS * base]
        if fits:
            return max(fits, key=kept)
    return tuple(range(heads))


@functools.lru_cache(maxsize=64)
def _mechanism(step: int) -> Mechanism:
    r = recorded().reference
    model, test, heads = r.model(step), trainer.held_out(r.config), r.config.model.num_heads
    base = _layer_induction(trainer.measure(model, test))
    zeroed = {
        dead: _layer_induction(trainer.measure(model, test, ablate=tuple((0, h) for h in dead)))
        for size in range(1, heads + 1)
        for dead in itertools.combinations(range(heads), size)
    }
    carriers = _carriers(base, zeroed, heads)
    inside = part_masks(test.tokens.shape[1], test.repeat)["inside"]
    dead = tuple((0, h) for h in carriers)
    at = {
        part: _layer_induction(trainer.measure(model, test, ablate=dead, where=where))
        for part, where in (("inside", inside), ("before", ~inside))
    }
    return Mechanism(
        step, base, _roles(step), MappingProxyType(zeroed), carriers, at["inside"], at["before"]
    )


def mechanism_at(step: int) -> Mechanism:
    """The reference run's ablations at checkpoint ``step``: every non-empty set of layer-0
    heads zeroed (19 forwards over the held-out sequences), once per process and step (under a
    lock), then shared read-only."""
    _checked(step)
    with _LOCK:
        return _mechanism(step)
