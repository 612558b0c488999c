"""A training Gram that starts as kernel rows on demand and becomes the whole matrix when that is cheaper.

A binary SVM whose support vectors are few reads few kernel rows: libsvm
computes just those, while a whole Gram costs ``O(n² d)`` however few rows
the solver reads. Which case holds is known only while solving, so
:class:`OnDemandGram` decides as it goes, by the rule of renting until the
rent reaches the price (the ski-rental rule): rows are computed on demand
(``K(X[idx], X)``, one BLAS-backed block per request, evaluated in place
into one array of rows that is never overwritten, so that the rows just
computed are served without a copy; an LRU row cache where they would not fit);
once the rows computed reach :data:`PROMOTE_FRACTION` ``· n``, the whole
Gram is computed (its blocks on and above the diagonal: the price of about
``n / 2`` rows) and every later row is read from it. A problem with few
support vectors never pays for the whole Gram; one with many pays at most
``2 · PROMOTE_FRACTION`` (a quarter) more kernel work than the whole Gram
alone.
"""

import threading

import numpy as np

from ._dense import dense_symmetric_gram
from ._huge_pages import empty_on_huge_pages
from ._kernel_gram import KernelGram

__all__ = ["ON_DEMAND_MIN_SAMPLES", "PROMOTE_FRACTION", "OnDemandGram"]

#: Rows computed on demand, as a fraction of ``n``, at which the whole Gram is computed instead.
PROMOTE_FRACTION = 1 / 8

#: Samples from which a single binary problem starts with rows on demand: below, the whole
#: Gram costs less than deciding.
ON_DEMAND_MIN_SAMPLES = 2048

#: Row cache of the on-demand phase at most (its rows are needed once more at most).
MAX_CACHE_BYTES = 2**30


class OnDemandGram:
    """The Gram ``K(X, X)`` as a row provider: rows on demand, then the whole matrix once they pass ``n / 8``.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
        Validated training data.
    kernel : Kernel
        The kernel, its data-dependent parameters resolved.
    dtype : numpy dtype, default=float64
        Dtype of the whole Gram once computed (float32 where only that fits the memory).
    cache_bytes : int, default=1 GiB
        Row cache of the on-demand phase.
    progress : bool, default=False
        Show the bands of the whole Gram as they are computed.

    Attributes
    ----------
    K : ndarray of shape (n, n) or None
        The whole Gram, once computed.
    n_computed : int
        Kernel rows computed on demand.

    Examples
    --------
    >>> import numpy as np
    >>> from dkernel.kernels import RBFKernel
    >>> X = np.random.default_rng(0).normal(size=(64, 3))
    >>> gram = OnDemandGram(X, RBFKernel(gamma=0.5))
    >>> _ = gram.rows(np.arange(4))        # 4 rows: still on demand
    >>> gram.held
    'on-demand'
    >>> _ = gram.rows(np.arange(4, 12))    # 12 rows >= 64 / 8: the whole Gram
    >>> gram.held, bool(np.allclose(gram.rows([3]), RBFKernel(gamma=0.5).block(X[3:4], X)))
    ('float64', True)
    """

    #: Rows come from memory, or are computed until that costs as much as the whole Gram.
    rows_in_memory = True

    def __init__(self, X, kernel, *, dtype=np.float64, cache_bytes=MAX_CACHE_BYTES, progress=False):
        self.X, self.kernel = X, kernel
        self.whole_dtype = np.dtype(dtype)
        self.progress = progress
        n = X.shape[0]
        self.threshold = max(1, int(np.ceil(PROMOTE_FRACTION * n)))
        cache_bytes = min(int(cache_bytes), MAX_CACHE_BYTES)
        # Where the rows up to the threshold fit the cache, they are written once, in order, into one array
        # that is never overwritten: a request of rows just computed is served as a view of it, no copy.
        self._appended = None
        self._append_mode = isinstance(X, np.ndarray) and self.threshold * n * 8 <= cache_bytes
        if self._append_mode:
            self._appended = empty_on_huge_pages((self.threshold, n), np.float64)
            self._position = np.full(n, -1, dtype=np.intp)
            self._count = 0
            cache_bytes = 0
        self._rows = KernelGram(X, kernel, cache_bytes=cache_bytes)
        self.K = None
        self._lock = threading.Lock()

    n = property(lambda self: self.X.shape[0])
    shape = property(lambda self: (self.X.shape[0], self.X.shape[0]))

    @property
    def dtype(self):
        return self.whole_dtype if self.K is not None else self._rows.dtype

    @property
    def n_computed(self):
        return self._count if self._append_mode else self._rows.n_computed

    @property
    def held(self):
        """``"on-demand"`` until the whole Gram is computed, then its dtype's name (``"float64"``, ``"float32"``)."""
        return "on-demand" if self.K is None else self.whole_dtype.name

    def rows(self, idx):
        """``K[idx, :]``: from the whole Gram once computed, else computed (or read from the row cache)."""
        idx = np.asarray(idx, dtype=np.intp)
        with self._lock:
            if self.K is None:
                block = self._appended_rows(idx) if self._append_mode else self._rows.rows(idx)
                if block is not None and self.n_computed < self.threshold:
                    return block
                self._promote()
        return self.K[idx]

    def _appended_rows(self, idx):
        """``K[idx, :]`` from the appended rows, the missing ones computed first; None where they would not fit."""
        missing = idx[self._position[idx] < 0]
        if missing.size:
            if np.unique(missing).size < missing.size:
                missing = np.unique(missing)
            start, stop = self._count, self._count + missing.size
            if stop > self.threshold:
                return None
            out = self._appended[start:stop]
            if not self.kernel.evaluate_into(self.X[missing], self.X, out):
                out[...] = self.kernel.block(self.X[missing], self.X)
            self._position[missing] = np.arange(start, stop)
            self._count = stop
            if missing.size == idx.size and np.array_equal(missing, idx):
                return out
        return self._appended[self._position[idx]]

    def _promote(self):
        """Compute the whole Gram and drop the row cache."""
        self.K = dense_symmetric_gram(self.X, self.kernel, dtype=self.whole_dtype, progress=self.progress)
        self._rows._reset_cache()
        self._appended = self._position = None  # views served before stay valid: they hold the array

    def submatrix(self, idx, start, stop):
        """``K[idx, start:stop]``."""
        return self.rows(idx)[:, start:stop]

    def diag(self):
        return np.diagonal(self.K).copy() if self.K is not None else self._rows.diag()

    def __repr__(self):
        return f"OnDemandGram({self.kernel!r}, n={self.n}, held={self.held!r})"
