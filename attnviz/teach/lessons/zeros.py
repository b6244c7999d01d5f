"""The zeros in causal attention weights after dropout, counted: how many are the causal mask,
how many dropout dropped, and how many the softmax itself already gave as 0.

A page that says what its zeros are says it with these counts, and each count is a
:class:`~attnviz.teach.panel.Claim` on the panel drawn (``future_zeros``, ``visible_zeros``), so a
test checks the sentence against the numbers. No Streamlit here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnviz.teach.panel import Claim


@dataclass(frozen=True)
class Zeros:
    """Counted over every (T, T) matrix of a stack (heads, examples)."""

    future: int  # above the diagonal: every one is the causal mask
    visible: int  # weights on and below the diagonal: the keys the queries can see
    dropped: int  # visible weights that dropout set to 0
    underflow: int  # visible weights already 0 after the softmax (nothing left to drop)

    @property
    def total(self) -> int:
        return self.future + self.dropped + self.underflow


def count(before: torch.Tensor, after: torch.Tensor) -> Zeros:
    """``before``: the softmax's causal weights; ``after``: the same after dropout, (..., T, T)."""
    n = before.shape[-1]
    above = torch.triu(torch.ones(before.shape[-2], n, dtype=torch.bool), diagonal=1)
    seen_before, seen_after = before[..., ~above], after[..., ~above]
    underflow = int((seen_before == 0).sum())
    return Zeros(
        future=int((after[..., above] == 0).sum()),
        visible=int(seen_before.numel()),
        dropped=int(((seen_after == 0) & (seen_before != 0)).sum()),
        underflow=underflow,
    )


def _n(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def dropped_phrase(z: Zeros) -> str:
    """ "zeroed 9 of the 21 weights the queries can see" (and what the softmax left at 0)."""
    dropped = "none" if z.dropped == 0 else str(z.dropped)
    phrase = f"zeroed {dropped} of the {_n(z.visible, 'weight', 'weights')} the queries can see"
    if z.underflow:
        phrase += (
            f" ({_n(z.underflow, 'other was', 'others were')} already 0 after the softmax: "
            "too small for float32)"
        )
    return phrase


def zeros_sentence(z: Zeros) -> str:
    """What the zeros of a causal weights matrix after dropout are, counted."""
    if z.total == 0:
        return f"No weight here is 0: dropout {dropped_phrase(z)}."
    parts = []
    if z.future:
        parts.append(
            f"{z.future} {'is' if z.future == 1 else 'are'} the causal mask (keys after their query)"
        )
    if z.dropped:
        parts.append(f"{_n(z.dropped, 'is a weight', 'are weights')} dropout dropped")
    if z.underflow:
        parts.append(
            f"{z.underflow} {'was' if z.underflow == 1 else 'were'} already 0 after the softmax"
        )
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    sentence = f"Of the {_n(z.total, 'zero', 'zeros')} here, {listed}"
    if not z.dropped:
        return sentence + f": dropout {dropped_phrase(z)}."
    return sentence + f", out of the {_n(z.visible, 'weight', 'weights')} the queries can see."


def claims(text: str, panel: str, z: Zeros) -> tuple[Claim, ...]:
    """The counts ``text`` states, as claims on ``panel`` (its values: the weights after
    dropout): the zeros above the diagonal, and those on or below it."""
    return (
        Claim(text, panel, "future_zeros", float(z.future)),
        Claim(text, panel, "visible_zeros", float(z.dropped + z.underflow)),
    )
