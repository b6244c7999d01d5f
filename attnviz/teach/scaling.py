"""Why divide by √d_k: what the softmax does to dot products of growing width.

With query and key entries drawn independently with variance 1, a dot product over d_k entries
has variance d_k. Unscaled, the scores spread further as d_k grows, the softmax saturates towards
one-hot, and its gradient vanishes; divided by √d_k the scores keep variance 1 at every width.
Everything here draws from a private generator, never torch's global one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

D_KS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class ScalingStudy:
    d_ks: tuple[int, ...]
    n_keys: int
    entropy_scaled: tuple[float, ...]  # mean row entropy, in bits
    entropy_unscaled: tuple[float, ...]
    max_weight_scaled: tuple[float, ...]  # mean largest weight of a row
    max_weight_unscaled: tuple[float, ...]
    grad_norm_scaled: tuple[float, ...]  # mean norm of d(weights)/d(scores), per row
    grad_norm_unscaled: tuple[float, ...]

    @property
    def uniform_entropy(self) -> float:
        return math.log2(self.n_keys)


def _row_stats(scores: torch.Tensor) -> tuple[float, float, float]:
    weights = torch.softmax(scores, dim=-1)  # (rows, n_keys)
    entropy = -(weights * torch.log2(weights.clamp_min(1e-30))).sum(dim=-1)
    # The softmax Jacobian of one row is diag(w) - w w^T; its Frobenius norm tells how much a
    # small change of the scores can still move the weights (0 when one-hot).
    jac = torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)
    grad = jac.flatten(1).norm(dim=-1)
    return float(entropy.mean()), float(weights.max(dim=-1).values.mean()), float(grad.mean())


def scaling_study(d_ks=D_KS, n_keys: int = 16, rows: int = 256, seed: int = 0) -> ScalingStudy:
    """Mean entropy, largest weight and softmax gradient norm of a row of ``n_keys`` scores,
    with and without 1/√d_k, for unit-variance queries and keys of each width ``d_k``."""
    generator = torch.Generator().manual_seed(seed)
    out: dict[str, list[float]] = {k: [] for k in ("es", "eu", "ms", "mu", "gs", "gu")}
    with torch.inference_mode():
        for d_k in d_ks:
            q = torch.randn(rows, 1, d_k, generator=generator)
            k = torch.randn(rows, n_keys, d_k, generator=generator)
            scores = (q @ k.transpose(-2, -1)).squeeze(1)  # (rows, n_keys), variance d_k
            for suffix, s in (("s", scores / math.sqrt(d_k)), ("u", scores)):
                e, m, g = _row_stats(s)
                out["e" + suffix].append(e)
                out["m" + suffix].append(m)
                out["g" + suffix].append(g)
    return ScalingStudy(
        tuple(d_ks),
        n_keys,
        tuple(out["es"]),
        tuple(out["eu"]),
        tuple(out["ms"]),
        tuple(out["mu"]),
        tuple(out["gs"]),
        tuple(out["gu"]),
    )
