"""The training Gram held in memory: whole, computed in row bands, or rows on demand until the rest is cheaper.

Whole
-----
The solver reads scattered rows of K many times; one C-contiguous ``n × n`` array makes each read a plain fancy
index. Up to :data:`BAND_ROWS` samples the Gram is one BLAS product evaluated straight into the array, with no task
graph: a single band has nothing to run in parallel, and a graph costs more than a small Gram. Above, row bands of
the upper triangle are evaluated by a pool of threads (BLAS and the element-wise maps release the GIL) and written
in place, each band also writing its mirrored column strip below the diagonal: half the kernel work and no second
copy of K; BLAS runs one thread per band (:class:`~dkernel._runtime.threads.BlasThreads`). The single product is
left to BLAS's own threads: nothing of ours runs beside it, and finding the BLAS libraries to limit them costs more
than a small Gram (16 ms of a 50 ms first fit on iris, in a fresh process).

Memory
------
A whole Gram is written once, then read many times; its first write touches every page, and on a virtual machine
that costs more than evaluating a cheap kernel. Transparent huge pages make it worse there, not better: in a fresh
process (2 cores, the memory of an earlier process given back), writing 0.5 GB took 0.89–1.21 s on huge pages (what
NumPy asks for on its own large allocations) against 0.22 s on 4 KiB pages; a fit that writes its Gram or its rows
took a quarter less time with 4 KiB pages (USPS 10-class: 0.54–0.71 against 0.67–0.90 s; ``n = 20000``, 256
features: 4.4–5.2 against 6.7–7.4 s). So a Gram's array is a mapping of its own advised ``MADV_NOHUGEPAGE``
(:func:`empty_gram`), unmapped with the last view of its array: nothing is kept from one array to the next.

Rows on demand
--------------
A binary SVM whose support vectors are few reads few kernel rows: libsvm computes just those, while a whole Gram
costs ``O(n² d)`` however few rows the solver reads. Which case holds is known only while solving, so
:class:`OnDemandGram` decides as it goes. Rows are computed on demand (``K(X[idx], X)``, one block per request: a
BLAS product, or over few features the distances summed directly) into the first rows of one ``n × n`` array in the
whole Gram's dtype (as libsvm's row cache, float32 for a large Gram), in the order they are asked for; the array's
memory is touched only as rows are written. Where a kernel value is costly (:func:`promotion_threshold`), once the
rows computed would pass :data:`PROMOTE_FRACTION` ``· n``, the rest of the Gram is computed into the same array: the
remaining samples' values at the columns already computed, read from the rows computed (``K[u, s] = K[s, u]``), and
their own Gram, its tiles on and above the diagonal each written with its mirror
(:mod:`dkernel.gram._on_demand_compiled`).

Counted in rows of ``n`` kernel values, the whole Gram alone costs ``n / 2`` (its upper triangle), and ``R`` rows on
demand cost ``R``. The rest past ``n / 2`` rows is dearer than its values: the columns copied and the mirror written
are transposed scatters over fresh memory, and it cost half of computing every remaining row on demand
(:data:`REST_COST_FRACTION`). It pays only where most of the rows will be asked for, which the requests show as they
come: of the rows asked for lately, the fraction not computed yet (:meth:`OnDemandGram._rest_pays`). Near the end of
a solve, rows asked for are rows held; where new rows keep coming, many more are needed. On 2 cores, ``n = 40000``,
256 features: 18987 support vectors needed 20107 rows and the fit took 13.9 s on demand against 19.5–20.4 s with the
rest; 26092 support vectors needed 30932 rows into a bounded cache (22.5 s) and the rest saved a sixth (18.9 s).
Where a value is cheap, the rest's memory traffic costs more than the values it saves, and rows are only computed on
demand, into a bounded row cache as libsvm's (:func:`cached_rows`: a few hundred MB, more where a value costs more,
doubled while it computes again as many rows as it holds): past it, the rows asked for least recently make room.
Touching fresh memory costs more than computing a cheap row again; a rebuild of a shrunk gradient reads only the
free support vectors' rows (:mod:`dkernel.solver._shrinking`).

Where the rest may be computed, each kernel value is computed once, then only read: the gradient the solver builds
stays that of the matrix it reads, whatever the values' last bits (BLAS rounds a row differently in blocks of other
shapes: :func:`dkernel.kernels._blocks.dot_block`; a row computed again in a bounded cache may differ in the last bit, as in
libsvm's). A fit on them solves the same problem to rounding (dual coefficients within ``1.5e-8`` relative of a
whole-Gram fit's at ``tol=1e-10``, six data sets). So the rest copies the values the solver has read rather than
computing them again, and a row's value at its own sample is the kernel's diagonal, which the solver reads for
``Q_ii`` (:meth:`OnDemandGram.diag`).

The columns of one request are split between the cores (a thread each, one BLAS thread per thread, every row in
each: :meth:`OnDemandGram._evaluate_rows`): a single binary problem has nothing else to run in parallel. The solver
reads the rows where they lie (:meth:`OnDemandGram.row_source`): no copy in between, and the positions it holds stay
valid when the rest of the Gram is computed.
"""

import mmap
import os
import threading

import numpy as np
from sklearn.utils.extmath import row_norms

from .._runtime.progress import TextProgress
from .._runtime.threads import BlasThreads, SplitRange, run_bands, usable_cores

__all__ = ["MIN_CACHED_ROWS", "OWN_MAPPING_MIN_BYTES", "ON_DEMAND_MIN_SAMPLES", "PAIR_COST_IN_FEATURES",
           "PROMOTE_FRACTION", "PROMOTE_MIN_FEATURES", "REST_COST_FRACTION", "ROW_CACHE_BYTES", "ROW_CACHE_FEATURES",
           "OnDemandGram", "cached_rows", "dense_symmetric_gram", "empty_gram", "matching_pairs", "product_cost",
           "promotion_threshold"]

#: Rows per band; small enough that bands balance over the threads. A Gram of
#: at most this many samples is evaluated directly, without a task graph.
BAND_ROWS = 1024

#: Rows of the sub-bands of a band's diagonal block (:func:`_evaluate_band`).
DIAGONAL_ROWS = 256

#: Arrays of at least this many bytes are mappings of their own, without huge pages (:func:`empty_gram`).
OWN_MAPPING_MIN_BYTES = 2**23


def empty_gram(shape, dtype=np.float64):
    """An uninitialized C-contiguous array; from :data:`OWN_MAPPING_MIN_BYTES` a mapping of its own on 4 KiB pages.

    The memory of a large array is an anonymous private mapping advised
    ``MADV_NOHUGEPAGE`` (its first write costs a quarter of a huge page's on
    a virtual machine: see the module's docstring), unmapped when the array
    and every view of it are gone; smaller arrays, and every array where
    the platform has no such advice (macOS, Windows) or refuses the mapping,
    come from :func:`numpy.empty`.

    Examples
    --------
    >>> K = empty_gram((4096, 4096), np.float32)
    >>> K.shape, K.dtype, K.flags.c_contiguous, K.flags.writeable
    ((4096, 4096), dtype('float32'), True, True)
    """
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    advice = getattr(mmap, "MADV_NOHUGEPAGE", None)
    if nbytes < OWN_MAPPING_MIN_BYTES or advice is None or not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.empty(shape, dtype=dtype)
    try:
        mapping = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        mapping.madvise(advice)
    except (OSError, ValueError):
        return np.empty(shape, dtype=dtype)
    # The array holds the mapping (its buffer's owner): it is unmapped when the last view of the array is gone.
    return np.frombuffer(mapping, dtype=dtype, count=nbytes // dtype.itemsize).reshape(shape)


def _evaluate_whole(X, kernel, dtype):
    """``K(X, X)`` as one symmetric block, written straight into the array."""
    n = X.shape[0]
    K = empty_gram((n, n), dtype)
    kernel.evaluate_into(X, X, K, symmetric=True)  # exactly symmetric
    return K


def _evaluate_band(K, X, kernel, start, stop):
    """Write rows ``start:stop`` of the upper triangle and their mirror below the diagonal.

    The band's diagonal block is itself evaluated in sub-bands of
    :data:`DIAGONAL_ROWS` rows, so that of its lower triangle only the small
    diagonal blocks are computed (and overwritten by the mirror).
    """
    for a in range(start, stop, DIAGONAL_ROWS):
        b = min(a + DIAGONAL_ROWS, stop)
        kernel.evaluate_into(X[a:b], X[a:b], K[a:b, a:b], symmetric=True)  # exactly symmetric
        if b < stop:
            kernel.evaluate_mirrored_into(X[a:b], X[b:stop], K, a, b)
    if stop < K.shape[0]:
        kernel.evaluate_mirrored_into(X[start:stop], X[stop:], K, start, stop)


def dense_symmetric_gram(X, kernel, *, dtype=np.float64, band_rows=BAND_ROWS, num_workers=None, progress=False,
                         blas=None):
    """``K(X, X)`` as one C-contiguous ndarray, evaluating only the blocks on and above the diagonal.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
        Validated data (see :func:`dkernel._runtime.validation.check_data`).
    kernel : Kernel
        A kernel with its data-dependent parameters resolved.
    dtype : numpy dtype, default=float64
        Dtype of the Gram; the kernel is evaluated in the wider of it and the data's dtype.
    band_rows : int, default=1024
    num_workers : int, default=None
        Threads evaluating the bands (default: the number of cores).
    progress : bool, default=False
        Show the bands done on stderr (:class:`dkernel._runtime.progress.TextProgress`: an
        updating bar on a terminal, plain lines every few seconds otherwise).
    blas : BlasThreads, default=None
        The BLAS libraries of the computation this Gram is part of (a fit), limited to one thread per band
        above ``band_rows`` samples; a new one when None.

    Returns
    -------
    ndarray of shape (n, n)
        Exactly symmetric.
    """
    n = X.shape[0]
    # The kernel is evaluated in the wider of the two precisions (float64 data, float32 Gram: squared
    # distances without float32's cancellation), then stored in ``dtype``.
    X = X.astype(np.result_type(X.dtype, dtype), copy=False)
    if n <= band_rows:
        bar = TextProgress(1, "row bands of the Gram", enabled=progress)
        try:
            K = _evaluate_whole(X, kernel, dtype)
            bar.update(1)
        finally:
            bar.close()
        return K
    return _banded_gram(X, kernel, dtype, band_rows, num_workers, progress, blas or BlasThreads())


def _banded_gram(X, kernel, dtype, band_rows, num_workers, progress, blas):
    """The Gram of :func:`dense_symmetric_gram` from row bands computed in parallel by a pool of threads.

    The bands are independent and write disjoint parts of ``K``: a thread
    pool runs them without the graph, tokenizing and first-call imports of a
    Dask scheduler (half a second in a fresh process, more than the Gram of
    a few thousand samples). The widest bands (the first) start first.
    """
    n = X.shape[0]
    K = empty_gram((n, n), dtype)
    run_bands(lambda start: _evaluate_band(K, X, kernel, start, min(start + band_rows, n)),
              range(0, n, band_rows), num_workers or os.cpu_count() or 1, "row bands of the Gram", progress, blas)
    return K


# --------------------------------------------------------------------------- #
# Rows on demand
# --------------------------------------------------------------------------- #

#: Rows computed on demand, as a fraction of ``n``, past which the rest of the Gram is computed.
PROMOTE_FRACTION = 1 / 2

#: The rest of the Gram past :data:`PROMOTE_FRACTION` costs this fraction of computing every remaining row on
#: demand (2 cores, ``n = 40000``, 256 features: 4.8 s against 9.6 s for 20000 rows of 40000 values).
REST_COST_FRACTION = 1 / 2

#: The rows asked for since the rows computed reached this fraction of the threshold show how many more will come.
MISS_WINDOW_FROM = 0.8

#: The cost of one kernel value, in features of a dense inner product, from which the rest of the Gram
#: is computed at all (:func:`promotion_threshold`).
PROMOTE_MIN_FEATURES = 128

#: One product of two matching nonzeros in a sparse product costs about as much as this many features of
#: a dense (BLAS) one: 1.5 to 3 ns against 0.024 ns a feature, in an RBF block of 128 rows by 12000 (2 cores,
#: 64 to 4096 features, densities 1 to 30 %).
PAIR_COST_IN_FEATURES = 64

#: Samples from which a single binary problem starts with rows on demand: below, the whole
#: Gram costs less than deciding.
ON_DEMAND_MIN_SAMPLES = 2048

#: Bytes of kernel rows held by an on-demand Gram whose rest is never computed (:class:`OnDemandGram`), for each
#: :data:`ROW_CACHE_FEATURES` features a kernel value costs (:func:`cached_rows`).
ROW_CACHE_BYTES = 2**28
ROW_CACHE_FEATURES = 16

#: Rows an on-demand Gram with a bounded row cache holds at least, whatever :data:`ROW_CACHE_BYTES` allows.
MIN_CACHED_ROWS = 2048

#: Rows evaluated at a time in float64 before they are stored in a float32 array of rows (as many values, over
#: a thread's columns).
NARROWING_ROWS = 32

#: Rows of a request below which one thread evaluates them all (a thread's hand-off costs more).
MIN_ROWS_PER_THREAD = 8

#: Rows of a band of the rest of the Gram, and columns of its tiles (256 × 1024 float64 values: 2 MB).
REST_BAND_ROWS = 256
REST_TILE_COLUMNS = 1024


def matching_pairs(X):
    """The mean number of products of two nonzeros in one inner product ``<x_i, x_j>`` of sparse ``X``'s rows.

    Feature ``f``, nonzero in ``c_f`` of the ``n`` rows, is nonzero in both
    rows of a pair with probability ``(c_f / n)²``; the sum over the features
    is what a sparse product computes per value, whatever the density.
    """
    X = X if X.format == "csr" else X.tocsr()
    counts = np.bincount(X.indices, minlength=X.shape[1]).astype(np.float64)
    return float(counts @ counts) / max(1, X.shape[0]) ** 2


def product_cost(X):
    """The cost of one inner product of ``X``'s rows, in features of a dense product.

    ``d`` for dense data; for sparse data :data:`PAIR_COST_IN_FEATURES` times
    its :func:`matching_pairs` (bag-of-words data: a few; a few features
    nonzero in every row: more than ``d``, where BLAS on a dense copy is faster).
    The cost of a kernel value is that of its inner product, its map aside.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> product_cost(np.ones((5, 3)))
    3
    >>> product_cost(sp.csr_matrix(np.eye(4)))  # no two rows share a feature: 4 · (1/4)² pairs
    16.0
    """
    if isinstance(X, np.ndarray):
        return X.shape[1]
    return PAIR_COST_IN_FEATURES * matching_pairs(X)


def cached_rows(X, dtype):
    """Rows of ``K(X, X)`` in ``dtype`` a bounded row cache holds: :data:`ROW_CACHE_BYTES` of them for each
    :data:`ROW_CACHE_FEATURES` features a value costs (:func:`product_cost`, at least once), at least
    :data:`MIN_CACHED_ROWS`, at most ``n``.

    Memory is one cost (the first write to a page of a new process costs
    more than a cheap kernel value); rows dropped and asked for again are
    computed again, the other, growing with the features
    (:meth:`OnDemandGram._make_room` grows the cache where that repeats).
    """
    n = X.shape[0]
    budget = ROW_CACHE_BYTES * max(1.0, product_cost(X) / ROW_CACHE_FEATURES)
    return int(min(n, max(MIN_CACHED_ROWS, budget // (n * np.dtype(dtype).itemsize))))


def promotion_threshold(X):
    """The rows computed on demand past which the rest of the Gram may be computed: ``n / 2``, or ``n`` (never).

    The rest saves kernel values and pays memory traffic (every page of the
    ``n × n`` array touched, the columns computed copied). Where a value
    costs little, that traffic costs more than the values saved: on 2 cores,
    ``n = 40000`` with 64 features, 15.3 s with rows only on demand against
    18.4 s with the rest at ``n / 2``; ε-SVR at ``n = 12000`` with 10
    features, 1.7–2.1 s against 2.3–3.1 s. So the rest is considered only
    where a value costs :data:`PROMOTE_MIN_FEATURES` features or more
    (:func:`product_cost`), and computed where the requests show that most
    rows are still to come (:meth:`OnDemandGram._rest_pays`).
    """
    n = X.shape[0]
    if product_cost(X) < PROMOTE_MIN_FEATURES:
        return n
    return max(1, int(np.ceil(PROMOTE_FRACTION * n)))


class OnDemandGram:
    """The Gram ``K(X, X)`` as a row provider: rows on demand, the rest of the Gram once they would pass ``n / 2``
    where a kernel value is costly (:func:`promotion_threshold`) and most rows are still to come (:meth:`_rest_pays`).

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
        Validated training data.
    kernel : Kernel
        The kernel, its data-dependent parameters resolved.
    dtype : numpy dtype, default=float64
        Dtype of the Gram's values held (evaluated in float64).
    progress : bool, default=False
        Show the bands of the rest of the Gram as they are computed.
    threads : int, default=None
        Threads evaluating the rows of one request (default: the usable cores).

    Attributes
    ----------
    M : ndarray of shape (n, n)
        The rows held: sample ``i``'s row at ``M[position(i)]``, its columns in sample order; a mapping of which
        only the pages of the first :attr:`capacity` rows are ever written.
    capacity : int
        Rows :attr:`M` holds: ``n`` where the rest of the Gram may be computed, else a bounded row cache, the rows
        asked for least recently dropped to make room: :func:`cached_rows` at first, doubled each time as many
        rows as it holds were dropped and asked for again (:meth:`_make_room`).
    n_computed : int
        Kernel rows computed on demand.

    Examples
    --------
    >>> import numpy as np
    >>> from dkernel.kernels import RBFKernel
    >>> X = np.random.default_rng(0).normal(size=(64, 128))
    >>> gram = OnDemandGram(X, RBFKernel(gamma=0.01))
    >>> _ = gram.rows(np.arange(30))       # 30 rows: on demand
    >>> gram.held, gram.n_computed
    ('on-demand', 30)
    >>> _ = gram.rows(np.arange(30, 40))   # 40 rows > 64 / 2, all new: the rest of the Gram
    >>> gram.held, bool(np.allclose(gram.rows([35]), RBFKernel(gamma=0.01).block(X[35:36], X)))
    ('float64', True)
    """

    #: Rows come from memory, or are computed until that costs as much as the rest of the Gram.
    rows_in_memory = True

    def __init__(self, X, kernel, *, dtype=np.float64, progress=False, threads=None):
        self.X, self.kernel = X, kernel
        self._split = SplitRange(threads or usable_cores(), "dkernel-rows")
        self._column_parts = {}  # (a, b): the sparse samples a:b (:meth:`_columns`)
        self.whole_dtype = np.dtype(dtype)
        self.progress = progress
        n = X.shape[0]
        self.threshold = promotion_threshold(X)
        self.capacity = n if self.threshold < n else cached_rows(X, self.whole_dtype)
        self.M = empty_gram((n, n), self.whole_dtype)  # its pages written only up to the capacity, which may grow
        self._matrix = self.M  # a new view of M each time rows move in it (:meth:`_make_room`)
        self._position = np.full(n, -1, dtype=np.intp)
        self._asked = np.zeros(n, dtype=np.int64)  # the request that last asked for each row
        self._dropped, self.n_recomputed = np.zeros(n, dtype=bool), 0  # rows dropped; computed again since growth
        self._requests, self._rows_asked, self._window = 0, 0, None
        self.n_computed = 0
        self._sq_norms = self._diag = self._Xt = None  # Xᵀ: rows evaluated directly (:meth:`_evaluate_rows`)
        self.whole = False
        self._lock = threading.Lock()

    n = property(lambda self: self.X.shape[0])
    shape = property(lambda self: (self.X.shape[0], self.X.shape[0]))
    dtype = property(lambda self: self.whole_dtype)

    @property
    def held(self):
        """``"on-demand"`` until the rest of the Gram is computed, then its dtype's name (``"float32"`` ...)."""
        return self.whole_dtype.name if self.whole else "on-demand"

    def rows(self, idx):
        """``K[idx, :]``: rows just computed as a view of :attr:`M` (a copy where the row cache is bounded: its rows
        move), others copied from it."""
        positions = self.row_source(idx)[1]
        if self.capacity == self.n and positions.size and positions[-1] - positions[0] == positions.size - 1 and \
                np.array_equal(positions, np.arange(positions[0], positions[-1] + 1)):
            return self.M[positions[0] : positions[-1] + 1]
        return self.M[positions]

    def row_source(self, idx):
        """``(M, positions, None)`` with ``M[positions] == K[idx, :]``, the missing rows computed first (or the
        rest).

        The positions hold until the next request. With a bounded row cache
        (:attr:`capacity` below ``n``) a request may move the rows held in
        ``M``; it then returns a new view of ``M``, so that a caller holding
        positions from an earlier request knows to ask for them again.
        """
        idx = np.asarray(idx, dtype=np.intp)
        with self._lock:
            self._requests += 1
            self._rows_asked += idx.size
            self._asked[idx] = self._requests
            if not self.whole and not self._compute_missing(idx):
                self._compute_rest()
            return self._matrix, self._position[idx], None

    def _compute_missing(self, idx):
        """Compute the rows of ``idx`` not held yet into the next rows of :attr:`M`, room made for them first in a
        bounded row cache; False past the threshold."""
        missing = idx[self._position[idx] < 0]
        if missing.size:
            missing = self._without_repeats(missing)
            if self.n_computed + missing.size > self.capacity:
                self._make_room(missing.size)
            start, stop = self.n_computed, self.n_computed + missing.size
            if stop > self.threshold:
                if self._rest_pays(stop):
                    return False
                self.threshold = self.n  # rows on demand to the end
            self.n_recomputed += int(np.count_nonzero(self._dropped[missing]))
            self._evaluate_rows(missing, self.M[start:stop])
            self.M[np.arange(start, stop), missing] = self._diagonal()[missing]
            self._position[missing] = np.arange(start, stop)
            self.n_computed = stop
            if self._window is None and stop >= MISS_WINDOW_FROM * self.threshold:
                self._window = (self._rows_asked, stop)
        return True

    def _rest_pays(self, rows):
        """Whether the rest of the Gram costs less than the rows still to come, ``rows`` computed with this request.

        Of the rows asked for since the window opened (:data:`MISS_WINDOW_FROM`), a fraction ``f`` were new:
        requests spread over ``rows / (1 - f)`` rows in all. The rest pays where those pass ``t +
        REST_COST_FRACTION · (n - t)`` (``t`` the threshold); without a window (one request past it), it does.
        """
        if self._window is None:
            return True
        new = (rows - self._window[1]) / max(1, self._rows_asked - self._window[0])
        return new >= 1 or rows / (1 - new) >= self.threshold + REST_COST_FRACTION * (self.n - self.threshold)

    def _make_room(self, n_missing):
        """Drop the rows asked for least recently, so that ``n_missing`` new rows fit in :attr:`capacity`; or grow
        the capacity, where the cache keeps computing again the rows it drops.

        libsvm's kernel cache, in rows: the rows of the current request stay,
        and of the others the most recently asked for, up to half the
        capacity; the rows kept move to the first rows of :attr:`M`, in the
        order they were held (each row moves up or stays: no copy of them).

        Once as many rows as it holds were dropped and computed again, the
        solver cycles through more rows than it holds: the capacity doubles
        instead (up to ``n``: the whole Gram fits where this Gram is chosen).
        One fit in a fresh process, 2 cores, ε-SVR at ``n = 40000`` (10
        features): 27.8 s with 2048 rows held, 143499 computed; 19.4 s
        growing to 16384, 43489 computed, peak 1.65 GB.
        """
        if self.n_recomputed >= self.capacity and self.capacity < self.n:
            self.capacity = min(self.n, 2 * self.capacity)
            self.n_recomputed = 0
            if self.n_computed + n_missing <= self.capacity:
                return
        held = np.flatnonzero(self._position >= 0)
        asked_now = int(np.count_nonzero(self._asked[held] == self._requests))
        if asked_now + n_missing > self.capacity:
            raise ValueError(f"{asked_now + n_missing} distinct rows asked at once from an on-demand Gram that holds "
                             f"{self.capacity}")
        keep_count = max(asked_now, min(self.capacity // 2, self.capacity - n_missing))
        keep = held[np.argsort(-self._asked[held], kind="stable")[:keep_count]]
        keep = keep[np.argsort(self._position[keep])]
        for target, source in enumerate(self._position[keep]):
            if target != source:
                self.M[target] = self.M[source]
        self._position[held] = -1
        self._dropped[held] = True
        self._position[keep] = np.arange(keep.size)
        self._dropped[keep] = False
        self.n_computed = keep.size
        self._matrix = self.M[:]

    def _without_repeats(self, missing):
        """``missing`` (rows not held) with each sample once: a repeat is a position written twice (no sort)."""
        trial = np.arange(missing.size)
        self._position[missing] = trial
        last = self._position[missing] == trial  # the last occurrence of each sample
        self._position[missing] = -1
        return missing if last.all() else missing[last]

    def _evaluate_rows(self, idx, out):
        """``out = K(X[idx], X)``, its columns split between :attr:`threads` threads (this one included).

        Each thread evaluates every row asked for over its own columns: a BLAS product is faster the more rows
        it has, and the solver asks for few at a time (22 in the median request at ``n = 20000``, 256 features:
        14 rows by 20000 columns ran at 30 GFLOPS on one core, 28 by 10000 at 43; the rows' evaluation took
        1.16–1.22 s where it took 1.28–1.35 s split by rows). Over few features, no product: the kernel's
        direct evaluation (:meth:`~dkernel.kernels.RBFKernel.direct_columns`).
        """
        if self._sq_norms is None and isinstance(self.X, np.ndarray):  # once: every request's rows are over all of X
            self._sq_norms, self._Xt = row_norms(self.X, squared=True), self.kernel.direct_columns(self.X)
        X_idx = self.X[idx]
        evaluate = self._evaluate_columns if self._Xt is None else self._evaluate_direct
        self._split.run(lambda a, b: evaluate(X_idx, a, b, out), self.n, idx.size // MIN_ROWS_PER_THREAD)

    def _evaluate_direct(self, X_idx, a, b, out):
        """``out[:, a:b] = K(X_idx, X[a:b])`` from ``Xᵀ``'s columns ``a:b``, each value written once."""
        self.kernel.evaluate_direct_into(X_idx, self._Xt[:, a:b], out[:, a:b])

    def _evaluate_columns(self, X_idx, a, b, out):
        """``out[:, a:b] = K(X_idx, X[a:b])``, through a buffer of a few rows in the data's dtype (float64, narrowed
        to a float32 ``out``)."""
        Z, z_sq = self._columns(a, b), None if self._sq_norms is None else self._sq_norms[a:b]
        rows = X_idx.shape[0]
        if out.dtype == self.X.dtype and (a, b) == (0, self.n):
            return self.kernel.evaluate_into(X_idx, Z, out, z_sq_norms=z_sq)
        step = NARROWING_ROWS * self.n // (b - a)  # a buffer of NARROWING_ROWS whole rows' values
        buffer = np.empty((min(step, rows), b - a), dtype=self.X.dtype)
        for r in range(0, rows, step):
            part = buffer[: min(step, rows - r)]
            self.kernel.evaluate_into(X_idx[r : r + part.shape[0]], Z, part, z_sq_norms=z_sq)
            out[r : r + part.shape[0], a:b] = part

    def _columns(self, a, b):
        """The samples ``a:b``: a view of dense data; sparse rows sliced once per range."""
        if isinstance(self.X, np.ndarray) or (a, b) == (0, self.n):
            return self.X[a:b]
        Z = self._column_parts.get((a, b))
        if Z is None:
            Z = self._column_parts[a, b] = self.X[a:b]
        return Z

    def _compute_rest(self):
        """The rows of the samples not computed yet, after those computed, in bands of rows split between threads.

        Each band copies its values at the columns computed from the rows
        computed (the Gram's symmetry), then computes the remaining samples'
        Gram on and above its diagonal block, tile by tile, each tile also
        written at its mirror in the rows of later bands.
        """
        from ._on_demand_compiled import copy_computed_columns, write_remaining_tile

        computed = np.empty(self.n_computed, dtype=np.intp)
        held = np.flatnonzero(self._position >= 0)
        computed[self._position[held]] = held
        remaining = np.flatnonzero(self._position < 0)
        X_rest, R, m = self.X[remaining], computed.size, remaining.size

        def band(a):
            b = min(a + REST_BAND_ROWS, m)
            copy_computed_columns(self.M, computed, remaining, a, b)
            diagonal = np.asarray(self.kernel.block(X_rest[a:b], X_rest[a:b], symmetric=True))
            write_remaining_tile(self.M, R, remaining, diagonal, a, a, False)
            for c in range(b, m, REST_TILE_COLUMNS):
                tile = np.asarray(self.kernel.block(X_rest[a:b], X_rest[c : c + REST_TILE_COLUMNS]))
                write_remaining_tile(self.M, R, remaining, tile, a, c, True)

        run_bands(band, range(0, m, REST_BAND_ROWS), self.threads, "row bands of the rest of the Gram", self.progress)
        self.M[np.arange(R, self.n), remaining] = self._diagonal()[remaining]
        self._position[remaining] = np.arange(R, self.n)
        self.whole = True
        self.close()

    @property
    def threads(self):
        """The threads that evaluate rows (and may split the solver's work on them)."""
        return self._split.threads

    def close(self):
        """Stop the threads that evaluate rows (started again if rows are asked for)."""
        self._split.close()

    def submatrix(self, idx, start, stop):
        """``K[idx, start:stop]``."""
        return self.rows(idx)[:, start:stop]

    def diag(self):
        """``K(x_i, x_i)`` from the kernel (exactly 1 for the RBF kernel): the values at each row's own sample."""
        return self.kernel.diag(self.X)

    def _diagonal(self):
        """:meth:`diag` computed once, as written at each row's own sample."""
        if self._diag is None:
            self._diag = np.asarray(self.diag(), dtype=np.float64)
        return self._diag

    def __repr__(self):
        return f"OnDemandGram({self.kernel!r}, n={self.n}, held={self.held!r})"
