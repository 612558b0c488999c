# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""A Gram block's two sums for the target alignment ``A(K, ttᵀ)``: ``t_Iᵀ K_IJ t_J`` and ``‖K_IJ‖²_F``.

One pass (``alignment.h``) reads the block in its stored dtype, accumulating in float64: a
float32 store costs no float64 copy of the block, and the two sums one pass
instead of NumPy's three. The row sums are vector reductions, outside the
GIL: Dask's threads reduce blocks in parallel. Used by
:mod:`dkernel.alignment._measures`.
"""

from cython cimport floating

__all__ = ["target_sums"]

cdef extern from "alignment.h" nogil:
    void dk_target_sums_f64(const double *K, Py_ssize_t m, Py_ssize_t p, Py_ssize_t rows, Py_ssize_t cols,
                            const double *t_rows, const double *t_cols, double *q, double *f)
    void dk_target_sums_f32(const float *K, Py_ssize_t m, Py_ssize_t p, Py_ssize_t rows, Py_ssize_t cols,
                            const double *t_rows, const double *t_cols, double *q, double *f)


def target_sums(const floating[:, :] K, const double[::1] t_rows, const double[::1] t_cols):
    """``(t_rowsᵀ K t_cols, ‖K‖²_F)`` of the block ``K`` (float32 or float64), in float64."""
    cdef Py_ssize_t m = K.shape[0], p = K.shape[1]
    cdef double q = 0.0, f = 0.0
    if t_rows.shape[0] != m or t_cols.shape[0] != p:
        raise ValueError(f"targets of {t_rows.shape[0]} and {t_cols.shape[0]} values for a block of shape ({m}, {p})")
    if m == 0 or p == 0:
        return q, f
    cdef Py_ssize_t rows = K.strides[0] // <Py_ssize_t>sizeof(floating)
    cdef Py_ssize_t cols = K.strides[1] // <Py_ssize_t>sizeof(floating)
    with nogil:
        if floating is double:
            dk_target_sums_f64(&K[0, 0], m, p, rows, cols, &t_rows[0], &t_cols[0], &q, &f)
        else:
            dk_target_sums_f32(&K[0, 0], m, p, rows, cols, &t_rows[0], &t_cols[0], &q, &f)
    return q, f
