"""The adapted Gram ``G = U diag(α) Uᵀ`` as a lazy low-rank view (Kandola eq. 2), never ``n × n`` unless asked.

It follows the Gram protocol of :mod:`dkernel.gram._sources` (``n``, ``rows``,
``diag``, ``block``, ``columns``, ``submatrix``, ``.dask``), so the alignment
functions, a precomputed-kernel SVM and ``to_zarr`` read it like any other
Gram: each block ``G[I, J] = (U_I ⊙ α) U_Jᵀ`` is computed from ``k`` columns
when read.
"""

import numpy as np

from ..gram._sources import DEFAULT_CHUNK
from ._measures import alignment_target
from .._runtime.validation import check_labels

__all__ = ["AdaptedGram"]


class AdaptedGram:
    """``G = Σ_i α_i u_i u_iᵀ`` over every point, held as ``U`` (``n × k``) and ``α`` (``k``).

    Parameters
    ----------
    vectors : ndarray of shape (n, k)
    weights : ndarray of shape (k,)
        ``α``.
    base : Gram source, optional
        The Gram that was adapted (its kernel and provenance go into ``to_zarr``).
    eigenvalues : ndarray of shape (k,), optional
    target, method : str, optional
        How the weights were obtained (recorded by ``to_zarr``).
    mass : float, optional
        The fraction of ``trace(K)`` the kept eigenvalues carry.
    """

    def __init__(self, vectors, weights, *, base=None, eigenvalues=None, target=None, method=None, mass=None,
                 chunk=None):
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float64)
        self.weights = np.asarray(weights, dtype=np.float64)
        if self.vectors.ndim != 2 or self.weights.shape != (self.vectors.shape[1],):
            raise ValueError(f"vectors of shape {self.vectors.shape} need one weight per column; got weights of "
                             f"shape {self.weights.shape}.")
        self.base = base
        self.eigenvalues = None if eigenvalues is None else np.asarray(eigenvalues, dtype=np.float64)
        self.target, self.method, self.mass = target, method, mass
        base_chunks = getattr(base, "chunks", None)
        c = chunk or (base_chunks[0] if isinstance(base_chunks, tuple) and isinstance(base_chunks[0], int)
                      else DEFAULT_CHUNK)
        c = min(int(c), self.n)
        self.chunks = (c, c)

    n = property(lambda self: self.vectors.shape[0])
    rank = property(lambda self: self.vectors.shape[1])
    shape = property(lambda self: (self.n, self.n))
    dtype = property(lambda self: np.dtype(np.float64))

    @property
    def kernel(self):
        return getattr(self.base, "kernel", None)

    @property
    def operators(self):
        """The operator chain of the base plus this adaptation (the provenance ``to_zarr`` records)."""
        from ..views._base import operator_chain

        chain = operator_chain(self.base) if self.base is not None and not isinstance(self.base, np.ndarray) else []
        return chain + [self._step()]

    def _step(self):
        return {"name": "alignment-adapted", "target": self.target, "method": self.method, "rank": self.rank,
                "mass": self.mass}

    def describe(self):
        """A JSON-able description of the view."""
        return {**self._step(), "n": self.n}

    def features(self, idx=None):
        """``U[idx] ⊙ sqrt(α)``: rows of a feature matrix ``F`` with ``G = F Fᵀ``."""
        U = self.vectors if idx is None else self.vectors[np.asarray(idx, dtype=np.intp)]
        return U * np.sqrt(self.weights)

    def _product(self, rows, cols):
        return (self.vectors[rows] * self.weights) @ self.vectors[cols].T

    def rows(self, idx):
        """``G[idx, :]`` (``len(idx) × n``)."""
        return self._product(np.asarray(idx, dtype=np.intp), slice(None))

    def submatrix(self, idx, start, stop):
        """``G[idx, start:stop]``."""
        return self._product(np.asarray(idx, dtype=np.intp), slice(start, stop))

    def principal_submatrix(self, indices):
        """``G[indices][:, indices]``."""
        indices = np.asarray(indices, dtype=np.intp)
        return self._product(indices, indices)

    def block(self, i, j):
        """Block ``(i, j)`` of the grid of ``chunks``."""
        rc, cc = self.chunks
        return self._product(slice(i * rc, min((i + 1) * rc, self.n)), slice(j * cc, min((j + 1) * cc, self.n)))

    def diag(self):
        """``G_ii = Σ_k α_k U_ik²``."""
        return (self.vectors**2) @ self.weights

    @property
    def dask(self):
        """The whole matrix as a lazy Dask array: one product of ``k`` columns per block."""
        import warnings

        import dask.array as da
        from dask.array.core import PerformanceWarning

        F = da.from_array(self.features(), chunks=(self.chunks[0], self.rank))
        with warnings.catch_warnings():  # the grid of blocks asked for, not a rechunk: Dask's warning is not ours
            warnings.filterwarnings("ignore", "Increasing number of chunks", PerformanceWarning)
            return F @ F.T

    def columns(self, indices):
        """Lazy ``G[:, indices]`` in row blocks."""
        import dask.array as da

        F = da.from_array(self.features(), chunks=(self.chunks[0], self.rank))
        return F @ self.features(indices).T

    def to_numpy(self, force=False):
        """The whole ``n × n`` matrix (refused above 2 GiB unless ``force``)."""
        nbytes = self.n * self.n * 8
        if nbytes > 2 * 2**30 and not force:
            raise MemoryError(f"G is {self.n}×{self.n} float64 ({nbytes / 1e9:.1f} GB); read rows(idx), use .dask "
                              f"or to_zarr(path), or pass force=True.")
        F = self.features()
        return F @ F.T

    def to_zarr(self, path, *, dtype=None, overwrite=False, storage_options=None):
        """Write ``G`` blockwise into a derived Gram store (its provenance names the adaptation) and open it.

        ``path`` is a folder or an fsspec URL (``storage_options`` as for :meth:`GramMatrix.compute`), as for the
        ``to_zarr`` of a view.
        """
        from ..gram import GramMatrix
        from ..gram._store import write_view_store

        return GramMatrix.open(write_view_store(self, path, operators=self.operators, dtype=dtype, overwrite=overwrite,
                                                storage_options=storage_options), storage_options=storage_options)

    def alignment(self, y, rows=None, target=None):
        """``A(G[I, I], ttᵀ)`` on the rows ``I`` (all by default) in ``O(|I| k²)``, without forming ``G[I, I]``.

        ``tᵀGt = Σ α_k ⟨u_k, t⟩²`` and ``‖G_II‖²_F = ‖(U_I ⊙ √α)ᵀ(U_I ⊙ √α)‖²_F``.
        """
        F = self.features(rows)
        t = alignment_target(check_labels(y, F.shape[0]), target or self.target or "classification")
        projections = F.T @ t
        frobenius = np.linalg.norm(F.T @ F)
        if frobenius == 0:
            raise ValueError("G is zero on these rows, so its alignment is undefined.")
        return float(projections @ projections / ((t @ t) * frobenius))

    def __repr__(self):
        return f"AdaptedGram(n={self.n}, rank={self.rank}, target={self.target!r}, method={self.method!r})"
