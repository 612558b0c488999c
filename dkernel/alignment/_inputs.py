"""The Gram matrices given to :mod:`dkernel.alignment`, checked and converted as scikit-learn checks data.

At the public entry functions (:func:`gram_input`): a scipy sparse matrix, a
pandas DataFrame or nested lists become an ndarray (a Gram held in memory
anyway); complex values are refused (``"Complex data not supported"``, as
scikit-learn's ``check_array`` says), and so are non-numeric dtypes. The Gram
sources of the library (a GramMatrix, a lazy view, a ``KernelGram``, a dask
array) pass untouched: they are read block by block and never whole.

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

from .._runtime.validation import check_finite, is_dask_array, nonfinite_in_rows
from ..exceptions import NonFiniteInputError

__all__ = ["check_finite_block", "check_real_dtype", "gram_input", "real_block"]

#: What the public functions of :mod:`dkernel.alignment` take as a Gram matrix (the message of a wrong type).
ACCEPTED_GRAMS = ("the path of a Gram store, a square ndarray, nested lists, a pandas DataFrame or a scipy sparse matrix (converted to an "
                  "ndarray), a dask array, a GramMatrix, a lazy view of dkernel.views or a KernelGram")

#: What a Gram with NaN or infinities cannot be used for (the end of :class:`NonFiniteInputError`'s message).
ALIGNMENT_USE = "computing its alignment"


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
