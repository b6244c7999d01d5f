"""The training tests run tiny models: one intra-op thread is faster than a contended pool (and
is what the server uses, see attnviz/runtime.py)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="package", autouse=True)
def single_intra_op_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
