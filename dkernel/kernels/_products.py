"""Inner-product blocks ``X Zᵀ``: one BLAS product for dense data, a sparse product for CSR.

The last bits of a product are BLAS's to choose, and they depend on the
block a value is computed in, not only on its two vectors: NumPy hands a
one-row product to ``gemv``, whose sums round differently from ``gemm``'s;
a ``gemm`` kernel sums the rows at a block's edge, and each thread's share
of rows, in orders of its own; MKL's results may depend on the arrays'
alignment. With OpenBLAS 0.3.31's SkylakeX kernels on one thread (an AMD
EPYC, 3 to 784 features), a row computed in a block of 7 rows and in one of
302 differs in the last bit in 0.02 to 0.4 % of its values, a row computed
alone in 18 to 91 %; computing the last of an odd number of rows as the
second of a pair, or a single row as one of two, does not remove it there,
and costs 1.2 to 2.8 times the product. A product summed in one fixed order
per value (a compiled loop instead of BLAS) would give every block the same
bits, at 2 to 16 times BLAS's time (8 to 784 features; 1.3 to 15 times a
whole RBF row with its map).

So dkernel promises no bits: a kernel value computed in two blocks agrees to
rounding (about ``1e-15`` relative), and nothing depends on more. What a
solver needs is that the values it reads do not change under it: a Gram held
in memory computes each value once (the on-demand Gram too:
:mod:`dkernel.gram._in_memory`), and rows computed again on the fly differ
from the first by rounding, as the solver's own updates of the gradient do.
A fit's result depends on the kernel values to rounding, and on the solver's
tolerance far more.
"""

import numpy as np
from sklearn.utils.extmath import safe_sparse_dot

__all__ = ["dot_block", "dot_block_into"]


def _dense_pair(X, Z):
    return isinstance(X, np.ndarray) and isinstance(Z, np.ndarray) and X.ndim == Z.ndim == 2


def dot_block(X, Z):
    """``X Zᵀ`` as a dense, C-contiguous array (BLAS for dense, sparse product for CSR)."""
    if _dense_pair(X, Z):
        return dot_block_into(X, Z, np.empty((X.shape[0], Z.shape[0]), dtype=np.result_type(X, Z)))
    return np.asarray(safe_sparse_dot(X, Z.T, dense_output=True))


def dot_block_into(X, Z, out):
    """:func:`dot_block` of dense ``X`` and ``Z`` written into ``out`` (C-contiguous, of their dtype); ``out``."""
    return np.matmul(X, Z.T, out=out)
