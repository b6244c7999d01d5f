"""The classic attention bugs, each a small function one line away from the engine's own step.

A page can show each bug's one-line diff (:meth:`Bug.diff`), run the pass with that one step
swapped in (:func:`run_bug`), and show which check fails and by how much, or the exact error the
bug raises. Some bugs are invisible at some settings (one head, one token, dropout 0,
``T == context_length``): :meth:`Bug.hidden_reason` says so and names the change that reveals it.

:func:`run_steps` composes a pass from steps; with the default :class:`Steps` it computes exactly
what the modules compute (a test checks it bit for bit), so a bug's effect is that one line.
"""

from __future__ import annotations

import difflib
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import checks as C
from . import modules as M
from .seeding import seeded
from .trace import ModuleSpec


# --- the buggy steps (each differs from the step it replaces in one line) -----------------
def softmax_rows_wrong_axis(scores):
    """Each query's row becomes weights that are positive and sum to 1."""
    return torch.softmax(scores, dim=-2)


def softmax_rows_divide_by_sum(scores):
    """Each query's row becomes weights that are positive and sum to 1."""
    return scores / scores.sum(dim=-1, keepdim=True)


def scale_scores_missing(attn_scores, d_k):
    """Divide by sqrt(d_k) so the softmax does not saturate and keeps useful gradients."""
    return attn_scores


def key_width_d_out(keys):
    """d_k: the width of one key, the last dim (head_dim once heads are split)."""
    return keys.shape[1] * keys.shape[-1]  # num_heads * head_dim: the whole d_out


def mask_future_with_zero(attn_scores, mask, num_tokens):
    """Hide future keys: -inf becomes weight exactly 0 after the softmax. In place, as the book."""
    return attn_scores.masked_fill_(mask.bool()[:num_tokens, :num_tokens], 0.0)


def mask_future_unsliced(attn_scores, mask, num_tokens):
    """Hide future keys: -inf becomes weight exactly 0 after the softmax. In place, as the book."""
    return attn_scores.masked_fill_(mask.bool(), -torch.inf)


def renormalize_causal_unmasked(attn_weights, mask, num_tokens):
    """The other masking route: zero the future weights after the softmax, then renormalize."""
    masked_simple = attn_weights
    return masked_simple / masked_simple.sum(dim=-1, keepdim=True)


def apply_dropout_always(attn_weights, dropout):
    """Drop weights at random in training mode (scaling the rest by 1/(1-p)); identity in eval."""
    return F.dropout(attn_weights, dropout.p, training=True)


def attention_scores_global_transpose(queries, keys):
    """omega = Q K^T: every query against every key, over the last two dims."""
    return queries @ keys.T  # (..., T, T)


def split_heads_without_transpose(x, num_heads, head_dim):
    """(b, T, d_out) -> (b, T, H, head_dim) -> (b, H, T, head_dim): one T x head_dim per head."""
    b, num_tokens, _ = x.shape
    return x.view(b, num_heads, num_tokens, head_dim)


# --- composing a pass from steps ----------------------------------------------------------
@dataclass(frozen=True)
class Steps:
    attention_scores: Callable = M.attention_scores
    mask_future: Callable = M.mask_future
    key_width: Callable = M.key_width
    scale_scores: Callable = M.scale_scores
    softmax_rows: Callable = M.softmax_rows
    apply_dropout: Callable = M.apply_dropout
    split_heads: Callable = M.split_heads
    # When set, the causal mask is applied after the softmax by this function (route 1).
    renormalize: Callable | None = None


def _attend(steps, queries, keys, values, module=None, mask=None, dropout=None, out=None):
    num_tokens = queries.shape[-2]
    attn_scores = steps.attention_scores(queries, keys)
    if mask is not None and steps.renormalize is None:
        attn_scores = steps.mask_future(attn_scores, mask, num_tokens)
    scaled = steps.scale_scores(attn_scores, steps.key_width(keys))
    attn_weights = steps.softmax_rows(scaled)
    if mask is not None and steps.renormalize is not None:
        attn_weights = steps.renormalize(attn_weights, mask, num_tokens)
    out.update(scaled_scores=scaled, attn_weights=attn_weights)
    if dropout is not None:
        attn_weights = steps.apply_dropout(attn_weights, dropout)
    return M.context_vectors(attn_weights, values)


def run_steps(kind: str, module: nn.Module | None, x: torch.Tensor, steps: Steps = Steps()) -> dict:
    """Run one pass from its steps; returns its named tensors (``output`` among them)."""
    out: dict[str, torch.Tensor] = {}
    if kind == "simplified":  # no weights, no scaling: softmax(X X^T) X
        attn_scores = steps.attention_scores(x, x)
        attn_weights = steps.softmax_rows(attn_scores)
        out.update(scaled_scores=attn_scores, attn_weights=attn_weights)
        out["output"] = M.context_vectors(attn_weights, x)
        return out
    keys, queries, values = _project(module, x)
    out.update(queries=queries, keys=keys, values=values)
    if kind == "trainable":
        out["output"] = _attend(steps, queries, keys, values, module, out=out)
    elif kind == "causal":
        out["output"] = _attend(
            steps, queries, keys, values, module, module.mask, module.dropout, out
        )
    elif kind == "multihead":
        heads = [
            steps.split_heads(t, module.num_heads, module.head_dim) for t in (queries, keys, values)
        ]
        context = _attend(steps, *heads, module, module.mask, module.dropout, out)
        out["context_heads"] = context
        out["merged"] = M.merge_heads(context, module.d_out)
        out["output"] = module.out_proj(out["merged"])
    else:
        raise ValueError(kind)
    return out


def _project(module: nn.Module, x: torch.Tensor):
    if isinstance(module.W_key, nn.Linear):
        return module.W_key(x), module.W_query(x), module.W_value(x)
    return x @ module.W_key, x @ module.W_query, x @ module.W_value


# --- the bugs -----------------------------------------------------------------------------
@dataclass(frozen=True)
class BugSetting:
    """What the bug needs to be visible, and the change that reveals it."""

    tokens_at_least: int = 2
    heads_at_least: int = 1
    head_dim_at_least: int = 1
    dropout_above_zero: bool = False
    tokens_below_context: bool = False
    # Usually invisible from this key width up (the simplified pass: d_in), see hidden_reason.
    key_width_below: int | None = None


WIDE_KEYS_REVEAL = 8  # the key width (d_in) at or below which most texts show the wrong axis

SLIPS_DEFAULT = (
    "its effect here is below the float32 rounding the check allows; other text or settings show it"
)


@dataclass(frozen=True)
class Bug:
    key: str
    title: str
    pass_kind: str  # the page: "simplified", "trainable", "causal", "multihead"
    step: str  # the Steps field it replaces
    buggy: Callable
    check: str  # the CheckResult.name that fails
    symptom: str
    shows: BugSetting = field(default_factory=BugSetting)
    raises: str | None = None  # when it raises instead: why the shapes clash (format fields)
    # Why the bug can still slip past its check when the settings do not hide it: run_bug
    # reports it (status "documented", with the numbers) instead of a green pass on buggy code.
    # Format fields: {weights} and {output} (the largest change the bug made), {margin} (pass 1:
    # how far each token's score with itself exceeds its best score with another token).
    slips_when: str = SLIPS_DEFAULT

    @property
    def correct(self) -> Callable:
        return (
            Steps.__dataclass_fields__[self.step].default
            if self.step != "renormalize"
            else M.renormalize_causal
        )

    def diff(self) -> str:
        """The one-line unified diff from the engine's step to the buggy one."""
        right = textwrap.dedent(inspect.getsource(self.correct)).splitlines()
        wrong = textwrap.dedent(inspect.getsource(self.buggy)).splitlines()
        wrong[0] = wrong[0].replace(self.buggy.__name__, self.correct.__name__)
        # Compare the bodies line by line; signatures may differ only by type hints.
        right_body = [ln for ln in right[1:] if not ln.strip().startswith(('"""', "#"))]
        wrong_body = [ln for ln in wrong[1:] if not ln.strip().startswith(('"""', "#"))]
        lines = difflib.unified_diff(right_body, wrong_body, "correct", "bug", n=3, lineterm="")
        return "\n".join(lines)

    def changed_lines(self) -> tuple[list[str], list[str]]:
        text = self.diff().splitlines()[2:]
        removed = [ln[1:] for ln in text if ln.startswith("-")]
        added = [ln[1:] for ln in text if ln.startswith("+")]
        return removed, added

    def shows_when(self) -> str:
        """The settings under which this bug shows, as one sentence."""
        s = self.shows
        width = "d_in" if self.pass_kind == "simplified" else "the key width"
        needs = [f"at least {s.tokens_at_least} token{'s' if s.tokens_at_least > 1 else ''}"]
        if s.heads_at_least > 1:
            needs.append(f"num_heads of {s.heads_at_least} or more")
        if s.head_dim_at_least > 1:
            needs.append(f"{width} of {s.head_dim_at_least} or more")
        if s.key_width_below is not None:
            needs.append(
                f"{width} below {s.key_width_below} (most texts from {WIDE_KEYS_REVEAL} down)"
            )
        if s.dropout_above_zero:
            needs.append("dropout above 0")
        if s.tokens_below_context:
            needs.append("fewer tokens than context_length")
        return "shows with " + ", ".join(needs)

    def hidden_reason(
        self, tokens: int, num_heads: int, head_dim: int, dropout: float, context_length: int
    ) -> str | None:
        """Why this bug cannot show at these settings, and what reveals it; None if it shows.

        ``head_dim`` is the width of the dot products behind the scores: d_in in the simplified
        pass, d_out in the trainable and causal ones, d_out / num_heads in the multi-head one.
        """
        s = self.shows
        if tokens < s.tokens_at_least:
            return f"invisible with {tokens} token: type a text with at least {s.tokens_at_least} tokens"
        if num_heads < s.heads_at_least:
            return f"invisible with num_heads={num_heads}: raise num_heads to {s.heads_at_least} or more"
        if head_dim < s.head_dim_at_least:
            return (
                f"invisible with a key width of {head_dim}: √1 = 1, so raise d_out "
                f"(per head) to {s.head_dim_at_least} or more"
            )
        if s.key_width_below is not None and head_dim >= s.key_width_below:
            return (
                f"usually invisible with d_in={head_dim}: each token's score with itself, "
                f"|x|², grows with d_in and outgrows its scores with the other tokens, so "
                f"softmax(X Xᵀ) is close to the identity along either axis (and X Xᵀ is "
                f"symmetric, so the column softmax is just the row softmax transposed): lower "
                f"d_in to {WIDE_KEYS_REVEAL} or less (most texts show it there, longer ones more "
                "often), or use the book's inputs"
            )
        if s.dropout_above_zero and dropout == 0:
            return "invisible with dropout=0: raise dropout above 0"
        if s.tokens_below_context and tokens >= context_length:
            return (
                f"invisible when the text fills the context (T = context_length = {context_length}): "
                f"raise context_length above {tokens}"
            )
        return None

    def settings_of(self, x: torch.Tensor, spec: ModuleSpec | None) -> tuple:
        """The arguments of :meth:`hidden_reason` for this input and module, as the pages pass
        them: (tokens, num_heads, key width, dropout, context_length)."""
        tokens = x.shape[-2]
        if spec is None:  # the simplified pass: X Xᵀ, no mask, no dropout
            return tokens, 1, x.shape[-1], 0.0, tokens
        if self.pass_kind == "trainable":
            return tokens, 1, spec.d_out, 0.0, tokens
        heads = spec.num_heads if self.pass_kind == "multihead" else 1
        return tokens, heads, spec.d_out // heads, spec.dropout, spec.context_length

    def hidden_at(self, x: torch.Tensor, spec: ModuleSpec | None = None) -> str | None:
        """:meth:`hidden_reason` for this input and module."""
        return self.hidden_reason(*self.settings_of(x, spec))


BUGS: tuple[Bug, ...] = (
    Bug(
        "softmax_wrong_axis",
        "Softmax over the wrong axis",
        "simplified",
        "softmax_rows",
        softmax_rows_wrong_axis,
        "rows_sum_to_one",
        "dim=-2 normalises each key's column, so the query rows no longer sum to 1",
        # Typed rows have |x|² near 1 at every d_in (attnviz.inputs.row_scale), so X Xᵀ never
        # grows diagonal with width: the wrong axis shows at every d_in (tests/engine/test_bugs).
        BugSetting(),
        slips_when="X Xᵀ is symmetric, so the column softmax is the row softmax transposed, and "
        "here each token's score with itself exceeds its best score with another token by at "
        "least {margin}: both softmaxes are within about exp(-{margin}) of the identity, and "
        "every row still sums to 1 within float32 rounding. A smaller d_in, a longer text "
        "or the book's inputs show it",
    ),
    Bug(
        "divide_by_sum",
        "Dividing by the sum instead of softmax",
        "simplified",
        "softmax_rows",
        softmax_rows_divide_by_sum,
        "weights_are_softmax",
        "the rows sum to 1 but the weights are not softmax: negative scores give negative weights",
    ),
    Bug(
        "no_scaling",
        "No 1/√d_k scaling",
        "trainable",
        "scale_scores",
        scale_scores_missing,
        "matches_sdpa",
        "scores grow with d_k, the softmax saturates towards one-hot",
        BugSetting(head_dim_at_least=2),
        slips_when="the scores here are so close to each other (or so far apart) that dividing "
        "them by √d_k barely moves the softmax; other text or a wider d_out shows it",
    ),
    Bug(
        "scale_by_d_out",
        "Scaling by √d_out instead of √head_dim",
        "multihead",
        "key_width",
        key_width_d_out,
        "matches_sdpa",
        "each head's scores are divided by too much, so its weights are too flat",
        BugSetting(heads_at_least=2),
        slips_when="the scores here are so close to each other (or so far apart) that the "
        "extra division barely moves the softmax; other text or more heads show it",
    ),
    Bug(
        "split_without_transpose",
        "Splitting heads with view(b, H, T, head_dim)",
        "multihead",
        "split_heads",
        split_heads_without_transpose,
        "heads_equal_loop",
        "it runs, but each 'head' now holds pieces of several tokens: tokens mix across heads",
        BugSetting(heads_at_least=2),
    ),
    Bug(
        "mask_with_zero",
        "Masking with 0 instead of −∞",
        "causal",
        "mask_future",
        mask_future_with_zero,
        "no_future_leak",
        "a score of 0 still gets weight exp(0) after the softmax: future tokens leak in",
        slips_when="the visible scores here are so large that a future score of 0 still gets "
        "weight ≈ exp(0 − max) ≈ 0; a smaller d_in or other text shows it",
    ),
    Bug(
        "renormalize_without_mask",
        "Renormalizing without masking",
        "causal",
        "renormalize",
        renormalize_causal_unmasked,
        "no_future_leak",
        "dividing by the row sum without zeroing the future keeps the full, leaking weights",
        slips_when="the future keys here already get weights ≈ 0 from the softmax, so leaving "
        "them in changes nothing visible; other text shows it",
    ),
    Bug(
        "unsliced_mask",
        "Mask not sliced to the number of tokens",
        "causal",
        "mask_future",
        mask_future_unsliced,
        "no_future_leak",
        "the buffer is context_length x context_length; the scores only T x T",
        BugSetting(tokens_at_least=1, tokens_below_context=True),
        raises="the mask is ({ctx}, {ctx}) but the scores are ({scores}): masked_fill_ needs the "
        "mask to broadcast to the scores, and {ctx} ≠ {T}, so PyTorch refuses",
    ),
    Bug(
        "dropout_in_eval",
        "Dropout left on in eval mode",
        "causal",
        "apply_dropout",
        apply_dropout_always,
        "eval_ignores_dropout",
        "F.dropout(training=True) ignores module.eval(): predictions change from run to run",
        BugSetting(tokens_at_least=1, dropout_above_zero=True),
    ),
    Bug(
        "global_transpose",
        "A global transpose across the batch (keys.T)",
        "causal",
        "attention_scores",
        attention_scores_global_transpose,
        "batch_rows_independent",
        "keys.T reverses all three dims, batch included",
        BugSetting(tokens_at_least=1),
        slips_when="with one example of one token and d_out = 1 every dim is 1, so reversing "
        "them changes nothing; two examples show it",
        raises="keys.T turns keys ({keys}) into ({keys_T}): every dim reversed, batch included. "
        "queries ({queries}) @ that needs matching inner sizes ({d} against {T}) and batch "
        "sizes that broadcast ({b} against {d}), so the matmul fails",
    ),
)

BUGS_BY_KEY = {bug.key: bug for bug in BUGS}


def bugs_for(pass_kind: str) -> tuple[Bug, ...]:
    return tuple(b for b in BUGS if b.pass_kind == pass_kind)


@dataclass(frozen=True)
class BugOutcome:
    bug: Bug
    check: C.CheckResult | None  # the named check on the buggy computation
    error: str | None  # the exact error, when the bug raises
    why: str | None  # why the shapes clash, when it raises
    wrong: dict | None  # the buggy run's tensors
    right: dict  # the correct run's tensors


def run_bug(bug: Bug, x: torch.Tensor, spec: ModuleSpec | None = None) -> BugOutcome:
    """Run the bug's pass with its step swapped in, and its named check on what comes out.

    ``x`` is (T, d_in) for the simplified and trainable passes, (b, T, d_in) for the others;
    ``spec`` builds the module (``None`` for the simplified pass). Runs in eval mode, where the
    checks' claims hold; the dropout bug is exactly one that breaks eval mode.

    Never raises for valid settings: a bug that raises gives its exact error and why the shapes
    clash; a check that cannot run on the buggy code fails and says why. When the named check
    passes although the settings do not hide the bug (:meth:`Bug.hidden_at`), the result is
    "documented" with the numbers and :attr:`Bug.slips_when`, never a green pass on buggy code.
    """
    steps = replace(Steps(), **{bug.step: bug.buggy})
    module = spec.build().eval() if spec is not None else None

    def forward(steps_used):
        def run(inp):
            return run_steps(bug.pass_kind, module, inp, steps_used)["output"]

        return run

    with torch.inference_mode():
        right = run_steps(bug.pass_kind, module, x, Steps())
        try:
            # A buggy step may draw from the global generator (dropout left on in eval mode):
            # only inside the seeding helper, like every other draw.
            with seeded(None):
                wrong = run_steps(bug.pass_kind, module, x, steps)
        except RuntimeError as err:
            return BugOutcome(bug, None, str(err), _why(bug, x, spec), None, right)
    check = _guarded_check(bug, module, x, spec, steps, wrong, forward)
    if check.passed and bug.hidden_at(x, spec) is None:
        check = _slipped(bug, check, wrong, right)
    return BugOutcome(bug, check, None, None, wrong, right)


def _guarded_check(bug, module, x, spec, steps, tensors, forward) -> C.CheckResult:
    """The bug's named check; if the check itself cannot run, a failing result saying why."""
    try:
        return _named_check(bug, module, x, spec, steps, tensors, forward)
    except (RuntimeError, ValueError, IndexError) as err:
        title = C.TITLES.get(bug.check, bug.check)
        return C.CheckResult(
            bug.check,
            title,
            "fail",
            None,
            None,
            None,
            f"the check cannot run here: {type(err).__name__}: {err}",
        )


def _slipped(bug: Bug, check: C.CheckResult, wrong: dict, right: dict) -> C.CheckResult:
    """The named check passed on the buggy code at settings that do not hide the bug: say so,
    with how much the bug changed, instead of a green pass."""
    fields = _slip_fields(wrong, right)
    why = bug.slips_when.format_map(fields)
    return C.CheckResult(
        check.name,
        check.title,
        "documented",
        check.max_diff,
        check.tol,
        check.scale,
        f"the bug is in the code but this check cannot see it at these numbers: it moves the "
        f"weights by at most {fields['weights']} and the output by at most {fields['output']}. "
        f"Why: {why}",
    )


class _Fields(dict):
    def __missing__(self, key):
        return "?"


def _largest_change(a: torch.Tensor | None, b: torch.Tensor | None) -> str:
    if a is None or b is None or a.shape != b.shape:
        return "?"
    with torch.inference_mode():
        diff = (a.double() - b.double()).abs()
        diff = diff[~torch.isnan(diff)]
        return f"{float(diff.max()):.1e}" if diff.numel() else "0"


def _slip_fields(wrong: dict, right: dict) -> _Fields:
    fields = _Fields(
        weights=_largest_change(wrong.get("attn_weights"), right.get("attn_weights")),
        output=_largest_change(wrong.get("output"), right.get("output")),
    )
    scores = right.get("scaled_scores")
    if scores is not None and scores.dim() == 2 and scores.shape[-1] >= 2:
        with torch.inference_mode():
            n = scores.shape[-1]
            others = scores.masked_fill(torch.eye(n, dtype=torch.bool), -torch.inf)
            margin = float((scores.diagonal() - others.amax(dim=-1)).min())
        fields["margin"] = f"{margin:.3g}"
    return fields


def _why(bug: Bug, x: torch.Tensor, spec: ModuleSpec | None) -> str | None:
    if bug.raises is None:
        return None
    b, T = x.shape[0], x.shape[-2]
    d = spec.d_out if spec else x.shape[-1]
    if bug.key == "global_transpose":  # which step breaks depends on the shapes
        return _why_global_transpose(b, T, d)
    return bug.raises.format(
        ctx=spec.context_length if spec else T,
        T=T,
        b=b,
        d=d,
        scores=", ".join(map(str, (b, T, T))),
        keys=f"{b}, {T}, {d}",
        keys_T=f"{d}, {T}, {b}",
        queries=f"{b}, {T}, {d}",
    )


def _broadcasts(a: int, b: int) -> bool:
    return a == b or a == 1 or b == 1


def _why_global_transpose(b: int, T: int, d: int) -> str:
    """Which step of the pass the reversed keys break, for a batch (b, T, d)."""
    start = (
        f"keys.T turns keys ({b}, {T}, {d}) into ({d}, {T}, {b}): every dim reversed, batch "
        "included. "
    )
    if d != T or not _broadcasts(b, d):
        clash = []
        if d != T:
            clash.append(f"matching inner sizes ({d} against {T})")
        if not _broadcasts(b, d):
            clash.append(f"batch sizes that broadcast ({b} against {d})")
        return (
            start + f"queries ({b}, {T}, {d}) @ that needs " + " and ".join(clash) + ", so the "
            "matmul fails"
        )
    batch = max(b, d)
    if not (b == T or T == 1):
        return (
            start + f"The matmul runs, but gives scores ({batch}, {T}, {b}) instead of "
            f"({b}, {T}, {T}): their last dim is the batch size. Masking them in place with the "
            f"({T}, {T}) causal mask needs the mask to broadcast to them, and {T} ≠ {b}, so "
            "masked_fill_ fails"
        )
    return (
        start + f"The scores and weights come out ({batch}, {T}, {b}), so weights @ values "
        f"({b}, {T}, {d}) needs matching inner sizes ({b} against {T}), and that matmul fails"
    )


def _named_check(bug, module, x, spec, steps, wrong, forward) -> C.CheckResult:
    name = bug.check
    if name == "rows_sum_to_one":
        return C.rows_sum_to_one(wrong["attn_weights"])
    if name == "weights_are_softmax":
        return C.weights_are_softmax(wrong["scaled_scores"], wrong["attn_weights"])
    if name == "matches_sdpa":
        if bug.pass_kind == "multihead":
            q, k, v = (
                M.split_heads(wrong[n], module.num_heads, module.head_dim)
                for n in ("queries", "keys", "values")
            )
            return C.matches_sdpa(q, k, v, wrong["context_heads"], causal=True)
        return C.matches_sdpa(
            wrong["queries"], wrong["keys"], wrong["values"], wrong["output"], causal=False
        )
    if name == "heads_equal_loop":
        mask = module.mask.bool()[: x.shape[-2], : x.shape[-2]]
        return C.heads_equal_loop(
            wrong["queries"],
            wrong["keys"],
            wrong["values"],
            wrong["merged"],
            module.num_heads,
            mask,
        )
    if name == "no_future_leak":
        return C.no_future_leak(forward(steps), x)
    if name == "eval_ignores_dropout":

        def build(p):
            return replace(spec, dropout=p).build()

        def forward_with(mod, inp):
            return run_steps(bug.pass_kind, mod, inp, steps)["output"]

        return C.eval_ignores_dropout(forward_with, build, x, spec.dropout)
    if name == "batch_rows_independent":
        return C.batch_rows_independent(forward(steps), x)
    raise ValueError(name)


def correct_check(bug: Bug, x: torch.Tensor, spec: ModuleSpec | None = None) -> C.CheckResult:
    """The same named check on the correct code (for the 'right' badge beside the wrong one)."""
    module = spec.build().eval() if spec is not None else None
    steps = Steps()
    with torch.inference_mode():
        right = run_steps(bug.pass_kind, module, x, steps)

    def forward(steps_used):
        def run(inp):
            return run_steps(bug.pass_kind, module, inp, steps_used)["output"]

        return run

    return _guarded_check(bug, module, x, spec, steps, right, forward)
