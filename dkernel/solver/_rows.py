"""Row providers: the contract through which the solver sees a kernel matrix.

A row provider is any object with

``n`` : int
    Number of training samples.
``rows(idx) -> ndarray of shape (len(idx), n)``
    Kernel values ``K[idx, :]`` (not ``Q``; the solver applies the labels).
``diag() -> ndarray of shape (n,)``
    The diagonal ``K[i, i]``.

and optionally

``dtype``
    The dtype of the values.
``submatrix(idx, start, stop) -> ndarray of shape (len(idx), stop - start)``
    ``K[idx, start:stop]``. The gradient on Dask workers calls it on each
    worker so that a provider reading from a chunked store touches only the
    columns that worker owns; without it, ``rows(idx)[:, start:stop]`` is used.
``column_slab(start, stop)``
    A picklable provider of the columns ``start:stop`` (answering
    ``submatrix`` for them), sent to a worker in place of the whole provider
    so that each worker receives only its share of an in-memory matrix.

This is the seam of ThunderSVM's ``KernelMatrix`` (``get_rows``, ``diag``):
in-memory arrays, on-the-fly kernels, zarr-backed Gram matrices and lazy
centered or normalized views all plug into the solver unchanged.
"""

import numpy as np

__all__ = [
    "check_provider",
    "provider_for_columns",
    "provider_submatrix",
    "raise_nonfinite_rows",
]


def check_provider(rows, n_y):
    """Check that ``rows`` keeps the contract for ``n_y`` samples; return its diagonal as float64.

    Raises
    ------
    TypeError
        If ``rows`` lacks ``n``, ``rows`` or ``diag``.
    ValueError
        If its size differs from ``n_y`` or its diagonal is malformed or not finite.
    """
    for member in ("n", "rows", "diag"):
        if not hasattr(rows, member):
            raise TypeError(
                f"rows must provide n, rows(idx) and diag(); {type(rows).__name__} has no {member!r}. "
                "Wrap an in-memory kernel matrix with dkernel.DenseGram(K)."
            )
    if rows.n != n_y:
        raise ValueError(f"The row provider has n={rows.n} samples but y has {n_y}.")
    diag = np.asarray(rows.diag(), dtype=np.float64)
    if diag.shape != (rows.n,):
        raise ValueError(f"rows.diag() must have shape ({rows.n},); got {diag.shape}.")
    if not np.isfinite(diag).all():
        first = int(np.flatnonzero(~np.isfinite(diag))[0])
        raise ValueError(
            f"The kernel diagonal contains NaN or infinite values (first at {first}); check the data "
            "and the kernel parameters."
        )
    return diag


def provider_submatrix(rows, idx, start, stop):
    """Return ``K[idx, start:stop]`` from any row provider, as float64.

    Whole rows go through ``rows(idx)`` so that a provider's row cache is used.

    Raises
    ------
    ValueError
        If the provider returns a block of another shape.
    """
    if (start, stop) == (0, rows.n):
        block = rows.rows(idx)
    elif hasattr(rows, "submatrix"):
        block = rows.submatrix(idx, start, stop)
    else:
        block = rows.rows(idx)[:, start:stop]
    block = np.asarray(block, dtype=np.float64)
    if block.shape != (len(idx), stop - start):
        raise ValueError(
            f"The row provider returned shape {block.shape} for {len(idx)} indices and the columns "
            f"{start}:{stop}; expected ({len(idx)}, {stop - start})."
        )
    return block


def provider_for_columns(rows, start, stop):
    """The provider a worker needs for the columns ``start:stop``: the column slab where there is one."""
    if hasattr(rows, "column_slab"):
        return rows.column_slab(start, stop)
    return rows


def raise_nonfinite_rows(idx, block):
    """Raise the error for non-finite kernel values, naming the first row of ``block`` (rows ``idx``) that has one.

    Where every row is finite (the gradient overflowed instead) the first of ``idx`` is named.
    """
    idx = np.asarray(idx)
    bad = ~np.isfinite(block).all(axis=1)
    first = int(idx[np.flatnonzero(bad)[0]]) if bad.any() else int(idx[0])
    raise ValueError(
        f"The kernel rows contain NaN or infinite values (first in row {first}); check the data "
        "and the kernel parameters (e.g. an overflowing polynomial degree)."
    )
