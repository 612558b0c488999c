"""The gradient on the Dask workers: one :class:`~._gradient.GradientPartition` actor per worker, surviving worker loss.

:class:`ActorGradients` spreads ``G = Q alpha + p`` over contiguous ranges of
samples, one ``distributed`` actor per worker, and answers the outer loop
(:mod:`._loop`) with two calls per actor and iteration: ``load`` (the kernel
columns, ``alpha_B`` and ``G_B`` of the working set) and ``update`` (the step,
answered by the range's best violators for the next iteration).

The calls of one step go to all actors at once, in one exchange with the
client's event loop, and straight to the workers (``actor_execute`` on a
connection to each worker) unless the client was made with
``direct_to_workers=False``: through the scheduler, every kernel column of
the working set would cross the scheduler's process twice.

This process keeps ``alpha`` current: it knows ``alpha_B`` after every step.
When the worker of a partition dies (killed, out of memory, its machine
lost), the call to its actor fails: the connection closes (an ``OSError``),
or, for a call to a worker that died before the scheduler knew, the actor's
future leaves the ``finished`` state while the connection is retried
(checked every :data:`POLL_SECONDS`, so nothing hangs). The lost range is
then rebuilt on a surviving or replacement worker from this process's
``alpha``: its gradient ``G = Q alpha + p`` is recomputed from the rows of the
support vectors (:func:`~._gradient.initial_gradient`) and the kernel rows
of the last working set are read again into the slots they held, so the
loop continues where it was; a warning on the ``dkernel.solver`` logger
names the lost worker and the rebuilt range.
"""

import asyncio
import logging
import time
from dataclasses import dataclass

import numpy as np
from distributed.actor import ProxyRPC
from distributed.protocol import to_serialize

from ._gradient import (
    GradientPartition,
    assemble_working_set,
    merge_partition_candidates,
    partition_ranges,
    starting_support,
)
from ._rows import provider_for_columns

__all__ = ["ActorGradients"]

logger = logging.getLogger("dkernel.solver")

#: Seconds between checks that the worker of an unanswered call is still alive.
POLL_SECONDS = 2.0
#: Seconds to wait for a worker to join when every worker of the cluster was lost.
NO_WORKER_WAIT_SECONDS = 60.0
#: Rebuilds of one range in a row before the solver gives up.
MAX_REBUILDS = 3



@dataclass
class _Answer:
    """What one actor call came back with: a ``value``, an ``error`` raised by the method, or ``lost``."""

    value: object = None
    error: BaseException = None
    lost: bool = False


class ActorGradients:
    """The gradient spread over one actor per worker of ``client``; the interface of :class:`~._shrinking.ShrinkingGradients`.

    The row provider is sent to every worker, as its ``column_slab`` of the
    worker's range where it has one, so it must be picklable. ``G``, when
    given, is the gradient at ``prob.alpha0`` (a resumed checkpoint).

    A partition whose worker dies is rebuilt on another worker from
    ``alpha`` (see the module's description); the result is that of an
    uninterrupted run up to the rounding of the recomputed gradient.
    """

    def __init__(self, client, rows, prob, q, G=None):
        self.futures, self.scattered = [], []
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
        for future in self.futures:
            future.result()
        # Calls go straight to the workers unless the client says otherwise (a client outside the cluster's
        # network); through the scheduler every kernel column would cross its process twice.
        self.direct = client.direct_to_workers is not False
        self.reached = False

    @staticmethod
    def _alive_workers(client):
        return sorted(client.scheduler_info(n_workers=-1)["workers"])

    def _submit(self, worker, start, stop, support, weights, G=None):
        prob = self.prob
        # The provider holds the training data (or a column slab of the Gram): sent to its worker once, beside
        # the task graph rather than inside it.
        [provider] = self.client.scatter([provider_for_columns(self.rows, start, stop)], workers=[worker],
                                         hash=False)
        self.scattered.append(provider)
        return self.client.submit(
            GradientPartition,
            provider,
            prob.y[start:stop], prob.C[start:stop], prob.p[start:stop], self.alpha[start:stop],
            start, stop, self.q, support, weights, G,
            workers=[worker], actor=True, pure=False,
        )

    def close(self):
        """Release the actors and the column slabs they hold on the workers, now rather than at garbage collection."""
        if self.futures or self.scattered:
            # Each actor handle holds a future of its own: cancel the keys rather than drop one reference.
            self.client.cancel(self.futures + self.scattered)
        self.futures, self.scattered = [], []

    # -------------------------------------------------------------- calls
    def _rpc(self, i):
        if self.direct:
            return self.client.rpc(self.workers[i])
        return ProxyRPC(self.client.scheduler, self.workers[i])

    async def _call(self, i, method, args):
        try:
            out = await self._rpc(i).actor_execute(
                function=method, actor=self.futures[i].key, args=[to_serialize(arg) for arg in args], kwargs={}
            )
        except OSError:
            return _Answer(lost=True)
        except Exception as exc:  # through the scheduler, a worker it no longer knows is an error of the proxy
            if self.direct:
                raise
            return _Answer(lost=True, error=exc)
        if out["status"] == "OK":
            return _Answer(value=out["result"])
        return _Answer(error=out["exception"])

    async def _round(self, calls):
        """Run ``calls`` (``{i: (method, args)}``) on the actors at once; ``{i: _Answer}``.

        A call still unanswered after :data:`POLL_SECONDS` whose actor's
        future is no longer ``finished`` (its worker is gone: a connection to
        a dead worker is retried for a while) is abandoned as lost.
        """
        tasks = {i: asyncio.ensure_future(self._call(i, *call)) for i, call in calls.items()}
        while True:
            _, pending = await asyncio.wait(tasks.values(), timeout=POLL_SECONDS)
            if not pending:
                break
            for i, task in tasks.items():
                if not task.done() and self.futures[i].status != "finished":
                    task.cancel()
        return {i: _Answer(lost=True) if task.cancelled() else task.result() for i, task in tasks.items()}

    def _all(self, method, *args):
        """Call ``method`` on every partition (one exchange with the event loop); rebuild and ask again when one is lost.

        A lost ``update`` is not repeated: the rebuilt partition's gradient
        already includes the step (it is computed from ``alpha`` after it),
        so it is asked for its candidates only.
        """
        answers = self.client.sync(self._round, {i: (method, args) for i in range(len(self.futures))})
        if self.direct and not self.reached and any(answer.lost for answer in answers.values()):
            # The first direct calls failed while the workers live: this process cannot reach them (a client
            # outside the cluster's network); go through the scheduler from now on.
            if all(future.status == "finished" for future in self.futures):
                self.direct = False
                answers = self.client.sync(self._round, {i: (method, args) for i in range(len(self.futures))})
        self.reached = True
        results = []
        for i in range(len(self.futures)):
            answer, attempts = answers[i], 0
            while answer.lost:
                if attempts == MAX_REBUILDS:
                    start, stop = self.ranges[i]
                    raise RuntimeError(
                        f"the workers holding samples {start}:{stop} of the gradient were lost {attempts} times in a "
                        f"row; check the cluster's workers."
                    ) from answer.error
                attempts += 1
                if not self._rebuild(i):
                    continue
                again = ("candidates", (args[-1],)) if method == "update" else (method, args)
                answer = self.client.sync(self._round, {i: again})[i]
            if answer.error is not None:
                raise answer.error
            results.append(answer.value)
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
        """Rebuild partition ``i`` on another worker from ``alpha``, with the rows of the last working set.

        Returns False when that worker was lost as well (the caller tries again).
        """
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
        try:
            self.futures[i].result()
        except Exception:
            if self.futures[i].status == "error" and worker not in self._alive_workers(self.client):
                return False  # the new worker died too
            raise
        idx, slots = self.loaded
        if idx.size:
            answer = self.client.sync(self._round, {i: ("fill_rows", (idx, slots))})[i]
            if answer.lost:
                return False
            if answer.error is not None:
                raise answer.error
        return True

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
