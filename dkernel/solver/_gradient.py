"""The gradient ``G = Q alpha + p`` and the two places it can live: this process or the Dask workers.

A :class:`GradientPartition` owns ``G``, ``alpha``, ``y`` and ``C`` of the
samples ``start:stop`` and the working-set kernel values ``K[B, start:stop]``.
Two strategies hold the partitions behind one interface (``candidates``,
``load``, ``update``, ``state``, ``fill_rows``, ``close``, and ``alpha``, the
current ``alpha`` of all samples kept in this process):

:class:`~._shrinking.ShrinkingGradients`
    All samples in this process (restricted to the active variables when
    the solver shrinks, :mod:`._shrinking`).
:class:`ActorGradients`
    One partition per Dask worker, in a ``distributed`` actor, over
    contiguous ranges of samples (:mod:`._actors`). Each worker reads
    ``K[B, range]`` through the provider's ``submatrix`` on that worker (a
    chunked store then reads only its own columns; an in-memory matrix sends
    each worker only its ``column_slab``). Per iteration the client makes two
    calls to each actor:

    1. ``load``: the working set ``B`` with its buffer slots, receiving
       ``K[B, B]`` column blocks, ``alpha_B`` and ``G_B``;
    2. ``update``: ``y_B * Delta alpha_B``, applied as
       ``G_range += y * K[B, range]^T w``, answered by the best violators of
       the range for the next iteration (and the local ``m``, ``M``).

Either way the outer loop (:mod:`._loop`) only exchanges working-set
indices, ``Delta alpha_B`` and the best violators, so both strategies select
identical working sets and reach the same ``alpha`` up to rounding.
"""

import numpy as np

from ._gradient_compiled import add_gradient_step, weighted_rows_step
from ._rows import provider_submatrix, raise_nonfinite_rows
from ._select import candidate_lists, extreme_violations, merge_candidates, violation_sets

__all__ = [
    "GradientPartition",
    "SlotMap",
    "initial_gradient",
    "assemble_working_set",
    "merge_partition_candidates",
    "partition_ranges",
    "starting_support",
]

# Rows fetched per block when the gradient is built from a non-zero start.
GRADIENT_BLOCK_ROWS = 1024


def starting_support(y, alpha):
    """Indices of the non-zero ``alpha`` and their ``y_i alpha_i``: all the starting gradient needs."""
    support = np.flatnonzero(alpha)
    return support, y[support] * alpha[support]


def initial_gradient(rows, y, p, support, support_weights, start, stop):
    """Return ``G = Q alpha + p`` of the samples ``start:stop``, reading the rows of ``support`` only.

    ``y`` and ``p`` are those of the samples ``start:stop``; ``support`` and
    ``support_weights`` come from :func:`starting_support` over all samples.
    """
    G = p.copy()
    for s in range(0, support.size, GRADIENT_BLOCK_ROWS):
        idx = support[s : s + GRADIENT_BLOCK_ROWS]
        block = provider_submatrix(rows, idx, start, stop)
        G += y * (block.T @ support_weights[s : s + GRADIENT_BLOCK_ROWS])
        if not np.isfinite(G).all():
            raise_nonfinite_rows(idx, block)
    return G


class SlotMap:
    """Which buffer slot holds the kernel row of each working-set variable.

    Rows stay in their slot while they are kept in the working set, so
    keeping half of the set copies nothing.
    """

    def __init__(self, q):
        self.q = q
        self.slot_of = {}

    def assign(self, kept, new):
        """Return ``(slots of kept + new, slots of new)``."""
        kept_slots = [self.slot_of[i] for i in kept.tolist()]
        free = sorted(set(range(self.q)) - set(kept_slots))[: new.size]
        self.slot_of = dict(zip(kept.tolist(), kept_slots))
        self.slot_of.update(zip(new.tolist(), free))
        return np.asarray(kept_slots + free, dtype=np.intp), np.asarray(free, dtype=np.intp)


class GradientPartition:
    """Gradient ``G = Q alpha + p`` of the samples ``start:stop``.

    Parameters
    ----------
    rows : row provider
        Only ``submatrix(idx, start, stop)`` (or ``rows(idx)``) is used.
    y, C, p, alpha : ndarray of shape (stop - start,)
        The partition's labels, bounds, linear term and starting point.
    start, stop : int
        Range of samples owned.
    q : int
        Working-set size (rows held).
    support, support_weights : ndarray
        Indices of the non-zero ``alpha`` over all samples and their
        ``y_i alpha_i``, for the starting gradient.
    G : ndarray of shape (stop - start,), optional
        The gradient itself (a resumed checkpoint); then ``support`` is not read.
    """

    def __init__(self, rows, y, C, p, alpha, start, stop, q, support, support_weights, G=None):
        self.rows = rows
        self.y, self.C, self.alpha = y, C, alpha.copy()
        self.start, self.stop = int(start), int(stop)
        self.K = np.zeros((q, self.stop - self.start))
        self.weights = np.zeros(q)
        self._slots = np.arange(q)
        self._columns = np.arange(self.stop - self.start)
        if G is None:
            G = initial_gradient(rows, y, p, support, support_weights, self.start, self.stop)
        self.G = np.array(G, dtype=np.float64)

    def candidates(self, k):
        """Local ``(m, M)`` and the ``k`` best candidates of each end (global indices)."""
        up, low = violation_sets(self.alpha, self.y, self.C)
        v = -self.y * self.G
        m, M = extreme_violations(v, up, low)
        return (m, M) + candidate_lists(v, up, low, k, offset=self.start)

    def load(self, B, new, new_slots, slots):
        """Fetch the rows of ``new`` into ``new_slots``; return this range's share of ``B``.

        Returns ``(positions, K_cols, alpha, G)``: the positions in ``B`` of
        the variables owned here, ``K[B, those]``, and their ``alpha``, ``G``.
        """
        if new.size:
            self.K[new_slots] = provider_submatrix(self.rows, new, self.start, self.stop)
        positions = np.flatnonzero((B >= self.start) & (B < self.stop))
        local = B[positions] - self.start
        K_cols = self.K[np.ix_(slots, local)]
        if not np.isfinite(K_cols).all():
            raise_nonfinite_rows(B, K_cols)
        return positions, K_cols, self.alpha[local], self.G[local]

    def fill_rows(self, idx, slots):
        """Read the kernel rows of ``idx`` into ``slots``: the rows a resumed or rebuilt partition keeps."""
        if len(idx):
            self.K[slots] = provider_submatrix(self.rows, idx, self.start, self.stop)

    def update(self, B, slots, weights, alpha_B, k=None):
        """``G += y * (K_B^T weights)`` with ``weights = y_B * Delta alpha_B``; store ``alpha_B``.

        With ``k``, return the next iteration's :meth:`candidates` (one call
        instead of two).
        """
        self.weights[:] = 0.0
        self.weights[slots] = weights
        step = np.empty(self._columns.size)
        weighted_rows_step(self.K, self._slots, self.weights, self._columns, True, step)
        if not add_gradient_step(self.G, self.y, self._columns, step):
            raise_nonfinite_rows(B, self.K[slots])
        mine = (B >= self.start) & (B < self.stop)
        self.alpha[B[mine] - self.start] = alpha_B[mine]
        return None if k is None else self.candidates(k)

    def state(self):
        """Return ``(alpha, G)`` of the partition."""
        return self.alpha, self.G


def merge_partition_candidates(parts, k):
    """Global ``(m, M, up_idx, up_v, low_idx, low_v)`` from :meth:`GradientPartition.candidates`."""
    m = max(part[0] for part in parts)
    M = min(part[1] for part in parts)
    return (m, M) + merge_candidates([part[2:] for part in parts], k)


def assemble_working_set(parts, q_B):
    """``(K_BB, alpha_B, G_B)`` from per-partition :meth:`GradientPartition.load`."""
    if len(parts) == 1:
        _, K_cols, alpha, G = parts[0]
        return K_cols, alpha.copy(), G.copy()
    K_BB = np.empty((q_B, q_B))
    alpha_B = np.empty(q_B)
    G_B = np.empty(q_B)
    for positions, K_cols, alpha, G in parts:
        K_BB[:, positions] = K_cols
        alpha_B[positions] = alpha
        G_B[positions] = G
    return K_BB, alpha_B, G_B


def partition_ranges(n, n_parts):
    """Split ``0..n`` into ``n_parts`` contiguous ranges of near-equal size."""
    bounds = np.linspace(0, n, min(n_parts, n) + 1).round().astype(int)
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))
