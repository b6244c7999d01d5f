"""From what the student typed and set to what each page draws: inputs, module specs, traces.

Everything here takes plain values (text, :class:`Settings`) and returns immutable values, so the
app can cache it keyed by those plain values.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnviz.core import book
from attnviz.core import trace as tracing
from attnviz.core.inputs import BOOK_LABELS, book_inputs, embed
from attnviz.core.settings import Settings
from attnviz.core.tokens import Tokens, tokenize
from attnviz.models.induction import passes
from attnviz.models.induction.recorded import recorded


@dataclass(frozen=True)
class Prepared:
    """One text, ready for the passes: its tokens, labels and input matrix X (1, T, d_in)."""

    book: bool
    labels: tuple[str, ...]
    x: torch.Tensor
    tokens: Tokens | None
    messages: tuple[str, ...] = ()
    # Trained weights: the tokens in the trained model's vocabulary (induction.passes.RULE).
    model_ids: tuple[int, ...] | None = None

    @property
    def num_tokens(self) -> int:
        return len(self.labels)

    @property
    def empty(self) -> bool:
        return self.num_tokens == 0


EMPTY_MESSAGE = "There is no text to attend over: type a sentence in the sidebar."


def prepare(text: str, settings: Settings, use_book: bool = False) -> Prepared:
    """Tokenize and embed ``text`` (or take the book's 6x3 preset). With trained weights
    (``settings.trained``) X is what the trained layer reads: the grown model's own token and
    position embeddings of the tokens mapped into its vocabulary (:func:`trained_inputs`)."""
    if use_book:
        return Prepared(True, BOOK_LABELS, book_inputs().unsqueeze(0), None)
    tokens = tokenize(text, cap=settings.max_tokens)
    messages = []
    if len(tokens) == 0:
        messages.append(EMPTY_MESSAGE)
    cap = tokens.cap_message()
    if cap:
        messages.append(cap)
    if settings.trained and len(tokens):
        return trained_inputs(tokens, tuple(messages))
    with torch.inference_mode():
        x = embed(tokens, settings.d_in, settings.seed_embed)
    return Prepared(False, tokens.labels, x, tokens, tuple(messages))


# Which layer's weights passes 2-4 hold, and which of its heads passes 2 and 3 show, with trained
# weights: chosen by measurement (attnviz/models/induction/passes.py says how).
TRAINED_LAYER = passes.DEFAULT_LAYER
TRAINED_HEAD = passes.DEFAULT_HEAD


def trained_inputs(tokens: Tokens, messages: tuple[str, ...] = ()) -> Prepared:
    """The text as the trained layer reads it: tokens mapped into the grown model's vocabulary
    by :data:`attnviz.models.induction.passes.RULE`, cut to its context of 24, then its embeddings
    (layer 0's input)."""
    tp = passes.trained_pass(tokens.ids, tokens.labels, TRAINED_LAYER, TRAINED_HEAD)
    return Prepared(
        False, tp.labels, tp.x, tokens, (*messages, *tp.messages), model_ids=tp.model_ids
    )


def trained_from(s: Settings) -> tracing.Trained | None:
    """Where the weights come from: the grown model's last checkpoint with trained weights,
    else None (the seed draws them)."""
    if not s.trained:
        return None
    return tracing.Trained(
        recorded().reference.steps[-1], TRAINED_LAYER, TRAINED_HEAD, passes.module_state
    )


def within_context(prep: Prepared, context_length: int) -> tuple[Prepared, str | None]:
    """The causal passes need T <= context_length (the mask has that many positions)."""
    if prep.num_tokens <= context_length:
        return prep, None
    note = (
        f"The text has {prep.num_tokens} tokens but context_length is {context_length}: the "
        f"causal mask only covers {context_length} positions, so this page uses the first "
        f"{context_length}. Raise context_length to see them all."
    )
    cut = Prepared(
        prep.book,
        prep.labels[:context_length],
        prep.x[:, :context_length],
        prep.tokens,
        prep.messages,
    )
    return cut, note


# --- module specs from the settings -------------------------------------------------------
def _seed(s: Settings) -> int | None:
    return None if s.trained else s.seed_weights


def spec_trainable(s: Settings, version: str = "v2") -> tracing.ModuleSpec:
    return tracing.ModuleSpec(
        version,
        s.d_in,
        s.d_out,
        qkv_bias=s.qkv_bias and version == "v2",
        seed=_seed(s),
        trained=trained_from(s),
    )


def _masked_spec(kind: str, s: Settings, num_heads: int) -> tracing.ModuleSpec:
    """The spec of a causal module (``kind`` "causal" or "mha") at the settings ``s``."""
    return tracing.ModuleSpec(
        kind,
        s.d_in,
        s.d_out,
        s.context_length,
        s.dropout,
        num_heads,
        s.qkv_bias,
        _seed(s),
        trained_from(s),
    )


def spec_causal(s: Settings) -> tracing.ModuleSpec:
    return _masked_spec("causal", s, 1)


def spec_multihead(s: Settings) -> tracing.ModuleSpec:
    return _masked_spec("mha", s, s.num_heads)


def spec_wrapper(s: Settings) -> tracing.ModuleSpec:
    """The wrapper built with ``d_out // num_heads`` per head, so its output is d_out wide."""
    return spec_multihead(s).as_wrapper()


# --- traces for one prepared text ---------------------------------------------------------
def simplified(prep: Prepared) -> tracing.SimplifiedTrace:
    return tracing.trace_simplified(prep.x[0], prep.labels)


def trainable(prep: Prepared, s: Settings, version: str = "v2") -> tracing.TrainableTrace:
    if prep.book:
        spec = book.SPEC_V1 if version == "v1" else book.SPEC_V2
    else:
        spec = spec_trainable(s, version)
    return tracing.trace_trainable(spec, prep.x[0], prep.labels)


def causal(prep: Prepared, s: Settings) -> tracing.CausalTrace:
    """Book mode: the chapter's masking walkthrough (sa_v2's weights, seed 789, dropout 0)."""
    if prep.book:
        return tracing.trace_causal(book.SPEC_MASKING_WALK, prep.x, prep.labels)
    return tracing.trace_causal(spec_causal(s), prep.x, prep.labels, s.training, s.seed_dropout)


def multihead(prep: Prepared, s: Settings) -> tracing.MultiHeadTrace:
    if prep.book:
        return tracing.trace_multihead(book.SPEC_MHA, prep.x, prep.labels)
    return tracing.trace_multihead(
        spec_multihead(s), prep.x, prep.labels, s.training, s.seed_dropout
    )


def wrapper(prep: Prepared, s: Settings) -> tracing.WrapperTrace:
    if prep.book:
        return tracing.trace_wrapper(book.SPEC_WRAPPER, prep.x, prep.labels)
    return tracing.trace_wrapper(spec_wrapper(s), prep.x, prep.labels, s.training, s.seed_dropout)


@dataclass(frozen=True)
class PreparedBatch:
    """Two texts as one batch (2, n, d_in), both cut to the shorter one's n tokens."""

    labels: tuple[tuple[str, ...], tuple[str, ...]]
    x: torch.Tensor
    messages: tuple[str, ...] = ()

    @property
    def num_tokens(self) -> int:
        return self.x.shape[1]


def prepare_batch(
    text: str, text2: str, settings: Settings, use_book: bool = False
) -> PreparedBatch:
    """The batch view: the book's two copies of its inputs, or the two sidebar texts."""
    if use_book:
        return PreparedBatch((BOOK_LABELS, BOOK_LABELS), book.book_batch_inputs())
    a, b = prepare(text, settings), prepare(text2, settings)
    n = min(a.num_tokens, b.num_tokens, settings.context_length)
    messages = []
    if a.num_tokens != b.num_tokens:
        messages.append(
            f"The two texts have {a.num_tokens} and {b.num_tokens} tokens. The chapter's modules "
            f"have no padding mask, so the batch uses the first {n} tokens of each."
        )
    if n < min(a.num_tokens, b.num_tokens):
        messages.append(f"The batch is cut to context_length = {settings.context_length} tokens.")
    x = torch.cat([a.x[:, :n], b.x[:, :n]], dim=0)
    return PreparedBatch((a.labels[:n], b.labels[:n]), x, tuple(messages))


def causal_batch_spec(s: Settings, use_book: bool = False) -> tracing.ModuleSpec:
    """The module pass 3 runs the batch through; book mode: the chapter's CausalAttention
    (seed 123, dropout 0)."""
    return book.SPEC_CAUSAL if use_book else spec_causal(s)


def causal_batch(batch: PreparedBatch, s: Settings, use_book: bool = False) -> tracing.CausalTrace:
    """Pass 3 on the batch (:func:`causal_batch_spec`'s module)."""
    spec = causal_batch_spec(s, use_book)
    if use_book:
        return tracing.trace_causal(spec, batch.x, batch.labels[0])
    return tracing.trace_causal(spec, batch.x, batch.labels[0], s.training, s.seed_dropout)
