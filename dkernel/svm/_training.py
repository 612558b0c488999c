"""The training Gram of :class:`~dkernel.svm.SVC` and the binary problems solved on it.

X → kernel → Gram: whole in memory (float64, or float32 when only that fits
the memory budget), in a zarr store named by the data and the kernel, or rows
computed on the fly. For each binary problem, the lazy views that change the
feature space seen by the solver (the principal submatrix of the problem's
samples; normalization, Graf & Borer eq. 2; centering, Meilă eq. 14), the
solver, and the intercept corrections that let prediction use the original
kernel: Δb (Meilă eq. 19) and Graf & Borer's b' (eq. 3).

A problem small enough for one working set (at most
:data:`SMALL_PROBLEM_SIZE` samples) is solved without the outer loop of
:mod:`dkernel.solver`: at ``n <= 512`` the block solver's working set is the
whole problem, and each outer iteration only re-runs the same SMO on it with
a looser inner tolerance. Here that SMO (Fan, Chen & Lin 2005, WSS 2,
libsvm's two-variable step, :func:`dkernel.solver._smo.smo_subproblem`) runs
once on ``Q = y yᵀ ∘ K`` until libsvm's gap ``m(α) − M(α) <= tol``, with
libsvm's cap of ``max(10⁷, 100 n)`` pair steps: the same stopping rule and
the same optimum, without the outer loop's per-iteration Python.
"""

import dataclasses
import hashlib
import json
import os
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._runtime import artifacts
from .._runtime.threads import BlasThreads
from ..gram._in_memory import dense_symmetric_gram
from ..gram._in_memory import ON_DEMAND_MIN_SAMPLES, OnDemandGram, product_cost
from ..gram._sources import KernelGram, chain_root, held_in_process, row_provider, subset_gram
from ..centering._origins import Centering, delta_b
from ..views._normalized import graf_intercept

#: Fraction of the available memory that a whole in-memory training Gram may
#: take when ``cache_size`` is not given; above it, kernel rows are computed on
#: the fly with a row cache.
GRAM_MEMORY_FRACTION = 0.5

#: Row cache of a Gram computed on the fly when ``cache_size`` is not given.
DEFAULT_ROW_CACHE_BYTES = 2**30

#: A whole in-memory Gram of at most this many bytes (float64) is held in float64
#: without asking how much memory is available (a question that costs more than a
#: small fit); a larger one is held in float32.
SMALL_GRAM_BYTES = 2**24

#: Sparse training data whose dense copy takes at most this many bytes are made dense for the Gram.
DENSE_COPY_BYTES = 2**24

#: The most of the available memory a dense copy of sparse training data may take.
DENSE_COPY_MEMORY_FRACTION = 1 / 8


def kernel_input(X):
    """``X`` as the Gram is computed from it: sparse data made dense where BLAS evaluates the Gram faster.

    A sparse ``X`` is made dense when its dense copy takes at most
    :data:`DENSE_COPY_BYTES`, or when its sparse product costs as much as
    ``d`` features of a dense one or more
    (:func:`~dkernel.gram._in_memory.product_cost`: a few features nonzero
    in every row, as in tabular data with some sparse columns) and the copy
    takes at most
    :data:`DENSE_COPY_MEMORY_FRACTION` of the available memory. Bag-of-words
    data (tens of thousands of features, few in common) stay sparse.

    The kernel's inner products then come from the same BLAS calls as for
    the same data given dense, to the last bit: a sparse fit and a dense fit
    of the same problem follow the same solver path and give the same model
    (as libsvm's two kernels do). Otherwise the sparse product and BLAS sum
    in different orders; on a problem whose optimum is not unique (duplicate
    samples, a kernel of low rank) the solver may then stop at another of
    its optimal points, within ``tol``.
    """
    import scipy.sparse as sp

    if not sp.issparse(X):
        return X
    dense_bytes = X.shape[0] * X.shape[1] * 8
    if dense_bytes <= DENSE_COPY_BYTES:
        return X.toarray()
    if product_cost(X) >= X.shape[1]:
        import psutil

        if dense_bytes <= DENSE_COPY_MEMORY_FRACTION * psutil.virtual_memory().available:
            return X.toarray()
    return X


def gram_memory_budget(cache_size_mb):
    """Bytes allowed for a whole in-memory Gram: ``cache_size`` MB, or half the available memory."""
    if cache_size_mb is not None:
        return cache_size_mb * 2**20
    import psutil

    return GRAM_MEMORY_FRACTION * psutil.virtual_memory().available


def solver_precision(n, single_precision=True):
    """The precision of the kernel values the solver reads for ``n`` samples, wherever they are held.

    float64 for a Gram of at most :data:`SMALL_GRAM_BYTES` in float64 or
    without ``single_precision`` (a centered Gram); float32 above, as
    libsvm's kernel cache. An in-memory Gram and a store written for a fit
    follow it alike, so that a fit from a store gives the model of a fit in
    memory.
    """
    return np.dtype(np.float64 if n * n * 8 <= SMALL_GRAM_BYTES or not single_precision else np.float32)


def store_path(store, X, kernel, dtype=np.float64, storage_options=None):
    """The Gram store of ``K(X, X)`` that ``store`` designates.

    ``store`` itself when it is a zarr store (a Gram written by ``dkernel
    gram`` or :meth:`GramMatrix.compute`: used when it holds this Gram,
    refused otherwise); else the subfolder ``gram-<fingerprint>.zarr`` of
    the folder ``store``, named by a digest of the data, their dtype, the
    resolved kernel and the Gram's ``dtype`` (:func:`solver_precision`), so
    that each training set (a cross-validation fold) has its own store and
    fitting the same data again reuses it. An fsspec URL (``s3://...``,
    :mod:`dkernel.gram._remote`) is read the same way: a store itself when
    it holds a committed manifest, else a prefix of stores.
    """
    from ..gram import data_fingerprint
    from .._runtime.object_store import is_url
    from ..gram._remote import has_manifest

    if is_url(store):
        path = store.rstrip("/")
        if has_manifest(path, storage_options):
            return path
    else:
        path = os.path.abspath(os.fspath(store))
        if os.path.exists(os.path.join(path, "zarr.json")):
            return path
    key = {"X": data_fingerprint(X), "kernel": kernel.to_dict()}
    if np.dtype(dtype) != np.float64:  # float64 stores keep the names they had before the dtype was part of it
        key["dtype"] = np.dtype(dtype).name
    key = json.dumps(key, sort_keys=True)
    name = f"gram-{hashlib.sha256(key.encode()).hexdigest()[:16]}.zarr"
    return f"{path}/{name}" if is_url(path) else os.path.join(path, name)


def estimator_gram(estimator, X, kernel, client, blas, *, on_demand=False):
    """The Gram source of an estimator's training data (:func:`training_gram` with its ``store``, ``cache_size``,
    ``storage_options``, ``verbose`` and ``centering``); records ``gram_dtype_`` and, with a store, ``store_path_``.
    A precomputed Gram (``_gram_given``) is returned as given."""
    if estimator._gram_given:
        estimator.gram_dtype_ = "precomputed"
        return X
    path = None
    if estimator.store is not None:
        dtype = solver_precision(X.shape[0], estimator.centering is None)
        path = estimator.store_path_ = store_path(estimator.store, X, kernel, dtype, estimator.storage_options)
    gram, estimator.gram_dtype_ = training_gram(
        X, kernel, client, store_path=path, cache_size=estimator.cache_size,
        storage_options=estimator.storage_options, progress=bool(estimator.verbose), on_demand=on_demand,
        single_precision=estimator.centering is None, blas=blas)
    return gram


def training_gram(X, kernel, client, *, store_path=None, cache_size=None, progress=False, on_demand=False,
                  single_precision=True, blas=None, storage_options=None):
    """The Gram source of the training data, before views, and how it is held.

    Returns ``(gram, held)``, ``held`` being ``"store"`` (zarr at
    ``store_path``), ``"float64"`` (whole, in memory: a Gram of at most
    :data:`SMALL_GRAM_BYTES` in float64) or ``"float32"`` (whole, in memory: a
    larger one that fits :func:`gram_memory_budget`, in the precision of
    libsvm's kernel cache; the solver's gradient stays float64; without
    ``single_precision`` float64, float32 only where that alone fits: a
    centered Gram (Meilă eq. 14) subtracts means of K, which would amplify
    float32's rounding), both only without a client, ``"on-demand"``
    (with ``on_demand``, for one binary problem of at least
    :data:`~dkernel.gram._in_memory.ON_DEMAND_MIN_SAMPLES` samples whose whole
    Gram fits: rows computed as the solver asks, the rest of the Gram once
    they would pass ``n / 2`` where a value is costly and the rows asked for lately show most rows still to
    come, :class:`~dkernel.gram._in_memory.OnDemandGram`) or
    ``"on-the-fly"`` (rows computed as needed, with a row cache).
    """
    if store_path is not None:
        from ..exceptions import StoreMismatchError
        from ..gram import GramMatrix
        from ..gram._store import kept_store_error

        chunk, dtype = stored_layout(store_path, storage_options) or (None, solver_precision(X.shape[0],
                                                                                           single_precision))
        try:
            gram = GramMatrix.compute(X, kernel=kernel, store=store_path, chunk=chunk, dtype=dtype, client=client,
                                      progress=progress, storage_options=storage_options)
        except StoreMismatchError as exc:  # a fit never replaces a store: its own advice, not "pass overwrite"
            raise kept_store_error(exc) from None
        _warn_repaired(gram, store_path)
        return gram, "store"
    X = kernel_input(X)
    n = X.shape[0]
    # A large Gram in float32: the solver's row reads and gradient updates are memory-bound, and half
    # the bytes take about half the time (as libsvm, whose kernel cache is single precision).
    # Otherwise float64, or float32 where only that fits.
    small = n * n * 8 <= SMALL_GRAM_BYTES
    dtypes = (np.float64,) if small else (np.float32,) if single_precision else (np.float64, np.float32)
    budget = SMALL_GRAM_BYTES if small and cache_size is None else gram_memory_budget(cache_size)
    for dtype in map(np.dtype, dtypes if client is None else ()):
        if n * n * dtype.itemsize <= budget:
            if on_demand and n >= ON_DEMAND_MIN_SAMPLES:
                return OnDemandGram(X, kernel, dtype=dtype, progress=progress), "on-demand"
            return dense_symmetric_gram(X, kernel, dtype=dtype, progress=progress, blas=blas), dtype.name
    # On a cluster without a store, each worker computes the kernel columns of its own
    # row range from X (shipped once), so no Gram matrix travels over the network.
    return KernelGram(X, kernel, cache_bytes=row_cache_bytes(cache_size)), "on-the-fly"


def _warn_repaired(gram, path):
    """Say that the store a fit reads had damaged blocks, computed again before the fit read them."""
    repaired = gram.blocks_repaired
    if repaired:
        from ..exceptions import RepairedStoreWarning

        shown = ", ".join(map(str, repaired[:8])) + (", ..." if len(repaired) > 8 else "")
        warnings.warn(f"the Gram store {path} had {len(repaired)} damaged block(s) ({shown}): they did not match "
                      f"their checksums, and were computed again before this fit read them. Check the disk or whatever "
                      f"else writes into the store.", RepairedStoreWarning, stacklevel=4)


def stored_layout(path, storage_options=None):
    """``(chunk, dtype)`` of the Gram store at ``path``, None where there is none (or none that opens).

    A fit reads a store that is there (written by ``dkernel gram`` or :meth:`GramMatrix.compute`, with any
    ``chunk`` and ``dtype``) in its own blocks and precision: only its data and kernel must be the fit's.
    """
    from ..exceptions import CorruptStoreError, StoreMismatchError
    from ..gram import GramMatrix

    try:
        with GramMatrix.open(path, storage_options=storage_options) as stored:
            return int(stored.chunks[0]), np.dtype(stored.dtype)
    except (FileNotFoundError, StoreMismatchError, CorruptStoreError):
        return None


def row_cache_bytes(cache_size):
    """The row cache of an on-the-fly Gram: ``cache_size`` MB, or :data:`DEFAULT_ROW_CACHE_BYTES`."""
    return DEFAULT_ROW_CACHE_BYTES if cache_size is None else int(cache_size * 2**20)


def solver_client(rows, client):
    """The client to solve ``rows`` on: ``client``, or None with a :class:`UserWarning` when the workers cannot read it.

    Every view and subset is a small spec the workers rebuild; the raw Gram
    under them must travel too (a zarr store as its path, a
    :class:`KernelGram` with its data, an in-memory matrix as column slabs).
    A Gram whose blocks are held by the cluster's own futures cannot.
    """
    if client is None:
        return None
    root = chain_root(rows)
    if getattr(root, "held_by_cluster", False):
        warnings.warn(
            f"the solver runs in this process, not on the Dask workers: the blocks of {root!r} are held in the "
            f"cluster's memory and cannot be sent to a worker. Store it (GramMatrix.compute(..., store=path)) or "
            f"hold it in memory (gram.in_memory()) to solve on the workers.",
            UserWarning, stacklevel=3,
        )
        return None
    return client


def centering_for(scheme, n_sample, y_pm, rng, labels=None):
    """The origin of one binary problem: ``None``, an explicit :class:`Centering`, or ``scheme`` on its labels.

    With ``n_sample``, the origin is represented by a sample of that many
    points (Meilă §5) of this problem, drawn with a seed taken from ``rng``.
    A ``n_sample`` larger than the problem raises
    :class:`~dkernel.centering._origins.SampleSizeError` naming the problem:
    by its classes when ``labels`` (the class labels of its samples, in the
    order of ``y_pm``) are given, else by its ``+1`` and ``-1`` sides.
    """
    def sample_too_large():
        """The message for a ``n_sample`` larger than this problem: which problem, and what size works."""
        n, n_pos = y_pm.shape[0], int(np.count_nonzero(y_pm > 0))
        if labels is not None:
            given = np.asarray(labels)

            def side(mask):
                names = [repr(v.item() if isinstance(v, np.generic) else v) for v in np.unique(given[mask])]
                return f"class {names[0]}" if len(names) == 1 else f"the rest (classes {', '.join(names)})"

            pos, neg = side(y_pm > 0), side(y_pm <= 0)
            problem = f"the binary problem of {pos} against {neg}"
            sizes = f"{n} points: {n_pos} of {pos} and {n - n_pos} of {neg}"
        else:
            problem = "a binary problem"
            sizes = f"{n} points: {n_pos} on its +1 side and {n - n_pos} on its -1 side"
        return (
            f"centering_sample={n_sample} is larger than {problem}, which has {sizes}. The centering sample is "
            f"drawn per binary problem, from that problem's points only (in a multiclass fit, a one-vs-one problem "
            f"has the points of its two classes, not the whole training set); use centering_sample <= {n} (at most "
            f"the size of the smallest binary problem), or centering_sample=None for the exact centering."
        )

    if scheme is None:
        return None
    if isinstance(scheme, Centering):
        return scheme
    if n_sample is not None:
        seed = int(rng.integers(2**31 - 1))
        if isinstance(n_sample, (int, np.integer)) and not isinstance(n_sample, bool) and n_sample > y_pm.shape[0]:
            from ..centering._origins import SampleSizeError

            raise SampleSizeError(sample_too_large())
        return Centering.sampled(y_pm, n_sample, scheme=scheme, random_state=seed)
    if scheme == "standard":
        return Centering.standard(y_pm.shape[0])
    return Centering.class_balanced(y_pm)


def whole_data_origin(scheme, n_sample, y_index, keep, rng):
    """The origin every binary problem shares under ``scheme="multiclass"``, else None.

    The mean of the class centres of the training samples ``keep`` (γ_i =
    1/(c n_{class(i)}), Meilă's class-balanced origin for ``c`` classes), on
    all ``n`` training points; with ``n_sample``, represented by a sample of
    that many of them drawn with a seed taken from ``rng``. Each binary
    problem is then trained on its principal submatrix of the one centered
    Gram (:func:`fit_binary`).
    """
    if scheme != "multiclass":
        return None
    y = y_index[keep]
    if n_sample is None:
        origin = Centering.multiclass(y)
        return Centering.from_weights(origin.weights, indices=keep, n=y_index.shape[0], scheme="multiclass")
    seed = int(rng.integers(2**31 - 1))
    origin = Centering.sampled(y, n_sample, scheme="multiclass", random_state=seed)
    return Centering.from_weights(origin.weights, indices=keep[origin.indices], n=y_index.shape[0],
                                  scheme="multiclass")


def centered_whole(base, origin):
    """``base`` centered once at the ``origin`` every binary problem shares (:func:`whole_data_origin`, Meilă
    eq. 14): ``h = Kγ`` is computed once, and each problem reads its principal submatrix (:func:`problem_gram`)."""
    from ..views._centered import CenteredGram  # imported when used: the operators bring in the zarr store

    return CenteredGram(row_provider(base), origin)


#: Samples up to which a binary problem is solved in one working set (the solver's default ``q``).
SMALL_PROBLEM_SIZE = 512


def libsvm_pair_cap(n):
    """libsvm's cap of ``max(10⁷, 100 n)`` two-variable steps."""
    return max(10**7, 100 * n)


#: The options of :func:`dkernel.solver.solve_qp` that :func:`solve_small` honours.
SMALL_OPTIONS = frozenset({"tol", "working_set_size", "max_iter", "verbose", "shrinking", "checkpoint", "p", "E", "e",
                           "alpha0"})


def solves_whole(n, y, client, options, libsvm_limit):
    """Whether a problem of ``n`` variables with labels ``y`` and the solver's ``options`` is solved by
    :func:`solve_small`.

    In this process only, with the solver's default working set (which then
    covers the problem), libsvm's iteration limit (``libsvm_limit``:
    ``max_iter=-1``), no progress display (the solver's own), no checkpoint
    (the solver writes them) and no option beyond those (a callback); the
    dual of one equality row ``yᵀα = 0`` started from ``α = 0`` (C-SVC, and
    ε-SVR on its 2n variables with its linear term ``p``), not the ν
    problems' rows or a warm start. Shrinking does not change the optimum.
    """
    working_set_size = options.get("working_set_size")
    E = options.get("E", y)
    return (n <= SMALL_PROBLEM_SIZE and client is None and libsvm_limit and not options.get("verbose")
            and options.get("checkpoint") is None and set(options) <= SMALL_OPTIONS
            and (working_set_size is None or working_set_size >= n)
            and (E is y or np.array_equal(E, y)) and float(options.get("e", 0.0)) == 0.0
            and options.get("alpha0") is None)


def problem_matrix(rows):
    """The whole matrix of a row provider as float64 (an in-memory ``DenseGram`` without a copy)."""
    K = getattr(rows, "K", None)
    if K is None:
        K = rows.rows(np.arange(rows.n))
    return np.asarray(K, dtype=np.float64)


def solve_small(rows, y, C, *, tol, p=None):
    """Solve the dual ``min ½ αᵀQα + pᵀα``, ``Q = y yᵀ ∘ K``, ``yᵀα = 0``, ``0 ≤ α ≤ C`` on the whole of ``rows``
    by SMO; a :class:`~dkernel.solver.QPResult`. ``p`` is C-SVC's ``−1`` when None.

    ``n_iter`` is 1 (one working set, the whole problem) or 0 when ``α = 0``
    already meets ``tol``. Returns None where a kernel value is not finite
    (or the sum of the values overflows): the block solver then raises its
    error naming the row (or solves the problem).
    """
    from ..solver import QPResult
    from ..solver._bias import svc_intercept
    from ..solver._smo import select_pair, smo_subproblem

    K = problem_matrix(rows)
    if not np.isfinite(np.sum(K)):  # a NaN or an infinity in K (or finite values whose sum overflows)
        return None
    n = y.shape[0]
    y = np.asarray(y, dtype=np.float64)
    C = np.broadcast_to(np.asarray(C, dtype=np.float64), (n,)).copy()
    Q = np.multiply.outer(y, y)  # Q = y yᵀ ∘ K, at most 512 × 512 (2 MB)
    Q *= K
    alpha = np.zeros(n)
    p = -np.ones(n) if p is None else np.asarray(p, dtype=np.float64)
    G = p.copy()  # Q α + p with α = 0
    cap = libsvm_pair_cap(n)
    steps, _ = smo_subproblem(Q, y, alpha, C, G, float(tol), 0.0, cap)
    gap = select_pair(Q, y, alpha, C, G)[2]
    converged = steps < cap
    if not converged:
        warnings.warn(
            f"The QP solver stopped after libsvm's limit of {cap} pair steps without reaching tol={tol:g}. "
            "Increase tol, or scale the data (e.g. StandardScaler) so that the kernel is better conditioned.",
            ConvergenceWarning, stacklevel=4,
        )
    return QPResult(
        alpha=alpha,
        intercept=svc_intercept(alpha, G, y, C),
        objective=0.5 * float(alpha @ (G + p)),
        n_iter=int(steps > 0),
        converged=bool(converged),
        stop_reason="tol" if converged else "max_iter",
        gap=float(gap),
        gradient=G,
        n_kernel_rows=n,
    )


def outer_iteration_cap(n, working_set_size):
    """libsvm's cap of max(10⁷, 100 n) two-variable steps, in outer iterations of q variables."""
    q = working_set_size or min(n, 128)  # the in-process default of dkernel.solver (LOCAL_WORKING_SET_SIZE)
    return max(1000, libsvm_pair_cap(n) // max(q, 2))


def solve_qp(rows, y, C, *, client=None, blas=None, **options):
    """Solve the dual on ``rows``: :func:`solve_small` for a problem that fits one working set, else
    :func:`dkernel.solver.solve_qp` with its ``options``.

    BLAS runs on one thread while the solver reads a Gram held in this
    process's memory (:func:`solved_in_memory`), through ``blas``: the fit's
    :class:`~dkernel._runtime.threads.BlasThreads` (a new one when None).
    The solver is imported on the first call, when a problem needs it.
    """
    libsvm_limit = options.get("max_iter", 0) >= outer_iteration_cap(rows.n, options.get("working_set_size"))
    if solves_whole(rows.n, y, client, options, libsvm_limit):
        result = solve_small(rows, y, C, tol=options["tol"], p=options.get("p"))
        if result is not None:
            return result
    from ..solver import solve_qp as solve

    in_memory = solved_in_memory(rows, client)
    with (blas or BlasThreads()).single(enabled=in_memory):
        return solve(rows, y, C, client=client, **options)


def problem_checkpoints(checkpoint, n_problems, storage_options=None):
    """One solver :class:`~dkernel.solver.Checkpoint` per binary problem, inside the estimator's checkpoint folder.

    The folder ``checkpoint`` is a zarr group (``format:
    "dkernel-checkpoint"``, attribute ``problems``) created when absent or
    empty; problem ``k`` is checkpointed in its subfolder ``problem-k`` with
    the intervals of ``checkpoint``. A folder that holds anything else, or
    the checkpoints of another number of problems, is refused and left as
    it is. Returns ``[None] * n_problems`` without a checkpoint. At an fsspec
    URL (with ``storage_options``) the same layout is kept without rename
    (:mod:`dkernel.solver._checkpoint_remote`).
    """
    if checkpoint is None:
        return [None] * n_problems
    from ..solver._checkpoint import CHECKPOINT_FORMAT, as_checkpoint  # the solver: imported when used

    from .._runtime.object_store import is_url

    checkpoint = as_checkpoint(checkpoint, storage_options)
    if is_url(checkpoint.path):
        from ..solver._checkpoint_remote import problem_checkpoints_url

        found, checkpoints = problem_checkpoints_url(checkpoint, n_problems)
        _check_problem_count(checkpoint.path, found, n_problems, "URL")
        return checkpoints
    import zarr

    path = os.path.abspath(os.fspath(checkpoint.path))
    if artifacts.check_target(path, "checkpoint", reuse=True) == "same":
        _check_problem_count(path, zarr.open_group(path, mode="r").attrs.get("problems"), n_problems)
    else:
        with artifacts.writing(path, "checkpoint") as tmp:
            zarr.open_group(tmp, mode="w").attrs.update({"format": CHECKPOINT_FORMAT, "problems": n_problems})
    return [dataclasses.replace(checkpoint, path=os.path.join(path, f"problem-{k}")) for k in range(n_problems)]


def _check_problem_count(where, found, n_problems, kind="path"):
    """Refuse the checkpoint at ``where``, started for ``found`` binary problems (None: one solver run), for a fit
    of ``n_problems``; ``kind`` names what the user gave (``"path"`` or ``"URL"``)."""
    if found != n_problems:
        def problems(count):
            return f"{count} binary problem{'' if count == 1 else 's'}"

        what = "one solver run" if found is None else problems(found)
        raise ValueError(
            f"the checkpoint at {where} holds the state of {what}, but this fit has {problems(n_problems)} "
            f"(other classes or multiclass scheme); it is left as it is: choose another checkpoint {kind}."
        )


def problem_gram(base, index, centering, client):
    """The rows the solver reads for the binary problem on the samples ``index`` of ``base``, and its ``h``.

    Without ``centering``, the problem's principal submatrix: in this process the rows are gathered from the
    shared Gram as the solver asks for them, for the workers of a ``client`` an in-memory Gram is copied. With
    it (a :class:`Centering`), the view centered at that origin (Meilă eq. 14,
    :func:`~dkernel.views._centered.centered_submatrix`) and ``h`` (``K γ`` over the problem's samples, for Δb,
    eq. 19). Returns ``(rows, h)``, ``h`` None without centering.
    """
    if centering is not None:
        from ..views._centered import centered_submatrix  # imported when used: the operators bring in the zarr store

        return centered_submatrix(base, index, centering)
    return row_provider(subset_gram(base, index, copy=client is not None)), None


def solved_in_memory(rows, client):
    """Whether the solver reads ``rows`` from a Gram held in this process's memory (BLAS then single-threaded).

    The solver's products on a Gram held in memory are memory-bound (a vector times q × n): BLAS threads cost
    more than they gain, 2-4x on a busy machine. Kernel rows computed on the fly keep them.
    """
    return (client is None and rows.n > SMALL_PROBLEM_SIZE
            and held_in_process(rows))


def fit_binary(base, index, y_pm, C, *, centering, normalized, bias_correction, tol, working_set_size, max_iter,
               client, verbose, shrinking=True, checkpoint=None, blas=None):
    """Solve one binary problem on the samples ``index`` of ``base`` and correct its intercept.

    ``centering`` (a :class:`Centering` or ``None``) moves the origin of the
    feature space before solving; the intercept is then reduced by Δb
    (Meilă eq. 19) so that prediction uses the original kernel (eq. 16).
    ``normalized`` says that ``base`` is a normalized view; with
    ``bias_correction`` the intercept becomes Graf & Borer's b' (eq. 3).
    ``max_iter=-1`` is libsvm's limit (:func:`outer_iteration_cap`);
    ``shrinking`` is the solver's (libsvm's shrinking test). With a
    ``client`` the solver's gradient lives on its workers, each reading and
    correcting (subset, eq. 2, eq. 14) the kernel columns it owns; where the
    Gram cannot travel to the workers a :class:`UserWarning` says so and the
    solver runs here (:func:`solver_client`). ``checkpoint`` (a solver
    :class:`~dkernel.solver.Checkpoint`) keeps the solver's state on disk and
    resumes from it. ``blas``: the fit's :class:`~dkernel._runtime.threads.BlasThreads`, which limits BLAS to
    one thread while a Gram held in memory is solved here.

    Returns a dict: ``coef`` (α y), ``intercept`` (corrected),
    ``uncorrected``, ``delta_b``, ``objective``, ``n_iter``, ``converged``.
    """
    rows, h = problem_gram(base, index, centering, client)
    client = solver_client(rows, client)
    max_iter = outer_iteration_cap(rows.n, working_set_size) if max_iter == -1 else max_iter
    kwargs = dict(tol=tol, working_set_size=working_set_size, max_iter=max_iter, verbose=bool(verbose),
                  shrinking=bool(shrinking))
    result = solve_qp(rows, y_pm, C, client=client, checkpoint=checkpoint, blas=blas, **kwargs)
    coef = result.alpha * y_pm
    b = float(result.intercept)
    db = delta_b(coef, h) if h is not None else 0.0
    intercept = b - db
    if bias_correction:
        # ‖w‖² = αᵀQα = 2 (objective + Σα) for the C-SVC dual (p = -1); translation-invariant.
        w_norm = float(np.sqrt(max(2.0 * (result.objective + result.alpha.sum()), 0.0)))
        if w_norm > 0:
            intercept = graf_intercept(intercept, w_norm)
    return {
        "coef": coef,
        "intercept": intercept,
        "uncorrected": b,
        "delta_b": db,
        "objective": result.objective,
        "n_iter": result.n_iter,
        "converged": result.converged,
    }
