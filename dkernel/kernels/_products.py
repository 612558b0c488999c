"""Inner-product blocks ``X Zᵀ`` whose float64 bits do not depend on the block's shape (one BLAS thread)."""

import numpy as np
from sklearn.utils.extmath import safe_sparse_dot

__all__ = ["dot_block", "dot_block_into"]


def _as_two_rows(A):
    return np.concatenate([A, A]) if A.shape[0] == 1 else A


def _dense_pair(X, Z):
    return isinstance(X, np.ndarray) and isinstance(Z, np.ndarray) and X.ndim == Z.ndim == 2


def dot_block(X, Z):
    """``X Zᵀ`` as a dense, C-contiguous array (BLAS for dense, sparse product for CSR).

    A kernel row must have the same bits whether it is computed alone or
    with others (a resumed solver reads its rows again in other blocks; rows
    on demand come in requests of any size; a Gram's last tile may be one
    column wide). BLAS does not promise it: NumPy hands a one-row product to
    ``gemv``, whose sums round differently from ``gemm``'s, and OpenBLAS's
    ``dgemm`` sums the last row of an odd number of rows in another order
    (1 ulp apart in about a quarter of its values, measured here). So a
    single dense row (of ``X`` or ``Z``) is multiplied as part of a block of
    two, and the last of an odd number of rows as the second of a block of
    two (:func:`dot_block_into`). With several BLAS threads, or float32 data
    (``sgemm`` sums differently for most shapes), the bits may still differ
    in the last place.
    """
    if _dense_pair(X, Z):
        return dot_block_into(X, Z, np.empty((X.shape[0], Z.shape[0]), dtype=np.result_type(X, Z)))
    return np.asarray(safe_sparse_dot(X, Z.T, dense_output=True))


def dot_block_into(X, Z, out):
    """:func:`dot_block` of dense ``X`` and ``Z`` written into ``out`` (C-contiguous, of their dtype); ``out``."""
    m, p = X.shape[0], Z.shape[0]
    if 1 in (m, p):
        out[...] = (_as_two_rows(X) @ _as_two_rows(Z).T)[:m, :p]
    elif m % 2:
        np.matmul(X[:-1], Z.T, out=out[:-1])
        out[-1] = (X[-2:] @ Z.T)[1]
    else:
        np.matmul(X, Z.T, out=out)
    return out
