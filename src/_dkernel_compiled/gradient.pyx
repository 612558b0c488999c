# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The gradient step ``G += y (K_B^T w)`` and the working set's block ``K[B][:, B]`` (``gradient.h``).

Each outer iteration reads the rows of the working set where they lie (float32
or float64) and sums them in one order for every partition, in this process
or on a Dask worker, so that both select the same working sets to the bit.
Compiled because NumPy would copy the rows first; without the GIL because
the binary problems of a one-vs-one fit are solved in parallel threads. Used
through :mod:`dkernel.solver._gradient_compiled`.
"""

from cython cimport floating

__all__ = ["add_gradient_step", "gather_block_into", "weighted_rows_step"]

cdef extern from "gradient.h" nogil:
    void dk_weighted_rows_step_f64(const double *M, Py_ssize_t rows, Py_ssize_t cols, const Py_ssize_t *positions,
                                   const double *weights, Py_ssize_t n_rows, const Py_ssize_t *columns,
                                   int all_columns, double *step, Py_ssize_t n_step)
    void dk_weighted_rows_step_f32(const float *M, Py_ssize_t rows, Py_ssize_t cols, const Py_ssize_t *positions,
                                   const double *weights, Py_ssize_t n_rows, const Py_ssize_t *columns,
                                   int all_columns, double *step, Py_ssize_t n_step)
    int dk_gather_block_f64(const double *K, Py_ssize_t k_rows, Py_ssize_t k_cols, const Py_ssize_t *rows,
                            Py_ssize_t n_rows, const Py_ssize_t *columns, Py_ssize_t n_columns, double *out)
    int dk_gather_block_f32(const float *K, Py_ssize_t k_rows, Py_ssize_t k_cols, const Py_ssize_t *rows,
                            Py_ssize_t n_rows, const Py_ssize_t *columns, Py_ssize_t n_columns, double *out)
    int dk_add_gradient_step(double *G, const double *y, Py_ssize_t n, const Py_ssize_t *active, Py_ssize_t n_active,
                             const double *step)


cdef Py_ssize_t _check_indices(const Py_ssize_t[::1] idx, Py_ssize_t bound, str name, bint empty_allowed=False) \
        except -1:
    """Raise unless every index in ``idx`` is in ``0 .. bound - 1`` (or ``-1``, an empty slot, if ``empty_allowed``)."""
    cdef Py_ssize_t a, smallest = 0, largest = -1
    with nogil:
        for a in range(idx.shape[0]):
            smallest = idx[a] if idx[a] < smallest else smallest
            largest = idx[a] if idx[a] > largest else largest
    if largest >= bound or smallest < (-1 if empty_allowed else 0):
        raise IndexError(f"{name} holds index {largest if largest >= bound else smallest}, out of bounds for {bound}")
    return 0


def weighted_rows_step(const floating[:, :] M, const Py_ssize_t[::1] positions, const double[::1] weights,
                       const Py_ssize_t[::1] columns, bint all_columns, double[::1] step):
    """``step[a] = sum_s weights[s] M[positions[s], columns[a]]`` in float64 over the rows of nonzero weight.

    Each row is read once, in place (float32 or float64), the rows in the
    order of ``positions`` (a position ``-1`` is an empty slot, skipped);
    ``all_columns``: ``columns`` is ``0 .. step.size - 1`` (not read) and the
    rows are read contiguously.
    """
    cdef Py_ssize_t n_rows = positions.shape[0], n_step = step.shape[0]
    if weights.shape[0] < n_rows:
        raise ValueError(f"{weights.shape[0]} weights for {n_rows} positions")
    if all_columns and n_step > M.shape[1] or not all_columns and columns.shape[0] < n_step:
        raise ValueError(f"{n_step} sums over the columns of a matrix of shape ({M.shape[0]}, {M.shape[1]})")
    _check_indices(positions, M.shape[0], "positions", empty_allowed=True)
    if not all_columns:
        _check_indices(columns[:n_step], M.shape[1], "columns")
    if n_step == 0:
        return
    if n_rows == 0 or M.shape[0] == 0 or M.shape[1] == 0:
        step[:] = 0.0
        return
    cdef Py_ssize_t rows = M.strides[0] // <Py_ssize_t>sizeof(floating)
    cdef Py_ssize_t cols = M.strides[1] // <Py_ssize_t>sizeof(floating)
    cdef const Py_ssize_t *column_ptr = &columns[0] if columns.shape[0] else NULL
    with nogil:
        if floating is double:
            dk_weighted_rows_step_f64(&M[0, 0], rows, cols, &positions[0], &weights[0], n_rows, column_ptr,
                                      all_columns, &step[0], n_step)
        else:
            dk_weighted_rows_step_f32(&M[0, 0], rows, cols, &positions[0], &weights[0], n_rows, column_ptr,
                                      all_columns, &step[0], n_step)


def add_gradient_step(double[::1] G, const double[::1] y, const Py_ssize_t[::1] active, const double[::1] step):
    """``G[active] += y[active] * step``; whether ``step`` is finite."""
    cdef Py_ssize_t n = active.shape[0]
    if step.shape[0] < n:
        raise ValueError(f"{step.shape[0]} steps for {n} active variables")
    if n == 0:
        return True
    cdef int finite
    cdef Py_ssize_t n_variables = min(G.shape[0], y.shape[0])
    with nogil:
        finite = dk_add_gradient_step(&G[0], &y[0], n_variables, &active[0], n, &step[0])
    if finite < 0:
        raise IndexError(f"an active variable is out of bounds for a problem of {n_variables} variables")
    return bool(finite)


def gather_block_into(const floating[:, :] K, const Py_ssize_t[::1] rows, const Py_ssize_t[::1] columns,
                      double[:, ::1] out):
    """``out = K[rows][:, columns]`` (``np.ix_``) in float64; whether every value is finite."""
    cdef Py_ssize_t n_rows = rows.shape[0], n_columns = columns.shape[0]
    if out.shape[0] != n_rows or out.shape[1] != n_columns:
        raise ValueError(f"out has shape ({out.shape[0]}, {out.shape[1]}) for {n_rows} rows and {n_columns} columns")
    if n_rows == 0 or n_columns == 0:
        return True
    _check_indices(rows, K.shape[0], "rows")
    _check_indices(columns, K.shape[1], "columns")
    cdef Py_ssize_t k_rows = K.strides[0] // <Py_ssize_t>sizeof(floating)
    cdef Py_ssize_t k_cols = K.strides[1] // <Py_ssize_t>sizeof(floating)
    cdef int finite
    with nogil:
        if floating is double:
            finite = dk_gather_block_f64(&K[0, 0], k_rows, k_cols, &rows[0], n_rows, &columns[0], n_columns,
                                         &out[0, 0])
        else:
            finite = dk_gather_block_f32(&K[0, 0], k_rows, k_cols, &rows[0], n_rows, &columns[0], n_columns,
                                         &out[0, 0])
    return bool(finite)
