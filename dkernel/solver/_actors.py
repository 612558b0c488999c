"""The gradient on the Dask workers: one :class:`~._gradient.GradientPartition` actor per worker, surviving worker loss.

:class:`ActorGradients` spreads ``G = Q alpha + p`` over contiguous ranges of
samples, one ``distributed`` actor per worker, and answers the outer loop
(:mod:`._loop`) with two calls per actor and iteration: ``load`` (the kernel
columns, ``alpha_B`` and ``G_B`` of the working set) and ``update`` (the step,
answered by the range's best violators for the next iteration).

This process keeps ``alpha`` current: it knows ``alpha_B`` after every step.
When the worker of a partition dies (killed, out of memory, its machine
lost), the call to its actor fails (``OSError("Unable to contact Actor's
worker")`` in flight, ``RuntimeError("Worker holding Actor was lost")``
afterwards, or an actor future in error while waiting). The lost range is
then rebuilt on a surviving or replacement worker from this process's
``alpha``: its gradient ``G = Q alpha + p`` is recomputed from the rows of the
support vectors (:func:`~._gradient.initial_gradient`) and the kernel rows
of the current working set are read again into the slots they held, so the
loop continues where it was; a warning on the ``dkernel.solver`` logger
names the lost worker and the rebuilt range.
"""

import logging
import time

import numpy as np

from ._gradient import (
    GradientPartition,
    assemble_working_set,
    merge_partition_candidates,
    partition_ranges,
    starting_support,
)
from ._rows import provider_for_columns

__all__ = ["ActorGradients", "WorkerLostError"]

logger = logging.getLogger("dkernel.solver")

#: Seconds between checks that the worker of an unanswered call is still alive.
POLL_SECONDS = 2.0
#: Seconds to wait for a worker to join when every worker of the cluster was lost.
NO_WORKER_WAIT_SECONDS = 60.0
#: Rebuilds of one range in a row before the solver gives up.
MAX_REBUILDS = 3

#: Messages of the exceptions ``distributed`` raises for an actor whose worker is gone.
_LOST_MESSAGES = ("Unable to contact Actor's worker", "Worker holding Actor was lost")


class WorkerLostError(RuntimeError):
    """The worker holding a gradient partition is gone (raised and handled inside :class:`ActorGradients`)."""


def _is_lost_worker_error(exc):
    return isinstance(exc, (OSError, RuntimeError)) and any(text in str(exc) for text in _LOST_MESSAGES)


class ActorGradients:
    """The gradient spread over one actor per worker of ``client``; the interface of :class:`~._gradient.LocalGradients`.

    The row provider is sent to every worker, as its ``column_slab`` of the
    worker's range where it has one, so it must be picklable. ``G``, when
    given, is the gradient at ``prob.alpha0`` (a resumed checkpoint).

    A partition whose worker dies is rebuilt on another worker from
    ``alpha`` (see the module's description); the result is that of an
    uninterrupted run up to the rounding of the recomputed gradient.
    """

    def __init__(self, client, rows, prob, q, G=None):
        workers = self._alive_workers(client)
        if not workers:
            raise ValueError("The Dask client has no workers; start a cluster before solving.")
        self.client, self.rows, self.prob, self.q = client, rows, prob, q
        self.alpha = prob.alpha0.copy()
        self.ranges = partition_ranges(prob.n, len(workers))
        # The kernel rows held in the partitions' buffers: (indices, slots) of the last working set loaded.
        self.loaded = (np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp))
        support, weights = starting_support(prob.y, self.alpha) if G is None else (None, None)
        self.workers = list(workers[: len(self.ranges)])
        self.futures = [
            self._submit(worker, start, stop, support, weights, None if G is None else G[start:stop])
            for worker, (start, stop) in zip(self.workers, self.ranges)
        ]
        self.actors = [future.result() for future in self.futures]

    @staticmethod
    def _alive_workers(client):
        return sorted(client.scheduler_info(n_workers=-1)["workers"])

    def _submit(self, worker, start, stop, support, weights, G=None):
        prob = self.prob
        return self.client.submit(
            GradientPartition,
            provider_for_columns(self.rows, start, stop),
            prob.y[start:stop], prob.C[start:stop], prob.p[start:stop], self.alpha[start:stop],
            start, stop, self.q, support, weights, G,
            workers=[worker], actor=True, pure=False,
        )

    def close(self):
        """Release the actors and the column slabs they hold on the workers, now rather than at garbage collection."""
        self.actors = []
        if self.futures:
            # Each actor handle holds a future of its own: cancel the keys rather than drop one reference.
            self.client.cancel(self.futures)
        self.futures = []

    # -------------------------------------------------------------- calls
    def _start(self, i, method, args):
        try:
            return getattr(self.actors[i], method)(*args)
        except Exception as exc:  # the handle refuses calls once its worker is known lost
            if _is_lost_worker_error(exc):
                return None
            raise

    def _wait(self, i, call):
        """The result of ``call`` to partition ``i``; :class:`WorkerLostError` when its worker is gone."""
        if call is None:
            raise WorkerLostError(self.workers[i])
        while True:
            try:
                return call.result(timeout=POLL_SECONDS)
            except TimeoutError:
                # A call to a worker that died before the scheduler knew retries its connection for a while.
                if self.futures[i].status != "finished":
                    raise WorkerLostError(self.workers[i]) from None
            except Exception as exc:
                if _is_lost_worker_error(exc):
                    raise WorkerLostError(self.workers[i]) from exc
                raise

    def _all(self, method, *args):
        """Call ``method`` on every partition; a partition whose worker is lost is rebuilt and asked again.

        A lost ``update`` is not repeated: the rebuilt partition's gradient
        already includes the step (it is computed from ``alpha`` after it),
        so it is asked for its candidates only.
        """
        calls = [self._start(i, method, args) for i in range(len(self.actors))]
        results = []
        for i, call in enumerate(calls):
            for attempt in range(MAX_REBUILDS + 1):
                try:
                    results.append(self._wait(i, call))
                    break
                except WorkerLostError as lost:
                    if attempt == MAX_REBUILDS:
                        raise RuntimeError(
                            f"the workers holding samples {self.ranges[i][0]}:{self.ranges[i][1]} of the gradient "
                            f"were lost {MAX_REBUILDS + 1} times in a row; check the cluster's workers."
                        ) from lost
                    self._rebuild(i)
                    again_method, again_args = ("candidates", (args[-1],)) if method == "update" else (method, args)
                    call = self._start(i, again_method, again_args)
        return results

    # ------------------------------------------------------------ rebuild
    def _replacement_worker(self, i):
        """A live worker for partition ``i``: one holding no partition (a replacement) first, else the least loaded."""
        lost = self.workers[i]
        deadline = time.monotonic() + NO_WORKER_WAIT_SECONDS
        while True:
            alive = [w for w in self._alive_workers(self.client) if w != lost]
            if alive:
                load = {w: 0 for w in alive}
                for j, w in enumerate(self.workers):
                    if j != i and w in load:
                        load[w] += 1
                return min(alive, key=lambda w: (load[w], w))
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"every worker of the cluster was lost (the last, {lost}, held samples "
                    f"{self.ranges[i][0]}:{self.ranges[i][1]} of the gradient) and none joined within "
                    f"{NO_WORKER_WAIT_SECONDS:g} s; restart the workers and resume from a checkpoint."
                )
            time.sleep(0.5)

    def _rebuild(self, i):
        """Rebuild partition ``i`` on another worker from ``alpha``, with the rows of the last working set."""
        start, stop = self.ranges[i]
        lost = self.workers[i]
        try:
            self.client.cancel([self.futures[i]])
        except Exception:  # the key may be gone with its worker
            pass
        worker = self._replacement_worker(i)
        logger.warning(
            "dkernel.solver: the worker %s holding samples %d:%d of the gradient was lost; rebuilding that range "
            "on %s from alpha (G = Q alpha + p).", lost, start, stop, worker,
        )
        support, weights = starting_support(self.prob.y, self.alpha)
        self.workers[i] = worker
        self.futures[i] = self._submit(worker, start, stop, support, weights)
        self.actors[i] = self.futures[i].result()
        idx, slots = self.loaded
        if idx.size:
            self._wait(i, self._start(i, "fill_rows", (idx, slots)))

    # ---------------------------------------------------------- interface
    def candidates(self, k):
        return merge_partition_candidates(self._all("candidates", k), k)

    def load(self, B, new, new_slots, slots):
        parts = self._all("load", B, new, new_slots, slots)
        self.loaded = (B, slots)
        return assemble_working_set(parts, B.size)

    def update(self, B, slots, weights, alpha_B, k):
        """Apply the step on every partition and return the next iteration's merged candidates."""
        self.alpha[B] = alpha_B
        return merge_partition_candidates(self._all("update", B, slots, weights, alpha_B, k), k)

    def fill_rows(self, idx, slots):
        self._all("fill_rows", idx, slots)
        self.loaded = (idx, slots)

    def state(self):
        parts = self._all("state")
        return np.concatenate([a for a, _ in parts]), np.concatenate([g for _, g in parts])
