"""What every lazy view over a Gram shares: the reading interface, the operator chain, the diagonal scaling.

A view has the reading interface of :class:`dkernel.gram.GramMatrix` —
``n``, ``shape``, ``dtype``, ``chunks``, ``rows(idx)``, ``block(i, j)``,
``diag()``, ``.dask``, ``to_numpy()`` — and computes its entries from the
underlying Gram when they are read ("out-of-core row updates"): no corrected
copy of the matrix is ever made unless :meth:`_GramView.to_zarr` is asked for. The SVM
solver, which only calls ``rows(idx)``, ``diag()`` and ``n``, takes a view
unchanged. A view is a small spec (its base and ``n``-vectors), so it runs the
same on a Dask worker: the distributed solver sends each worker the view's
``column_slab`` and reads ``submatrix(idx, start, stop)`` there, each worker
correcting only the columns it owns. Views compose
(``CenteredGram(ShiftedGram(K, 1e4), ...)`` recenters shifted data, as in
Meilă's experiments).

Test points go through ``cross(X_new)``: the view's kernel between new points
and the training points, built from the base kernel exactly as the view is
built from the base Gram.

Two views scale the Gram by a vector on both sides, ``s_i K_ij s_j``
(:func:`scaled_block`): the normalization of Graf & Borer (eq. 2,
``s = 1/√diag K``) and the conformal transformation of Williams et al.
(eq. 5, ``s = D``).
"""

import copy

import numpy as np

from .._runtime.validation import check_data, check_new_points
from ..gram._format import matrix_form
from ..gram._sources import principal_submatrix, source_columns, source_dask

__all__ = ["operator_chain", "scaled_block"]

def _refuse_derived_store(base):
    operators = getattr(base, "operators", None)
    if operators:
        raise ValueError(
            f"kernel values for new points cannot be computed from the store {getattr(base, 'path', '')}: it holds "
            f"{matrix_form(operators)}, a derived matrix, and its kernel is that of the raw Gram. Build the view on "
            f"the raw Gram store (or on KernelGram(X, kernel)) instead."
        )



def _base_cross(base, X_new, X_train, columns=None):
    if hasattr(base, "cross"):
        return base.cross(X_new, X_train, columns=columns)
    _refuse_derived_store(base)
    kernel = getattr(base, "kernel", None)
    if kernel is None or X_train is None:
        raise ValueError(
            "kernel values for new points need the training data: pass X_train (the data the Gram was "
            "computed from), or build the view on KernelGram(X, kernel)."
        )
    X_train = check_data(X_train, name="X_train", allow_sparse=False)
    if X_train.shape[0] != base.n:
        raise ValueError(f"X_train has {X_train.shape[0]} rows but the Gram matrix has {base.n}.")
    X_new = check_new_points(X_new, X_train)
    Z = X_train if columns is None else X_train[np.asarray(columns, dtype=np.intp)]
    return kernel.block(X_new.astype(Z.dtype, copy=False), Z)



def _base_cross_diag(base, X_new, X_train):
    if hasattr(base, "cross_diag"):
        return base.cross_diag(X_new, X_train)
    _refuse_derived_store(base)
    kernel = getattr(base, "kernel", None)
    if kernel is None:
        raise ValueError("kernel values for new points need the kernel; build the view on KernelGram(X, kernel).")
    return kernel.diag(X_new)



def _base_describe(base):
    if hasattr(base, "describe"):
        return base.describe()
    desc = {"name": type(base).__name__, "n": int(base.n)}
    if getattr(base, "path", None):
        desc["path"] = base.path
    if getattr(base, "kernel", None) is not None:
        desc["kernel"] = base.kernel.to_dict()
    if getattr(base, "operators", None):
        desc["operators"] = list(base.operators)
    return desc



def operator_chain(source):
    """The operators applied to the raw Gram to give ``source``, innermost first (a list of dicts).

    Each step is ``{"name": "centered", "scheme", "n", "n_support",
    "weights", "h0"}`` (``weights`` is :func:`weights_fingerprint` of the
    origin), ``{"name": "shifted", "length", "n", "n_support", "weights",
    "h0"}`` or ``{"name": "normalized"}``. A raw Gram (a store computed by
    :meth:`~dkernel.gram.GramMatrix.compute`, a :class:`KernelGram`, a
    :class:`DenseGram`) has an empty chain; a store written by
    :meth:`to_zarr` keeps the chain of the view it was written from.
    """
    if isinstance(source, _GramView):
        return operator_chain(source.base) + [source._step()]
    return list(getattr(source, "operators", None) or [])



class _GramView:
    """A view whose entries are ``f(K_ij, v_i, v_j)`` for one per-point vector ``v``.

    Subclasses set ``self.base`` and ``self._vector`` and implement the static
    ``_apply(K, v_rows, v_cols, **self._params())``.
    """

    base = None
    _vector = None

    def _params(self):
        return {}

    def _correct(self, K, rows, cols):
        v = self._vector
        return self._apply(np.asarray(K, dtype=np.float64), v[rows], v[cols], **self._params())

    n = property(lambda self: self.base.n)
    shape = property(lambda self: (self.base.n, self.base.n))
    chunks = property(lambda self: tuple(self.base.chunks))
    dtype = property(lambda self: np.dtype(np.float64))

    @property
    def kernel(self):
        return getattr(self.base, "kernel", None)

    def rows(self, idx):
        """Rows ``[idx, :]`` of the view (``len(idx) × n`` float64)."""
        idx = np.asarray(idx, dtype=np.intp)
        return self._correct(self.base.rows(idx), idx, slice(None))

    def submatrix(self, idx, start, stop):
        """``[idx, start:stop]`` of the view from the base's columns ``start:stop`` alone.

        What a solver worker reads for the columns it owns: the base's
        ``submatrix`` (a store reads only those blocks, a kernel evaluates
        only ``K(X[idx], X[start:stop])``) corrected with ``v[idx]`` and
        ``v[start:stop]``.
        """
        idx = np.asarray(idx, dtype=np.intp)
        if hasattr(self.base, "submatrix"):
            K = self.base.submatrix(idx, start, stop)
        else:
            K = self.base.rows(idx)[:, start:stop]
        return self._correct(K, idx, slice(start, stop))

    def column_slab(self, start, stop):
        """The view restricted to the columns ``start:stop``: what one solver worker needs.

        The base's own column slab (an in-memory base ships only those
        columns) with the whole per-point vector (``n`` floats: the rows a
        worker corrects may be any); a base without one (a store, a kernel
        with its data) is already a small spec and the view is returned as is.
        """
        slab = getattr(self.base, "column_slab", None)
        if slab is None or (start, stop) == (0, self.n):
            return self
        base = slab(start, stop)
        if base is self.base:
            return self
        view = copy.copy(self)
        view.base = base
        return view

    def block(self, i, j):
        """Block ``(i, j)`` of the grid of ``chunks``."""
        rc, cc = self.chunks
        rows = slice(i * rc, min((i + 1) * rc, self.n))
        cols = slice(j * cc, min((j + 1) * cc, self.n))
        return self._correct(self.base.block(i, j), rows, cols)

    def principal_submatrix(self, indices):
        indices = np.asarray(indices, dtype=np.intp)
        return self._correct(principal_submatrix(self.base, indices), indices, indices)

    def _blockwise(self, K, v_rows, v_cols):
        import dask.array as da

        return da.blockwise(
            self._apply, "ij", K, "ij", v_rows, "i", v_cols, "j", dtype=np.float64, **self._params()
        )

    @property
    def dask(self):
        """Lazy Dask array of the view: one task per block of the base's ``.dask``."""
        return self._over(self.base.dask)

    def _over(self, K):
        """The view over ``K``, the base as a lazy Dask array: its vector chunked as ``K``'s rows and columns."""
        import dask.array as da

        v = self._vector
        return self._blockwise(K, da.from_array(v, chunks=(K.chunks[0],)), da.from_array(v, chunks=(K.chunks[1],)))

    def on_workers(self, client):
        """The view as a lazy Dask array over the base's inputs sent to ``client``'s workers once.

        The base's own ``on_workers`` (a kernel's data, an in-memory matrix's
        row blocks, scattered; a store is read by the workers themselves), so
        that each pass over the view (the products of an iterative
        eigensolver) carries only the view's ``n``-vector, not the base's data.
        """
        return self._over(source_dask(self.base, client))

    def columns(self, indices):
        """Lazy ``[:, indices]`` of the view in row blocks (no ``n × n`` array)."""
        import dask.array as da

        indices = np.asarray(indices, dtype=np.intp)
        K = source_columns(self.base, indices)
        v = self._vector
        return self._blockwise(
            K, da.from_array(v, chunks=(K.chunks[0],)), da.from_array(v[indices], chunks=(K.chunks[1],))
        )

    def to_numpy(self, force=False):
        """The whole view as one ndarray (small matrices only)."""
        nbytes = self.n * self.n * 8
        if nbytes > 2 * 2**30 and not force:
            raise MemoryError(
                f"the view is {self.n}×{self.n} float64 ({nbytes / 1e9:.1f} GB); read rows(idx), use .dask "
                f"or to_zarr(path), or pass force=True."
            )
        return np.asarray(self.dask.compute())

    def to_zarr(self, path, *, dtype=None, overwrite=False, storage_options=None):
        """Materialize the view blockwise into a new Gram store and open it.

        The store has the layout of :class:`dkernel.gram.GramMatrix` (so
        ``GramMatrix.open(path)`` reads it) with the chunks of the base. Its
        ``kernel`` and ``fingerprint`` attributes are those of the underlying
        raw Gram; its ``provenance`` attribute adds the operator chain
        (:func:`operator_chain`: each centering with the fingerprint of its
        origin weights, normalization, shift), and its ``operator``
        attribute describes the view (:meth:`describe`). Code that needs a raw
        Gram (``GramMatrix.compute(store=...)``, ``SVC(store=...)``) refuses
        the store.

        The store is written in a folder beside ``path`` and moved into place
        when complete (:mod:`dkernel._runtime.artifacts`), so an interrupted write
        leaves ``path`` as it was. ``path`` may be the store this view reads
        only with ``overwrite``: the view is read in full, then the new store
        replaces the old one, and the stored Gram at the root of the view
        (and so the view itself) can no longer be read.

        Parameters
        ----------
        path : str or path-like
        dtype : {"float32", "float64"}, default=None
            The base's dtype by default.
        overwrite : bool, default=False
            Replace a Gram store at ``path``. Anything else at ``path`` (a
            model, a folder of other files) is refused and left as is.
        storage_options : dict, default=None
            The filesystem's options for a URL (credentials, ``endpoint_url``);
            never written into the store.

        Returns
        -------
        GramMatrix

        Raises
        ------
        ArtifactPathError
            If ``path`` holds anything but a Gram store, or a Gram store
            without ``overwrite``; checked before anything is computed.
        """
        from ..gram import GramMatrix, write_view_store

        return GramMatrix.open(write_view_store(self, path, operators=operator_chain(self), dtype=dtype,
                                                overwrite=overwrite, storage_options=storage_options),
                               storage_options=storage_options)

    def __repr__(self):
        return f"{type(self).__name__}(n={self.n}, base={self.base!r})"



def scaled_block(K, s_rows, s_cols):
    """``s_i K_ij s_j`` of a block in float64: Graf & Borer's normalization (eq. 2, ``s = 1/√diag K``),
    Williams et al.'s conformal transformation (eq. 5, ``s = D``)."""
    out = np.asarray(K, dtype=np.float64) * s_rows[:, None]
    out *= s_cols[None, :]
    return out
