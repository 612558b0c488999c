"""Input checks shared by every module: finite values, shapes, dtypes.

The messages name the problem and the fix, e.g. "X has 3 NaN values (first in
row 17); remove or impute them before computing a Gram matrix."
"""

import sys

import numpy as np
import scipy.sparse as sp

from ..exceptions import EmptyInputError, FeatureMismatchError, InvalidLabelsError, NonFiniteInputError

__all__ = [
    "is_dask_array",
    "materialize",
    "check_data",
    "check_finite",
    "check_gram",
    "check_labels",
    "check_new_points",
    "check_same_features",
    "first_nonfinite",
    "nonfinite_in_rows",
    "random_generator",
]

FLOAT_DTYPES = (np.float64, np.float32)


def is_dask_array(x):
    """Whether ``x`` is a Dask array; Dask is not imported for it (no Dask array exists before ``dask.array`` is)."""
    module = sys.modules.get("dask.array")
    return module is not None and isinstance(x, getattr(module, "Array", ()))


def materialize(X):
    """``X``, a Dask array computed (training data must fit in memory; their Gram need not)."""
    if is_dask_array(X):
        return X.compute()
    return X


def first_nonfinite(values):
    """Return ``(n_nan, n_inf, first_row)`` for a dense 2-D array, or ``None`` if all finite."""
    finite = np.isfinite(values)
    if finite.all():
        return None
    bad_rows = np.flatnonzero(~finite.all(axis=1)) if values.ndim == 2 else np.flatnonzero(~finite)
    n_nan = int(np.isnan(values).sum())
    n_inf = int((~finite).sum()) - n_nan
    return n_nan, n_inf, int(bad_rows[0])


def _describe_nonfinite(name, n_nan, n_inf, first_row, what, rows=None):
    parts = []
    if n_nan:
        parts.append(f"{n_nan} NaN value{'s' if n_nan != 1 else ''}")
    if n_inf:
        parts.append(f"{n_inf} infinite value{'s' if n_inf != 1 else ''}")
    where = f" in its rows {rows[0]} to {rows[1] - 1}" if rows is not None else ""
    return (
        f"{name} has {' and '.join(parts)}{where} (first in row {first_row}); "
        f"remove or impute them before {what}."
    )


def _nonfinite_error(name, n_nan, n_inf, first_row, what, rows=None):
    """The :class:`NonFiniteInputError` of these counts, which keeps them (``error.nonfinite``) for
    :func:`nonfinite_in_rows`."""
    error = NonFiniteInputError(_describe_nonfinite(name, n_nan, n_inf, first_row, what, rows))
    error.nonfinite = (name, n_nan, n_inf, first_row, what)
    return error


def nonfinite_in_rows(error, start, stop):
    """``error``, raised by :func:`check_finite` on the rows ``start:stop`` of a larger matrix (a block of a Dask
    array), as the error of that matrix: its rows numbered in the whole, the counts said to be of those rows."""
    name, n_nan, n_inf, first_row, what = error.nonfinite
    return _nonfinite_error(name, n_nan, n_inf, start + first_row, what, rows=(start, stop))


def check_data(X, *, name="X", what="computing a Gram matrix", dtype=None, allow_sparse=True):
    """Validate a data matrix for kernel evaluation.

    Returns a C-contiguous float32/float64 ndarray or a CSR matrix with sorted
    indices. Integer and other inputs are converted to float64 (or ``dtype``).

    Raises
    ------
    EmptyInputError
        If ``X`` has no rows or no features.
    NonFiniteInputError
        If ``X`` contains NaN or infinite values; the message gives the counts
        and the first offending row.
    """
    if sp.issparse(X):
        if not allow_sparse:
            raise TypeError(f"{name} is a sparse matrix, but a dense array is required here.")
        X = sp.csr_matrix(X)
        target = dtype or (X.dtype if X.dtype in FLOAT_DTYPES else np.float64)
        X = X.astype(target, copy=False)
        X.sort_indices()
    else:
        X = np.asarray(X)
        if X.dtype == object:
            raise TypeError(f"{name} has dtype object; pass a numeric array.")
        target = dtype or (X.dtype if X.dtype in FLOAT_DTYPES else np.float64)
        X = np.ascontiguousarray(X, dtype=target)
    if X.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_samples, n_features); got {X.ndim}-D "
            f"with shape {X.shape}. Reshape a single sample with X.reshape(1, -1)."
        )
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise EmptyInputError(
            f"{name} is empty (shape {X.shape}); at least one sample and one feature are required."
        )
    check_finite(X, name=name, what=what)
    return X


def check_finite(X, *, name="X", what="computing a Gram matrix"):
    """Raise :class:`NonFiniteInputError` if a dense or CSR matrix holds NaN or infinite values.

    The message gives the number of NaN and infinite values and the first
    offending row.
    """
    if sp.issparse(X):
        data = X.data
        if np.isfinite(data).all():
            return
        bad = ~np.isfinite(data)
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        n_nan = int(np.isnan(data).sum())
        raise _nonfinite_error(name, n_nan, int(bad.sum()) - n_nan, int(rows[bad][0]), what)
    bad = first_nonfinite(np.asarray(X))
    if bad is not None:
        raise _nonfinite_error(name, *bad, what)


def check_gram(K):
    """A training Gram matrix from the user: square, finite and symmetric (the solver reads its rows as columns)."""
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(
            f"Precomputed matrix must be a square matrix. Input is a {' x '.join(map(str, K.shape))} matrix: "
            f"pass K(X_train, X_train) to fit and K(X_test, X_train) to predict."
        )
    check_finite(K, name="the precomputed Gram matrix", what="fitting")
    scale = max(1.0, float(np.abs(K).max())) if K.size else 1.0
    if not np.allclose(K, K.T, rtol=1e-10, atol=1e-10 * scale):
        raise ValueError(
            "the precomputed Gram matrix is not symmetric (max |K - Kᵀ| = "
            f"{float(np.abs(K - K.T).max()):.3g}); pass a kernel matrix K(X, X)."
        )
    return K


def check_new_points(X_new, X_train):
    """Validate points at which a kernel is evaluated against the training data ``X_train``."""
    X_new = check_data(X_new, name="X_new", what="evaluating the kernel on new points")
    check_same_features(X_new, X_train, "X_new", "X_train")
    return X_new


def check_labels(y, n=None, *, name="y"):
    """A 1-D array of finite labels, one per training point when ``n`` is given.

    Raises
    ------
    InvalidLabelsError
        If ``y`` is not 1-D, is empty, has a length other than ``n``, or holds
        NaN or infinite values.
    """
    y = np.asarray(y)
    if y.ndim == 2 and 1 in y.shape:
        y = y.ravel()
    if y.ndim != 1:
        raise InvalidLabelsError(f"{name} must be a 1-D array of labels; got shape {y.shape}.")
    if y.shape[0] == 0:
        raise InvalidLabelsError(f"{name} is empty; pass one label per training point.")
    if n is not None and y.shape[0] != n:
        raise InvalidLabelsError(
            f"{name} has {y.shape[0]} labels but the Gram matrix has {n} rows; pass one label "
            f"per training point, in the order of the rows."
        )
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        bad = np.flatnonzero(~np.isfinite(y))
        raise InvalidLabelsError(
            f"{name} has {len(bad)} NaN or infinite labels (first at index {bad[0]}); "
            f"remove those points or fix their labels."
        )
    return y


def random_generator(random_state):
    """A NumPy ``Generator`` from a seed, a ``Generator`` (returned as is) or a legacy ``RandomState``."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    return np.random.default_rng(random_state)


def check_same_features(X, Z, x_name="X", z_name="Z"):
    """Raise :class:`FeatureMismatchError` unless ``X`` and ``Z`` have the same number of columns."""
    if X.shape[1] != Z.shape[1]:
        raise FeatureMismatchError(
            f"{x_name} has {X.shape[1]} features but {z_name} has {Z.shape[1]}; a kernel compares "
            f"samples with the same number of features."
        )
