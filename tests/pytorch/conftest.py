"""Page 6's tests run on tiny tensors: one intra-op thread is faster than a contended pool."""

from tests.support.torch_threads import single_intra_op_thread  # noqa: F401
