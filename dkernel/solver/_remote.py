"""The outer loop of a distributed solve, run as a task on a worker: the client process only waits.

With a Dask client the gradient lives in one actor per worker
(:mod:`._actors`); what steers them each iteration (the working-set choice,
the sub-problem on ``K[B, B]``, the step) is small but frequent: two calls
to every actor per iteration. :func:`solve_on_worker` runs that loop in one
long-running task (``distributed.worker_client``: the task leaves the
worker's thread pool while it waits), so the calls stay inside the cluster's
network and the client (a laptop, a login node) neither spends CPU on them
nor waits on its own link to the cluster each iteration.

What the loop says reaches the client while it runs: its progress lines
(``verbose``) and its records on the ``dkernel.solver`` logger (a lost
worker, a resumed checkpoint) are sent as events on a topic of this solve
(``Worker.log_event``) and written or logged again in the client process.

A worker holding the loop that dies is a task lost with its worker: the
scheduler runs it again on another worker, from the start or from the
checkpoint. A client that disconnects releases the task: the loop sees it at
its next iteration and stops, so a resumed run never shares a checkpoint with
an abandoned one.
"""

import logging
import os
import sys
import threading
import uuid

__all__ = ["solve_on_worker"]

logger = logging.getLogger("dkernel.solver")

#: Times the loop is run again after the worker running it was lost, before the solve fails.
MAX_LOOP_RESTARTS = 3


class SolveAbandoned(RuntimeError):
    """The client that asked for the solve released it (it disconnected or was killed)."""


class _Problem:
    """The arguments of one solve, scattered to the cluster once (the row provider may hold the data)."""

    def __init__(self, solve, rows, prob, q, options):
        self.solve, self.rows, self.prob, self.q, self.options = solve, rows, prob, q, options


class _EventStream:
    """A text stream whose writes become events of ``topic``: the loop's progress lines, shown by the client."""

    def __init__(self, worker, topic):
        self.worker, self.topic = worker, topic

    def write(self, text):
        if text:
            self.worker.log_event(self.topic, ("text", text))

    def flush(self):
        """Nothing is buffered: each write is an event."""

    def isatty(self):
        return False


class _EventHandler(logging.Handler):
    """Send the records of this thread (the solve's loop) at ``level`` and above as events of ``topic``."""

    def __init__(self, worker, topic, level):
        super().__init__(level=level)
        self.worker, self.topic, self.thread = worker, topic, threading.get_ident()

    def emit(self, record):
        if record.thread == self.thread:
            self.worker.log_event(self.topic, ("log", record.levelno, record.getMessage()))


def _show_event(event):
    """Write or log again, in the client process, what the loop on the worker said."""
    _, message = event
    if message[0] == "text":
        sys.stderr.write(message[1])
        sys.stderr.flush()
    else:
        logger.log(message[1], message[2])


def _abandoned_check(worker, key, callback):
    """The loop's callback: raise :class:`SolveAbandoned` once the task ``key`` is no longer wanted, else ``callback``."""

    def check(iteration, alpha, gap):
        task = worker.state.tasks.get(key)
        if task is None or task.state in ("cancelled", "released", "forgotten"):
            raise SolveAbandoned(f"the client released the solve at iteration {iteration}; the loop stops")
        return callback is not None and callback(iteration, alpha, gap)

    return check


def _coordinate(problem, client_pid, client_level, topic):
    """The task: the outer loop on this worker, with a client of the worker for the actor calls."""
    from distributed import get_worker, worker_client
    from distributed.worker import thread_state

    worker = get_worker()
    key = thread_state.key
    here = os.getpid() == client_pid  # a cluster in the client's process: its stderr and loggers are ours
    handler, level = None if here else _EventHandler(worker, topic, client_level), logger.level
    if handler is not None:
        logger.addHandler(handler)
        logger.setLevel(min(client_level, logger.getEffectiveLevel()))  # what the client's logger would show
    options = dict(problem.options)
    options["callback"] = _abandoned_check(worker, key, options["callback"])
    if options["verbose"] and not here:
        options["verbose"] = _EventStream(worker, topic)
    try:
        with worker_client() as client:
            return problem.solve(problem.rows, problem.prob, problem.q, client=client, **options)
    finally:
        if handler is not None:
            logger.removeHandler(handler)
            logger.setLevel(level)


def solve_on_worker(solve, client, rows, prob, q, options):
    """``solve(rows, prob, q, client=..., **options)`` (:func:`~._solve.label_constraint_solve`) on a worker.

    The gradient is held by ``client``'s workers, the loop runs in a task on
    one of them. ``prob`` and ``q`` are the validated problem and working-set size;
    ``options`` the loop's keyword arguments (a ``callback`` is called on
    the worker). The problem goes to the cluster once (scattered); the
    loop's output comes back as the task's value. When the worker running
    the loop is lost (with the scattered problem it held), the loop is run
    again on another worker, from the checkpoint where there is one, up to
    :data:`MAX_LOOP_RESTARTS` times.
    """
    from distributed import KilledWorker
    from distributed.client import FutureCancelledError

    topic = f"dkernel-solver-{uuid.uuid4().hex}"
    client.subscribe_topic(topic, _show_event)
    try:
        for restart in range(MAX_LOOP_RESTARTS + 1):
            try:
                return _run_loop_task(client, _Problem(solve, rows, prob, q, options), topic)
            except (FutureCancelledError, KilledWorker) as lost:
                if restart == MAX_LOOP_RESTARTS:
                    raise RuntimeError(
                        f"the worker running the solver's loop was lost {restart + 1} times; check the cluster's "
                        f"workers (a checkpoint= lets a new run resume)."
                    ) from lost
                logger.warning("dkernel.solver: the worker running the solver's loop was lost (%s); running the "
                               "loop again on another worker%s.", type(lost).__name__,
                               " from the checkpoint" if options.get("checkpoint") is not None else "")
    finally:
        client.unsubscribe_topic(topic)


def _run_loop_task(client, problem, topic):
    from .._runtime.client import scatter

    [data] = scatter(client, [problem])
    future = client.submit(_coordinate, data, os.getpid(), logger.getEffectiveLevel(), topic, pure=False,
                           key=f"dkernel-solve-{uuid.uuid4().hex}")
    try:
        return future.result()
    finally:
        client.cancel([future, data])
