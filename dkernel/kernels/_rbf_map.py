"""The RBF kernel's element-wise map from inner products to kernel values, in place.

``K = exp(-γ max(|x|² + |z|² - 2xᵀz, 0))``, the squared distance formed in
the order of ``sklearn.metrics.euclidean_distances`` (float64 results agree
with it to rounding), clipped at zero, exactly zero for a point and itself
(``K(x, x) = 1.0`` exactly). Two evaluations of the same map:

* NumPy, one pass over the block per step, the exponential by the same
  polynomial (:func:`exp_nonpositive`): small blocks (a tiny fit, the
  prediction of a few points), which then load no compiled code;
* compiled (:mod:`dkernel.kernels._rbf_compiled`), all steps in one vectorized pass with a
  polynomial exponential: float64 blocks of :data:`FUSED_MIN_VALUES` values
  or more, where NumPy's per-step passes and its scalar float64 ``exp`` cost
  several times the BLAS product.

Both give the same bits from the same products: the map is element-wise, the
same operations in the same order, so a value does not depend on the size of
its block, on which evaluation maps it, or on whether the block is mapped
whole (:meth:`RBFKernel.block <dkernel.kernels.RBFKernel.block>`) or strip by
strip into a buffer (:func:`map_strips`). The products themselves are BLAS's,
whose last bits depend on the block's shape
(:mod:`dkernel.kernels._products`): kernel values computed in two blocks
agree to rounding. float32 data keep NumPy's float32 ``exp``.
"""

import numpy as np

from ._products import dot_block
from ._rbf_exp import exp_nonpositive

__all__ = ["FUSED_MIN_VALUES", "PASS_ROWS", "map_block", "map_strips", "map_mirrored_tiles"]

#: Rows per element-wise pass of :func:`map_strips` (a few hundred KB to 2 MB: stays in L2).
PASS_ROWS = 64

#: Blocks of at least this many float64 values are mapped by the compiled pass.
FUSED_MIN_VALUES = 2**15

#: Columns of a tile of :func:`map_mirrored_tiles` (1024 rows: 2 MB of products, in L2).
MIRROR_TILE_COLUMNS = 256


def _compiled(D):
    """Whether the products ``D`` are mapped by the compiled pass: C-contiguous float64, large enough."""
    return D.dtype == np.float64 and D.ndim == 2 and D.flags.c_contiguous and D.size >= FUSED_MIN_VALUES


def _as_float64(v):
    return np.ascontiguousarray(v, dtype=np.float64)


def _map_numpy(D, x_sq, z_sq, gamma, diagonal_offset):
    D *= -2
    D += x_sq.reshape(-1, 1)
    D += z_sq.reshape(1, -1)
    np.maximum(D, 0, out=D)
    if diagonal_offset >= 0:
        diagonal = np.arange(diagonal_offset, min(diagonal_offset + D.shape[0], D.shape[1]))
        D[diagonal - diagonal_offset, diagonal] = 0
    D *= -gamma
    if D.dtype == np.float64:
        D[...] = exp_nonpositive(D)
    else:  # float32 data: NumPy's float32 exp (vectorized), as the kernel's float32 blocks always were
        np.exp(D, out=D)


def map_block(D, x_sq, z_sq, gamma, *, diagonal_offset=-1, compiled=None):
    """Map the products ``D = X Zᵀ`` to RBF values in place.

    ``diagonal_offset >= 0``: row ``i`` and column ``i + diagonal_offset``
    are one point (value exactly 1). ``compiled`` (default: decided by
    ``D``) chooses the evaluation; a strip of a larger block follows its
    block's choice.
    """
    if compiled is None:
        compiled = _compiled(D)
    offset = diagonal_offset
    if compiled:
        from ._rbf_compiled import rbf_values_into

        rbf_values_into(D, _as_float64(x_sq), _as_float64(z_sq), -gamma, offset)
    else:
        _map_numpy(D, x_sq, z_sq, gamma, offset)
    return D


def map_strips(D, x_sq, z_sq, gamma, *, symmetric=False, on_strip=None):
    """:func:`map_block` on strips of :data:`PASS_ROWS` rows, each while in cache; ``on_strip(a, S)`` after each."""
    compiled = _compiled(D)
    for a in range(0, D.shape[0], PASS_ROWS):
        S = D[a : a + PASS_ROWS]
        map_block(S, x_sq[a : a + PASS_ROWS], z_sq, gamma, diagonal_offset=a if symmetric else -1, compiled=compiled)
        if on_strip is not None:
            on_strip(a, S)
    return D


def map_mirrored_tiles(X, Z, x_sq, z_sq, gamma, K, row0, col0):
    """``K(X, Z)`` written at ``K[row0:, col0:]`` and its transpose at ``K[col0:, row0:]``, tile by tile.

    For a Gram's blocks off the diagonal: per tile of
    :data:`MIRROR_TILE_COLUMNS` columns, the BLAS product, then one compiled
    pass that maps it and writes both places
    (:func:`dkernel.kernels._rbf_compiled.rbf_tile_into_gram`): no block of the whole band
    in between, no second pass for the mirror. Dense float64 ``X``, ``Z``.
    """
    from ._rbf_compiled import rbf_tile_into_gram

    x_sq, z_sq = _as_float64(x_sq), _as_float64(z_sq)
    for c in range(0, Z.shape[0], MIRROR_TILE_COLUMNS):
        P = dot_block(X, Z[c : c + MIRROR_TILE_COLUMNS])
        rbf_tile_into_gram(P, x_sq, z_sq[c : c + MIRROR_TILE_COLUMNS], -gamma, K, row0, col0 + c)
