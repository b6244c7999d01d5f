"""Live checks: each claim of the chapter, tested on the numbers in front of the student.

Every check returns a :class:`CheckResult`: pass/fail (or "documented" when the honest answer is
a known limitation, such as the naive softmax overflowing, or "n/a" with the reason), the largest
difference, the tolerance used, the scale of the values involved and a one-line explanation.

Float32 rounding grows with the size of the numbers and with the length of each sum, so a true
identity at GPT-2 sizes differs by more than at the book's sizes. Each tolerance is therefore
``TOL_FACTOR * eps32 * scale * sqrt(k)``, where ``scale`` is the magnitude of the values that feed
the compared result and ``k`` the length of the sums behind it; the scale is reported beside the
difference ("2.4e-04 on values ~800: float32 rounding").
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import modules as M
from .seeding import seeded

EPS32 = torch.finfo(torch.float32).eps
TOL_FACTOR = 16.0
EXP_MAX_F32 = math.log(torch.finfo(torch.float32).max)  # 88.72: exp() overflows above it
EXP_MIN_F32 = math.log(torch.finfo(torch.float32).smallest_normal) - 16  # ~ -103.3: exp() is 0


@dataclass(frozen=True)
class CheckResult:
    name: str
    title: str
    status: str  # "pass", "fail", "documented", "n/a"
    max_diff: float | None
    tol: float | None
    scale: float | None
    explanation: str

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def ok(self) -> bool:
        """Pass, or a documented result (what the chapter's claim honestly gives here)."""
        return self.status in ("pass", "documented", "n/a")

    @property
    def detail(self) -> str:
        if self.max_diff is None:
            return self.explanation
        scale = f" on values ~{self.scale:.3g}" if self.scale is not None else ""
        tol = f" (tolerance {self.tol:.2e})" if self.tol is not None else ""
        return f"largest difference {self.max_diff:.2e}{scale}{tol}: {self.explanation}"


# The badge title of each named check, by its name: the checks use them, and so does a bug
# whose check cannot run at all (attnviz/bugs.py).
TITLES = {
    "rows_sum_to_one": "Rows sum to 1",
    "weights_are_softmax": "Weights are softmax(scores)",
    "matches_sdpa": "Matches PyTorch SDPA",
    "heads_equal_loop": "Batched heads = loop over heads",
    "no_future_leak": "No future leak",
    "eval_ignores_dropout": "Eval mode ignores dropout",
    "batch_rows_independent": "Batch = each example alone",
}


def tolerance(scale: float, k: int = 1) -> float:
    return TOL_FACTOR * EPS32 * max(float(scale), 1.0) * math.sqrt(max(k, 1))


def _max_abs(t: torch.Tensor) -> float:
    finite = t[torch.isfinite(t)]
    return float(finite.abs().max()) if finite.numel() else 0.0


def _compare(name, title, actual, reference, scale, k, ok_text, bad_text) -> CheckResult:
    with torch.inference_mode():
        if actual.shape != reference.shape:
            return CheckResult(
                name,
                title,
                "fail",
                math.inf,
                None,
                None,
                f"shapes differ: {tuple(actual.shape)} against {tuple(reference.shape)}",
            )
        diff = (actual.double() - reference.double()).abs()
        worst = float(diff.max()) if diff.numel() else 0.0
        if math.isnan(worst):
            worst = math.inf
    tol = tolerance(scale, k)
    status = "pass" if worst <= tol else "fail"
    return CheckResult(
        name, title, status, worst, tol, scale, ok_text if status == "pass" else bad_text
    )


# --- pass 1 -------------------------------------------------------------------------------
def rows_sum_to_one(attn_weights: torch.Tensor) -> CheckResult:
    """Each query's weights (before dropout) sum to 1."""
    with torch.inference_mode():
        sums = attn_weights.double().sum(dim=-1)
    n = attn_weights.shape[-1]
    return _compare(
        "rows_sum_to_one",
        TITLES["rows_sum_to_one"],
        sums,
        torch.ones_like(sums),
        1.0,
        n,
        "every row of weights sums to 1: float32 rounding only",
        "some rows do not sum to 1: the softmax normalised the wrong axis",
    )


def weights_are_softmax(attn_scores: torch.Tensor, attn_weights: torch.Tensor) -> CheckResult:
    """The weights are the row softmax of the scores (computed again in float64)."""
    with torch.inference_mode():
        reference = torch.softmax(attn_scores.double(), dim=-1)
    return _compare(
        "weights_are_softmax",
        TITLES["weights_are_softmax"],
        attn_weights,
        reference,
        1.0,
        attn_scores.shape[-1],  # softmax's error is relative to the weights, which are <= 1
        "the weights equal a float64 softmax of the scores",
        "the weights are not the softmax of the scores",
    )


def loops_equal_matmul(inputs: torch.Tensor, loop_scores: torch.Tensor) -> CheckResult:
    """The chapter's nested loops of ``torch.dot`` give X X^T."""
    n = loop_scores.shape[0]
    with torch.inference_mode():
        matmul = inputs[:n] @ inputs[:n].T
    return _compare(
        "loops_equal_matmul",
        "Nested loops = X Xᵀ",
        loop_scores,
        matmul,
        _max_abs(matmul),
        inputs.shape[-1],
        f"the {n}x{n} dot products equal the matrix product",
        "the loop and the matrix product disagree",
    )


def naive_softmax_matches(attn_scores: torch.Tensor) -> CheckResult:
    """exp(x)/sum(exp(x)) equals torch.softmax on every row where the naive result is finite.

    Where it is not (exp() or the row's sum overflows, or every exp() underflows to 0), the
    result is "documented" and says why with the numbers; the rows that stayed finite are still
    compared, and their largest difference and tolerance are reported beside the message.
    """
    title = "Naive softmax = stable softmax"
    with torch.inference_mode():
        exps = torch.exp(attn_scores)
        sums = exps.sum(dim=-1)
        naive = exps / sums.unsqueeze(-1)
        stable = torch.softmax(attn_scores, dim=-1)
        # A row whose sum is inf gives finite zeros, which are wrong too: count it as overflowed.
        good = torch.isfinite(naive).all(dim=-1) & torch.isfinite(sums)
    if bool(good.all()):
        return _compare(
            "naive_softmax_matches",
            title,
            naive,
            stable,
            _max_abs(attn_scores),
            attn_scores.shape[-1],
            "with no overflow the two formulas agree",
            "the naive and the stable softmax disagree",
        )
    why = _naive_breakdown(attn_scores, exps, sums, ~good)
    bad_rows, good_rows = int((~good).sum()), int(good.sum())
    affected = f"{bad_rows} row{'s' if bad_rows != 1 else ''} affected"
    if not good_rows:
        return CheckResult(
            "naive_softmax_matches",
            title,
            "documented",
            None,
            None,
            None,
            f"{why} ({affected}, so no row is left to compare)",
        )
    with torch.inference_mode():
        finite_scores = attn_scores[good]
    compared = _compare(
        "naive_softmax_matches",
        title,
        naive[good],
        stable[good],
        _max_abs(finite_scores),
        attn_scores.shape[-1],
        "",
        "",
    )
    rows = f"{good_rows} row{'s' if good_rows != 1 else ''}"
    if compared.passed:
        status, verdict = (
            "documented",
            f"on the other {rows}, where naive stayed finite, the two agree",
        )
    else:
        status, verdict = "fail", f"and on the {rows} where naive stayed finite the two disagree"
    return CheckResult(
        "naive_softmax_matches",
        title,
        status,
        compared.max_diff,
        compared.tol,
        compared.scale,
        f"{why} ({affected}); {verdict}",
    )


def _naive_breakdown(attn_scores, exps, sums, bad) -> str:
    """Why exp(x)/sum(exp(x)) is not finite on the ``bad`` rows, with the numbers."""
    with torch.inference_mode():
        top = attn_scores[bad].max(dim=-1).values
        over = (torch.isinf(exps).any(dim=-1) | torch.isinf(sums))[bad]
        under = (sums == 0)[bad] & ~over
        other = ~over & ~under  # the scores themselves are NaN or inf
    reasons = []
    if bool(over.any()):
        worst = float(top[over].max())
        if worst > EXP_MAX_F32:
            reasons.append(
                f"naive overflowed: max score {worst:.4g} > {EXP_MAX_F32:.1f}, so exp() is inf "
                "and inf/inf is NaN"
            )
        else:
            reasons.append(
                f"naive overflowed: a row's exp() values (max score {worst:.4g}) add up past "
                f"float32's largest number {torch.finfo(torch.float32).max:.3g}, so the sum is "
                "inf and every weight becomes 0"
            )
    if bool(under.any()):
        lowest = float(top[under].min())
        reasons.append(
            f"naive underflowed: max score {lowest:.4g} < {EXP_MIN_F32:.1f}, so every exp() "
            "is 0 and 0/0 is NaN"
        )
    if bool(other.any()):
        reasons.append("some scores are themselves NaN or infinite")
    return "; ".join(reasons) + "; torch.softmax subtracts the row max first and stays finite"


# --- pass 3 -------------------------------------------------------------------------------
def masking_routes_agree(
    route_renormalized: torch.Tensor, route_neg_inf: torch.Tensor, scaled_scores: torch.Tensor
) -> CheckResult:
    """softmax → zero the future → renormalize equals −∞ → softmax (rows where route 1 is finite)."""
    title = "Both masking routes agree"
    with torch.inference_mode():
        finite = torch.isfinite(route_renormalized).all(dim=-1)
        lost = int((~finite).sum())
        a = route_renormalized[finite]
        b = route_neg_inf[finite]
    scale = _max_abs(scaled_scores)
    result = _compare(
        "masking_routes_agree",
        title,
        a,
        b,
        scale,
        scaled_scores.shape[-1],
        "zeroing then renormalising gives the same weights as masking with −∞",
        "the two masking routes give different weights",
    )
    if lost and result.passed:
        return CheckResult(
            result.name,
            title,
            "documented",
            result.max_diff,
            result.tol,
            scale,
            f"agree on every finite row; {lost} row(s) of the renormalize route underflowed: "
            "a future key's score was so much larger that every visible weight became 0 before "
            "renormalising (0/0). Masking with −∞ first avoids this.",
        )
    return result


def no_future_leak(forward: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> CheckResult:
    """Change the later half of the input: the earlier outputs must not move at all."""
    title = TITLES["no_future_leak"]
    n = x.shape[-2]
    if n < 2:
        return CheckResult(
            "no_future_leak",
            title,
            "n/a",
            None,
            None,
            None,
            "needs at least two tokens: with one there is no future to leak",
        )
    cut = n // 2
    with torch.inference_mode():
        generator = torch.Generator().manual_seed(0)
        noise = torch.randn(x[..., cut:, :].shape, generator=generator) * 10
        x2 = x.clone()
        x2[..., cut:, :] += noise
        before, after = forward(x), forward(x2)
        earlier = (before[..., :cut, :].double() - after[..., :cut, :].double()).abs()
        later_moved = float((before[..., cut:, :] - after[..., cut:, :]).abs().max())
    worst = float(earlier.max())
    scale = _max_abs(before)
    tol = tolerance(scale, 1)
    if worst <= tol:
        return CheckResult(
            "no_future_leak",
            title,
            "pass",
            worst,
            tol,
            scale,
            f"changing tokens {cut}–{n - 1} moved earlier outputs by {worst:.1e} "
            f"(later ones by {later_moved:.2g})",
        )
    return CheckResult(
        "no_future_leak",
        title,
        "fail",
        worst,
        tol,
        scale,
        f"changing tokens {cut}–{n - 1} moved the outputs of tokens 0–{cut - 1}: they see the future",
    )


# --- pass 4 -------------------------------------------------------------------------------
def heads_equal_loop(
    queries, keys, values, merged, num_heads: int, mask: torch.Tensor | None
) -> CheckResult:
    """The batched (b, H, T, T) computation equals attending head by head over column slices
    (each head by PyTorch's ``scaled_dot_product_attention``; ``mask``: True = hidden)."""
    head_dim = queries.shape[-1] // num_heads
    allowed = None if mask is None else ~mask
    with torch.inference_mode():
        outs = []
        for h in range(num_heads):
            cols = slice(h * head_dim, (h + 1) * head_dim)
            q, k, v = queries[..., cols], keys[..., cols], values[..., cols]
            outs.append(F.scaled_dot_product_attention(q, k, v, attn_mask=allowed))
        looped = torch.cat(outs, dim=-1)
        scores = queries[..., :head_dim] @ keys[..., :head_dim].transpose(-2, -1)
    scale = _max_abs(scores) / math.sqrt(head_dim) * max(_max_abs(values), 1.0)
    return _compare(
        "heads_equal_loop",
        TITLES["heads_equal_loop"],
        merged,
        looped,
        scale,
        head_dim,
        "one batched matmul over (b, H, T, T) gives each head's own result",
        "the batched heads differ from head-by-head attention: tokens were mixed across heads",
    )


def _copy_linear(dst: nn.Linear, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
    with torch.no_grad():
        dst.weight.copy_(weight)
        if bias is not None and dst.bias is not None:
            dst.bias.copy_(bias)


def wrapper_from_mha(mha: M.MultiHeadAttention) -> M.MultiHeadAttentionWrapper:
    """A wrapper whose head h uses rows h*head_dim:(h+1)*head_dim of the MHA's projections."""
    context_length = mha.mask.shape[0]
    bias = mha.W_query.bias is not None
    with seeded(None):  # its random initial weights are overwritten below
        wrapper = M.MultiHeadAttentionWrapper(
            mha.W_query.in_features,
            mha.head_dim,
            context_length,
            mha.dropout.p,
            mha.num_heads,
            bias,
        )
    for h, head in enumerate(wrapper.heads):
        rows = slice(h * mha.head_dim, (h + 1) * mha.head_dim)
        for name in ("W_query", "W_key", "W_value"):
            src = getattr(mha, name)
            _copy_linear(
                getattr(head, name), src.weight[rows], None if src.bias is None else src.bias[rows]
            )
    return wrapper.eval()


def wrapper_equals_split(mha: M.MultiHeadAttention, x: torch.Tensor) -> CheckResult:
    """Concatenated wrapper heads equal the weight-split context before ``out_proj`` (eval)."""
    mha = mha.eval()
    wrapper = wrapper_from_mha(mha)
    with torch.inference_mode(), M.recording() as taps:
        mha(x)
        concatenated = wrapper(x)
    merged = taps["context"][0]
    scale = _max_abs(_scaled_scores(mha, taps)) * max(_max_abs(taps["values"][0]), 1.0)
    return _compare(
        "wrapper_equals_split",
        "Wrapper = weight split (before out_proj)",
        concatenated,
        merged,
        scale,
        mha.head_dim,
        f"{mha.num_heads} separate heads, concatenated, equal one projection split into heads",
        "the wrapper and the weight-split module disagree before out_proj",
    )


def transferred_v1(sa_v1: M.SelfAttention_v1, sa_v2: M.SelfAttention_v2) -> M.SelfAttention_v1:
    """A copy of ``sa_v1`` holding ``sa_v2``'s weights, transposed (exercise 3.1); the caller's
    ``sa_v1`` keeps its own."""
    sa_v1 = copy.deepcopy(sa_v1)
    with torch.no_grad():
        for name in ("W_query", "W_key", "W_value"):
            getattr(sa_v1, name).copy_(getattr(sa_v2, name).weight.T)
    return sa_v1


def v1_equals_v2(
    sa_v1: M.SelfAttention_v1, sa_v2: M.SelfAttention_v2, inputs: torch.Tensor
) -> CheckResult:
    """Exercise 3.1: v1 with v2's transposed Linear weights gives v2's output."""
    title = "SelfAttention_v1 = v2 (exercise 3.1)"
    if sa_v2.W_query.bias is not None:
        return CheckResult(
            "v1_equals_v2",
            title,
            "n/a",
            None,
            None,
            None,
            "v1 has no bias, so it cannot copy a v2 built with qkv_bias=True",
        )
    sa_v1 = transferred_v1(sa_v1, sa_v2)
    with torch.inference_mode():
        out1, out2 = sa_v1(inputs), sa_v2(inputs)
        scores = sa_v2.W_query(inputs) @ sa_v2.W_key(inputs).transpose(-2, -1)
    scale = _max_abs(scores) * max(_max_abs(out2), 1.0)
    return _compare(
        "v1_equals_v2",
        title,
        out1,
        out2,
        scale,
        inputs.shape[-1],
        "nn.Linear stores W transposed (d_out, d_in) and computes x Wᵀ: with W = weight.T the two agree",
        "v1 and v2 disagree after the weight transfer",
    )


def matches_sdpa(queries, keys, values, context_vec, causal: bool) -> CheckResult:
    """Our attention equals ``torch.nn.functional.scaled_dot_product_attention`` on the same q, k, v."""
    with torch.inference_mode():
        reference = F.scaled_dot_product_attention(queries, keys, values, is_causal=causal)
        scores = queries @ keys.transpose(-2, -1)
    scale = _max_abs(scores) / math.sqrt(keys.shape[-1]) * max(_max_abs(values), 1.0)
    kind = "causal" if causal else "full"
    return _compare(
        "matches_sdpa",
        f"{TITLES['matches_sdpa']} ({kind})",
        context_vec,
        reference,
        scale,
        keys.shape[-1],
        "scaled_dot_product_attention(q, k, v) gives the same context vectors",
        "our attention and PyTorch's scaled_dot_product_attention disagree",
    )


def torch_mha_from(mha: M.MultiHeadAttention) -> nn.MultiheadAttention | None:
    """``nn.MultiheadAttention`` holding the same weights, or None when it cannot (d_in != d_out)."""
    d_in, d_out = mha.W_query.in_features, mha.d_out
    if d_in != d_out:
        return None
    with seeded(None):  # its random initial weights are overwritten below
        ref = nn.MultiheadAttention(d_out, mha.num_heads, dropout=0.0, bias=True, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(
            torch.cat([mha.W_query.weight, mha.W_key.weight, mha.W_value.weight])
        )
        if mha.W_query.bias is not None:
            ref.in_proj_bias.copy_(torch.cat([mha.W_query.bias, mha.W_key.bias, mha.W_value.bias]))
        else:
            ref.in_proj_bias.zero_()  # the book's projections have no bias; its out_proj has one
        ref.out_proj.weight.copy_(mha.out_proj.weight)
        ref.out_proj.bias.copy_(mha.out_proj.bias)
    return ref.eval()


def torch_mha_na(mha: M.MultiHeadAttention) -> str | None:
    """Why ``nn.MultiheadAttention`` cannot hold this module's weights, or None when it can."""
    d_in = mha.W_query.in_features
    if d_in == mha.d_out:
        return None
    return (
        f"nn.MultiheadAttention projects queries from embed_dim = d_out, so it needs d_in == d_out "
        f"(here d_in={d_in}, d_out={mha.d_out}); its kdim/vdim change only keys and values"
    )


def _scaled_scores(mha: M.MultiHeadAttention, taps: dict) -> torch.Tensor:
    """The scores the softmax saw in the recorded forward, attn_scores / √head_dim."""
    with torch.inference_mode():
        return taps["attn_scores"][0] / mha.head_dim**0.5


def _mha_output_scale(mha: M.MultiHeadAttention, recorded: dict) -> float:
    """The size of the numbers behind one ``MultiHeadAttention`` output: the scaled scores, times
    the values, times the largest row sum of ``out_proj`` (how much it can amplify them)."""
    return (
        _max_abs(_scaled_scores(mha, recorded))
        * max(_max_abs(recorded["values"][0]), 1.0)
        * max(float(mha.out_proj.weight.detach().abs().sum(dim=-1).max()), 1.0)
    )


def matches_torch_mha(mha: M.MultiHeadAttention, x: torch.Tensor) -> CheckResult:
    """Our ``MultiHeadAttention`` equals ``torch.nn.MultiheadAttention`` with the same weights."""
    title = "Matches torch.nn.MultiheadAttention"
    mha = mha.eval()
    ref = torch_mha_from(mha)
    if ref is None:
        return CheckResult(
            "matches_torch_mha", title, "n/a", None, None, None, torch_mha_na(mha) or ""
        )
    n = x.shape[-2]
    with torch.inference_mode(), M.recording() as recorded:
        ours = mha(x)
    with torch.inference_mode():
        future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        theirs, _ = ref(x, x, x, attn_mask=future, need_weights=False)
    scale = _mha_output_scale(mha, recorded)
    return _compare(
        "matches_torch_mha",
        title,
        ours,
        theirs,
        scale,
        mha.d_out,
        "PyTorch's own class, loaded with our weights, gives the same output",
        "our MultiHeadAttention and nn.MultiheadAttention disagree",
    )


def mha_reference(mha: M.MultiHeadAttention, x: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Our ``MultiHeadAttention``'s output on ``x`` (eval mode) and the scale of the numbers
    behind it: what :func:`same_output_as_mha` compares against (compute once, compare many)."""
    mha = mha.eval()
    with torch.inference_mode(), M.recording() as recorded:
        ours = mha(x)
    return ours, _mha_output_scale(mha, recorded)


def same_output_as_mha(
    mha: M.MultiHeadAttention,
    x: torch.Tensor,
    actual: torch.Tensor,
    title: str,
    reference: tuple[torch.Tensor, float] | None = None,
) -> CheckResult:
    """Another implementation's output on ``x`` equals our ``MultiHeadAttention``'s (eval mode),
    within the tolerance :func:`matches_torch_mha` uses. ``reference``: :func:`mha_reference`
    of the same module and input, when several implementations are compared with one."""
    ours, scale = reference if reference is not None else mha_reference(mha, x)
    return _compare(
        "same_output_as_mha",
        title,
        actual,
        ours,
        scale,
        mha.d_out,
        "gives our MultiHeadAttention's output on the same input",
        "differs from our MultiHeadAttention's output on the same input",
    )


def torch_mha_forward(
    mha: M.MultiHeadAttention, x: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``nn.MultiheadAttention`` loaded with our weights, causal, eval mode: its output
    (b, T, d_out) and its per-head weights (b, H, T, T) (``average_attn_weights=False``), or
    None when it cannot hold the weights (:func:`torch_mha_na`)."""
    ref = torch_mha_from(mha)
    if ref is None:
        return None
    n = x.shape[-2]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)  # True = may not attend
    with torch.inference_mode():
        output, weights = ref(
            x, x, x, attn_mask=future, need_weights=True, average_attn_weights=False
        )
    return output, weights


def torch_mha_weights_match(mha: M.MultiHeadAttention, x: torch.Tensor) -> CheckResult:
    """Each head's attention weights equal ``nn.MultiheadAttention``'s per-head weights."""
    title = "Per-head weights match nn.MultiheadAttention"
    mha = mha.eval()
    theirs = torch_mha_forward(mha, x)
    if theirs is None:
        return CheckResult(
            "torch_mha_weights_match", title, "n/a", None, None, None, torch_mha_na(mha) or ""
        )
    with torch.inference_mode(), M.recording() as recorded:
        mha(x)
    return _compare(
        "torch_mha_weights_match",
        title,
        recorded["attn_weights"][0],  # (b, H, T, T), before dropout
        theirs[1],
        _max_abs(_scaled_scores(mha, recorded)),  # softmax's error follows the size of the scores
        mha.head_dim,
        f"need_weights=True, average_attn_weights=False returns the same {mha.num_heads} "
        "weight matrices",
        "PyTorch's per-head weights differ from ours: heads or scaling do not line up",
    )


def eval_ignores_dropout(
    forward_with: Callable[[nn.Module, torch.Tensor], torch.Tensor],
    build: Callable[[float], nn.Module],
    x: torch.Tensor,
    p: float,
) -> CheckResult:
    """In eval mode dropout is the identity: two forwards under different dropout seeds are
    equal, and equal to the forward of the same weights with dropout 0."""
    title = TITLES["eval_ignores_dropout"]
    module, plain = build(p).eval(), build(0.0).eval()
    with torch.inference_mode():
        with seeded(1):
            a = forward_with(module, x)
        with seeded(2):
            b = forward_with(module, x)
        c = forward_with(plain, x)
        worst = max(float((a - b).abs().max()), float((a - c).abs().max()))
    tol = 0.0  # nothing random and nothing rounded differently: exactly equal
    if worst <= tol:
        return CheckResult(
            "eval_ignores_dropout",
            title,
            "pass",
            worst,
            tol,
            _max_abs(a),
            f"with dropout={p} in eval mode, two dropout seeds and dropout 0 give identical outputs",
        )
    return CheckResult(
        "eval_ignores_dropout",
        title,
        "fail",
        worst,
        tol,
        _max_abs(a),
        "outputs change with the dropout seed in eval mode: dropout is still on",
    )


def batch_rows_independent(
    forward: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor
) -> CheckResult:
    """Running the batch at once equals running each example alone."""
    title = TITLES["batch_rows_independent"]
    with torch.inference_mode():
        together = forward(x)
        one_by_one = []
        for i in range(x.shape[0]):
            try:
                one_by_one.append(forward(x[i : i + 1]))
            except RuntimeError as err:
                # The batch ran but one example alone does not: the computation depends on
                # the batch it sits in, which is exactly what this check is about.
                return CheckResult(
                    "batch_rows_independent",
                    title,
                    "fail",
                    None,
                    None,
                    None,
                    f"the batch of {x.shape[0]} runs, but example {i} alone (batch size 1) "
                    f"raises RuntimeError: {err}. The computation depends on the batch "
                    "around each example",
                )
        alone = torch.cat(one_by_one, dim=0)
    return _compare(
        "batch_rows_independent",
        title,
        together,
        alone,
        _max_abs(alone) * 16,
        x.shape[-1],
        f"the {x.shape[0]} examples of the batch do not see each other",
        "the examples of the batch influence each other",
    )
