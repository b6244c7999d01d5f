"""The training tests run tiny models: one intra-op thread is faster than a contended pool (and
is what the server uses, see attnviz/server/runtime.py). Each test checks that it leaves torch's global
generator as it found it (tests/support/rng.py)."""

from tests.support.rng import global_rng_untouched  # noqa: F401
from tests.support.torch_threads import single_intra_op_thread  # noqa: F401
