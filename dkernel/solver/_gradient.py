"""The gradient of a contiguous range of samples and the kernel rows it needs.

A :class:`GradientPartition` owns ``G``, ``alpha``, ``y`` and ``C`` of the
samples ``start:stop`` and the working-set kernel values ``K[B, start:stop]``.
The single-process solver uses one partition covering all samples; the
distributed solver puts one partition on each Dask worker. Either way the
outer loop only exchanges working-set indices, ``Delta alpha_B`` and the best
violators, so both paths select identical working sets.
"""

import numpy as np

from ._rows import provider_submatrix
from ._select import candidate_lists, extreme_violations, violation_sets

__all__ = ["GradientPartition", "SlotMap", "GRADIENT_BLOCK_ROWS"]

# Rows fetched per block when the gradient is built from a non-zero start.
GRADIENT_BLOCK_ROWS = 1024


def _raise_nonfinite(idx):
    raise ValueError(
        f"The kernel rows contain NaN or infinite values (in one of rows {_preview(idx)}); check the "
        "data and the kernel parameters (e.g. an overflowing polynomial degree)."
    )


def _preview(idx, k=5):
    idx = np.asarray(idx).tolist()
    return ", ".join(map(str, idx[:k])) + (", ..." if len(idx) > k else "")


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
    """

    def __init__(self, rows, y, C, p, alpha, start, stop, q, support, support_weights):
        self.rows = rows
        self.y, self.C, self.alpha = y, C, alpha.copy()
        self.start, self.stop = int(start), int(stop)
        self.K = np.empty((q, self.stop - self.start))
        self.weights = np.zeros(q)
        self.G = p.copy()
        for s in range(0, support.size, GRADIENT_BLOCK_ROWS):
            idx = support[s : s + GRADIENT_BLOCK_ROWS]
            block = provider_submatrix(rows, idx, self.start, self.stop)
            self.G += y * (block.T @ support_weights[s : s + GRADIENT_BLOCK_ROWS])
        if not np.isfinite(self.G).all():
            _raise_nonfinite(support)

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
            _raise_nonfinite(B)
        return positions, K_cols, self.alpha[local], self.G[local]

    def update(self, B, slots, weights, alpha_B):
        """``G += y * (K_B^T weights)`` with ``weights = y_B * Delta alpha_B``; store ``alpha_B``."""
        self.weights[:] = 0.0
        self.weights[slots] = weights
        self.G += self.y * (self.K.T @ self.weights)
        if not np.isfinite(self.G).all():
            _raise_nonfinite(B)
        mine = (B >= self.start) & (B < self.stop)
        self.alpha[B[mine] - self.start] = alpha_B[mine]

    def state(self):
        """Return ``(alpha, G)`` of the partition."""
        return self.alpha, self.G
