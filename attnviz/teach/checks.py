"""Live checks: each claim of the chapter, tested on the numbers in front of the student.

Every check returns a :class:`CheckResult`: pass/fail (or "documented" when the honest answer is
a known limitation, such as the naive softmax overflowing, or "n/a" with the reason), the largest
difference, the tolerance used, the largest absolute value on each side of the comparison, and a
one-line explanation.

Float32 rounding grows with the size of the numbers and with the length of each sum, so a true
identity at GPT-2 sizes differs by more than at the book's sizes. Each tolerance is therefore
``TOL_FACTOR * eps32 * max(scale, 1) * sqrt(k)``, where ``scale`` is the magnitude of the values
that feed the compared result (each check names what it is: "the largest |score| / √d_k × ...")
and ``k`` the length of the sums behind it. The detail says all of it: "largest |difference|
2.98e-08; tolerance 5.39e-06 = ...; compared: ours max |value| 0.381, nn.MultiheadAttention max
|value| 0.381".

The checks take tensors. Where a check needs an independent computation (PyTorch's own
attention, a second module holding the same weights, a forward on changed inputs), the
functions that take a module run it here, for a test or a notebook; the pages read it from
:func:`attnviz.models.implementations.references`, computed once per setting and cached like the trace.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from attnviz.core import modules as M
from attnviz.core.seeding import seeded
from attnviz.core.skeleton import masked_shell, on_meta

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
    # Each side of the comparison: its name and its largest |value| (finite entries).
    compared: tuple[tuple[str, float], ...] = ()
    scale_is: str = ""  # what ``scale`` is, in words
    terms: int = 1  # the length of the sums behind the compared numbers (the tolerance's k)
    # Whether ``words`` adds how close the two sides came (False: the explanation says it).
    says_how_close: bool = True

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def ok(self) -> bool:
        """Pass, or a documented result (what the chapter's claim honestly gives here)."""
        return self.status in ("pass", "documented", "n/a")

    @property
    def detail(self) -> str:
        """The numbers behind the verdict, each named, then the explanation."""
        if self.max_diff is None:
            return self.explanation
        return f"{self.numbers}: {self.explanation}"

    @property
    def words(self) -> str:
        """What holds, as a sentence a student reads under the badge: the explanation, and for
        a comparison how close its two sides came, in words (the arithmetic is :attr:`numbers`,
        for whoever asks). A failed comparison says by how much it missed."""
        text = self.explanation
        first = text.split(" ", 1)[0].rstrip(",:;")
        if first.isalpha() and first.islower():  # a word, not a name from the code (v1, nn.…)
            text = text[:1].upper() + text[1:]
        text = text if text.endswith(".") else text + "."
        if self.max_diff is None or self.tol is None or not self.compared:
            return text
        if self.status == "fail":
            return f"{text} The two differ by up to {self.max_diff:.2g}: more than rounding."
        if not self.says_how_close:
            return text
        if self.max_diff == 0:
            return f"{text} The two agree exactly."
        return f"{text} The two agree up to float32 rounding."

    @property
    def numbers(self) -> str:
        """The arithmetic behind the verdict, each number named: the largest |difference|, the
        tolerance and how it was set, each side's largest |value|; empty for a check that
        compared nothing."""
        if self.max_diff is None:
            return ""
        parts = [f"largest |difference| {self.max_diff:.2e}"]
        if self.tol is not None:
            parts.append(f"tolerance {self.tol:.2e}{self.tolerance_basis}")
        if self.compared:
            sides = ", ".join(f"{name} max |value| {top:.3g}" for name, top in self.compared)
            parts.append(f"compared: {sides}")
        return "; ".join(parts)

    @property
    def tolerance_basis(self) -> str:
        """How the tolerance was set, in words (" = 16 float32 eps × √8 (sums of 8) × ...")."""
        if self.tol == 0:
            return " (exactly equal: nothing random, nothing rounded differently)"
        if self.scale is None or not self.scale_is:
            return ""
        sums = f" × √{self.terms} (sums of {self.terms})" if self.terms > 1 else ""
        if self.scale >= 1:
            size = f"{self.scale:.3g}, {self.scale_is}"
        else:
            size = f"1 ({self.scale_is} is {self.scale:.3g}; the scale is at least 1)"
        return f" = {TOL_FACTOR:g} float32 eps{sums} × {size}"


# The badge title of each named check, by its name: the checks use them, and so does a bug
# whose check cannot run at all (attnviz/teach/bugs.py).
TITLES = {
    "rows_sum_to_one": "Rows sum to 1",
    "weights_are_softmax": "Weights are softmax(scores)",
    "matches_sdpa": "Matches PyTorch SDPA",
    "heads_equal_loop": "Batched heads = loop over heads",
    "no_future_leak": "No future leak",
    "eval_ignores_dropout": "Eval mode ignores dropout",
    "batch_rows_independent": "Batch = each example alone",
    "matches_torch_mha": "Matches torch.nn.MultiheadAttention",
    "torch_mha_weights_match": "Per-head weights match nn.MultiheadAttention",
}

NAIVE_TITLE = "Naive softmax = stable softmax"

# What each scale is (CheckResult.scale_is), for the checks that share one.
SCALED_SCORES_TIMES_VALUES = "the largest |scaled score| × max(largest |value|, 1)"
MHA_OUTPUT_SCALE = SCALED_SCORES_TIMES_VALUES + " × max(out_proj's largest row sum of |weight|, 1)"


def tolerance(scale: float, k: int = 1) -> float:
    return TOL_FACTOR * EPS32 * max(float(scale), 1.0) * math.sqrt(max(k, 1))


def max_abs(t: torch.Tensor) -> float:
    """The largest |value| among the finite entries (0 when there is none)."""
    finite = t[torch.isfinite(t)]
    return float(finite.abs().max()) if finite.numel() else 0.0


def compare(
    name,
    title,
    actual,
    reference,
    scale,
    k,
    ok_text,
    bad_text,
    sides: tuple[str, str] = ("ours", "the reference"),
    scale_is: str = "",
) -> CheckResult:
    """``actual`` against ``reference``: pass when their largest |difference| is within
    :func:`tolerance` of ``scale`` (which ``scale_is`` names) for sums of ``k`` terms. ``sides``
    names the two, for the detail's magnitudes."""
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
        compared = ((sides[0], max_abs(actual)), (sides[1], max_abs(reference)))
    tol = tolerance(scale, k)
    status = "pass" if worst <= tol else "fail"
    return CheckResult(
        name,
        title,
        status,
        worst,
        tol,
        scale,
        ok_text if status == "pass" else bad_text,
        compared,
        scale_is,
        max(int(k), 1),
    )


# --- pass 1 -------------------------------------------------------------------------------
def rows_sum_to_one(attn_weights: torch.Tensor) -> CheckResult:
    """Each query's weights (before dropout) sum to 1."""
    with torch.inference_mode():
        sums = attn_weights.double().sum(dim=-1)
    n = attn_weights.shape[-1]
    return compare(
        "rows_sum_to_one",
        TITLES["rows_sum_to_one"],
        sums,
        torch.ones_like(sums),
        1.0,
        n,
        "every row of weights sums to 1",
        "some rows do not sum to 1: the softmax normalized the wrong axis",
        ("row sums", "ones"),
        "the size of a row sum",
    )


def weights_are_softmax(attn_scores: torch.Tensor, attn_weights: torch.Tensor) -> CheckResult:
    """The weights are the row softmax of the scores (computed again in float64)."""
    with torch.inference_mode():
        reference = torch.softmax(attn_scores.double(), dim=-1)
    return compare(
        "weights_are_softmax",
        TITLES["weights_are_softmax"],
        attn_weights,
        reference,
        1.0,
        attn_scores.shape[-1],  # softmax's error is relative to the weights, which are <= 1
        "the weights equal a float64 softmax of the scores",
        "the weights are not the softmax of the scores",
        ("weights", "float64 softmax(scores)"),
        "the largest possible weight",
    )


def loops_equal_matmul(inputs: torch.Tensor, loop_scores: torch.Tensor) -> CheckResult:
    """The chapter's nested loops of ``torch.dot`` give X X^T."""
    n = loop_scores.shape[0]
    with torch.inference_mode():
        matmul = inputs[:n] @ inputs[:n].T
    return compare(
        "loops_equal_matmul",
        "Nested loops = X Xᵀ",
        loop_scores,
        matmul,
        max_abs(matmul),
        inputs.shape[-1],
        f"the {n}x{n} dot products equal the matrix product",
        "the loop and the matrix product disagree",
        ("nested loops", "X Xᵀ"),
        "the largest |score| of X Xᵀ",
    )


def naive_softmax_matches(attn_scores: torch.Tensor) -> CheckResult:
    """exp(x)/sum(exp(x)) equals torch.softmax on every row where the naive result is finite.

    Where it is not (exp() or the row's sum overflows, or every exp() underflows to 0), the
    result is "documented" and says why with the numbers; the rows that stayed finite are still
    compared, and their largest difference and tolerance are reported beside the message.
    """
    title = NAIVE_TITLE
    sides = ("naive softmax", "torch.softmax")
    with torch.inference_mode():
        exps = torch.exp(attn_scores)
        sums = exps.sum(dim=-1)
        naive = exps / sums.unsqueeze(-1)
        stable = torch.softmax(attn_scores, dim=-1)
        # A row whose sum is inf gives finite zeros, which are wrong too: count it as overflowed.
        good = torch.isfinite(naive).all(dim=-1) & torch.isfinite(sums)
    if bool(good.all()):
        return compare(
            "naive_softmax_matches",
            title,
            naive,
            stable,
            max_abs(attn_scores),
            attn_scores.shape[-1],
            "with no overflow the two formulas agree",
            "the naive and the stable softmax disagree",
            sides,
            "the largest |score|",
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
    compared = compare(
        "naive_softmax_matches",
        title,
        naive[good],
        stable[good],
        max_abs(finite_scores),
        attn_scores.shape[-1],
        "",
        "",
        ("naive softmax (finite rows)", "torch.softmax (the same rows)"),
        "the largest |score| of those rows",
    )
    rows = f"{good_rows} row{'s' if good_rows != 1 else ''}"
    if compared.passed:
        status, verdict = (
            "documented",
            f"on the other {rows}, where naive stayed finite, the two agree",
        )
    else:
        status, verdict = "fail", f"and on the {rows} where naive stayed finite the two disagree"
    return dataclasses.replace(
        compared, status=status, explanation=f"{why} ({affected}); {verdict}"
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
    result = compare(
        "masking_routes_agree",
        title,
        a,
        b,
        max_abs(scaled_scores),
        scaled_scores.shape[-1],
        "zeroing then renormalizing gives the same weights as masking with −∞",
        "the two masking routes give different weights",
        ("route 1 (renormalize)", "route 2 (−∞ then softmax)"),
        "the largest |scaled score|",
    )
    if lost and result.passed:
        return dataclasses.replace(
            result,
            status="documented",
            explanation=f"agree on every finite row; {lost} row(s) of the renormalize route "
            "underflowed: a future key's score was so much larger that every visible weight "
            "became 0 before renormalizing (0/0). Masking with −∞ first avoids this.",
        )
    return result


# The noise no_future_leak adds to the later tokens, in standard deviations: far larger than
# any input, so that a leak would move the earlier outputs by far more than rounding does.
FUTURE_NOISE = 10


def changed_future(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """``x`` with its later half (tokens ``cut`` = T // 2 onwards) changed by large noise from a
    private generator, and ``cut``: the input :func:`no_future_leak` runs the forward on."""
    cut = x.shape[-2] // 2
    with torch.inference_mode():
        generator = torch.Generator().manual_seed(0)
        noise = torch.randn(x[..., cut:, :].shape, generator=generator) * FUTURE_NOISE
        x2 = x.clone()
        x2[..., cut:, :] += noise
    return x2, cut


# What no_future_leak gives on one token: nothing to compare.
ONE_TOKEN_NO_FUTURE = CheckResult(
    "no_future_leak",
    TITLES["no_future_leak"],
    "n/a",
    None,
    None,
    None,
    "needs at least two tokens: with one there is no future to leak",
)


def no_future_leak(forward: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> CheckResult:
    """Change the later half of the input: the earlier outputs must not move at all."""
    if x.shape[-2] < 2:
        return ONE_TOKEN_NO_FUTURE
    x2, _ = changed_future(x)
    with torch.inference_mode():
        before, after = forward(x), forward(x2)
    return future_unmoved(before, after)


def future_unmoved(before: torch.Tensor, after: torch.Tensor) -> CheckResult:
    """The outputs on the input and on :func:`changed_future` of it: the tokens before the cut
    must give the same outputs."""
    title = TITLES["no_future_leak"]
    n = before.shape[-2]
    if n < 2:
        return ONE_TOKEN_NO_FUTURE
    cut = n // 2
    with torch.inference_mode():
        earlier_before, earlier_after = before[..., :cut, :], after[..., :cut, :]
        earlier = (earlier_before.double() - earlier_after.double()).abs()
        later_moved = float((before[..., cut:, :] - after[..., cut:, :]).abs().max())
        compared = (
            (f"outputs of tokens 0–{cut - 1}", max_abs(earlier_before)),
            ("the same after the change", max_abs(earlier_after)),
        )
    worst = float(earlier.max())
    scale = max_abs(before)
    tol = tolerance(scale, 1)
    result = CheckResult(
        "no_future_leak",
        title,
        "pass" if worst <= tol else "fail",
        worst,
        tol,
        scale,
        "",
        compared,
        "the largest |output|",
    )
    if result.passed:
        earlier_moved = "did not move" if worst == 0 else f"moved only by {worst:.1e} (rounding)"
        return dataclasses.replace(
            result,
            explanation=f"adding noise {FUTURE_NOISE} times a standard normal to tokens "
            f"{cut}–{n - 1} {earlier_moved} the outputs of tokens 0–{cut - 1}, while the "
            f"outputs of tokens {cut}–{n - 1} moved by up to {later_moved:.2g}: their inputs "
            "changed that much",
            says_how_close=False,
        )
    return dataclasses.replace(
        result,
        explanation=f"changing tokens {cut}–{n - 1} moved the outputs of tokens 0–{cut - 1}: "
        "they see the future",
    )


# --- pass 4 -------------------------------------------------------------------------------
def heads_looped(queries, keys, values, num_heads: int, mask: torch.Tensor | None) -> torch.Tensor:
    """Attention head by head over column slices of (b, T, d_out) queries, keys and values, each
    head by PyTorch's ``scaled_dot_product_attention`` (``mask``: True = hidden), concatenated:
    what :func:`heads_equal_loop` compares the batched heads with."""
    head_dim = queries.shape[-1] // num_heads
    allowed = None if mask is None else ~mask
    with torch.inference_mode():
        outs = []
        for h in range(num_heads):
            cols = slice(h * head_dim, (h + 1) * head_dim)
            q, k, v = queries[..., cols], keys[..., cols], values[..., cols]
            outs.append(F.scaled_dot_product_attention(q, k, v, attn_mask=allowed))
        return torch.cat(outs, dim=-1)


def heads_equal_loop(
    queries,
    keys,
    values,
    merged,
    num_heads: int,
    mask: torch.Tensor | None,
    looped: torch.Tensor | None = None,
) -> CheckResult:
    """The batched (b, H, T, T) computation equals attending head by head over column slices
    (:func:`heads_looped`, or ``looped`` when it was computed already; ``mask``: True =
    hidden)."""
    head_dim = queries.shape[-1] // num_heads
    if looped is None:
        looped = heads_looped(queries, keys, values, num_heads, mask)
    with torch.inference_mode():
        scores = queries[..., :head_dim] @ keys[..., :head_dim].transpose(-2, -1)
    scale = max_abs(scores) / math.sqrt(head_dim) * max(max_abs(values), 1.0)
    return compare(
        "heads_equal_loop",
        TITLES["heads_equal_loop"],
        merged,
        looped,
        scale,
        head_dim,
        "one batched matmul over (b, H, T, T) gives each head's own result",
        "the batched heads differ from head-by-head attention: tokens were mixed across heads",
        ("batched heads", "head by head"),
        "head 0's largest |score| / √head_dim × max(largest |value|, 1)",
    )


def shared(tensor: torch.Tensor) -> nn.Parameter:
    """``tensor`` itself (or a view of it) as a frozen parameter of a reference module: no copy,
    ``requires_grad=False``. A reference module only ever runs forwards, so it can hold the
    weights of the module it is compared with (inference tensors of a trace included) instead of
    a second copy of them."""
    return nn.Parameter(tensor.detach(), requires_grad=False)


def _share_linear(dst: nn.Linear, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
    """``dst`` (built with a bias exactly when ``bias`` is given) holds these tensors."""
    dst.weight = shared(weight)
    if bias is not None:
        dst.bias = shared(bias)


def wrapper_from_mha(mha: M.MultiHeadAttention) -> M.MultiHeadAttentionWrapper:
    """A wrapper whose head h uses rows h*head_dim:(h+1)*head_dim of the MHA's projections.

    The chapter's ``MultiHeadAttentionWrapper``, built on PyTorch's meta device (no memory, no
    random draws), then given the MHA's own tensors: head h's projections are views of the MHA's
    rows and every head's mask buffer is the MHA's mask, so it costs no copy of them (at GPT-2
    XL's sizes: 32 masks of 1024×1024 and 7.7 M weights). It is frozen (``requires_grad=False``)
    and in eval mode: it computes references, it never trains."""
    bias = mha.W_query.bias is not None
    wrapper = masked_shell(
        M.MultiHeadAttentionWrapper,
        mha.W_query.in_features,
        mha.head_dim,
        mha.mask.shape[0],
        mha.dropout.p,
        mha.num_heads,
        bias,
    )
    for h, head in enumerate(wrapper.heads):
        rows = slice(h * mha.head_dim, (h + 1) * mha.head_dim)
        for name in ("W_query", "W_key", "W_value"):
            src = getattr(mha, name)
            _share_linear(
                getattr(head, name), src.weight[rows], None if src.bias is None else src.bias[rows]
            )
        head.mask = mha.mask  # one causal mask for every head: read, never written
    return wrapper.eval()


def wrapper_matches_split(
    concatenated: torch.Tensor,
    merged: torch.Tensor,
    scaled_scores: torch.Tensor,
    values: torch.Tensor,
    num_heads: int,
) -> CheckResult:
    """The wrapper's concatenated heads against the weight split's merged context (b, T, d_out)
    before ``out_proj``, eval mode; ``scaled_scores`` and ``values``: the weight split's."""
    head_dim = merged.shape[-1] // num_heads
    scale = max_abs(scaled_scores) * max(max_abs(values), 1.0)
    return compare(
        "wrapper_equals_split",
        "Wrapper = weight split (before out_proj)",
        concatenated,
        merged,
        scale,
        head_dim,
        f"{num_heads} separate heads, concatenated, equal one projection split into heads",
        "the wrapper and the weight-split module disagree before out_proj",
        ("wrapper (heads concatenated)", "weight split"),
        SCALED_SCORES_TIMES_VALUES,
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
    scale = max_abs(scores) * max(max_abs(out2), 1.0)
    return compare(
        "v1_equals_v2",
        title,
        out1,
        out2,
        scale,
        inputs.shape[-1],
        "nn.Linear stores W transposed (d_out, d_in) and computes x Wᵀ: with W = weight.T the two agree",
        "v1 and v2 disagree after the weight transfer",
        ("v1 with v2's weights", "v2"),
        "the largest |score| × max(largest |output|, 1)",
    )


def sdpa_reference(queries, keys, values, causal: bool) -> torch.Tensor:
    """PyTorch's ``scaled_dot_product_attention`` on the same q, k, v: what
    :func:`matches_sdpa` compares our context vectors with."""
    with torch.inference_mode():
        return F.scaled_dot_product_attention(queries, keys, values, is_causal=causal)


def matches_sdpa(
    queries, keys, values, context_vec, causal: bool, reference: torch.Tensor | None = None
) -> CheckResult:
    """Our attention equals ``torch.nn.functional.scaled_dot_product_attention`` on the same q, k,
    v (``reference``: :func:`sdpa_reference` of them, when it was computed already)."""
    if reference is None:
        reference = sdpa_reference(queries, keys, values, causal)
    with torch.inference_mode():
        scores = queries @ keys.transpose(-2, -1)
    scale = max_abs(scores) / math.sqrt(keys.shape[-1]) * max(max_abs(values), 1.0)
    kind = "causal" if causal else "full"
    return compare(
        "matches_sdpa",
        f"{TITLES['matches_sdpa']} ({kind})",
        context_vec,
        reference,
        scale,
        keys.shape[-1],
        "scaled_dot_product_attention(q, k, v) gives the same context vectors",
        "our attention and PyTorch's scaled_dot_product_attention disagree",
        ("ours", "PyTorch's SDPA"),
        "the largest |score| / √d_k × max(largest |value|, 1)",
    )


def torch_mha_from(mha: M.MultiHeadAttention) -> nn.MultiheadAttention | None:
    """``nn.MultiheadAttention`` holding the same weights, or None when it cannot (d_in != d_out).

    Built on the meta device (no memory, no random draws), then given the weights: its
    ``in_proj_weight`` is our three projections stacked (the one copy it needs), its
    ``out_proj`` holds our ``out_proj``'s own tensors. Frozen and in eval mode: a reference."""
    d_in, d_out = mha.W_query.in_features, mha.d_out
    if d_in != d_out:
        return None
    # nn.MultiheadAttention(d_out, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
    # add_zero_attn=False, kdim=None, vdim=None, batch_first=True), by position
    ref = on_meta(
        nn.MultiheadAttention, d_out, mha.num_heads, 0.0, True, False, False, None, None, True
    )
    projections = (mha.W_query, mha.W_key, mha.W_value)
    with torch.no_grad():
        ref.in_proj_weight = shared(torch.cat([p.weight for p in projections]))
        if mha.W_query.bias is not None:
            ref.in_proj_bias = shared(torch.cat([p.bias for p in projections]))
        else:  # the book's projections have no bias; its out_proj has one
            ref.in_proj_bias = shared(torch.zeros(3 * d_out))
    _share_linear(ref.out_proj, mha.out_proj.weight, mha.out_proj.bias)
    return ref.eval()


def torch_mha_na(mha: M.MultiHeadAttention) -> str | None:
    """Why ``nn.MultiheadAttention`` cannot hold this module's weights, or None when it can."""
    return torch_mha_na_for(mha.W_query.in_features, mha.d_out)


def torch_mha_na_for(d_in: int, d_out: int) -> str | None:
    """:func:`torch_mha_na` from the two widths alone."""
    if d_in == d_out:
        return None
    return (
        f"nn.MultiheadAttention projects queries from embed_dim = d_out, so it needs d_in == d_out "
        f"(here d_in={d_in}, d_out={d_out}); its kdim/vdim change only keys and values"
    )


def _scaled_scores(mha: M.MultiHeadAttention, taps: dict) -> torch.Tensor:
    """The scores the softmax saw in the recorded forward, attn_scores / √head_dim."""
    with torch.inference_mode():
        return taps["attn_scores"][0] / mha.head_dim**0.5


def mha_output_scale(
    scaled_scores: torch.Tensor, values: torch.Tensor, out_proj_weight: torch.Tensor
) -> float:
    """The size of the numbers behind one ``MultiHeadAttention`` output: the scaled scores, times
    the values, times the largest row sum of ``out_proj`` (how much it can amplify them)."""
    with torch.inference_mode():
        row_sum = float(out_proj_weight.detach().abs().sum(dim=-1).max())
    return max_abs(scaled_scores) * max(max_abs(values), 1.0) * max(row_sum, 1.0)


def _mha_output_scale(mha: M.MultiHeadAttention, recorded: dict) -> float:
    return mha_output_scale(
        _scaled_scores(mha, recorded), recorded["values"][0], mha.out_proj.weight
    )


def output_matches_torch_mha(
    ours: torch.Tensor, theirs: torch.Tensor, scale: float, d_out: int
) -> CheckResult:
    """Our ``MultiHeadAttention``'s output against ``nn.MultiheadAttention``'s with the same
    weights (``scale``: :func:`mha_output_scale`)."""
    return compare(
        "matches_torch_mha",
        TITLES["matches_torch_mha"],
        ours,
        theirs,
        scale,
        d_out,
        "PyTorch's own class, loaded with our weights, gives the same output",
        "our MultiHeadAttention and nn.MultiheadAttention disagree",
        ("ours", "nn.MultiheadAttention"),
        MHA_OUTPUT_SCALE,
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
    within the tolerance :func:`output_matches_torch_mha` uses. ``reference``:
    :func:`mha_reference` of the same module and input, when several implementations are
    compared with one."""
    ours, scale = reference if reference is not None else mha_reference(mha, x)
    return same_output(actual, ours, scale, mha.d_out, title)


def same_output(
    actual: torch.Tensor, ours: torch.Tensor, scale: float, d_out: int, title: str
) -> CheckResult:
    """:func:`same_output_as_mha` on outputs already computed (``scale``:
    :func:`mha_output_scale` of our forward)."""
    return compare(
        "same_output_as_mha",
        title,
        actual,
        ours,
        scale,
        d_out,
        "gives our MultiHeadAttention's output on the same input",
        "differs from our MultiHeadAttention's output on the same input",
        ("this implementation", "our MultiHeadAttention"),
        MHA_OUTPUT_SCALE,
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


def weights_match_torch_mha(
    ours: torch.Tensor, theirs: torch.Tensor, scaled_scores: torch.Tensor, head_dim: int
) -> CheckResult:
    """Our per-head weights (b, H, T, T), before dropout, against ``nn.MultiheadAttention``'s
    (``average_attn_weights=False``); ``scaled_scores``: ours, which set the softmax's error."""
    num_heads = ours.shape[-3]
    return compare(
        "torch_mha_weights_match",
        TITLES["torch_mha_weights_match"],
        ours,
        theirs,
        max_abs(scaled_scores),  # softmax's error follows the size of the scores
        head_dim,
        f"need_weights=True, average_attn_weights=False returns the same {num_heads} "
        "weight matrices",
        "PyTorch's per-head weights differ from ours: heads or scaling do not line up",
        ("our weights", "nn.MultiheadAttention's weights"),
        "the largest |scaled score|",
    )


def eval_ignores_dropout(
    forward_with: Callable[[nn.Module, torch.Tensor], torch.Tensor],
    build: Callable[[float], nn.Module],
    x: torch.Tensor,
    p: float,
) -> CheckResult:
    """In eval mode dropout is the identity: two forwards under different dropout seeds are
    equal, and equal to the forward of the same weights with dropout 0."""
    module, plain = build(p).eval(), build(0.0).eval()
    with torch.inference_mode():
        with seeded(1):
            a = forward_with(module, x)
        with seeded(2):
            b = forward_with(module, x)
        c = forward_with(plain, x)
    return dropout_ignored(a, b, c, p)


def dropout_ignored(
    seed_1: torch.Tensor, seed_2: torch.Tensor, no_dropout: torch.Tensor, p: float
) -> CheckResult:
    """The eval-mode outputs of :func:`eval_ignores_dropout`: under dropout seeds 1 and 2 and
    with dropout 0 must be exactly equal."""
    with torch.inference_mode():
        worst = max(float((seed_1 - seed_2).abs().max()), float((seed_1 - no_dropout).abs().max()))
        compared = (
            ("dropout seed 1", max_abs(seed_1)),
            ("seed 2", max_abs(seed_2)),
            ("dropout 0", max_abs(no_dropout)),
        )
    tol = 0.0  # nothing random and nothing rounded differently: exactly equal
    passed = worst <= tol
    return CheckResult(
        "eval_ignores_dropout",
        TITLES["eval_ignores_dropout"],
        "pass" if passed else "fail",
        worst,
        tol,
        max_abs(seed_1),
        f"with dropout={p} in eval mode, two dropout seeds and dropout 0 give identical outputs"
        if passed
        else "outputs change with the dropout seed in eval mode: dropout is still on",
        compared,
        says_how_close=False,
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
    return compare(
        "batch_rows_independent",
        title,
        together,
        alone,
        max_abs(alone) * 16,
        x.shape[-1],
        f"the {x.shape[0]} examples of the batch do not see each other",
        "the examples of the batch influence each other",
        ("the batch at once", "each example alone"),
        "16 × the largest |output|",
    )
