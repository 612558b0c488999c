"""The RBF kernel's element-wise map compiled with numba: from products ``xᵀz`` to kernel values in one pass.

Each of NumPy's element-wise steps is a pass over the whole block: on a Gram
of a few features, those passes and NumPy's scalar float64 ``exp`` cost several
times the BLAS product. Here the steps, distance, clip, scale and the
exponential of :mod:`dkernel.kernels._rbf_exp`, run in one loop over each row that the
compiler vectorizes; a Gram's tile is written with its mirror in the same pass.
"""

import numpy as np

from .._runtime.jit import njit
from ._rbf_exp import LN2_HI, LN2_LO, LOG2E, ROUNDING_SHIFT, TAYLOR, UNDERFLOW

__all__ = ["exp_nonpositive_into", "rbf_values_into", "rbf_tile_into_gram"]

C13, C12, C11, C10, C9, C8, C7, C6, C5, C4, C3, C2, C1, C0 = TAYLOR


@njit(cache=True, nogil=True)
def exp_nonpositive_into(t, shifted, out):
    """``out[j] = exp(t[j])`` for ``t[j] <= 0``; ``shifted`` is float64 scratch of the same length.

    Two vectorizable loops: the polynomial of the reduced argument (and the
    shifted quotient whose low bits are ``k``), then the scaling by ``2^k``
    through the exponent bits.
    """
    n = t.shape[0]
    poly = np.empty(n)
    for j in range(n):
        x = max(t[j], UNDERFLOW)
        s = x * LOG2E + ROUNDING_SHIFT
        k = s - ROUNDING_SHIFT
        r = (x - k * LN2_HI) - k * LN2_LO
        p = C13
        p = p * r + C12
        p = p * r + C11
        p = p * r + C10
        p = p * r + C9
        p = p * r + C8
        p = p * r + C7
        p = p * r + C6
        p = p * r + C5
        p = p * r + C4
        p = p * r + C3
        p = p * r + C2
        p = p * r + C1
        p = p * r + C0
        poly[j] = p
        shifted[j] = s
    bits = shifted.view(np.int64)
    for j in range(n):
        bits[j] = (bits[j] + 1023) << 52
    scale = bits.view(np.float64)
    for j in range(n):
        value = poly[j] * scale[j]
        out[j] = value if t[j] >= UNDERFLOW else 0.0


@njit(cache=True, nogil=True)
def rbf_values_into(P, x_sq, z_sq, neg_gamma, diagonal_offset):
    """``P[i, j] ← exp(-γ max((-2 P[i, j] + x_sq[i]) + z_sq[j], 0))`` in place, ``P`` holding the products ``XZᵀ``.

    The distance is formed in the order of
    :meth:`dkernel.kernels.RBFKernel.block` (that of
    ``sklearn.metrics.euclidean_distances``). With ``diagonal_offset >= 0``,
    ``P[i, i + diagonal_offset]`` is a point's distance to itself: exactly 0,
    its value exactly 1.
    """
    m, p = P.shape
    t = np.empty(p)
    shifted = np.empty(p)
    for i in range(m):
        row = P[i]
        xi = x_sq[i]
        for j in range(p):
            d = (-2.0 * row[j] + xi) + z_sq[j]
            if d < 0.0:
                d = 0.0
            t[j] = d * neg_gamma
        exp_nonpositive_into(t, shifted, row)
        if diagonal_offset >= 0 and 0 <= i + diagonal_offset < p:
            row[i + diagonal_offset] = 1.0


#: Rows of a tile mapped and written (with their mirror) at a time: 64 rows of a 256-column tile are 128 KB.
TILE_PASS_ROWS = 64


@njit(cache=True, nogil=True)
def rbf_tile_into_gram(P, x_sq, z_sq, neg_gamma, K, row0, col0):
    """The RBF values of the products ``P`` (rows ``row0 …``, columns ``col0 …`` of a Gram) written into ``K``
    at ``K[row0 + i, col0 + j]`` and at the mirrored ``K[col0 + j, row0 + i]``.

    ``P`` is overwritten with the values in float64; ``K`` may be float32.
    A tile off the diagonal (the rows and columns do not overlap). The tile
    is mapped and written :data:`TILE_PASS_ROWS` rows at a time, while they
    are in cache; the mirror is written as short contiguous runs of each
    of ``K``'s rows below.
    """
    m, p = P.shape
    for a in range(0, m, TILE_PASS_ROWS):
        b = min(a + TILE_PASS_ROWS, m)
        rbf_values_into(P[a:b], x_sq[a:b], z_sq, neg_gamma, -1)
        for i in range(a, b):
            for j in range(p):
                K[row0 + i, col0 + j] = P[i, j]
        for j in range(p):
            for i in range(a, b):
                K[col0 + j, row0 + i] = P[i, j]
