"""The Gram matrices given to :mod:`dkernel.alignment`, checked and converted as scikit-learn checks data.

At the public entry functions (:func:`gram_input`): a scipy sparse matrix, a
pandas DataFrame or nested lists become an ndarray (a Gram held in memory
anyway); complex values are refused (``"Complex data not supported"``, as
scikit-learn's ``check_array`` says), and so are non-numeric dtypes. The Gram
sources of the library (a GramMatrix, a lazy view, a ``KernelGram``, a dask
array) pass untouched: they are read block by block and never whole.

Before an eigendecomposition (:func:`check_finite_gram`, :func:`check_symmetric_gram`): NaN and infinities
named by their first row, and a matrix that is not symmetric beyond round-off refused with the largest
``|K - Kᵀ|`` and where it is (an eigensolver would read one triangle, or the mean of the two).

In the block tasks (:func:`real_block`, :func:`check_finite_block`): a
block's dtype and its NaN or infinities, found where the block is read. A
lazy result thus raises when it is computed, and nothing is computed early to
check it. Finite values are recognized by the block's own sums (a NaN or an
infinity makes ``‖K_IJ‖²_F`` non-finite), so a finite block costs no extra
pass; a non-finite one is searched for the row to name.
"""

import os

import numpy as np
import scipy.sparse as sp

from .._runtime.validation import check_finite, first_nonfinite, is_dask_array, nonfinite_in_rows
from ..exceptions import NonFiniteInputError

__all__ = ["check_finite_block", "check_finite_gram", "check_real_dtype", "check_symmetric_gram", "gram_input",
           "real_block", "symmetry_tolerance"]

#: What the public functions of :mod:`dkernel.alignment` take as a Gram matrix (the message of a wrong type).
ACCEPTED_GRAMS = ("the path of a Gram store, a square ndarray, nested lists, a pandas DataFrame or a scipy sparse matrix (converted to an "
                  "ndarray), a dask array, a GramMatrix, a lazy view of dkernel.views or a KernelGram")

#: What a Gram with NaN or infinities cannot be used for (the end of :class:`NonFiniteInputError`'s message).
ALIGNMENT_USE = "computing its alignment"

#: What a Gram with NaN or infinities cannot be decomposed for (:func:`check_finite_gram`).
EIGEN_USE = "computing its eigenvectors"

#: The relative tolerance of :func:`check_symmetric_gram` for a float64 Gram: ``|K_ij - K_ji| <= SYMMETRY_RTOL ·
#: max|K|``. A Gram of lower precision gets ``100 ε`` of its dtype (``1.2e-5`` for float32), its round-off.
SYMMETRY_RTOL = 1e-8


def _is_pandas(source):
    return type(source).__module__.partition(".")[0] == "pandas" and hasattr(source, "to_numpy")


def _is_gram_source(source):
    """A Gram-protocol object (``n``): left to the functions that read it."""
    return hasattr(source, "n")


def check_real_dtype(dtype, name="K"):
    """Refuse a complex dtype (``ValueError``, scikit-learn's words) or a non-numeric one (``TypeError``)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} has dtype {dtype}. A Gram matrix is real; pass its "
                         f"real part (np.real) if the imaginary part is round-off.")
    if dtype.kind not in "biuf":
        raise TypeError(f"{name} has dtype {dtype}; a Gram matrix must hold numbers (integers or floats).")


def gram_input(source, name="source"):
    """``source`` as the functions of :mod:`dkernel.alignment` read it.

    A Gram store's path is opened (:meth:`GramMatrix.open`); sparse matrices,
    DataFrames and nested lists become an ndarray; an ndarray or a dask array
    is checked for a real dtype; a Gram-protocol object is returned untouched. Anything else is a ``TypeError``
    naming what is accepted.
    """
    if isinstance(source, (str, os.PathLike)):  # a Gram store's path (or URL): read block by block
        from ..gram import GramMatrix

        return GramMatrix.open(source)
    if sp.issparse(source):
        source = source.toarray()
    elif _is_pandas(source):
        source = source.to_numpy()
    elif isinstance(source, (list, tuple)):
        source = np.asarray(source)
    if isinstance(source, np.ndarray) or is_dask_array(source):
        check_real_dtype(source.dtype, name)
        return source
    if _is_gram_source(source):
        return source
    raise TypeError(f"{name} must be a Gram matrix: {ACCEPTED_GRAMS}; got {type(source).__name__}.")


def real_block(K, name="K"):
    """A block of a Gram matrix as an ndarray, refused when complex (its imaginary part would be dropped)."""
    K = np.asarray(K)
    check_real_dtype(K.dtype, name)
    return K


def check_finite_block(K, first_row, name="K", what=ALIGNMENT_USE):
    """Raise :class:`NonFiniteInputError` naming the rows of the block ``K`` (rows ``first_row`` on) holding NaN
    or infinities; call it where the block's sums came out non-finite."""
    try:
        check_finite(np.asarray(K), name=name, what=what)
    except NonFiniteInputError as error:
        raise nonfinite_in_rows(error, first_row, first_row + np.shape(K)[0]) from None


def _count(number, what):
    return f"{number} {what}{'s' if number != 1 else ''}"


def check_finite_gram(values, name="the Gram matrix", what=EIGEN_USE):
    """Raise :class:`NonFiniteInputError` when ``values`` (a Gram, its diagonal, rows of it, a product with it)
    hold NaN or infinities, with their counts and the first row holding one."""
    values = np.asarray(values)
    bad = first_nonfinite(values)
    if bad is None:
        return
    n_nan, n_inf, first_row = bad
    counts = " and ".join(_count(number, kind) for number, kind in ((n_nan, "NaN value"), (n_inf, "infinite value"))
                          if number)
    raise NonFiniteInputError(f"{name} has NaN or infinite entries ({counts}, first in row {first_row}); remove or "
                              f"impute them before {what}.")


def symmetry_tolerance(K, dtype=None):
    """``(rtol, tol)``: the ``|K_ij - K_ji|`` allowed in the Gram ``K`` is ``tol = rtol · max|K|``, with ``rtol =
    SYMMETRY_RTOL``, or ``100 ε`` of ``dtype`` (``K``'s by default) when that is larger (float32: ``1.2e-5``)."""
    K = np.asarray(K)
    dtype = np.dtype(K.dtype if dtype is None else dtype)
    rtol = max(SYMMETRY_RTOL, 100 * float(np.finfo(dtype).eps)) if dtype.kind == "f" else SYMMETRY_RTOL
    scale = max(float(K.max()), -float(K.min())) if K.size else 0.0
    return rtol, rtol * scale


def check_symmetric_gram(K, name="the Gram matrix", index=None, dtype=None):
    """Refuse (``ValueError``) a finite square ``K`` with ``|K_ij - K_ji|`` above :func:`symmetry_tolerance`.

    The message gives the largest ``|K - Kᵀ|`` and its row and column, numbered by ``index`` (the rows of a
    larger Gram that ``K`` holds) when given. ``dtype``: the precision the Gram was given in, when ``K`` is a
    conversion of it.
    """
    K = np.asarray(K)
    rtol, tol = symmetry_tolerance(K, dtype)
    D = K.astype(np.float64) if K.dtype.kind in "biu" else K
    D = np.abs(D - D.T)
    i, j = np.unravel_index(int(np.argmax(D)), D.shape) if D.size else (0, 0)
    if not D.size or D[i, j] <= tol:
        return
    row, column = (int(i), int(j)) if index is None else (int(index[i]), int(index[j]))
    raise ValueError(f"{name} is not symmetric: the largest |K - Kᵀ| is {float(D[i, j]):.3g}, at row {row}, column "
                     f"{column} ({float(K[i, j]):.6g} against {float(K[j, i]):.6g}), above the tolerance {tol:.3g} "
                     f"({rtol:.3g} · max|K|). An eigendecomposition needs a symmetric Gram K(X, X); pass (K + K.T) / 2 "
                     f"if the difference is round-off.")
