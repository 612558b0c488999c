# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""A square matrix's upper triangle copied onto its lower one, tile by tile (``mirror.h``).

The copy that makes a Gram evaluated as one BLAS product exactly symmetric:
in NumPy a gather and a scatter through index arrays, here a loop over
:data:`MIRROR_TILE` × :data:`MIRROR_TILE` tiles, each read along its rows and
written along the columns of its mirror while both are in cache, without the
GIL. Used by :func:`dkernel.kernels._blocks.mirror_upper`.
"""

from cython cimport floating

__all__ = ["MIRROR_TILE", "mirror_upper_into_lower"]

cdef extern from "mirror.h" nogil:
    const int DK_MIRROR_TILE
    void dk_mirror_upper_into_lower_f64(double *K, Py_ssize_t n, Py_ssize_t rows, Py_ssize_t cols)
    void dk_mirror_upper_into_lower_f32(float *K, Py_ssize_t n, Py_ssize_t rows, Py_ssize_t cols)

#: Rows and columns of a tile (64 × 64 float64 values: 32 KB, with its mirror in L1/L2).
MIRROR_TILE = DK_MIRROR_TILE


def mirror_upper_into_lower(floating[:, :] K):
    """``K[j, i] = K[i, j]`` for every ``i < j`` of the square ``K`` (any layout), in place."""
    cdef Py_ssize_t n = K.shape[0]
    if K.shape[1] != n:
        raise ValueError(f"the matrix must be square; it has shape ({K.shape[0]}, {K.shape[1]})")
    if n == 0:
        return
    cdef Py_ssize_t rows = K.strides[0] // <Py_ssize_t>sizeof(floating)
    cdef Py_ssize_t cols = K.strides[1] // <Py_ssize_t>sizeof(floating)
    with nogil:
        if floating is double:
            dk_mirror_upper_into_lower_f64(&K[0, 0], n, rows, cols)
        else:
            dk_mirror_upper_into_lower_f32(&K[0, 0], n, rows, cols)
