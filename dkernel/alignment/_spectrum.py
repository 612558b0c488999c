"""The leading eigenpairs of a Gram matrix: exact, a randomized range finder over the blocks, or Nyström.

Kandola et al. (§2, §7) note that a full eigendecomposition ``K = V Λ Vᵀ`` is
prohibitive for large ``n``. The adaptation of :mod:`dkernel.alignment`
needs only the eigenvectors that carry the spectrum, so this module offers
three ways to get the top ``k``:

``"exact"``
    ``numpy.linalg.eigh`` of the whole matrix in memory (``n`` up to a few
    thousand).
``"randomized"``
    The randomized range finder of Halko, Martinsson & Tropp (2011, Alg. 4.4
    and 5.3): ``Y = K Ω`` for a Gaussian ``Ω`` of ``k + p`` columns, ``q``
    power iterations ``Y = K Q``, then the eigenpairs of ``B = QᵀKQ``. Each
    product ``K Q`` is one blockwise pass over the Gram's ``.dask`` (a zarr
    store, a lazy :class:`~dkernel.gram._sources.KernelGram` or a view), computed on
    the Dask client's workers; only ``n × (k + p)`` matrices are held here.
    The Gram's inputs go to the workers once per fit (a lazy Gram's data, an
    in-memory matrix's row blocks); each pass's graph carries its ``Q`` only
    (:func:`gram_product` says why it is not scattered).
``"nystroem"``
    ``m`` sampled columns ``C = K[:, S]`` and ``W = K[S, S]``: the eigenpairs
    of ``C W⁺ Cᵀ`` through the thin SVD of ``C W^{-1/2}`` (one pass over ``m``
    columns).

``rank`` fixes ``k``; ``mass`` picks the smallest ``k`` whose eigenvalues sum
to that fraction of ``trace(K)`` (the spectrum's mass, read from the diagonal
in ``O(n)``), doubling the randomized rank until it is reached.
"""

import dataclasses
import math
from numbers import Integral, Real

import numpy as np

from .._runtime.client import client_for, local_scheduler
from ._inputs import check_finite_gram, check_symmetric_gram, gram_input
from ..gram._sources import source_columns, source_dask, source_diag, source_n
from .._runtime.validation import random_generator

__all__ = ["Spectrum", "top_eigenpairs", "METHODS"]

METHODS = ("exact", "randomized", "nystroem")

#: Above this many points ``method="auto"`` avoids the dense eigendecomposition.
EXACT_LIMIT = 5000


@dataclasses.dataclass(frozen=True)
class Spectrum:
    """Leading eigenpairs of a Gram matrix, in decreasing order of eigenvalue.

    Attributes
    ----------
    values : ndarray of shape (k,)
    vectors : ndarray of shape (n, k)
        Orthonormal columns.
    trace : float
        ``trace(K)``: ``values.sum() / trace`` is the spectrum's mass they carry.
    method : str
    """

    values: np.ndarray
    vectors: np.ndarray
    trace: float
    method: str

    @property
    def mass(self):
        """The fraction of ``trace(K)`` carried by these eigenvalues."""
        return float(self.values.sum() / self.trace) if self.trace > 0 else float("nan")

    def truncated(self, k):
        """The first ``k`` eigenpairs."""
        return dataclasses.replace(self, values=self.values[:k], vectors=self.vectors[:, :k])


def _check_rank(rank, n):
    if rank is None:
        return None
    if isinstance(rank, bool) or not isinstance(rank, Integral) or rank < 1:
        raise ValueError(f"rank must be a positive integer; got {rank!r}.")
    if rank > n:
        raise ValueError(f"rank {rank} is larger than the Gram matrix's {n} rows; pass rank <= {n}.")
    return int(rank)


def _check_mass(mass):
    if mass is None:
        return None
    if isinstance(mass, bool) or not isinstance(mass, Real) or not (0 < mass <= 1):
        raise ValueError(f"mass must be a fraction of the spectrum in (0, 1]; got {mass!r}.")
    return float(mass)


def _rank_for_mass(values, trace, mass):
    """The smallest ``k`` with ``values[:k].sum() >= mass * trace`` (None when not reached)."""
    reached = np.flatnonzero(np.cumsum(values) >= mass * trace * (1 - 1e-12))
    return int(reached[0]) + 1 if reached.size else None


def _exact(source):
    """Every eigenpair of the whole Gram, read into memory: finite and symmetric to round-off
    (:func:`~dkernel.alignment._inputs.check_symmetric_gram`), then decomposed as ``(K + Kᵀ) / 2``."""
    if isinstance(source, np.ndarray):
        K = source
    elif hasattr(source, "to_numpy"):
        K = np.asarray(source.to_numpy())
    else:
        K = np.asarray(source_dask(source).compute())
    check_finite_gram(K)
    check_symmetric_gram(K)
    K = np.asarray(K, dtype=np.float64)
    values, vectors = np.linalg.eigh((K + K.T) / 2)
    return values[::-1], vectors[:, ::-1]


def gram_product(K, Q, client):
    """Lazy ``K Q`` for the Dask Gram ``K``, whose inputs are on the workers already
    (:func:`~dkernel.gram.source_dask` with the client).

    ``Q`` (``n × (k + p)``, tens of MB at n = 50000) travels in the graph,
    once per pass: tasks that depend on data scattered to the cluster are not
    queued by the scheduler, and the Gram's blocks were then computed faster
    than the products consumed them (a peak of 2.7 GB per worker against
    0.45 GB with ``Q`` in the graph, n = 50000, ``benchmarks/bench_adaptation.py``).
    """
    import dask.array as da

    return K @ da.from_array(Q, chunks=(K.chunks[1], Q.shape[1]))


def _times_gram(K, Q, client):
    """``K Q`` in one blockwise pass over the Dask Gram ``K``, computed on ``client``."""
    product = gram_product(K, Q, client)
    out = client.compute(product).result() if client is not None else product.compute(scheduler=local_scheduler())
    out = np.asarray(out, dtype=np.float64)
    check_finite_gram(out, "the product of the Gram matrix with a random matrix")
    return out


def _randomized(source, n_vectors, power_iterations, rng, client):
    n = source_n(source)
    K = source_dask(source, client)
    Q = np.linalg.qr(rng.standard_normal((n, n_vectors)))[0]
    for _ in range(power_iterations + 1):
        Q = np.linalg.qr(_times_gram(K, Q, client))[0]
    KQ = _times_gram(K, Q, client)
    values, small = np.linalg.eigh((Q.T @ KQ + KQ.T @ Q) / 2)
    return values[::-1], (Q @ small)[:, ::-1]


def _nystroem(source, n_landmarks, rng):
    n = source_n(source)
    landmarks = np.sort(rng.choice(n, size=n_landmarks, replace=False))
    C = np.asarray(source_columns(source, landmarks).compute())
    check_finite_gram(C, "the sampled columns of the Gram matrix")
    check_symmetric_gram(C[landmarks], "the Gram matrix on the sampled points", index=landmarks)
    C = np.asarray(C, dtype=np.float64)
    w_values, w_vectors = np.linalg.eigh((C[landmarks] + C[landmarks].T) / 2)
    keep = w_values > w_values.max() * 1e-12
    F = C @ (w_vectors[:, keep] / np.sqrt(w_values[keep]))
    U, s, _ = np.linalg.svd(F, full_matrices=False)
    return s**2, U


def top_eigenpairs(source, rank=None, *, mass=None, method="auto", oversample=10, power_iterations=2,
                   n_landmarks=None, random_state=None, client=None):
    """The leading eigenpairs of a symmetric positive semi-definite Gram matrix.

    Parameters
    ----------
    source : Gram source
        ndarray, :class:`~dkernel.gram.GramMatrix`, lazy view, ``KernelGram``
        or dask array; a sparse matrix, a DataFrame or nested lists are converted to an ndarray.
    rank : int, optional
        ``k``, at most ``n``. Without ``rank`` and ``mass`` all ``n``
        eigenpairs (``"exact"`` only).
    mass : float in (0, 1], optional
        Keep the fewest eigenpairs that carry this fraction of ``trace(K)``
        (with ``rank``, at most ``rank`` of them).
    method : {"auto", "exact", "randomized", "nystroem"}, default="auto"
        ``"auto"``: exact up to 5000 points, randomized above.
    oversample : int, default=10
        ``p``, extra columns of the randomized range finder.
    power_iterations : int, default=2
        ``q``; each costs two passes over the Gram.
    n_landmarks : int, optional
        Nyström's sample size ``m`` (default ``min(n, 2 k + 10)``).
    random_state : int, Generator or None
    client : distributed.Client, str, None or False, default=None
        Where the randomized passes run (:func:`dkernel._runtime.client.resolve_client`).

    Returns
    -------
    Spectrum

    Raises
    ------
    ValueError
        For a rank above ``n``, a mass outside (0, 1], an unknown method, or a Gram that is not symmetric
        (``"exact"``: the whole matrix; ``"nystroem"``: on the sampled points).
    NonFiniteInputError
        A Gram with NaN or infinite entries (its diagonal is checked first), naming the first row holding one.
    """
    source = gram_input(source)
    n = source_n(source)
    rank, mass = _check_rank(rank, n), _check_mass(mass)
    if method == "auto":
        method = "exact" if n <= EXACT_LIMIT or (rank is None and mass is None) else "randomized"
    if method not in METHODS:
        raise ValueError(f"method must be one of {['auto', *METHODS]}; got {method!r}.")
    if method != "exact" and rank is None and mass is None:
        raise ValueError(f"the {method} method needs rank or mass (how many eigenpairs to keep).")
    diagonal = source_diag(source)
    check_finite_gram(diagonal, "the diagonal of the Gram matrix")
    trace = float(diagonal.sum())
    rng = random_generator(random_state)
    if method == "exact":
        values, vectors = _exact(source)
    elif method == "nystroem":
        k = rank or min(n, 64)
        values, vectors = _nystroem(source, min(n, n_landmarks or 2 * k + 10), rng)
    else:
        k = rank or min(n, 64)
        with client_for(client) as resolved:
            while True:
                values, vectors = _randomized(source, min(n, k + oversample), power_iterations, rng, resolved)
                if mass is None or _rank_for_mass(values[:k], trace, mass) is not None or k >= n:
                    break
                k = min(n, 2 * k) if rank is None else k
                if rank is not None:
                    break
    values = np.maximum(values, 0.0)
    spectrum = Spectrum(values, vectors, trace, method)
    keep = len(values) if rank is None else min(rank, len(values))
    if mass is not None:
        keep = min(keep, _rank_for_mass(values, trace, mass) or len(values))
    return spectrum.truncated(keep)


def spectrum_mass_rank(values, trace, mass):
    """How many of the decreasing ``values`` carry the fraction ``mass`` of ``trace`` (all when never)."""
    k = _rank_for_mass(np.asarray(values), trace, _check_mass(mass))
    return len(values) if k is None else k


def extrapolated_eigh_seconds(n, seconds_at, n_at):
    """A dense eigendecomposition's time at ``n`` from one measured at ``n_at`` (``O(n³)``)."""
    return float(seconds_at) * (n / n_at) ** 3 if n_at > 0 else math.nan
