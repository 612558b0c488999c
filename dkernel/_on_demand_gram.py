"""A training Gram that starts as kernel rows on demand and becomes the whole matrix when that is cheaper.

A binary SVM whose support vectors are few reads few kernel rows: libsvm
computes just those, while a whole Gram costs ``O(n² d)`` however few rows
the solver reads. Which case holds is known only while solving, so
:class:`OnDemandGram` decides as it goes, by the rule of renting until the
rent reaches the price (the ski-rental rule): rows are computed on demand
(``K(X[idx], X)``, one BLAS-backed block per request) into one array of rows
that is never overwritten, held in the whole Gram's dtype (as libsvm's row
cache, float32 for a large Gram); an LRU row cache where they would not fit.
Once the rows computed reach :data:`PROMOTE_FRACTION` ``· n``, the whole
Gram is computed (its blocks on and above the diagonal: the price of about
``n / 2`` rows) and every later row is read from it. A problem with few
support vectors never pays for the whole Gram; one with many pays at most
``2 · PROMOTE_FRACTION`` (a quarter) more kernel work than the whole Gram
alone.

The rows of one request are split between the cores (a thread each, one
BLAS thread per thread): a single binary problem has nothing else to run in
parallel. The solver reads the rows where they lie
(:meth:`OnDemandGram.row_source`), in the array of rows computed, then in
the whole Gram: no copy in between.
"""

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._dense import dense_symmetric_gram, usable_cores
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

#: Rows evaluated at a time in float64 before they are stored in a float32 array of rows.
NARROWING_ROWS = 32

#: Rows of a request below which one thread evaluates them all (a thread's hand-off costs more).
MIN_ROWS_PER_THREAD = 8


class OnDemandGram:
    """The Gram ``K(X, X)`` as a row provider: rows on demand, then the whole matrix once they pass ``n / 8``.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
        Validated training data.
    kernel : Kernel
        The kernel, its data-dependent parameters resolved.
    dtype : numpy dtype, default=float64
        Dtype of the rows held: those computed on demand (evaluated in float64)
        and the whole Gram once computed.
    cache_bytes : int, default=1 GiB
        Row cache of the on-demand phase.
    progress : bool, default=False
        Show the bands of the whole Gram as they are computed.
    threads : int, default=None
        Threads evaluating the rows of one request (default: the usable cores).

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

    def __init__(self, X, kernel, *, dtype=np.float64, cache_bytes=MAX_CACHE_BYTES, progress=False, threads=None):
        self.X, self.kernel = X, kernel
        self.threads = max(1, int(threads or usable_cores()))
        self._pool = None
        self.whole_dtype = np.dtype(dtype)
        self.progress = progress
        n = X.shape[0]
        self.threshold = max(1, int(np.ceil(PROMOTE_FRACTION * n)))
        cache_bytes = min(int(cache_bytes), MAX_CACHE_BYTES)
        # Where the rows up to the threshold fit the cache, they are written once, in order, into one array
        # that is never overwritten: a request of rows just computed is served as a view of it, no copy.
        self._appended = None
        self._append_mode = isinstance(X, np.ndarray) and self.threshold * n * self.whole_dtype.itemsize <= cache_bytes
        if self._append_mode:
            self._appended = empty_on_huge_pages((self.threshold, n), self.whole_dtype)
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
        return self.whole_dtype if self.K is not None or self._append_mode else self._rows.dtype

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

    def row_source(self, idx):
        """``(M, positions)`` with ``M[positions] == K[idx, :]``: the rows of ``idx`` in place, missing ones computed.

        ``M`` is the array of rows computed on demand, or the whole Gram once
        computed (promoted as :meth:`rows` would). None where the rows are
        held in neither (a row cache: sparse data, or rows beyond ``cache_bytes``).
        """
        idx = np.asarray(idx, dtype=np.intp)
        with self._lock:
            if self.K is None:
                if not self._append_mode:
                    return None
                if self._compute_missing(idx) and self._count < self.threshold:
                    return self._appended, self._position[idx]
                self._promote()
        return self.K, idx

    def _appended_rows(self, idx):
        """``K[idx, :]`` from the appended rows, the missing ones computed first; None where they would not fit."""
        start = self._count
        if not self._compute_missing(idx):
            return None
        if self._count - start == idx.size and np.array_equal(self._position[idx], np.arange(start, self._count)):
            return self._appended[start:self._count]
        return self._appended[self._position[idx]]

    def _compute_missing(self, idx):
        """Append the rows of ``idx`` not computed yet; False where they would pass the threshold."""
        missing = idx[self._position[idx] < 0]
        if missing.size:
            if np.unique(missing).size < missing.size:
                missing = np.unique(missing)
            start, stop = self._count, self._count + missing.size
            if stop > self.threshold:
                return False
            self._evaluate_rows(missing, self._appended[start:stop])
            self._position[missing] = np.arange(start, stop)
            self._count = stop
        return True

    def _evaluate_rows(self, idx, out):
        """``out = K(X[idx], X)``, the rows split between :attr:`threads` threads (this one included)."""
        parts = min(self.threads, idx.size // MIN_ROWS_PER_THREAD)
        if parts <= 1:
            return self._evaluate_part(idx, out)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.threads - 1, thread_name_prefix="dkernel-rows")
        bounds = np.linspace(0, idx.size, parts + 1).astype(int)
        others = [self._pool.submit(self._evaluate_part, idx[a:b], out[a:b])
                  for a, b in zip(bounds[1:-1], bounds[2:])]
        self._evaluate_part(idx[: bounds[1]], out[: bounds[1]])
        for part in others:
            part.result()

    def _evaluate_part(self, idx, out):
        """``out = K(X[idx], X)``; into a narrower ``out`` (float32) through a float64 buffer of a few rows."""
        if out.dtype == self.X.dtype:
            return self._evaluate_into(idx, out)
        buffer = np.empty((min(NARROWING_ROWS, idx.size), self.n), dtype=self.X.dtype)
        for a in range(0, idx.size, NARROWING_ROWS):
            part = buffer[: min(NARROWING_ROWS, idx.size - a)]
            self._evaluate_into(idx[a : a + part.shape[0]], part)
            out[a : a + part.shape[0]] = part

    def _evaluate_into(self, idx, out):
        if not self.kernel.evaluate_into(self.X[idx], self.X, out):
            out[...] = self.kernel.block(self.X[idx], self.X)

    def _promote(self):
        """Compute the whole Gram and drop the row cache and the row threads."""
        self.K = dense_symmetric_gram(self.X, self.kernel, dtype=self.whole_dtype, progress=self.progress)
        self._rows._reset_cache()
        self._appended = self._position = None  # views served before stay valid: they hold the array
        self.close()

    def close(self):
        """Stop the threads that evaluate rows (started again if rows are asked for)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None

    def submatrix(self, idx, start, stop):
        """``K[idx, start:stop]``."""
        return self.rows(idx)[:, start:stop]

    def diag(self):
        return np.diagonal(self.K).copy() if self.K is not None else self._rows.diag()

    def __repr__(self):
        return f"OnDemandGram({self.kernel!r}, n={self.n}, held={self.held!r})"
