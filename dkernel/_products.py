"""Inner-product blocks ``X Zᵀ`` whose bits do not depend on the block's shape."""

import numpy as np
from sklearn.utils.extmath import safe_sparse_dot

__all__ = ["dot_block"]


def _as_two_rows(A):
    return np.concatenate([A, A]) if A.shape[0] == 1 else A


def dot_block(X, Z):
    """``X Zᵀ`` as a dense array (BLAS for dense, sparse product for CSR).

    A single dense row (of ``X`` or ``Z``) is multiplied as part of a block of
    two: NumPy hands a one-row product to ``gemv``, whose sums round
    differently from ``gemm``'s, and a kernel row must have the same bits
    whether it is computed alone or with others (a resumed solver reads its
    rows again in other blocks; a Gram's last tile may be one column wide).
    The result is C-contiguous.
    """
    if isinstance(X, np.ndarray) and isinstance(Z, np.ndarray) and X.ndim == Z.ndim == 2 \
            and 1 in (X.shape[0], Z.shape[0]):
        product = _as_two_rows(X) @ _as_two_rows(Z).T
        return np.ascontiguousarray(product[: X.shape[0], : Z.shape[0]])
    return np.asarray(safe_sparse_dot(X, Z.T, dense_output=True))
