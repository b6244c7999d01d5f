"""Count the forwards a block of code runs: every ``nn.Module`` call by its class, and every
call of ``F.scaled_dot_product_attention``. Process-wide while the block runs (a page run in
AppTest's thread is counted too)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import torch.nn as nn
import torch.nn.functional as F

SDPA = "F.scaled_dot_product_attention"


def name_of(cls: type) -> str:
    """``attnviz.core.modules.MultiHeadAttention``, ``torch.nn...MultiheadAttention``, ..."""
    return f"{cls.__module__}.{cls.__qualname__}"


@contextmanager
def counted_forwards() -> Iterator[Counter]:
    """Within the block, a Counter of forwards: module class name (:func:`name_of`) -> calls."""
    counts: Counter = Counter()
    module_call = nn.Module.__call__
    sdpa = F.scaled_dot_product_attention

    def call(self, *args, **kwargs):
        counts[name_of(type(self))] += 1
        return module_call(self, *args, **kwargs)

    def counted_sdpa(*args, **kwargs):
        counts[SDPA] += 1
        return sdpa(*args, **kwargs)

    with (
        mock.patch.object(nn.Module, "__call__", call),
        mock.patch.object(F, "scaled_dot_product_attention", counted_sdpa),
    ):
        yield counts
