"""The training tests run tiny models: one intra-op thread is faster than a contended pool (and
is what the server uses, see attnviz/runtime.py)."""

from tests.support.torch_threads import single_intra_op_thread  # noqa: F401
