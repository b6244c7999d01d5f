"""The classic attention bugs, each a one-line edit of the engine's own code.

A bug is a (correct line, replacement) pair applied to the source of the module class or pass
function that holds the line (``inspect.getsource``), compiled once and run like the original:
the traced forward, the plain forward and the buggy forward are the same lines but one. A page
shows the edit as a diff (:meth:`Bug.diff`), runs it (:func:`run_bug`) and shows which check
fails and by how much, or the exact error the bug raises. Some bugs are invisible at some
settings (one head, one token, dropout 0, ``T == context_length``): :meth:`Bug.hidden_reason`
says so and names the change that reveals it.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import cast

import torch
import torch.nn as nn

from attnviz.core import modules as M
from attnviz.core.seeding import seeded
from attnviz.core.trace import ModuleSpec, record
from attnviz.teach import checks as live_checks


# --- the bugs -----------------------------------------------------------------------------
@dataclass(frozen=True)
class BugSetting:
    """What the bug needs to be visible, and the change that reveals it."""

    tokens_at_least: int = 2
    heads_at_least: int = 1
    head_dim_at_least: int = 1
    dropout_above_zero: bool = False
    tokens_below_context: bool = False


SLIPS_DEFAULT = (
    "its effect here is below the float32 rounding the check allows; other text or settings show it"
)


# Where each pass's code lives in attnviz/core/modules.py (the trainable pass: v1 or v2, by spec).
TARGETS = {
    "simplified": "simplified_attention",
    "trainable": "SelfAttention_v2",
    "causal": "CausalAttention",
    "route1": "renormalized_causal_weights",
    "multihead": "MultiHeadAttention",
}


def _code(line: str) -> str:
    """A source line without its indentation and trailing comment."""
    return line.split("  #")[0].strip()


_SOURCE_LOCK = threading.Lock()


@functools.cache
def source_of(obj) -> str:
    """``inspect.getsource``, once per object and one thread at a time: on Python 3.11 two
    threads parsing a class's source at once can fail ("AST constructor recursion depth
    mismatch"), which two students opening a page together would hit."""
    with _SOURCE_LOCK:
        return inspect.getsource(obj)


def _source(target: str) -> str:
    return source_of(getattr(M, target))


@functools.cache
def _compiled(target: str, line: str, replacement: str):
    """The class or function ``target`` of attnviz/core/modules.py with ``line`` replaced, compiled
    in a copy of that module's namespace (so ``tap`` records its intermediates as usual)."""
    namespace = dict(vars(M))
    code = compile(_edited(target, line, replacement), f"<bug in {target}>", "exec")
    exec(code, namespace)  # the engine's own source with one line changed, nothing from outside
    return namespace[target]


def _edited(target: str, line: str, replacement: str) -> str:
    lines = _source(target).splitlines()
    hits = [i for i, ln in enumerate(lines) if _code(ln) == line]
    if len(hits) != 1:
        raise ValueError(f"{line!r} occurs {len(hits)} times in {target}, not once")
    i = hits[0]
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    lines[i] = indent + replacement
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Bug:
    key: str
    title: str
    pass_kind: str  # the page: "simplified", "trainable", "causal", "multihead"
    line: str  # the correct line, as it reads in attnviz/core/modules.py (without its comment)
    replacement: str  # the buggy line
    check: str  # the CheckResult.name that fails
    symptom: str
    shows: BugSetting = field(default_factory=BugSetting)
    raises: bool = False  # it raises a RuntimeError (at some settings) instead of running
    # Why the shapes clash when it raises (format fields {ctx}, {T}, {scores}).
    clash: str | None = None
    # The pass's code it edits when that is not the page's main one ("route1": the causal
    # page's renormalising route).
    where: str | None = None
    # Why the bug can still slip past its check when the settings do not hide it: run_bug
    # reports it (status "documented", with the numbers) instead of a green pass on buggy code.
    # Format fields: {weights} and {output} (the largest change the bug made), {margin} (pass 1:
    # how far each token's score with itself exceeds its best score with another token).
    slips_when: str = SLIPS_DEFAULT

    def target(self, spec: ModuleSpec | None = None) -> str:
        """The name of the class or function in attnviz/core/modules.py that this bug edits."""
        if self.pass_kind == "trainable" and spec is not None and spec.kind == "v1":
            return "SelfAttention_v1"
        return TARGETS[self.where or self.pass_kind]

    def compiled(self, spec: ModuleSpec | None = None):
        """The edited class or function, compiled once per target."""
        return _compiled(self.target(spec), self.line, self.replacement)

    def diff(self, spec: ModuleSpec | None = None) -> str:
        """The unified diff from the buggy code to the engine's code, one line changed: the
        bug's line is the removed one (drawn red), the fix the added one (drawn green)."""
        target = self.target(spec)
        right = _source(target).splitlines()
        wrong = _edited(target, self.line, self.replacement).splitlines()
        lines = difflib.unified_diff(wrong, right, "bug", "fix", n=3, lineterm="")
        return "\n".join(lines)

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


SOFTMAX_SCALED = "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)"
MASK_LINE = "attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)"

BUGS: tuple[Bug, ...] = (
    Bug(
        "softmax_wrong_axis",
        "Softmax over the wrong axis",
        "simplified",
        "attn_weights = torch.softmax(attn_scores, dim=-1)",
        "attn_weights = torch.softmax(attn_scores, dim=-2)",
        "rows_sum_to_one",
        "dim=-2 normalizes each key's column, so the query rows no longer sum to 1",
        # Typed rows have |x|² near 1 at every d_in (attnviz.core.inputs.row_scale), so X Xᵀ never
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
        "attn_weights = torch.softmax(attn_scores, dim=-1)",
        "attn_weights = attn_scores / attn_scores.sum(dim=-1, keepdim=True)",
        "weights_are_softmax",
        "the rows sum to 1 but the weights are not softmax: negative scores give negative weights",
    ),
    Bug(
        "no_scaling",
        "No 1/√d_k scaling",
        "trainable",
        SOFTMAX_SCALED,
        "attn_weights = torch.softmax(attn_scores, dim=-1)",
        "matches_sdpa",
        "without it the scores spread wider as d_k grows, and at large d_k the softmax "
        "saturates towards one-hot",
        BugSetting(head_dim_at_least=2),
        slips_when="the scores here are so close to each other (or so far apart) that dividing "
        "them by √d_k barely moves the softmax; other text or a wider d_out shows it",
    ),
    Bug(
        "scale_by_d_out",
        "Scaling by √d_out instead of √head_dim",
        "multihead",
        SOFTMAX_SCALED,
        "attn_weights = torch.softmax(attn_scores / self.d_out ** 0.5, dim=-1)",
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
        "queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)",
        "queries = queries.view(b, self.num_heads, num_tokens, self.head_dim)",
        "heads_equal_loop",
        "it runs, but each 'head' now holds pieces of several tokens: tokens mix across heads",
        BugSetting(heads_at_least=2),
    ),
    Bug(
        "mask_with_zero",
        "Masking with 0 instead of −∞",
        "causal",
        MASK_LINE,
        "attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], 0.0)",
        "no_future_leak",
        "a score of 0 still gets weight exp(0) after the softmax: future tokens leak in",
        slips_when="the visible scores here are so large that a future score of 0 still gets "
        "weight ≈ exp(0 − max) ≈ 0; a smaller d_in or other text shows it",
    ),
    Bug(
        "renormalize_without_mask",
        "Renormalizing without masking",
        "causal",
        "masked_simple = attn_weights * (1 - mask[:num_tokens, :num_tokens])",
        "masked_simple = attn_weights",
        "no_future_leak",
        "dividing by the row sum without zeroing the future keeps the full, leaking weights",
        slips_when="the future keys here already get weights ≈ 0 from the softmax, so leaving "
        "them in changes nothing visible; other text shows it",
        where="route1",
    ),
    Bug(
        "unsliced_mask",
        "Mask not sliced to the number of tokens",
        "causal",
        MASK_LINE,
        "attn_scores.masked_fill_(self.mask.bool(), -torch.inf)",
        "no_future_leak",
        "the buffer is context_length x context_length; the scores only T x T",
        BugSetting(tokens_at_least=1, tokens_below_context=True),
        raises=True,
        clash="the mask is ({ctx}, {ctx}) but the scores are ({scores}): masked_fill_ needs the "
        "mask to broadcast to the scores, and {ctx} ≠ {T}, so PyTorch refuses",
    ),
    Bug(
        "dropout_in_eval",
        "Dropout left on in eval mode",
        "causal",
        "attn_weights = self.dropout(attn_weights)",
        "attn_weights = nn.functional.dropout(attn_weights, self.dropout.p, training=True)",
        "eval_ignores_dropout",
        "F.dropout(training=True) ignores module.eval(): predictions change from run to run",
        BugSetting(tokens_at_least=1, dropout_above_zero=True),
    ),
    Bug(
        "global_transpose",
        "A global transpose across the batch (keys.T)",
        "causal",
        "attn_scores = queries @ keys.transpose(1, 2)",
        "attn_scores = queries @ keys.T",
        "batch_rows_independent",
        "keys.T reverses all three dims, batch included",
        BugSetting(tokens_at_least=1),
        slips_when="with one example of one token and d_out = 1 every dim is 1, so reversing "
        "them changes nothing; two examples show it",
        raises=True,
    ),
)

BUGS_BY_KEY = {bug.key: bug for bug in BUGS}


def bugs_for(pass_kind: str) -> tuple[Bug, ...]:
    return tuple(b for b in BUGS if b.pass_kind == pass_kind)


@dataclass(frozen=True)
class PassRun:
    """What one run of a pass (correct or buggy) computed. Shapes as in its trace; a field the
    pass does not have is None (the simplified pass has no queries, only multi-head has
    context_heads)."""

    output: torch.Tensor  # what the forward returned
    attn_weights: torch.Tensor  # before dropout
    weights_dropped: torch.Tensor | None = None  # after dropout (the causal passes)
    scaled_scores: torch.Tensor | None = None  # what the softmax saw
    queries: torch.Tensor | None = None  # (.., T, d_out), before any head split
    keys: torch.Tensor | None = None
    values: torch.Tensor | None = None
    context_heads: torch.Tensor | None = None  # (b, H, T, head_dim)
    context: torch.Tensor | None = None  # (b, T, d_out): multi-head's merged heads


# The colour kinds of a matrix the break-it block draws (attnviz.figures.heatmap's ``kind``).
WEIGHTS = "weights"  # sequential, 0 to zmax: attention weights as a softmax gives them
SIGNED = "signed"  # diverging around 0: weights that can be negative must be seen to be


@dataclass(frozen=True)
class Shown:
    """One (T, T) matrix the break-it block draws for a bug, over the page's token labels
    (example 0, head 0 of a stack): its title, its exact numbers and its colour kind."""

    title: str
    values: torch.Tensor
    kind: str  # WEIGHTS or SIGNED
    zmax: float  # the top of the scale (SIGNED: from -zmax to zmax), shared by the matrices


@dataclass(frozen=True)
class BugOutcome:
    bug: Bug
    check: live_checks.CheckResult | None  # the named check on the buggy computation
    error: str | None  # the exact error, when the bug raises
    why: str | None  # why the shapes clash, when it raises
    wrong: PassRun | None  # the buggy run
    right: PassRun  # the correct run
    # What the page shows of the bug's effect (:func:`outcome` fills these): the matrices to
    # draw, in order (the buggy ones first, then the correct ones), the sentences that say what
    # they show, computed from them, and what the bug does at these settings, in a few words.
    shown: tuple[Shown, ...] = ()
    sentences: tuple[str, ...] = ()
    verdict: str = ""


Forward = Callable[[nn.Module | None, torch.Tensor], torch.Tensor]


def _route1(renormalized: Callable) -> Forward:
    """The causal pass by the other masking route: the module's projections, the weights from
    ``renormalized`` (``renormalized_causal_weights``, or a bug's edit of it), dropout, context."""

    def forward(module, x):
        queries, keys, values = module.W_query(x), module.W_key(x), module.W_value(x)
        attn_weights = renormalized(queries, keys, module.mask)
        M.tap(queries=queries, keys=keys, values=values, attn_weights=attn_weights)
        return module.dropout(attn_weights) @ values

    return forward


def forward_of(bug: Bug | None, pass_kind: str, spec: ModuleSpec | None = None) -> Forward:
    """``forward(module, x)`` of the pass: the engine's own code, or with ``bug``'s edit."""
    if bug is not None and bug.where == "route1":
        return _route1(bug.compiled(spec))
    if pass_kind == "simplified":
        simplified: Callable[[torch.Tensor], torch.Tensor] = (
            M.simplified_attention if bug is None else bug.compiled(spec)
        )
        return lambda module, x: simplified(x)
    if pass_kind not in ("trainable", "causal", "multihead"):
        raise ValueError(f"unknown pass {pass_kind!r}")
    if bug is None:
        return lambda module, x: cast(nn.Module, module)(x)
    buggy = bug.compiled(spec).forward
    return lambda module, x: buggy(module, x)


def run_pass(forward: Forward, module: nn.Module | None, x: torch.Tensor) -> PassRun:
    """Run a pass with its recorder on and collect what it computed."""
    output, taps = record(lambda: forward(module, x))

    def first(name: str) -> torch.Tensor | None:
        return taps[name][0] if name in taps else None

    scores, keys = first("attn_scores"), first("keys")
    if scores is not None and module is not None and keys is not None:
        scores = scores / keys.shape[-1] ** 0.5  # the simplified pass does not scale
    return PassRun(
        output=output,
        attn_weights=taps["attn_weights"][0],
        weights_dropped=first("weights_dropped"),
        scaled_scores=scores,
        queries=first("queries"),
        keys=keys,
        values=first("values"),
        context_heads=first("context_heads"),
        context=first("context"),
    )


def run_bug(bug: Bug, x: torch.Tensor, spec: ModuleSpec | None = None) -> BugOutcome:
    """Run the bug's pass with its one line edited, and its named check on what comes out.

    ``x`` is (T, d_in) for the simplified and trainable passes, (b, T, d_in) for the others;
    ``spec`` builds the module (``None`` for the simplified pass). Runs in eval mode, where the
    checks' claims hold; the dropout bug is exactly one that breaks eval mode.

    Never raises for valid settings: a bug that raises gives its exact error and why the shapes
    clash; a check that cannot run on the buggy code fails and says why. When the named check
    passes although the settings do not hide the bug (:meth:`Bug.hidden_at`), the result is
    "documented" with the numbers and :attr:`Bug.slips_when`, never a green pass on buggy code.
    """
    module = spec.build().eval() if spec is not None else None
    buggy = forward_of(bug, bug.pass_kind, spec)
    with torch.inference_mode():
        right = run_pass(forward_of(None, bug.pass_kind), module, x)
        try:
            # A buggy line may draw from the global generator (dropout left on in eval mode):
            # only inside the seeding helper, like every other draw.
            with seeded(None):
                wrong = run_pass(buggy, module, x)
        except RuntimeError as err:
            return BugOutcome(bug, None, str(err), _why(bug, x, spec), None, right)
    check = _guarded_check(bug, module, x, spec, buggy, wrong)
    if check.passed and bug.hidden_at(x, spec) is None:
        check = _slipped(bug, check, wrong, right)
    return BugOutcome(bug, check, None, None, wrong, right)


def _guarded_check(bug, module, x, spec, forward, tensors) -> live_checks.CheckResult:
    """The bug's named check; if the check itself cannot run, a failing result saying why."""
    try:
        return _named_check(bug, module, x, spec, forward, tensors)
    except (RuntimeError, ValueError, IndexError) as err:
        title = live_checks.TITLES.get(bug.check, bug.check)
        return live_checks.CheckResult(
            bug.check,
            title,
            "fail",
            None,
            None,
            None,
            f"the check cannot run here: {type(err).__name__}: {err}",
        )


def _slipped(
    bug: Bug, check: live_checks.CheckResult, wrong: PassRun, right: PassRun
) -> live_checks.CheckResult:
    """The named check passed on the buggy code at settings that do not hide the bug: say so,
    with how much the bug changed, instead of a green pass."""
    fields = _slip_fields(wrong, right)
    why = bug.slips_when.format_map(fields)
    return replace(
        check,
        status="documented",
        explanation=f"the bug is in the code but this check cannot see it at these numbers: it "
        f"moves the weights by at most {fields['weights']} and the output by at most "
        f"{fields['output']}. Why: {why}",
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


def _slip_fields(wrong: PassRun, right: PassRun) -> _Fields:
    fields = _Fields(
        weights=_largest_change(wrong.attn_weights, right.attn_weights),
        output=_largest_change(wrong.output, right.output),
    )
    scores = right.scaled_scores
    if scores is not None and scores.dim() == 2 and scores.shape[-1] >= 2:
        with torch.inference_mode():
            n = scores.shape[-1]
            others = scores.masked_fill(torch.eye(n, dtype=torch.bool), -torch.inf)
            margin = float((scores.diagonal() - others.amax(dim=-1)).min())
        fields["margin"] = f"{margin:.3g}"
    return fields


def _why(bug: Bug, x: torch.Tensor, spec: ModuleSpec | None) -> str | None:
    b, T = x.shape[0], x.shape[-2]
    d = spec.d_out if spec else x.shape[-1]
    if bug.key == "global_transpose":  # which step breaks depends on the shapes
        return _why_global_transpose(b, T, d)
    if bug.clash is None:
        return None
    return bug.clash.format(
        ctx=spec.context_length if spec else T, T=T, scores=", ".join(map(str, (b, T, T)))
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


def _named_check(bug, module, x, spec, forward, wrong) -> live_checks.CheckResult:
    name = bug.check
    if name == "rows_sum_to_one":
        return live_checks.rows_sum_to_one(wrong.attn_weights)
    if name == "weights_are_softmax":
        return live_checks.weights_are_softmax(wrong.scaled_scores, wrong.attn_weights)
    if name == "matches_sdpa":
        if bug.pass_kind == "multihead":
            b, n, _ = x.shape
            q, k, v = (
                t.view(b, n, module.num_heads, module.head_dim).transpose(1, 2)
                for t in (wrong.queries, wrong.keys, wrong.values)
            )
            return live_checks.matches_sdpa(q, k, v, wrong.context_heads, causal=True)
        return live_checks.matches_sdpa(
            wrong.queries, wrong.keys, wrong.values, wrong.output, causal=False
        )
    if name == "heads_equal_loop":
        mask = module.mask.bool()[: x.shape[-2], : x.shape[-2]]
        return live_checks.heads_equal_loop(
            wrong.queries,
            wrong.keys,
            wrong.values,
            wrong.context,
            module.num_heads,
            mask,
        )
    if name == "no_future_leak":
        return live_checks.no_future_leak(lambda inp: forward(module, inp), x)
    if name == "eval_ignores_dropout":

        def build(p):
            return replace(spec, dropout=p).build()

        return live_checks.eval_ignores_dropout(forward, build, x, spec.dropout)
    if name == "batch_rows_independent":
        return live_checks.batch_rows_independent(lambda inp: forward(module, inp), x)
    raise ValueError(name)


def correct_check(
    bug: Bug, x: torch.Tensor, spec: ModuleSpec | None = None
) -> live_checks.CheckResult:
    """The same named check on the correct code (for the 'right' badge beside the wrong one)."""
    module = spec.build().eval() if spec is not None else None
    forward = forward_of(None, bug.pass_kind)
    with torch.inference_mode():
        right = run_pass(forward, module, x)
    return _guarded_check(bug, module, x, spec, forward, right)


def outcome(
    bug_key: str, x: torch.Tensor, spec: ModuleSpec | None = None
) -> tuple[BugOutcome, live_checks.CheckResult]:
    """What the break-it block shows for one bug: its run on ``x`` (and the module ``spec``
    builds) with the matrices and sentences that show its effect and the verdict at these
    settings, and the same named check on the correct code."""
    bug = BUGS_BY_KEY[bug_key]
    ran = run_bug(bug, x, spec)
    shown, sentences = effect(ran, x, spec)
    found = replace(ran, shown=shown, sentences=sentences)
    return replace(found, verdict=verdict(found, bug.hidden_at(x, spec))), correct_check(
        bug, x, spec
    )


# --- what a bug's effect looks like, computed --------------------------------------------------
# The wider keys where dropping 1/√d_k matters: page 2's second map (lessons.trainable) too.
WIDE_D_OUT = 128
# The two dropout seeds of "dropout left on in eval mode": those of its check (eval_ignores_dropout).
RUN_SEEDS = (1, 2)
ONE_HOT = 0.9  # a row whose largest weight reaches this is called close to one-hot


def verdict(found: BugOutcome, hidden: str | None) -> str:
    """What the bug does at these settings, from its outcome: it raises, it is visible (its
    check fails), it is in the code but too small to see, or why the settings hide it."""
    if found.error is not None:
        return "raises an error"
    check = found.check
    if check is not None and check.status == "fail":
        return "visible: " + ("the matrices below differ" if found.shown else "its check fails")
    if hidden is not None:
        return hidden
    return "in the code, but too small to see at these numbers"


def _first(t: torch.Tensor) -> torch.Tensor:
    """Example 0 (and head 0) of a stack: the (T, T) matrix the page draws."""
    while t.dim() > 2:
        t = t[0]
    return t


def _top(*matrices: torch.Tensor) -> float:
    """The largest |value| of the finite entries, at least 1 (a shared colour scale)."""
    tops = [1.0]
    for m in matrices:
        finite = m[torch.isfinite(m)]
        if finite.numel():
            tops.append(float(finite.abs().max()))
    return max(tops)


def _most_moved(a: torch.Tensor, b: torch.Tensor) -> float:
    with torch.inference_mode():
        diff = (a.double() - b.double()).abs()
        diff = diff[torch.isfinite(diff)]
        return float(diff.max()) if diff.numel() else 0.0


def _pair(
    wrong: torch.Tensor, right: torch.Tensor, what: str, where: str = ""
) -> tuple[Shown, Shown]:
    """The buggy matrix beside the correct one, on one scale: diverging when a buggy weight is
    negative (a 0-to-1 scale would hide it), else 0 to the largest weight."""
    if bool((wrong[torch.isfinite(wrong)] < 0).any()):
        # each on its own scale around 0: the buggy weights can be many times the correct ones
        return (
            Shown(f"With the bug{where}: {what}", wrong, SIGNED, _top(wrong)),
            Shown(f"Correct{where}: {what}", right, SIGNED, _top(right)),
        )
    top = _top(wrong, right)
    return (
        Shown(f"With the bug{where}: {what}", wrong, WEIGHTS, top),
        Shown(f"Correct{where}: {what}", right, WEIGHTS, top),
    )


def effect(
    found: BugOutcome, x: torch.Tensor, spec: ModuleSpec | None
) -> tuple[tuple[Shown, ...], tuple[str, ...]]:
    """The matrices that show what the bug does to the numbers, and sentences computed from
    them; nothing when the bug raises (the page shows the error)."""
    if found.wrong is None:
        return (), ()
    bug = found.bug
    what = "weights of head 0" if bug.pass_kind == "multihead" else "weights"
    wrong, right = _first(found.wrong.attn_weights), _first(found.right.attn_weights)
    if bug.key == "dropout_in_eval":
        return _dropout_runs(bug, x, spec, found)
    shown: tuple[Shown, ...] = _pair(wrong, right, what)
    if bug.key == "no_scaling" and spec is not None and spec.d_out < WIDE_D_OUT:
        wide = replace(spec, d_out=WIDE_D_OUT)
        ran = run_bug(bug, x, wide)
        if ran.wrong is not None:
            w, r = _first(ran.wrong.attn_weights), _first(ran.right.attn_weights)
            shown += _pair(w, r, what, f" at d_out = {WIDE_D_OUT}")
            return shown, (
                _unscaled_sentence(wrong, right, spec.d_out),
                _unscaled_sentence(w, r, WIDE_D_OUT, wide=True),
            )
    return shown, (_sentence(bug, wrong, right, x, spec),)


def _unscaled_sentence(
    wrong: torch.Tensor, right: torch.Tensor, d_k: int, *, wide: bool = False
) -> str:
    top_wrong, top_right = float(wrong.max()), float(right.max())
    where = f"At d_out = {d_k} (the second pair)" if wide else f"At d_k = {d_k}"
    said = (
        f"{where}, dropping 1/√d_k moves a weight by up to {_most_moved(wrong, right):.3f}; "
        f"the largest weight is {top_wrong:.3f} without it and {top_right:.3f} with it"
    )
    if top_wrong >= ONE_HOT:
        return said + ": without the scaling the softmax is close to one-hot."
    return said + ": the softmax is far from one-hot at this width."


def _sentence(
    bug: Bug, wrong: torch.Tensor, right: torch.Tensor, x: torch.Tensor, spec: ModuleSpec | None
) -> str:
    """What the buggy matrix shows against the correct one, in numbers."""
    changed = _most_moved(wrong, right)
    if bug.key == "softmax_wrong_axis":
        sums = wrong.double().sum(dim=-1)
        return (
            f"With the bug the rows sum to between {float(sums.min()):.3f} and "
            f"{float(sums.max()):.3f} instead of 1: each key's column sums to 1 instead."
        )
    if bug.key == "divide_by_sum":
        negative = int((wrong < 0).sum())
        if negative:
            return (
                f"With the bug {negative} of the {wrong.numel()} weights are negative (the "
                f"lowest {float(wrong.min()):.3f}) and the largest is {float(wrong.max()):.3f}: "
                "each row still sums to 1, but these are not a softmax's weights. Both maps are "
                "colored around 0, each on its own scale, so the negative weights show."
            )
        return (
            "Every score is positive here, so no weight is negative, but the weights differ "
            f"from the softmax's by up to {changed:.3f}."
        )
    if bug.key in ("mask_with_zero", "renormalize_without_mask"):
        n = wrong.shape[-1]
        future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        leaking = wrong[future]
        count = int((leaking != 0).sum())
        return (
            f"With the bug {count} of the {leaking.numel()} weights on future keys are above 0 "
            f"(the largest {float(leaking.max()) if leaking.numel() else 0.0:.3f}): those "
            "tokens leak into the context. With the correct code every one is exactly 0."
        )
    if bug.key == "scale_by_d_out" and spec is not None and wrong.shape[-1] > 1:
        # Row 0 sees one key and puts 1 on it whatever the scale: the rows after it tell.
        flat, sharp = (float(m[1:].amax(dim=-1).mean()) for m in (wrong, right))
        head_dim = spec.d_out // spec.num_heads
        return (
            f"With the bug the largest weight of each row of head 0 (rows 1 on) averages "
            f"{flat:.3f}, against {sharp:.3f} with the correct code: dividing by √d_out = "
            f"√{spec.d_out} instead of √head_dim = √{head_dim} flattens every head."
        )
    if changed == 0:
        return "With the bug the weights are the same as the correct ones here."
    return f"With the bug the weights differ from the correct ones by up to {changed:.3g}."


def _dropout_runs(
    bug: Bug, x: torch.Tensor, spec: ModuleSpec | None, found: BugOutcome
) -> tuple[tuple[Shown, ...], tuple[str, ...]]:
    """Dropout left on in eval mode: its weights before dropout equal the correct ones, so the
    effect is in the weights after dropout. Two runs of the buggy code (the check's two dropout
    seeds) beside the correct code's, which every run gives alike."""
    assert spec is not None and found.wrong is not None
    module = spec.build().eval()
    buggy = forward_of(bug, bug.pass_kind, spec)
    runs = []
    with torch.inference_mode():
        for seed in RUN_SEEDS:
            with seeded(seed):
                runs.append(run_pass(buggy, module, x))
    first, second = (cast(torch.Tensor, r.weights_dropped) for r in runs)
    right = cast(torch.Tensor, found.right.weights_dropped)
    a, b, c = _first(first), _first(second), _first(right)
    top = _top(a, b, c)
    what = "weights after dropout"
    shown = (
        Shown(f"With the bug, run 1 (dropout seed {RUN_SEEDS[0]}): {what}", a, WEIGHTS, top),
        Shown(f"With the bug, run 2 (dropout seed {RUN_SEEDS[1]}): {what}", b, WEIGHTS, top),
        Shown(f"Correct: {what}, the same on every run", c, WEIGHTS, top),
    )
    n = a.shape[-1]
    seen = torch.tril(torch.ones(n, n, dtype=torch.bool))
    differ = int((a[seen] != b[seen]).sum())
    moved = _most_moved(runs[0].output, runs[1].output)
    if spec.dropout == 0:
        said = "With dropout 0 nothing is dropped, so the bug changes nothing here. "
    elif differ:
        said = (
            f"With the bug the two runs drop different weights: {differ} of the "
            f"{int(seen.sum())} weights the queries can see differ between them, and the "
            f"outputs differ by up to {moved:.3g}. "
        )
    else:
        said = "With the bug the two runs happened to drop the same weights here. "
    said += (
        f"The correct code gives the same weights on every run, equal to the softmax's: in "
        f"eval mode dropout (p = {spec.dropout:g}) is the identity."
    )
    return shown, (said,)
