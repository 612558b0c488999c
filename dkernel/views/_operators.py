"""Lazy views over a Gram matrix: centered (Meilă), shifted (Meilă §6), normalized (Graf & Borer).

A view has the reading interface of :class:`dkernel.gram.GramMatrix` —
``n``, ``shape``, ``dtype``, ``chunks``, ``rows(idx)``, ``block(i, j)``,
``diag()``, ``.dask``, ``to_numpy()`` — and computes its entries from the
underlying Gram when they are read ("out-of-core row updates"): no corrected
copy of the matrix is ever made unless :meth:`to_zarr` is asked for. The SVM
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

=================== ===================================================== ==========================
view                entries                                               paper
=================== ===================================================== ==========================
``CenteredGram``    ``K_ij - h_i - h_j + h0``, ``h = Kγ``, ``h0 = γᵀKγ``   Meilă eq. (14)
``ShiftedGram``     the same with ``a = |a| u``, ``u`` a random direction  Meilă §6
``NormalizedGram``  ``K_ij / sqrt(K_ii K_jj)``                             Graf & Borer eq. (2)
=================== ===================================================== ==========================

:class:`~dkernel.gram._sources.KernelGram` evaluates a kernel on the fly from ``X``
(nothing stored), :class:`~dkernel.gram._sources.DenseGram` wraps a small in-memory
matrix; both follow the Gram protocol (:mod:`dkernel.gram._sources`), so every view
works on a stored Gram, on a kernel with data, or on an ndarray. Graf &
Borer's threshold correction b' is in :mod:`dkernel.views`.

References
----------
.. [1] M. Meilă, "Data centering in feature space", AISTATS 2003.
.. [2] A. B. A. Graf and S. Borer, "Normalization in support vector machines",
   DAGM 2001.
"""

import copy
import math

import dask.array as da
import numpy as np

from ..gram._sources import as_gram, principal_submatrix, source_columns
from .._runtime.validation import check_data, check_new_points, random_generator
from ..centering._origins import Centering, InvalidWeightsError, origin_products
from ..gram import GramMatrix, matrix_form, origin_step, write_view_store

__all__ = ["CenteredGram", "NormalizedGram", "ShiftedGram", "operator_chain"]

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


# --------------------------------------------------------------------------- #
# Provenance: the operator chain of a view
# --------------------------------------------------------------------------- #


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


# --------------------------------------------------------------------------- #
# Views
# --------------------------------------------------------------------------- #


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
        return da.blockwise(
            self._apply, "ij", K, "ij", v_rows, "i", v_cols, "j", dtype=np.float64, **self._params()
        )

    @property
    def dask(self):
        """Lazy Dask array of the view: one task per block of the base's ``.dask``."""
        K = self.base.dask
        v = self._vector
        return self._blockwise(K, da.from_array(v, chunks=(K.chunks[0],)), da.from_array(v, chunks=(K.chunks[1],)))

    def columns(self, indices):
        """Lazy ``[:, indices]`` of the view in row blocks (no ``n × n`` array)."""
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

    def to_zarr(self, path, *, dtype=None, overwrite=False):
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

        Returns
        -------
        GramMatrix

        Raises
        ------
        ArtifactPathError
            If ``path`` holds anything but a Gram store, or a Gram store
            without ``overwrite``; checked before anything is computed.
        """
        return GramMatrix.open(write_view_store(self, path, operators=operator_chain(self), dtype=dtype,
                                                overwrite=overwrite))

    def __repr__(self):
        return f"{type(self).__name__}(n={self.n}, base={self.base!r})"


def _center_block(K, h_rows, h_cols, h0):
    # Meilă eq. (14), entrywise: K_a(i, j) = K_ij - h_i - h_j + h0.
    out = np.asarray(K, dtype=np.float64) - h_rows[:, None]
    out -= h_cols[None, :]
    out += h0
    return out


class CenteredGram(_GramView):
    """The Gram matrix of the data translated so that ``a`` is the origin (Meilă eq. 14).

    .. math::

        K_a = K - 1 h^T - h 1^T + h_0, \\qquad h = K\\gamma,\\; h_0 = \\gamma^T K \\gamma

    Entries are corrected when read; ``h`` is computed once at construction
    (:func:`dkernel.centering.origin_products`: only ``K[:, S]`` for a
    centering supported on a sample ``S``).

    Parameters
    ----------
    base : Gram source
        A :class:`~dkernel.gram.GramMatrix`, a :class:`KernelGram`, another
        view, or a square ndarray.
    centering : Centering
        The origin ``a = Σ γ_i φ(x_i)``, in the feature space of ``base``.
    h, h0 : optional
        Precomputed ``h = Kγ`` and ``h0 = γᵀKγ`` (skips the pass over ``K``).

    Attributes
    ----------
    h : ndarray of shape (n,)
        ``⟨a, x_i⟩``; Δb of an SVM trained on the view is ``(αy)ᵀh``
        (:func:`dkernel.centering.delta_b`).
    h0 : float
        ``⟨a, a⟩``.
    """

    def __init__(self, base, centering, *, h=None, h0=None):
        self.base = as_gram(base)
        if not isinstance(centering, Centering):
            raise TypeError(f"centering must be a Centering; got {type(centering).__name__}.")
        if centering.n != self.base.n:
            raise InvalidWeightsError(
                f"the centering is defined for n={centering.n} points but the Gram matrix has {self.base.n} "
                f"rows; build it from this matrix's labels (one label per row)."
            )
        self.centering = centering
        if h is None or h0 is None:
            h, h0 = origin_products(self.base, centering)
        self.h = np.asarray(h, dtype=np.float64)
        self.h0 = float(h0)
        self._vector = self.h

    _apply = staticmethod(_center_block)

    def _params(self):
        return {"h0": self.h0}

    def diag(self):
        """``K_ii - 2h_i + h0``."""
        return np.asarray(self.base.diag(), dtype=np.float64) - 2.0 * self.h + self.h0

    def test_products(self, K_test_support):
        """``⟨x, a⟩ = Σ_j γ_j K(x, x_j)`` from the kernel values of test points against the support of ``a``."""
        return np.asarray(K_test_support, dtype=np.float64) @ self.centering.weights

    def center_test(self, K_test, h_test=None):
        """``K_a(x, x_i) = K(x, x_i) - ⟨x, a⟩ - h_i + h0`` from base-kernel rows ``K_test`` (m × n).

        ``h_test`` (``⟨x, a⟩`` per test point) is computed from ``K_test`` when omitted.
        """
        K_test = np.asarray(K_test, dtype=np.float64)
        if K_test.ndim != 2 or K_test.shape[1] != self.n:
            raise ValueError(f"K_test must have shape (m, {self.n}); got {K_test.shape}.")
        if h_test is None:
            h_test = self.test_products(K_test[:, self.centering.support])
        return _center_block(K_test, np.asarray(h_test, dtype=np.float64), self.h, self.h0)

    def cross(self, X_new, X_train=None, columns=None):
        """``K_a(x, x_i)`` for new points ``x`` against the training points (``columns`` of them).

        ``X_train`` is needed only when the chain of views ends at a stored
        Gram (which does not keep its data).
        """
        support = self.centering.support
        h_test = self.test_products(_base_cross(self.base, X_new, X_train, columns=support))
        K = _base_cross(self.base, X_new, X_train, columns=columns)
        h = self.h if columns is None else self.h[np.asarray(columns, dtype=np.intp)]
        return _center_block(K, h_test, h, self.h0)

    def cross_diag(self, X_new, X_train=None):
        """``K_a(x, x) = K(x, x) - 2⟨x, a⟩ + h0``."""
        h_test = self.test_products(_base_cross(self.base, X_new, X_train, columns=self.centering.support))
        return np.asarray(_base_cross_diag(self.base, X_new, X_train), dtype=np.float64) - 2 * h_test + self.h0

    def _step(self):
        return origin_step("centered", self.centering, self.h0)

    def describe(self):
        return {
            "name": "centered",
            "centering": self.centering.to_dict(),
            "h0": self.h0,
            "base": _base_describe(self.base),
        }


class ShiftedGram(CenteredGram):
    """Data translated by ``|a|`` along a random feature-space direction (Meilă §6).

    The direction is ``u = Σ_i β_i φ(x_i) / sqrt(βᵀKβ)`` with ``β`` standard
    normal on the training points (or on ``n_support`` of them), and the origin
    moves to ``a = |a| u``: this is a :class:`CenteredGram` with
    ``γ = |a| β / sqrt(βᵀKβ)``, so ``h0 = |a|²``. ``cross(X_new)`` gives the
    consistent test kernel ``K_s(x, x_i)``.

    Parameters
    ----------
    base : Gram source
    length : float
        The shift ``|a| >= 0``.
    random_state : int, Generator or None
    n_support : int, optional
        Draw β on a random sample of this many points (only ``K[:, S]`` is read).
    """

    def __init__(self, base, length, *, random_state=None, n_support=None):
        base = as_gram(base)
        length = float(length)
        if not (math.isfinite(length) and length >= 0):
            raise ValueError(f"length must be a finite number >= 0; got {length!r}.")
        rng = random_generator(random_state)
        n = base.n
        if n_support is None:
            direction = Centering(n, rng.standard_normal(n), None, "shift")
        else:
            if not (1 <= int(n_support) <= n):
                raise ValueError(f"n_support must lie in [1, n={n}]; got {n_support!r}.")
            idx = np.sort(rng.choice(n, size=int(n_support), replace=False))
            direction = Centering(n, rng.standard_normal(len(idx)), idx, "shift")
        h_beta, norm_sq = origin_products(base, direction)
        if not norm_sq > 0:
            raise ValueError(
                "the random direction has zero norm in feature space (βᵀKβ = 0); the kernel is degenerate on "
                "these points."
            )
        scale = length / math.sqrt(norm_sq)
        self.length = length
        super().__init__(base, direction.scaled(scale, "shift"), h=h_beta * scale, h0=length**2)

    def _step(self):
        return origin_step("shifted", self.centering, self.h0, self.length)

    def describe(self):
        return {**super().describe(), "name": "shifted", "length": self.length}


def _normalize_block(K, s_rows, s_cols):
    # Graf & Borer eq. (2): K_ij / sqrt(K_ii K_jj), with s = 1/sqrt(diag).
    out = np.asarray(K, dtype=np.float64) * s_rows[:, None]
    out *= s_cols[None, :]
    return out


def _inv_sqrt(d):
    d = np.asarray(d, dtype=np.float64)
    s = np.zeros_like(d)
    positive = d > 0
    s[positive] = 1.0 / np.sqrt(d[positive])
    return s


def _positive_diagonal(diag):
    """The Gram's diagonal, refused where some ``K(x, x) <= 0``: eq. (2) divides by ``sqrt(K(x, x))``."""
    diag = np.asarray(diag, dtype=np.float64)
    bad = np.flatnonzero(~(diag > 0))
    if bad.size:
        shown = ", ".join(str(int(i)) for i in bad[:10]) + (", ..." if bad.size > 10 else "")
        raise ValueError(
            f"feature-space normalization K(x, z)/sqrt(K(x, x) K(z, z)) (Graf & Borer eq. 2) is undefined for "
            f"{bad.size} of the {diag.size} training samples: K(x, x) <= 0 at sample index {shown} (e.g. an "
            f"all-zero row under a linear kernel, which has no direction in feature space). Remove these "
            f"samples, or use a kernel with K(x, x) > 0 (e.g. 'poly' with coef0 > 0)."
        )
    return diag


class NormalizedGram(_GramView):
    """Feature-space normalization of any Gram (Graf & Borer eq. 2).

    .. math::

        \\tilde K_{ij} = \\frac{K_{ij}}{\\sqrt{K_{ii} K_{jj}}}

    Every point moves to the unit sphere in feature space. A training point
    with ``K_ii <= 0`` (an all-zero row under a linear kernel) has no
    direction there: the view refuses it with a ``ValueError`` naming its
    index. For test points, ``cross(X_new)`` gives
    ``K(x, x_i) / sqrt(K(x, x) K(x_i, x_i))`` (0 where ``K(x, x) = 0``, as in
    :class:`dkernel.kernels.NormalizedKernel`).

    Parameters
    ----------
    base : Gram source
    """

    def __init__(self, base):
        self.base = as_gram(base)
        self._base_diag = _positive_diagonal(self.base.diag())
        self._vector = _inv_sqrt(self._base_diag)

    _apply = staticmethod(_normalize_block)

    def diag(self):
        return (self._base_diag > 0).astype(np.float64)

    def cross(self, X_new, X_train=None, columns=None):
        K = _base_cross(self.base, X_new, X_train, columns=columns)
        s_test = _inv_sqrt(_base_cross_diag(self.base, X_new, X_train))
        s = self._vector if columns is None else self._vector[np.asarray(columns, dtype=np.intp)]
        return _normalize_block(K, s_test, s)

    def cross_diag(self, X_new, X_train=None):
        return (np.asarray(_base_cross_diag(self.base, X_new, X_train)) > 0).astype(np.float64)

    def _step(self):
        return {"name": "normalized"}

    def describe(self):
        return {"name": "normalized", "base": _base_describe(self.base)}
