# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The rest of an on-demand Gram's rows, written around the rows already computed.

:func:`copy_computed_columns` copies a remaining sample's values at the
columns of the samples computed from their rows (the Gram's symmetry);
:func:`write_remaining_tile` writes a tile of the remaining samples' Gram
and its mirror. Both are gathers and scatters through index arrays over up
to ``n²`` values (``on_demand.h``; in NumPy, fancy indexing and its
temporary copies), run without the GIL by threads on bands of rows. Used through
:mod:`dkernel.gram._on_demand_compiled`.
"""

ctypedef fused gram_t:
    float
    double

ctypedef fused values_t:
    float
    double

__all__ = ["TILE", "copy_computed_columns", "write_remaining_tile"]

cdef extern from "on_demand.h" nogil:
    const int DK_ON_DEMAND_TILE
    void dk_copy_computed_columns_f64(double *M, Py_ssize_t rows, Py_ssize_t cols, const Py_ssize_t *computed,
                                      Py_ssize_t R, const Py_ssize_t *remaining, Py_ssize_t start, Py_ssize_t stop)
    void dk_copy_computed_columns_f32(float *M, Py_ssize_t rows, Py_ssize_t cols, const Py_ssize_t *computed,
                                      Py_ssize_t R, const Py_ssize_t *remaining, Py_ssize_t start, Py_ssize_t stop)
    void dk_write_remaining_tile_f64_f64(double *M, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t R,
                                         const Py_ssize_t *remaining, const double *P, Py_ssize_t p_rows,
                                         Py_ssize_t p_cols, Py_ssize_t m, Py_ssize_t p, Py_ssize_t a, Py_ssize_t c,
                                         int mirror)
    void dk_write_remaining_tile_f64_f32(double *M, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t R,
                                         const Py_ssize_t *remaining, const float *P, Py_ssize_t p_rows,
                                         Py_ssize_t p_cols, Py_ssize_t m, Py_ssize_t p, Py_ssize_t a, Py_ssize_t c,
                                         int mirror)
    void dk_write_remaining_tile_f32_f64(float *M, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t R,
                                         const Py_ssize_t *remaining, const double *P, Py_ssize_t p_rows,
                                         Py_ssize_t p_cols, Py_ssize_t m, Py_ssize_t p, Py_ssize_t a, Py_ssize_t c,
                                         int mirror)
    void dk_write_remaining_tile_f32_f32(float *M, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t R,
                                         const Py_ssize_t *remaining, const float *P, Py_ssize_t p_rows,
                                         Py_ssize_t p_cols, Py_ssize_t m, Py_ssize_t p, Py_ssize_t a, Py_ssize_t c,
                                         int mirror)

#: Rows and columns of a tile of the transposed read (a few tens of KB: stays in L1/L2).
TILE = DK_ON_DEMAND_TILE


cdef int _check_samples(const Py_ssize_t[::1] samples, Py_ssize_t start, Py_ssize_t stop, Py_ssize_t n) except -1:
    """Raise unless ``samples[start:stop]`` are columns of a Gram of ``n`` samples."""
    cdef Py_ssize_t a
    cdef bint inside = True
    if start < 0 or stop > samples.shape[0]:
        raise IndexError(f"samples {start} .. {stop - 1} of {samples.shape[0]}")
    with nogil:
        for a in range(start, stop):
            inside &= 0 <= samples[a] < n
    if not inside:
        raise IndexError(f"a sample index is out of bounds for a Gram of {n} samples")
    return 0


def copy_computed_columns(gram_t[:, :] M, const Py_ssize_t[::1] computed, const Py_ssize_t[::1] remaining,
                          Py_ssize_t start, Py_ssize_t stop):
    """``M[R + i, computed[k]] = M[k, remaining[i]]`` for ``i`` in ``start .. stop - 1``, ``R = computed.size``.

    ``M[k]`` is the row of sample ``computed[k]``; row ``R + i`` becomes
    that of ``remaining[i]``. The rows computed are read in tiles of
    :data:`TILE` × :data:`TILE`.
    """
    cdef Py_ssize_t R = computed.shape[0]
    if stop <= start or R == 0:
        return
    if R + stop > M.shape[0]:
        raise IndexError(f"row {R + stop - 1} is out of bounds for a matrix of {M.shape[0]} rows")
    _check_samples(computed, 0, R, M.shape[1])
    _check_samples(remaining, start, stop, M.shape[1])
    cdef Py_ssize_t rows = M.strides[0] // <Py_ssize_t>sizeof(gram_t), cols = M.strides[1] // <Py_ssize_t>sizeof(gram_t)
    with nogil:
        if gram_t is double:
            dk_copy_computed_columns_f64(&M[0, 0], rows, cols, &computed[0], R, &remaining[0], start, stop)
        else:
            dk_copy_computed_columns_f32(&M[0, 0], rows, cols, &computed[0], R, &remaining[0], start, stop)


def write_remaining_tile(gram_t[:, :] M, Py_ssize_t R, const Py_ssize_t[::1] remaining, const values_t[:, :] P,
                         Py_ssize_t a, Py_ssize_t c, bint mirror):
    """Kernel values ``P[i, j] = K[remaining[a + i], remaining[c + j]]`` written at ``M[R + a + i, remaining[c + j]]``.

    With ``mirror`` (a tile off the diagonal) also at ``M[R + c + j,
    remaining[a + i]]``, as short runs along each of those rows.
    """
    cdef Py_ssize_t m = P.shape[0], p = P.shape[1]
    if m == 0 or p == 0:
        return
    if R < 0 or R + max(a + m, c + p if mirror else 0) > M.shape[0]:
        raise IndexError(f"the tile's rows are out of bounds for a matrix of {M.shape[0]} rows")
    _check_samples(remaining, c, c + p, M.shape[1])
    if mirror:
        _check_samples(remaining, a, a + m, M.shape[1])
    cdef Py_ssize_t rows = M.strides[0] // <Py_ssize_t>sizeof(gram_t), cols = M.strides[1] // <Py_ssize_t>sizeof(gram_t)
    cdef Py_ssize_t p_rows = P.strides[0] // <Py_ssize_t>sizeof(values_t)
    cdef Py_ssize_t p_cols = P.strides[1] // <Py_ssize_t>sizeof(values_t)
    with nogil:
        if gram_t is double and values_t is double:
            dk_write_remaining_tile_f64_f64(&M[0, 0], rows, cols, R, &remaining[0], &P[0, 0], p_rows, p_cols, m, p,
                                            a, c, mirror)
        elif gram_t is double:
            dk_write_remaining_tile_f64_f32(&M[0, 0], rows, cols, R, &remaining[0], &P[0, 0], p_rows, p_cols, m, p,
                                            a, c, mirror)
        elif values_t is double:
            dk_write_remaining_tile_f32_f64(&M[0, 0], rows, cols, R, &remaining[0], &P[0, 0], p_rows, p_cols, m, p,
                                            a, c, mirror)
        else:
            dk_write_remaining_tile_f32_f32(&M[0, 0], rows, cols, R, &remaining[0], &P[0, 0], p_rows, p_cols, m, p,
                                            a, c, mirror)
