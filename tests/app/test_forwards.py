"""Pages 4 and 6 on cold caches: the multi-head pass runs once, its references once, and the
second page reads both from the cache, so it runs no forward of its own."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from attnviz.core import modules as M
from attnviz.models import implementations as impl
from tests.support.forwards import SDPA, counted_forwards, name_of
from ui import memo

from .conftest import exceptions, open_app

OURS = name_of(M.MultiHeadAttention)
TORCH_MHA = name_of(torch.nn.MultiheadAttention)
SDPA_IMPL = name_of(impl.SDPA)
PAGE_6 = "pages/against-pytorch.py"


@pytest.mark.parametrize(
    ("query", "ours"),
    [
        ({}, 2),  # the trace, then the references' run on a changed input
        ({"train": "true", "dropout": "0.5"}, 3),  # and the eval-mode trace the checks read
    ],
)
def test_page_4_then_page_6_run_each_forward_once(query, ours):
    memo.clear_all()  # every shared cache, so that this class starts cold
    with counted_forwards() as counts:
        at = open_app(query, page="multihead")
        assert not exceptions(at)
        page_4 = Counter(counts)
        at.switch_page(PAGE_6).run()
        assert not exceptions(at)
    assert page_4[OURS] == ours
    assert page_4[TORCH_MHA] == 1 and page_4[SDPA_IMPL] == 1
    # PyTorch's SDPA: on all heads, on each of the 2 heads alone, in the SDPA implementation
    assert page_4[SDPA] == 1 + 2 + 1
    assert counts - page_4 == Counter(), "page 6 ran forwards of its own"
