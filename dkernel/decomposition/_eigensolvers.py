"""The eigensolvers of :class:`~dkernel.decomposition.KernelPCA`: the ``k`` largest eigenpairs of the centered Gram.

``K_a`` (Meilă eq. 14) is a :class:`~dkernel.views.CenteredGram` over any Gram
source, or the source itself without centering. ``"dense"`` (LAPACK) and
``"arpack"`` work on it held in memory (:func:`materialized_gram`: the base
Gram read or evaluated once, ``h`` and ``h0`` taken from it, the centering
applied in place, as scikit-learn's ``KernelCenterer``); ``"randomized"`` (Halko, Martinsson
& Tropp 2011, Algs. 4.4 and 5.3) and ``"lobpcg"`` (Knyazev 2001) reach it only
through products ``K_a Q`` with tall thin blocks ``Q``, each one blockwise
pass over the base Gram (:func:`centered_products`). Eigenvalues come back in
increasing order with their unit eigenvectors as columns.
"""

import warnings

import numpy as np
import scipy.linalg
from scipy.sparse.linalg import LinearOperator, eigsh, lobpcg
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._arpack import _init_arpack_v0

from .._runtime.client import client_for, local_scheduler
from .._runtime.validation import random_generator
from ..alignment._spectrum import _times_gram
from ..centering._origins import origin_products
from ..gram._on_the_fly import KernelGram
from ..gram._sources import as_gram, source_dask
from ..views._centered import CenteredGram

__all__ = ["LOBPCG_MAX_ITER", "arpack_eigenpairs", "centered_products", "dense_eigenpairs", "lobpcg_eigenpairs",
           "materialized_gram", "power_iterations", "randomized_eigenpairs"]

#: Iterations of the LOBPCG solver when ``max_iter`` is None (each one blockwise pass over the Gram).
LOBPCG_MAX_ITER = 100


def _dense(operator, client=False):
    """``K_a`` as one ndarray, its blocks computed on ``client`` (a resolved client), or in this process."""
    import dask

    # The solver was chosen for a Gram held in memory (eigen_solver="auto" checked the memory available).
    def whole():
        if hasattr(operator, "to_numpy"):
            return np.asarray(operator.to_numpy(force=True), dtype=np.float64)
        return np.asarray(source_dask(operator).compute(), dtype=np.float64)

    if client:
        return whole()
    with dask.config.set(scheduler=local_scheduler()):
        return whole()


def materialized_gram(source, centering, client=False):
    """``(K_a, h, h0, scale)``: the centered Gram as one float64 ndarray, its origin's ``h = Kγ`` and
    ``h0 = γᵀKγ`` (None without centering), and ``max_i |K_ii|`` of the base Gram.

    The base Gram is read or evaluated once (a kernel on its data: one
    evaluation in this process, as scikit-learn's ``pairwise_kernels``; any
    other source through its blocks, on ``client`` when it is one), ``h`` and
    ``h0`` are taken from that matrix (Meilă eqs. 17–18) and the centering
    ``K - 1 hᵀ - h 1ᵀ + h0`` (eq. 14) is applied in place: one ``n × n``
    array, no second pass over the kernel.
    """
    base = as_gram(source)
    if isinstance(base, KernelGram):
        K = np.asarray(base.to_numpy(), dtype=np.float64)
        if K.dtype != base.dtype or np.shares_memory(K, base.X):
            K = np.array(K, dtype=np.float64)
    else:
        K = _dense(base, client)
        held = getattr(base, "K", None)  # a matrix in memory (the user's precomputed Gram) is left as it is
        if held is not None and np.shares_memory(K, held):
            K = K.copy()
    scale = float(np.max(np.abs(np.diagonal(K)))) if K.size else 0.0
    if centering is None:
        return K, None, None, scale
    h, h0 = origin_products(K, centering, client=False)
    K -= h[np.newaxis, :]
    K -= h[:, np.newaxis]
    K += h0
    return K, h, h0, scale


def dense_eigenpairs(operator, k, client=False):
    """The ``k`` largest eigenpairs of ``K_a`` (LAPACK ``eigh``, ascending); ``operator`` is ``K_a`` in memory
    (:func:`materialized_gram`, overwritten) or a view, materialized here."""
    K = operator if isinstance(operator, np.ndarray) else _dense(operator, client)
    n = K.shape[0]
    return scipy.linalg.eigh(K, subset_by_index=(n - k, n - 1), overwrite_a=K is operator)


def arpack_eigenpairs(operator, k, *, tol=0.0, max_iter=None, random_state=None, client=False):
    """The ``k`` algebraically largest eigenpairs of ``K_a`` (in memory, or a view materialized here) by ARPACK,
    from scikit-learn's starting vector ``v0``."""
    K = operator if isinstance(operator, np.ndarray) else _dense(operator, client)
    v0 = _init_arpack_v0(K.shape[0], random_state)
    return eigsh(K, k, which="LA", tol=tol, maxiter=max_iter, v0=v0)


def power_iterations(iterated_power, k, n):
    """scikit-learn's ``iterated_power="auto"``: 7 power iterations when ``k < 0.1 n``, else 4."""
    if iterated_power != "auto":
        return int(iterated_power)
    return 7 if k < 0.1 * n else 4


def centered_products(operator, client=None):
    """``Q ↦ K_a Q`` for blocks ``Q`` of vectors, each one blockwise pass over the *base* Gram.

    With ``h = Kγ`` and ``h0 = γᵀKγ`` of the origin (Meilă eqs. 14, 17–18),

    .. math::

        K_a Q = K Q - 1 (h^T Q) - h (1^T Q) + h_0 1 (1^T Q),

    so a pass multiplies the blocks of ``K`` as they are read (from a store,
    or evaluated on the fly, on ``client``'s workers when it is one) and the
    centering costs ``O(n k)`` afterwards instead of a correction of every
    block. ``operator`` is a :class:`~dkernel.views.CenteredGram` or an
    uncentered source.
    """
    centered = isinstance(operator, CenteredGram)
    base = operator.base if centered else operator
    K = source_dask(base, client)

    def times(Q):
        Q = np.asarray(Q, dtype=np.float64)
        KQ = _times_gram(K, Q, client)
        if centered:
            sums = Q.sum(axis=0)
            KQ -= (operator.h @ Q)[np.newaxis, :]
            KQ -= np.outer(operator.h, sums)
            KQ += operator.h0 * sums[np.newaxis, :]
        return KQ

    return times


def randomized_eigenpairs(operator, k, *, n_oversamples=10, iterated_power="auto", random_state=None, client=None):
    """The ``k`` largest eigenpairs of ``K_a`` by randomized subspace iteration (Halko et al. Algs. 4.4, 5.3).

    ``Y = K_a Ω`` for a Gaussian ``Ω`` of ``k + p`` columns, then ``2q``
    products ``Y = K_a Q`` with re-orthonormalization (scikit-learn's ``q``
    iterations of ``K_a (K_aᵀ Q)``), then the Rayleigh–Ritz pairs of
    ``QᵀK_aQ``: each product is one blockwise pass over the source
    (:func:`centered_products`), on ``client``'s workers when there is one.
    """
    n = operator.n
    q = power_iterations(iterated_power, k, n)
    rng = random_generator(random_state)
    with client_for(client) as resolved:
        times = centered_products(operator, resolved)
        Q = np.linalg.qr(rng.standard_normal((n, min(n, k + n_oversamples))))[0]
        for _ in range(2 * q + 1):
            Q = np.linalg.qr(times(Q))[0]
        KQ = times(Q)
    values, small = np.linalg.eigh((Q.T @ KQ + KQ.T @ Q) / 2)
    return values[-k:], (Q @ small)[:, -k:]


def lobpcg_eigenpairs(operator, k, *, tol=0.0, max_iter=None, random_state=None, client=None):
    """The ``k`` largest eigenpairs of ``K_a`` by LOBPCG (Knyazev 2001) through blockwise products only.

    Each iteration multiplies ``K_a`` with a block of ``k`` vectors: one
    blockwise pass over the source (:func:`centered_products`), on
    ``client``'s workers when there is one, never the ``n × n`` matrix. It
    stops when every residual ``‖K_a v - λ v‖`` is below ``tol`` (0: scipy's
    default, ``n √ε`` times the scale of ``K_a``) or after ``max_iter``
    iterations (None: :data:`LOBPCG_MAX_ITER`), with a ``ConvergenceWarning``
    when some pair has not converged.
    """
    n = operator.n
    if 5 * k >= n:
        raise ValueError(f"eigen_solver='lobpcg' computes fewer than n_samples/5 components ({n // 5} here; "
                         f"n_components={k}); use eigen_solver='dense' or 'arpack'.")
    start = random_generator(random_state).standard_normal((n, k))
    iterations = LOBPCG_MAX_ITER if max_iter is None else int(max_iter)
    with client_for(client) as resolved:
        times = centered_products(operator, resolved)
        A = LinearOperator((n, n), matvec=lambda v: times(np.reshape(v, (n, 1)))[:, 0], matmat=times,
                           dtype=np.float64)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            values, vectors = lobpcg(A, start, largest=True, tol=tol or None, maxiter=iterations)
    if any("not reaching the requested tolerance" in str(w.message) for w in caught):
        warnings.warn(f"LOBPCG did not converge in {iterations} iterations (tol={tol or 'default'}): raise max_iter "
                      "or use eigen_solver='randomized' with more iterated_power.", ConvergenceWarning, stacklevel=3)
    order = np.argsort(values)
    return values[order], vectors[:, order]
