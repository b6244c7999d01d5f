"""Book mode: the chapter's own arguments, seeds and printed tensors (4 decimals, as printed).

The printouts come from the chapter's notebook (``ch03.ipynb``) and are the reference the pages
show beside the app's own numbers; :func:`matches_printout` compares at the printout's precision.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import torch

from attnviz.core.settings import BOOK, Settings
from attnviz.core.trace import ModuleSpec

# The chapter's arguments, as one Settings: book mode's sizes wherever the app needs them (the
# sidebar's book-mode configuration, the heavy-request cost, the modules below). Defined once,
# as the preset ``attnviz.core.settings.BOOK``.
SETTINGS = Settings().with_changes(**BOOK)
D_IN, D_OUT, CONTEXT_LENGTH = SETTINGS.d_in, SETTINGS.d_out, SETTINGS.context_length
NUM_HEADS, DROPOUT = SETTINGS.num_heads, SETTINGS.dropout

# The seeds the chapter uses for each section.
SEED_V1 = 123
SEED_V2 = 789  # also the masking walkthrough, which reuses sa_v2's weights
SEED_CAUSAL = 123
SEED_MULTIHEAD = 123
SEED_DROPOUT = 123
DROPOUT_EXAMPLE_P = 0.5

SPEC_V1 = ModuleSpec("v1", D_IN, D_OUT, seed=SEED_V1)
SPEC_V2 = ModuleSpec("v2", D_IN, D_OUT, seed=SEED_V2)
# CausalAttention creates W_query, W_key, W_value in the same order as SelfAttention_v2, so with
# seed 789 it holds sa_v2's weights: the chapter's masking walkthrough (section 3.5.1).
SPEC_MASKING_WALK = ModuleSpec("causal", D_IN, D_OUT, CONTEXT_LENGTH, DROPOUT, 1, False, SEED_V2)
SPEC_CAUSAL = ModuleSpec("causal", D_IN, D_OUT, CONTEXT_LENGTH, DROPOUT, 1, False, SEED_CAUSAL)
SPEC_WRAPPER = ModuleSpec(
    "wrapper", D_IN, D_OUT, CONTEXT_LENGTH, DROPOUT, NUM_HEADS, False, SEED_MULTIHEAD
)
SPEC_MHA = ModuleSpec("mha", D_IN, D_OUT, CONTEXT_LENGTH, DROPOUT, NUM_HEADS, False, SEED_MULTIHEAD)
# Exercise 3.2: the wrapper with d_out=1 per head and two heads gives a 2-wide output.
SPEC_EXERCISE_3_2 = ModuleSpec("wrapper", D_IN, 1, CONTEXT_LENGTH, 0.0, 2, False, SEED_MULTIHEAD)
EXERCISE_3_2_SHAPE = (2, 6, 2)
EXERCISE_3_3_PARAMETERS = 2_360_064

Printout = tuple[float, ...] | tuple[tuple[float, ...], ...]


def _read_printouts(text: str) -> dict[str, Printout]:
    """Parse ``book_printouts.txt``: ``name: v v v`` is a vector; ``name:`` followed by indented
    lines of values is a matrix, one line a row; ``#`` starts a comment."""
    rows: dict[str, list[tuple[float, ...]]] = {}
    vectors: set[str] = set()
    name = ""
    for line in text.splitlines():
        line = line.split("#", 1)[0].rstrip()
        if line and line[0].isspace():  # a row of the matrix named last
            rows[name].append(tuple(float(v) for v in line.split()))
        elif line:
            name, _, rest = line.partition(":")
            if name in rows:
                raise ValueError(f"the printout {name!r} is given twice")
            rows[name] = [tuple(float(v) for v in rest.split())] if rest.strip() else []
            if rest.strip():
                vectors.add(name)
    return {name: found[0] if name in vectors else tuple(found) for name, found in rows.items()}


# name -> the printed values, read once; a read-only mapping of tuples, so nobody can change them.
PRINTED: Mapping[str, Printout] = MappingProxyType(
    _read_printouts((Path(__file__).with_name("book_printouts.txt")).read_text(encoding="utf-8"))
)


def printed(name: str) -> torch.Tensor:
    """One of the chapter's printouts as a tensor."""
    return torch.tensor(PRINTED[name])


def matches_printout(actual: torch.Tensor, name: str) -> tuple[bool, float]:
    """Does ``actual`` print as the chapter printed it? (within half a unit of the 4th decimal,
    plus float32 slack); returns (match, largest difference on finite entries)."""
    expected = printed(name)
    actual = actual.detach().to(torch.float32)
    if tuple(actual.shape) != tuple(expected.shape):
        return False, float("inf")
    same_inf = torch.equal(torch.isinf(actual), torch.isinf(expected))
    finite = torch.isfinite(expected)
    diff = (actual[finite] - expected[finite]).abs()
    worst = float(diff.max()) if diff.numel() else 0.0
    return same_inf and worst <= 0.5e-4 + 1e-6, worst


def book_batch_inputs() -> torch.Tensor:
    """The chapter's batch: two copies of the 6x3 inputs, (2, 6, 3)."""
    from attnviz.core.inputs import book_batch

    return book_batch()
