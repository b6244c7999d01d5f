"""The induction tests: each checks that it leaves torch's global generator as it found it
(tests/support/rng.py), and runs torch on one thread, as the app does (attnviz/server/runtime.py).

Training a model this small on two threads of a busy machine took ten times the wall time and
the CPU of one thread: ``api.grow(seed=5, steps=30)`` ran in 83 s wall, 19 s CPU on two threads
and 8.7 s wall, 1.9 s CPU on one, at a load average of about 17 on two cores."""

import pytest
import torch

from tests.support.rng import global_rng_untouched  # noqa: F401


@pytest.fixture(autouse=True)
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
