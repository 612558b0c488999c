# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The RBF kernel's element-wise map: from products ``xᵀz`` to kernel values in one pass (``rbf.h``).

Distance, clip, scale and the polynomial exponential of
:func:`dkernel.kernels._blocks.exp_nonpositive` run in one loop over each row, vectorized
(AVX-512 or AVX2 where the CPU has them), instead of NumPy's pass per step
and scalar float64 ``exp``; a Gram's tile is written with its mirror in the
same pass. Outside the GIL: threads evaluate a Gram's bands in parallel.
Used by :mod:`dkernel.kernels._blocks`.
"""

from cython cimport floating

__all__ = ["TILE_PASS_ROWS", "exp_nonpositive_into", "rbf_direct_rows_into", "rbf_tile_into_gram", "rbf_values_into"]

cdef extern from "rbf.h" nogil:
    const int DK_TILE_PASS_ROWS
    void dk_exp_nonpositive_into(const double *t, double *out, Py_ssize_t n)
    void dk_rbf_rows(double *P, Py_ssize_t m, Py_ssize_t p, Py_ssize_t row_stride, const double *x_sq,
                     const double *z_sq, double neg_gamma, Py_ssize_t diagonal_offset)
    void dk_rbf_tile_into_gram_f64(double *P, Py_ssize_t m, Py_ssize_t p, Py_ssize_t p_stride, const double *x_sq,
                                   const double *z_sq, double neg_gamma, double *K, Py_ssize_t k_rows,
                                   Py_ssize_t k_cols, Py_ssize_t row0, Py_ssize_t col0)
    void dk_rbf_tile_into_gram_f32(double *P, Py_ssize_t m, Py_ssize_t p, Py_ssize_t p_stride, const double *x_sq,
                                   const double *z_sq, double neg_gamma, float *K, Py_ssize_t k_rows,
                                   Py_ssize_t k_cols, Py_ssize_t row0, Py_ssize_t col0)
    void dk_rbf_direct_rows_f64(const double *X, Py_ssize_t m, Py_ssize_t d, Py_ssize_t x_stride, const double *Zt,
                                Py_ssize_t p, Py_ssize_t zt_stride, double neg_gamma, double *out,
                                Py_ssize_t out_stride)
    void dk_rbf_direct_rows_f32(const double *X, Py_ssize_t m, Py_ssize_t d, Py_ssize_t x_stride, const double *Zt,
                                Py_ssize_t p, Py_ssize_t zt_stride, double neg_gamma, float *out,
                                Py_ssize_t out_stride)

#: Rows of a tile mapped and written (with their mirror) at a time: 64 rows of a 256-column tile are 128 KB.
TILE_PASS_ROWS = DK_TILE_PASS_ROWS


cdef Py_ssize_t _row_stride(double[:, :] P) except -1:
    """The distance between ``P``'s rows, in values; its rows must be contiguous."""
    if P.shape[1] > 1 and P.strides[1] != sizeof(double):
        raise ValueError("the products must have contiguous rows (a C-ordered block or a slice of its rows)")
    return P.strides[0] // <Py_ssize_t>sizeof(double)


def exp_nonpositive_into(const double[::1] t, double[::1] out):
    """``out[j] = exp(t[j])`` for ``t[j] <= 0`` (0 below -708), by the polynomial of :func:`dkernel.kernels._blocks.exp_nonpositive`."""
    if out.shape[0] != t.shape[0]:
        raise ValueError(f"out has {out.shape[0]} values for {t.shape[0]} exponents")
    if t.shape[0]:
        with nogil:
            dk_exp_nonpositive_into(&t[0], &out[0], t.shape[0])


def rbf_values_into(double[:, :] P, const double[::1] x_sq, const double[::1] z_sq, double neg_gamma,
                    Py_ssize_t diagonal_offset):
    """``P[i, j] ← exp(-γ max((-2 P[i, j] + x_sq[i]) + z_sq[j], 0))`` in place, ``P`` holding the products ``XZᵀ``.

    The distance is formed in the order of
    :meth:`dkernel.kernels.RBFKernel.block` (that of
    ``sklearn.metrics.euclidean_distances``). With ``diagonal_offset >= 0``,
    ``P[i, i + diagonal_offset]`` is a point's distance to itself: exactly 0,
    its value exactly 1.
    """
    cdef Py_ssize_t m = P.shape[0], p = P.shape[1]
    if x_sq.shape[0] < m or z_sq.shape[0] < p:
        raise ValueError(f"{x_sq.shape[0]} and {z_sq.shape[0]} squared norms for products of shape ({m}, {p})")
    if m == 0 or p == 0:
        return
    cdef Py_ssize_t stride = _row_stride(P)
    with nogil:
        dk_rbf_rows(&P[0, 0], m, p, stride, &x_sq[0], &z_sq[0], neg_gamma, diagonal_offset)


def rbf_tile_into_gram(double[:, :] P, const double[::1] x_sq, const double[::1] z_sq, double neg_gamma,
                       floating[:, :] K, Py_ssize_t row0, Py_ssize_t col0):
    """The RBF values of the products ``P`` (rows ``row0 …``, columns ``col0 …`` of a Gram) written into ``K``
    at ``K[row0 + i, col0 + j]`` and at the mirrored ``K[col0 + j, row0 + i]``.

    ``P`` is overwritten with the values in float64; ``K`` may be float32.
    A tile off the diagonal (the rows and columns do not overlap). The tile
    is mapped and written :data:`TILE_PASS_ROWS` rows at a time, while they
    are in cache; the mirror is written as short contiguous runs of each
    of ``K``'s rows below.
    """
    cdef Py_ssize_t m = P.shape[0], p = P.shape[1]
    if x_sq.shape[0] < m or z_sq.shape[0] < p:
        raise ValueError(f"{x_sq.shape[0]} and {z_sq.shape[0]} squared norms for products of shape ({m}, {p})")
    if row0 < 0 or col0 < 0 or max(row0 + m, col0 + p) > min(K.shape[0], K.shape[1]):
        raise ValueError(f"a tile of shape ({m}, {p}) at ({row0}, {col0}) and its mirror do not fit in a Gram of "
                         f"shape ({K.shape[0]}, {K.shape[1]})")
    if m == 0 or p == 0:
        return
    cdef Py_ssize_t stride = _row_stride(P)
    cdef Py_ssize_t k_rows = K.strides[0] // <Py_ssize_t>sizeof(floating)
    cdef Py_ssize_t k_cols = K.strides[1] // <Py_ssize_t>sizeof(floating)
    with nogil:
        if floating is double:
            dk_rbf_tile_into_gram_f64(&P[0, 0], m, p, stride, &x_sq[0], &z_sq[0], neg_gamma, &K[0, 0], k_rows,
                                      k_cols, row0, col0)
        else:
            dk_rbf_tile_into_gram_f32(&P[0, 0], m, p, stride, &x_sq[0], &z_sq[0], neg_gamma, &K[0, 0], k_rows,
                                      k_cols, row0, col0)


def rbf_direct_rows_into(const double[:, ::1] X, const double[:, :] Zt, double neg_gamma, floating[:, :] out):
    """``out[i, j] = exp(-γ Σ_k (X[i, k] - Zt[k, j])²)``: the squared distance summed feature by feature, not
    formed from products, each value written once in ``out``'s dtype (float32 or float64).

    ``Zt`` holds the columns' samples as its columns (``Zᵀ``, rows
    contiguous: a slice of the columns of a C-ordered ``Xᵀ``); ``out`` has
    contiguous rows (a slice of the columns of a C-ordered array). A point
    and itself are at distance exactly 0: value exactly 1.
    """
    cdef Py_ssize_t m = X.shape[0], d = X.shape[1], p = Zt.shape[1]
    if Zt.shape[0] != d or out.shape[0] != m or out.shape[1] != p:
        raise ValueError(f"rows of shape ({m}, {d}), columns of shape ({Zt.shape[1]}, {Zt.shape[0]}) and out of "
                         f"shape ({out.shape[0]}, {out.shape[1]}) do not match")
    if p > 1 and (Zt.strides[1] != sizeof(double) or out.strides[1] != sizeof(floating)):
        raise ValueError("the columns' samples and out must have contiguous rows")
    if m == 0 or p == 0:
        return
    cdef Py_ssize_t zt_stride = Zt.strides[0] // <Py_ssize_t>sizeof(double) if d > 1 else 0
    cdef Py_ssize_t out_stride = out.strides[0] // <Py_ssize_t>sizeof(floating)
    with nogil:
        if floating is double:
            dk_rbf_direct_rows_f64(&X[0, 0], m, d, d, &Zt[0, 0], p, zt_stride, neg_gamma, &out[0, 0], out_stride)
        else:
            dk_rbf_direct_rows_f32(&X[0, 0], m, d, d, &Zt[0, 0], p, zt_stride, neg_gamma, &out[0, 0], out_stride)
