"""The question and mystery tests run tiny tensors (one intra-op thread) and check that they
leave torch's global generator as they found it (tests/support/rng.py)."""

from tests.support.rng import global_rng_untouched  # noqa: F401
from tests.support.torch_threads import single_intra_op_thread  # noqa: F401
