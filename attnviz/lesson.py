"""From what the student typed and set to what each page draws: inputs, module specs, traces.

Everything here takes plain values (text, :class:`Settings`) and returns immutable values, so the
app can cache it keyed by those plain values.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import book
from . import trace as T
from .inputs import BOOK_LABELS, book_inputs, embed
from .settings import Settings
from .tokens import Tokens, tokenize


@dataclass(frozen=True)
class Prepared:
    """One text, ready for the passes: its tokens, labels and input matrix X (1, T, d_in)."""

    book: bool
    labels: tuple[str, ...]
    x: torch.Tensor
    tokens: Tokens | None
    messages: tuple[str, ...] = ()

    @property
    def num_tokens(self) -> int:
        return len(self.labels)

    @property
    def empty(self) -> bool:
        return self.num_tokens == 0


EMPTY_MESSAGE = "There is no text to attend over: type a sentence in the sidebar."


def prepare(text: str, settings: Settings, use_book: bool = False) -> Prepared:
    """Tokenize and embed ``text`` (or take the book's 6x3 preset)."""
    if use_book:
        return Prepared(True, BOOK_LABELS, book_inputs().unsqueeze(0), None)
    tokens = tokenize(text, cap=settings.max_tokens)
    messages = []
    if len(tokens) == 0:
        messages.append(EMPTY_MESSAGE)
    cap = tokens.cap_message()
    if cap:
        messages.append(cap)
    with torch.inference_mode():
        x = embed(tokens, settings.d_in, settings.seed_embed)
    return Prepared(False, tokens.labels, x, tokens, tuple(messages))


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
def spec_trainable(s: Settings, version: str = "v2") -> T.ModuleSpec:
    return T.ModuleSpec(
        version, s.d_in, s.d_out, qkv_bias=s.qkv_bias and version == "v2", seed=s.seed_weights
    )


def spec_causal(s: Settings) -> T.ModuleSpec:
    return T.ModuleSpec(
        "causal", s.d_in, s.d_out, s.context_length, s.dropout, 1, s.qkv_bias, s.seed_weights
    )


def spec_multihead(s: Settings) -> T.ModuleSpec:
    return T.ModuleSpec(
        "mha", s.d_in, s.d_out, s.context_length, s.dropout, s.num_heads, s.qkv_bias, s.seed_weights
    )


def spec_wrapper(s: Settings) -> T.ModuleSpec:
    """The wrapper built with ``d_out // num_heads`` per head, so its output is d_out wide."""
    return spec_multihead(s).as_wrapper()


# --- traces for one prepared text ---------------------------------------------------------
def simplified(prep: Prepared) -> T.SimplifiedTrace:
    return T.trace_simplified(prep.x[0], prep.labels)


def trainable(prep: Prepared, s: Settings, version: str = "v2") -> T.TrainableTrace:
    if prep.book:
        spec = book.SPEC_V1 if version == "v1" else book.SPEC_V2
    else:
        spec = spec_trainable(s, version)
    return T.trace_trainable(spec, prep.x[0], prep.labels)


def causal(prep: Prepared, s: Settings) -> T.CausalTrace:
    """Book mode: the chapter's masking walkthrough (sa_v2's weights, seed 789, dropout 0)."""
    if prep.book:
        return T.trace_causal(book.SPEC_MASKING_WALK, prep.x, prep.labels)
    return T.trace_causal(spec_causal(s), prep.x, prep.labels, s.training, s.seed_dropout)


def multihead(prep: Prepared, s: Settings) -> T.MultiHeadTrace:
    if prep.book:
        return T.trace_multihead(book.SPEC_MHA, prep.x, prep.labels)
    return T.trace_multihead(spec_multihead(s), prep.x, prep.labels, s.training, s.seed_dropout)


def wrapper(prep: Prepared, s: Settings) -> T.WrapperTrace:
    if prep.book:
        return T.trace_wrapper(book.SPEC_WRAPPER, prep.x, prep.labels)
    return T.trace_wrapper(spec_wrapper(s), prep.x, prep.labels, s.training, s.seed_dropout)


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


def causal_batch(batch: PreparedBatch, s: Settings, use_book: bool = False) -> T.CausalTrace:
    """Pass 3 on the batch; book mode: the chapter's CausalAttention (seed 123, dropout 0)."""
    if use_book:
        return T.trace_causal(book.SPEC_CAUSAL, batch.x, batch.labels[0])
    return T.trace_causal(spec_causal(s), batch.x, batch.labels[0], s.training, s.seed_dropout)
