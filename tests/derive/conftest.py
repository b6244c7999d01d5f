"""The derivation, export and reproduce tests run on tiny tensors (one intra-op thread), and
each checks that it leaves torch's global generator as it found it (tests/support/rng.py)."""

from tests.support.rng import global_rng_untouched  # noqa: F401
from tests.support.torch_threads import single_intra_op_thread  # noqa: F401
