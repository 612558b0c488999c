"""Distributed gradient: one :class:`GradientPartition` per Dask worker.

The samples ``0..n`` are split into contiguous ranges, one per worker. Each
worker keeps its range's ``G``, ``alpha``, ``y``, ``C`` in a
``distributed`` actor and reads ``K[B, range]`` through the row provider's
``submatrix`` on that worker (a chunked store then reads only its own
columns). Per iteration the client exchanges only

1. the best violators of each range (and the local ``m``, ``M``),
2. the working set ``B`` with its buffer slots, receiving ``K[B, B]`` column
   blocks, ``alpha_B`` and ``G_B``,
3. ``y_B * Delta alpha_B``, applied as ``G_range += y * K[B, range]^T w``.

The selection, the SMO and the stopping rule are those of the single-process
solver (:func:`~._decomposition.label_constraint_loop`), so both reach the
same ``alpha`` up to rounding.
"""

import numpy as np

from ._decomposition import (
    _check_provider,
    _check_solver_options,
    _result,
    assemble_working_set,
    label_constraint_loop,
    merge_partition_candidates,
)
from ._gradient import GradientPartition
from ._qp import check_problem
from ._rows import DenseRows

__all__ = ["solve_qp_distributed", "partition_ranges"]


def partition_ranges(n, n_parts):
    """Split ``0..n`` into ``n_parts`` contiguous ranges of near-equal size."""
    bounds = np.linspace(0, n, min(n_parts, n) + 1).round().astype(int)
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


class ColumnBlockRows:
    """The columns ``start:stop`` of an in-memory kernel matrix.

    Sent to a worker in place of a :class:`DenseRows` so that each worker
    receives only its share of the matrix.
    """

    def __init__(self, K_cols, start, n):
        self.K_cols = K_cols
        self.start = start
        self.n = n

    def submatrix(self, idx, start, stop):
        return self.K_cols[np.asarray(idx, dtype=np.intp), start - self.start : stop - self.start]


def _worker_provider(rows, start, stop):
    if isinstance(rows, DenseRows):
        return ColumnBlockRows(np.ascontiguousarray(rows.K[:, start:stop]), start, rows.n)
    return rows


class ActorGradients:
    """The gradient spread over actors; same interface as ``LocalGradients``."""

    def __init__(self, client, rows, prob, q):
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
        if not workers:
            raise ValueError("The Dask client has no workers; start a cluster before solving.")
        support = np.flatnonzero(prob.alpha0)
        weights = prob.y[support] * prob.alpha0[support]
        self.ranges = partition_ranges(prob.n, len(workers))
        futures = []
        for worker, (start, stop) in zip(workers, self.ranges):
            futures.append(
                client.submit(
                    GradientPartition,
                    _worker_provider(rows, start, stop),
                    prob.y[start:stop], prob.C[start:stop], prob.p[start:stop], prob.alpha0[start:stop],
                    start, stop, q, support, weights,
                    workers=[worker], actor=True, pure=False,
                )
            )
        self.client = client
        self.futures = futures
        self.actors = [future.result() for future in futures]

    def close(self):
        """Release the actors and the column slabs they hold on the workers, now rather than at garbage collection."""
        self.actors = []
        if self.futures:
            # Each actor handle holds a future of its own: cancel the keys rather than drop one reference.
            self.client.cancel(self.futures)
        self.futures = []

    def _all(self, method, *args):
        calls = [getattr(actor, method)(*args) for actor in self.actors]
        return [call.result() for call in calls]

    def candidates(self, k):
        return merge_partition_candidates(self._all("candidates", k), k)

    def load(self, B, new, new_slots, slots):
        return assemble_working_set(self._all("load", B, new, new_slots, slots), B.size)

    def update(self, B, slots, weights, alpha_B):
        self._all("update", B, slots, weights, alpha_B)

    def state(self):
        parts = self._all("state")
        return np.concatenate([a for a, _ in parts]), np.concatenate([g for _, g in parts])


def solve_qp_distributed(
    rows,
    y,
    C,
    *,
    client,
    p=None,
    E=None,
    e=None,
    tol=1e-3,
    working_set_size=None,
    max_iter=100_000,
    shrinking=True,
    alpha0=None,
    verbose=False,
    callback=None,
):
    """:func:`solve_qp` with the gradient kept on the workers of ``client``.

    Parameters are those of :func:`solve_qp`. The row provider must be
    picklable (it is sent to every worker; a :class:`DenseRows` is split by
    columns first) and, for efficiency, implement
    ``submatrix(idx, start, stop)``. Only the one-row constraint
    ``y^T alpha = const`` is supported.

    Returns
    -------
    QPResult
        Equal, up to rounding, to the single-process result.
    """
    y_arr = np.asarray(y)
    _check_provider(rows, y_arr.shape[0] if y_arr.ndim == 1 else -1)
    prob = check_problem(rows.n, y, C, p, E, e, alpha0)
    if not prob.is_svc_constraint:
        raise ValueError(
            "The distributed solver supports only the constraint y^T alpha = const; solve problems "
            "with several equality rows without a client."
        )
    q = _check_solver_options(tol, working_set_size, max_iter, prob)
    gradients = ActorGradients(client, rows, prob, q)
    try:
        out = label_constraint_loop(
            gradients, prob, tol=tol, q=q, max_iter=max_iter, shrinking=shrinking, callback=callback,
            verbose=verbose,
        )
    finally:
        gradients.close()
    return _result(prob, *out, tol=tol, max_iter=max_iter)
