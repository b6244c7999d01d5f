"""One torch intra-op thread for a test package that runs tiny tensors: faster than a pool that
other tests contend for, and what the server uses (attnviz/server/runtime.py).

A package's conftest.py (or a test module) imports the fixture to switch it on there:

    from tests.support.torch_threads import single_intra_op_thread  # noqa: F401
"""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="package", autouse=True)
def single_intra_op_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
