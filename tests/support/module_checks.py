"""Three checks of ``attnviz.teach.checks`` that take a module and run its forward themselves: for
the tests, which check a module on any input. The pages never run them; they read the same
comparisons from ``attnviz.models.implementations.references`` (computed once per setting) and
call the checks that take tensors, which these end in, so a result here is the one a page shows.
"""

from __future__ import annotations

import torch

from attnviz.core import modules as M
from attnviz.teach import checks as live_checks


def _scaled_scores(mha: M.MultiHeadAttention, taps: dict) -> torch.Tensor:
    """The scores the softmax saw in the recorded forward, attn_scores / √head_dim."""
    with torch.inference_mode():
        return taps["attn_scores"][0] / mha.head_dim**0.5


def _not_applicable(name: str, mha: M.MultiHeadAttention) -> live_checks.CheckResult:
    """The "n/a" result of the check ``name`` when nn.MultiheadAttention cannot hold our
    weights, with the reason :func:`attnviz.teach.checks.torch_mha_na` gives."""
    return live_checks.CheckResult(
        name, live_checks.TITLES[name], "n/a", None, None, None, live_checks.torch_mha_na(mha) or ""
    )


def wrapper_equals_split(mha: M.MultiHeadAttention, x: torch.Tensor) -> live_checks.CheckResult:
    """Concatenated wrapper heads equal the weight-split context before ``out_proj`` (eval)."""
    mha = mha.eval()
    wrapper = live_checks.wrapper_from_mha(mha)
    with torch.inference_mode(), M.recording() as taps:
        mha(x)
        concatenated = wrapper(x)
    return live_checks.wrapper_matches_split(
        concatenated,
        taps["context"][0],
        _scaled_scores(mha, taps),
        taps["values"][0],
        mha.num_heads,
    )


def matches_torch_mha(mha: M.MultiHeadAttention, x: torch.Tensor) -> live_checks.CheckResult:
    """Our ``MultiHeadAttention`` equals ``torch.nn.MultiheadAttention`` with the same weights."""
    mha = mha.eval()
    ref = live_checks.torch_mha_from(mha)
    if ref is None:
        return _not_applicable("matches_torch_mha", mha)
    n = x.shape[-2]
    with torch.inference_mode(), M.recording() as recorded:
        ours = mha(x)
    with torch.inference_mode():
        future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        theirs, _ = ref(x, x, x, attn_mask=future, need_weights=False)
    scale = live_checks.mha_output_scale(
        _scaled_scores(mha, recorded), recorded["values"][0], mha.out_proj.weight
    )
    return live_checks.output_matches_torch_mha(ours, theirs, scale, mha.d_out)


def torch_mha_weights_match(mha: M.MultiHeadAttention, x: torch.Tensor) -> live_checks.CheckResult:
    """Each head's attention weights equal ``nn.MultiheadAttention``'s per-head weights."""
    mha = mha.eval()
    theirs = live_checks.torch_mha_forward(mha, x)
    if theirs is None:
        return _not_applicable("torch_mha_weights_match", mha)
    with torch.inference_mode(), M.recording() as recorded:
        mha(x)
    return live_checks.weights_match_torch_mha(
        recorded["attn_weights"][0], theirs[1], _scaled_scores(mha, recorded), mha.head_dim
    )
