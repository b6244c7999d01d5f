""" "Reproduce": a self-contained Python snippet that prints exactly one matrix a page shows.

:func:`snippet` writes, for a page (pass 1 to 4) and one of its matrices (:data:`MATRICES`), a
script that needs only torch and prints that matrix for the student's text and settings:

- the chapter's module, its source copied from ``attnviz/core/modules.py`` as it is (its ``tap``
  recording points kept, with a three-line ``tap`` that stores what they record);
- the input ``X`` made exactly as :mod:`attnviz.core.inputs` makes it: the text's token ids written
  out, and each token and position row drawn from its own SHA-256-keyed ``torch.Generator``.
  The ids are written out rather than tokenized again because the snippet must run anywhere
  (tiktoken needs GPT-2's vocabulary, a download), and because without that vocabulary the app
  uses a fallback tokenizer whose ids are not GPT-2's: only the ids themselves are exact in both
  cases. Embedding them is then exact on any machine with the same torch: no need to write X's
  numbers out. Book mode writes the chapter's 6×3 ``inputs`` tensor, as the chapter does;
- the seeds as the app uses them: ``torch.manual_seed(weight seed)`` right before construction,
  and in training mode ``torch.manual_seed(dropout seed)`` right before the forward;
- the matrix printed twice: with 4 decimals as the page shows it, then ``.tolist()``, every
  digit of each float32 value (a test runs each snippet with ``python -I`` and compares).

Plain values in (:class:`attnviz.teach.prepare.Prepared`, :class:`attnviz.core.settings.Settings`), a string
out; nothing here imports Streamlit or builds a figure.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from attnviz.core import book as BK
from attnviz.core import modules as M
from attnviz.core import trace as tracing
from attnviz.core.inputs import _BOOK_ROWS, BOOK_WORDS
from attnviz.core.settings import Settings
from attnviz.teach import prepare

Tensor = torch.Tensor


class ReproduceError(ValueError):
    """A snippet that cannot be written for these inputs, said as a sentence for the page."""


@dataclass(frozen=True)
class Matrix:
    """One matrix kind of a page: how the snippet computes it, and where the trace holds it."""

    name: str
    title: str
    # a 2-D tensor in the snippet: {h} is the head, {lo}:{hi} its columns (the wrapper's
    # output), {k} the mask rows the page draws
    expr: str
    of: Callable[[tracing.Trace, int], Tensor]  # the same matrix from the page's trace, head h

    def code(self, head: int, width: int = 0, shown: int = 0) -> str:
        return self.expr.format(h=head, lo=head * width, hi=(head + 1) * width, k=shown)


def mask_rows_shown(context_length: int, num_tokens: int) -> int:
    """How much of the mask buffer page 3 draws: the tokens in use and up to 4 unused rows."""
    return min(context_length, num_tokens + 4)


Pick = Callable[[Tensor, int], Tensor]
_ALL: Pick = lambda t, h: t  # noqa: E731
_B0: Pick = lambda t, h: t[0]  # noqa: E731  batch row 0
_BH: Pick = lambda t, h: t[0, h]  # noqa: E731  batch row 0, head h


def _field(name: str, pick: Pick = _ALL) -> Callable[[tracing.Trace, int], Tensor]:
    """The trace's field ``name``, picked (batch row, head)."""
    return lambda tr, h: pick(getattr(tr, name), h)


def _view(fn: Callable[[Any], Tensor], pick: Pick) -> Callable[[tracing.Trace, int], Tensor]:
    """A view computed on demand from the trace (attnviz.core.trace), picked (batch row, head)."""
    return lambda tr, h: pick(fn(tr), h)


def _weight(name: str) -> Callable[[tracing.Trace, int], Tensor]:
    """W as used in x @ W, (d_in, d_out), whichever way the module stores it."""

    def of(tr: Any, _h: int) -> Tensor:
        if tr.spec.kind == "v2":
            return tr.params[f"{name}.weight"].T
        return tr.params[name]

    return of


def _mask_shown(tr: Any, _h: int) -> Tensor:
    k = mask_rows_shown(tr.spec.context_length, tr.num_tokens)
    return tr.mask[:k, :k]


def _wrapper_head(name: str) -> Callable[[tracing.Trace, int], Tensor]:
    return lambda tr, h: getattr(tr.heads[h], name)[0]  # type: ignore[union-attr]


def _tap(name: str, index: str = "") -> str:
    return f'recorded["{name}"][0]{index}'


def _recorded(name: str, title: str, index: str = "", pick: Pick = _ALL) -> Matrix:
    """A matrix the module records with ``tap`` and the trace keeps, both under ``name``."""
    return Matrix(name, title, _tap(name, index), _field(name, pick))


def _recorded_by_head(name: str, title: str) -> Matrix:
    """The same for the wrapper, whose heads each record their own ``name``."""
    return Matrix(name, title, f'recorded["{name}"][{{h}}][0]', _wrapper_head(name))


_HEADS = ".view(1, num_tokens, module.num_heads, module.head_dim).transpose(1, 2)"


def _split_off(name: str) -> Matrix:
    """Head h's share of the queries, keys or values (``name``): split off as the module does."""
    return Matrix(
        f"{name}_heads",
        f"head {{h}}'s {name}",
        f"{_tap(name)}{_HEADS}[0, {{h}}]",
        _field(f"{name}_heads", _BH),
    )


_QK = f"{_tap('queries')} @ {_tap('keys')}.transpose(-2, -1)"
_QK_HEADS = f"{_tap('queries')}{_HEADS} @ {_tap('keys')}{_HEADS}.transpose(-2, -1)"
_DROP = f"dropout_mask({_tap('attn_weights')}, {_tap('weights_dropped')})"
_ROUTE_1 = f"renormalized_causal_weights({_tap('queries')}, {_tap('keys')}, module.mask)"
_MASK = "module.mask[:num_tokens, :num_tokens]"


def _unmasked(title: str, qk: str, pick: Pick) -> tuple[Matrix, Matrix]:
    """The scores before the mask (computed by the code ``qk``) and the mask itself."""
    return (
        Matrix(
            "unmasked_scores",
            title,
            qk,
            _view(tracing.unmasked_scores, pick),
        ),
        Matrix("mask", "the mask (1: a future key)", _MASK, _view(tracing.causal_mask, _ALL)),
    )


def _scaled(whose: str, scale: str, index: str, pick: Pick) -> Matrix:
    """The masked scores divided by √d_k (``scale``: the code for d_k)."""
    return Matrix(
        "scaled_scores",
        f"{whose} scaled masked scores",
        f"({_tap('attn_scores')} / {scale} ** 0.5){index}",
        _field("scaled_scores", pick),
    )


def _dropped(whose: str, index: str, pick: Pick) -> tuple[Matrix, Matrix]:
    """Dropout's mask and the weights the context used after it."""
    return (
        Matrix(
            "dropout_mask",
            f"{whose} dropout mask (1 kept, 0 dropped, nan where the weight is 0 anyway)",
            f"{_DROP}{index}",
            _view(tracing.dropout_mask, pick),
        ),
        _recorded(
            "weights_dropped", f"{whose} weights the context used (after dropout)", index, pick
        ),
    )


def _table(*matrices: Matrix) -> dict[str, Matrix]:
    return {m.name: m for m in matrices}


# page -> matrix kind -> Matrix. The pages' passes: simplified (1), trainable (2, v1 or v2),
# causal (3), multihead (4, the weight-split module) and wrapper (4, MultiHeadAttentionWrapper).
MATRICES: dict[str, dict[str, Matrix]] = {
    "simplified": _table(
        Matrix("inputs", "the inputs X", "inputs", _field("inputs")),
        _recorded("attn_scores", "the scores X Xᵀ"),
        _recorded("attn_weights", "the weights"),
        Matrix("context", "the context vectors A X", "all_context_vecs", _field("context")),
    ),
    "trainable": _table(
        Matrix("inputs", "the inputs X", "x", _field("inputs")),
        Matrix("W_query", "W_query (as in x @ W)", "W_query", _weight("W_query")),
        Matrix("W_key", "W_key (as in x @ W)", "W_key", _weight("W_key")),
        Matrix("W_value", "W_value (as in x @ W)", "W_value", _weight("W_value")),
        _recorded("queries", "the queries Q"),
        _recorded("keys", "the keys K"),
        _recorded("values", "the values V"),
        _recorded("attn_scores", "the scores Q Kᵀ"),
        Matrix(
            "scaled_scores",
            "the scaled scores Q Kᵀ / √d_k",
            f"{_tap('attn_scores')} / {_tap('keys')}.shape[-1] ** 0.5",
            _field("scaled_scores"),
        ),
        _recorded("attn_weights", "the weights"),
        Matrix("context", "the context vectors A V", "context_vec", _field("context")),
    ),
    "causal": _table(
        Matrix("inputs", "the inputs X", "x[0]", _field("inputs", _B0)),
        _recorded("queries", "the queries Q", "[0]", _B0),
        _recorded("keys", "the keys K", "[0]", _B0),
        _recorded("values", "the values V", "[0]", _B0),
        *_unmasked("the scores Q Kᵀ before the mask", f"({_QK})[0]", _B0),
        Matrix(
            "mask_buffer",
            "the mask buffer as the page draws it (rows past the text unused)",
            "module.mask[:{k}, :{k}]",
            _mask_shown,
        ),
        _recorded("attn_scores", "the masked scores", "[0]", _B0),
        _scaled("the", f"{_tap('keys')}.shape[-1]", "[0]", _B0),
        _recorded("attn_weights", "the weights (before dropout)", "[0]", _B0),
        Matrix(
            "renormalized",
            "the weights by the other route (softmax, zero the future, renormalize)",
            f"{_ROUTE_1}[0]",
            _view(tracing.renormalized_weights, _B0),
        ),
        *_dropped("the", "[0]", _B0),
        Matrix("context", "the context vectors", "context_vec[0]", _field("context", _B0)),
    ),
    "multihead": _table(
        Matrix("inputs", "the inputs X", "x[0]", _field("inputs", _B0)),
        _recorded("queries", "the queries of every head, side by side", "[0]", _B0),
        _split_off("queries"),
        _split_off("keys"),
        _split_off("values"),
        *_unmasked("head {h}'s scores before the mask", f"({_QK_HEADS})[0, {{h}}]", _BH),
        _recorded("attn_scores", "head {h}'s masked scores", "[0, {h}]", _BH),
        _scaled("head {h}'s", "module.head_dim", "[0, {h}]", _BH),
        _recorded("attn_weights", "head {h}'s weights (before dropout)", "[0, {h}]", _BH),
        *_dropped("head {h}'s", "[0, {h}]", _BH),
        _recorded("context_heads", "head {h}'s context vectors", "[0, {h}]", _BH),
        _recorded("context", "the heads' contexts merged, before out_proj", "[0]", _B0),
        Matrix("output", "the output, out_proj(context)", "context_vec[0]", _field("output", _B0)),
    ),
    "wrapper": _table(
        _recorded_by_head("attn_scores", "head {h}'s masked scores"),
        _recorded_by_head("attn_weights", "head {h}'s weights (before dropout)"),
        _recorded_by_head("weights_dropped", "head {h}'s weights the context used (after dropout)"),
        Matrix(
            "context",
            "head {h}'s context vectors",
            "context_vec[0, :, {lo}:{hi}]",
            _wrapper_head("context"),
        ),
        Matrix(
            "output", "the heads' contexts, concatenated", "context_vec[0]", _field("output", _B0)
        ),
    ),
}

PAGE_TITLES = {
    "simplified": "simplified self-attention (pass 1)",
    "trainable": "trainable self-attention (pass 2)",
    "causal": "causal attention (pass 3)",
    "multihead": "multi-head attention (pass 4)",
    "wrapper": "multi-head attention, the wrapper (pass 4)",
}


# --- the page's trace, and the module behind it --------------------------------------------------
def page_input(page: str, prep: prepare.Prepared, s: Settings) -> prepare.Prepared:
    """The text as the page uses it: the causal pages cut it to the context length."""
    if page in ("causal", "multihead", "wrapper"):
        return prepare.within_context(prep, s.context_length)[0]
    return prep


def page_trace(
    page: str, prep: prepare.Prepared, s: Settings, variant: str = "v2"
) -> tracing.Trace:
    """The trace a page draws (as :mod:`ui.cache` computes it), for comparing with a snippet."""
    prep = page_input(page, prep, s)
    if page == "simplified":
        return prepare.simplified(prep)
    if page == "trainable":
        return prepare.trainable(prep, s, variant)
    if page == "causal":
        return prepare.causal(prep, s)
    if page == "multihead":
        return prepare.multihead(prep, s)
    if page == "wrapper":
        return prepare.wrapper(prep, s)
    raise ReproduceError(f"There is no page {page!r} to reproduce.")


@dataclass(frozen=True)
class _Run:
    spec: tracing.ModuleSpec | None  # None: pass 1, no module
    training: bool
    dropout_seed: int | None


def _run_of(page: str, prep: prepare.Prepared, s: Settings, variant: str) -> _Run:
    """The module, mode and dropout seed the page's trace came from (as lesson.py picks them)."""
    if page == "simplified":
        return _Run(None, False, None)
    if page == "trainable":
        if prep.book:
            spec = BK.SPEC_V1 if variant == "v1" else BK.SPEC_V2
        else:
            spec = prepare.spec_trainable(s, variant)
        return _Run(spec, False, None)
    if prep.book:
        book_spec = {
            "causal": BK.SPEC_MASKING_WALK,
            "multihead": BK.SPEC_MHA,
            "wrapper": BK.SPEC_WRAPPER,
        }[page]
        return _Run(book_spec, False, None)
    spec = {
        "causal": prepare.spec_causal,
        "multihead": prepare.spec_multihead,
        "wrapper": prepare.spec_wrapper,
    }[page](s)
    return _Run(spec, s.training, s.seed_dropout)


# --- writing the snippet ----------------------------------------------------------------------------
_TAP = '''recorded = {}


def tap(**tensors):
    """The recording point of attnviz's modules: here it keeps what each forward records."""
    for name, tensor in tensors.items():
        recorded.setdefault(name, []).append(tensor)
'''

_DROPOUT_MASK = '''def dropout_mask(before, after):
    """1 where dropout kept a weight, 0 where it zeroed it, nan where the weight was 0 anyway."""
    kept = (after != 0).to(before.dtype)
    return torch.where(before == 0, torch.full_like(before, float("nan")), kept)
'''

_EMBED = '''def embedding_row(kind, index):
    """One row of attnviz's embedding: N(0, 1/(2 d_in)) from its own generator, seeded by a
    SHA-256 of (kind, seed, index); token rows and position rows never share a key."""
    digest = hashlib.sha256(f"attnviz:{kind}:{embed_seed}:{index}".encode()).digest()
    generator = torch.Generator().manual_seed(int.from_bytes(digest[:8], "big") >> 1)
    return torch.randn(d_in, generator=generator) * (2 * d_in) ** -0.5


token_rows = torch.stack([embedding_row("token", i) for i in token_ids])
position_rows = torch.stack([embedding_row("position", p) for p in range(len(token_ids))])
inputs = token_rows + position_rows  # (T, d_in): token plus position embedding
'''


# The module kind -> what the snippet copies from modules.py.
_SOURCES: dict[str, list[Any]] = {
    "v1": [M.SelfAttention_v1],
    "v2": [M.SelfAttention_v2],
    "causal": [M.CausalAttention],
    "mha": [M.MultiHeadAttention],
    "wrapper": [M.CausalAttention, M.MultiHeadAttentionWrapper],
}


def _source(obj) -> str:
    return textwrap.dedent(inspect.getsource(obj)).rstrip() + "\n"


def _wrapped_list(name: str, items: list, indent: int = 4) -> str:
    """``name = [...]`` as Python, wrapped under 100 characters a line."""
    parts = [repr(x) for x in items]
    one = f"{name} = [{', '.join(parts)}]"
    if len(one) <= 99:
        return one
    lines, line = [], " " * indent
    for p in parts:
        if len(line) + len(p) + 2 > 99 and line.strip():
            lines.append(line.rstrip())
            line = " " * indent
        line += p + ", "
    lines.append(line.rstrip())
    return f"{name} = [\n" + "\n".join(lines) + "\n]"


def _book_input() -> str:
    rows = []
    for k, (row, word) in enumerate(zip(_BOOK_ROWS, BOOK_WORDS, strict=True)):
        opening = "[[" if k == 0 else " ["
        closing = "]]" if k == len(_BOOK_ROWS) - 1 else "],"
        numbers = ", ".join(f"{v:.2f}" for v in row)
        rows.append(f"    {opening}{numbers}{closing}  # {word:<8} (x^{k + 1})")
    return (
        "inputs = torch.tensor(\n" + "\n".join(rows) + "\n)  # the chapter's 6 tokens, d_in = 3\n"
    )


def _typed_input(prep: prepare.Prepared, s: Settings, text: str | None) -> str:
    tokens = prep.tokens
    assert tokens is not None
    ids = list(tokens.ids[: prep.num_tokens])
    how = (
        "GPT-2's BPE token ids (tiktoken)"
        if tokens.tokenizer == "gpt2"
        else "the fallback tokenizer's ids (GPT-2's vocabulary was not available: the ids are "
        "hashes of each piece, not GPT-2's)"
    )
    out = []
    if text is not None:
        out.append(f"text = {text!r}  # as typed")
    out.append(f"# The text's {len(ids)} tokens: {how}.")
    out.append(_wrapped_list("token_ids", ids))
    out.append(_wrapped_list("labels", list(prep.labels)) + "  # one per position, as the page")
    out.append(f"d_in, embed_seed = {s.d_in}, {s.seed_embed}")
    out.append("")
    out.append("")
    return "\n".join(out) + "\n" + _EMBED


def _module_block(run: _Run) -> str:
    spec = run.spec
    assert spec is not None
    lines = [
        f"torch.manual_seed({spec.seed})  # the weight seed: construction draws the weights",
        f"module = {spec.constructor_call()}",
    ]
    if spec.kind in ("causal", "wrapper", "mha"):
        lines.append("x = inputs.unsqueeze(0)  # (1, T, d_in): a batch of one")
    else:
        lines.append("x = inputs  # (T, d_in)")
    lines.append("num_tokens = x.shape[-2]")
    if run.training:
        lines.append("module.train()  # training mode: dropout is on")
        lines.append(
            f"torch.manual_seed({run.dropout_seed})  # the dropout seed: the forward draws the "
            "dropout mask"
        )
    else:
        lines.append("module.eval()  # eval mode: dropout is the identity")
    lines.append("with torch.no_grad():")
    lines.append("    context_vec = module(x)")
    if spec.kind in ("v1", "v2"):
        for name in ("W_query", "W_key", "W_value"):
            weight = f"module.{name}.weight.T" if spec.kind == "v2" else f"module.{name}"
            lines.append(f"{name} = {weight}.detach()  # as used in x @ W: (d_in, d_out)")
    return "\n".join(lines) + "\n"


def snippet(
    page: str,
    matrix: str,
    prep: prepare.Prepared,
    settings: Settings,
    head: int = 0,
    variant: str = "v2",
    text: str | None = None,
) -> str:
    """A self-contained Python script that prints ``matrix`` of ``page`` (see
    :data:`MATRICES`) for the prepared text at ``settings`` (book mode when ``prep.book``).

    ``head`` picks a head on the multi-head pages; ``variant`` is "v1" or "v2" on page 2;
    ``text``, when given, is written in the script as typed (its token ids are what is used).
    Raises :class:`ReproduceError` with a sentence when there is nothing to reproduce.
    """
    if page not in MATRICES:
        raise ReproduceError(f"There is no page {page!r} to reproduce.")
    if matrix not in MATRICES[page]:
        names = ", ".join(MATRICES[page])
        raise ReproduceError(f"Page {page} shows no matrix {matrix!r}; it shows {names}.")
    if variant not in ("v1", "v2"):
        raise ReproduceError(f"Page 2's module is v1 or v2, not {variant!r}.")
    prep = page_input(page, prep, settings)
    if prep.empty:
        raise ReproduceError("There is no text to attend over, so there is no matrix to print.")
    if page in ("multihead", "wrapper"):
        problem = settings.multihead_problem() if not prep.book else None
        if problem:
            raise ReproduceError(problem)
    run = _run_of(page, prep, settings, variant)
    heads = run.spec.num_heads if run.spec is not None and page in ("multihead", "wrapper") else 1
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < heads:
        allowed = "there is only head 0" if heads == 1 else f"it must be from 0 to {heads - 1}"
        raise ReproduceError(f"There is no head {head!r}: {allowed}.")
    kind = MATRICES[page][matrix]
    width = run.spec.d_out if run.spec is not None else 0
    shown = mask_rows_shown(run.spec.context_length, prep.num_tokens) if run.spec else 0
    title = kind.title.format(h=head)
    mode = "book mode: the chapter's inputs, arguments and seeds" if prep.book else "typed text"

    parts = [
        f"# attnviz, {PAGE_TITLES[page]}: {title}.",
        f"# Reproduces the page's numbers ({mode}). Needs only torch: python this_file.py",
        "",
        "import hashlib" if not prep.book else "",
        "",
        "import torch",
        "import torch.nn as nn",
        "",
        "",
        _TAP,
        "",
    ]
    sources: list[Any] = [M.simplified_attention]
    if run.spec is not None:
        sources = _SOURCES[run.spec.kind]
    if matrix == "renormalized":
        sources = [*sources, M.renormalized_causal_weights]
    parts.append("# --- the chapter's code, as in attnviz/core/modules.py " + "-" * 47)
    for obj in sources:
        parts += ["", _source(obj)]
    if matrix == "dropout_mask":
        parts += ["", _DROPOUT_MASK]
    parts += ["", "# --- the input X " + "-" * 82]
    parts.append(_book_input() if prep.book else _typed_input(prep, settings, text))
    parts += ["", "# --- the forward pass " + "-" * 77]
    if page == "simplified":
        parts.append("all_context_vecs = simplified_attention(inputs)\n")
    else:
        parts.append(_module_block(run))
    parts += [
        "",
        f"# {title}",
        f"matrix = {kind.code(head, width, shown)}",
        "torch.set_printoptions(precision=4, sci_mode=False, linewidth=100)",
        "print(matrix)  # 4 decimals, as the page shows it",
        "print(matrix.tolist())  # every digit of each float32 value",
    ]
    text_out = "\n".join(parts)
    while "\n\n\n\n" in text_out:
        text_out = text_out.replace("\n\n\n\n", "\n\n\n")
    return text_out.rstrip() + "\n"


# --- from a panel on the page to its snippet ------------------------------------------------------
@dataclass(frozen=True)
class PanelSource:
    """Which snippet prints a panel's numbers: the panel's declaration says
    (``attnviz.teach.declared``)."""

    page: str
    matrix: str
    lab: bool = False  # page 3's dropout lab: the causal pass in training mode
    per_head: bool = False  # the panel stacks every head (H, rows, cols): one snippet a head


def _panels() -> dict[str, PanelSource]:
    """Every declared panel a snippet prints (``Declared.field``), by key."""
    from attnviz.teach import declared

    return {
        d.key: PanelSource(d.page, d.field, lab=d.lab, per_head=d.per_head)
        for d in declared.every()
        if d.field
    }


PANELS: dict[str, PanelSource] = _panels()


def _panel_settings(key: str, prep: prepare.Prepared, settings: Settings) -> PanelSource:
    source = PANELS.get(key)
    if source is None:
        raise ReproduceError(f"The panel {key!r} has no reproduce snippet.")
    if source.lab and prep.book:
        raise ReproduceError(
            "Book mode's dropout lab prints the chapter's own dropout example, not a panel."
        )
    return source


def panel_snippet(key: str, prep: prepare.Prepared, settings: Settings, **where: Any) -> str:
    """The snippet that prints the panel ``key``; ``where`` is :func:`snippet`'s ``head``
    (of a panel stacking every head), ``variant`` (the module page 2 shows) and ``text``."""
    source = _panel_settings(key, prep, settings)
    s = settings.with_changes(training=True) if source.lab else settings
    return snippet(source.page, source.matrix, prep, s, **where)
