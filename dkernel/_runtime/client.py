"""Small Dask helpers: which client to use, shipping data once, running tasks with progress.

``distributed`` is imported only when a client is involved, so that the
threaded scheduler works without starting (or importing) anything else.
"""

import contextlib
import functools
import os
import sys
import time

from .clusters import ClusterSpec, parse_cluster_spec
from .progress import TextProgress, local_progress
from .validation import is_dask_array
from ..exceptions import ClusterStalledError, ClusterStartError, SchedulerUnreachableError

__all__ = [
    "resolve_client",
    "put_data",
    "compute_with_progress",
    "gather_as_completed",
    "wait_with_progress",
    "start_local_cluster",
    "stall_timeout",
    "local_scheduler",
    "client_for",
    "scheduler_client",
    "connect",
    "connect_timeout",
    "open_client",
    "describe_cluster",
    "is_dask_array",
    "worker_memory_limit",
]

#: Seconds without a finished task, with every worker paused, before a run is
#: declared stalled (dask config ``dkernel.stall-timeout``).
DEFAULT_STALL_TIMEOUT = "120s"

#: Seconds to wait for a scheduler given by address before giving up (dask
#: config ``dkernel.connect-timeout``).
DEFAULT_CONNECT_TIMEOUT = "10s"

def resolve_client(client):
    """Return ``(client, owned)`` for a Client, a cluster spec, ``None`` or ``False``.

    ``None`` means the current default client if one exists (``Client(...)``
    makes itself the default), else no client: Dask's local scheduler.
    ``False`` always means no client, even when a default one exists. A
    string (or path) is a cluster spec of :mod:`dkernel._runtime.clusters`: a
    scheduler address (``"tcp://127.0.0.1:8786"``), ``"local"``, a scheduler
    file or a cluster YAML file, opened by :func:`open_client`; the client
    opened for it is ``owned``: the caller must close it, which also closes
    a cluster started for it.
    """
    if client is False:
        return None, False
    if client is None:
        if "distributed" not in sys.modules:
            return None, False
        import distributed

        try:
            return distributed.default_client(), False
        except ValueError:
            return None, False
    if isinstance(client, (str, os.PathLike, ClusterSpec)):
        return open_client(client, option="client="), True
    if getattr(client, "status", None) in ("closing", "closed"):
        raise ValueError(
            f"client {client!r} is closed; pass an open distributed.Client, a cluster spec (a scheduler address, "
            f"'local', a scheduler file or a cluster YAML file), None for the default client, or False for none."
        )
    if not hasattr(client, "submit"):
        raise TypeError(
            f"client must be a distributed.Client, a cluster spec (a scheduler address, 'local', a scheduler "
            f"file or a cluster YAML file), None or False; got {client!r}."
        )
    return client, False


def connect_timeout():
    """Seconds to wait for a scheduler given by address (dask config ``dkernel.connect-timeout``, default 10 s)."""
    import dask
    from dask.utils import parse_timedelta

    return parse_timedelta(dask.config.get("dkernel.connect-timeout", DEFAULT_CONNECT_TIMEOUT), default="s")


def connect(address, security=None):
    """A new (not default) client of the scheduler at ``address`` (``security``: a ``distributed.Security``).

    Raises :class:`SchedulerUnreachableError` when no scheduler answers
    within :func:`connect_timeout` seconds (a wrong host or port, or a
    scheduler that is not running), instead of retrying for minutes.
    """
    from dask.utils import format_time
    from distributed import Client

    timeout = connect_timeout()
    try:
        return Client(address, timeout=timeout, set_as_default=False, security=security)
    except OSError as exc:  # TimeoutError and refused connections
        raise SchedulerUnreachableError(
            f"no Dask scheduler answered at {address} within {format_time(timeout)} ({exc}); check the address, "
            f"or start the scheduler and its workers first."
        ) from None


@contextlib.contextmanager
def client_for(client):
    """:func:`resolve_client` as a context manager: a client opened from a spec is closed on exit.

    Inside, the client is the current one (``Client.as_current``), so that the
    actor handles its tasks return reach it even when it is not the default.
    """
    client, owned = resolve_client(client)
    try:
        with client.as_current() if client is not None else contextlib.nullcontext():
            yield client
    finally:
        if owned:
            client.close()


@contextlib.contextmanager
def scheduler_client(scheduler, n_workers=None, option="--cluster", **cluster_kwargs):
    """The client of a cluster spec, closed on exit with the cluster started for it (also on Ctrl-C).

    ``scheduler`` is ``None`` (no client: Dask's local scheduler) or a
    cluster spec of :mod:`dkernel._runtime.clusters` opened by :func:`open_client`
    (``"local"`` starts :func:`start_local_cluster` of ``n_workers`` worker
    processes, ``cluster_kwargs`` passed on). Errors name ``option`` and the
    spec: :class:`ClusterSpecError` for a malformed spec,
    :class:`SchedulerUnreachableError` for an address where no scheduler
    answers.
    """
    if scheduler is None:
        yield None
        return
    client = open_client(scheduler, option, n_workers=n_workers, **cluster_kwargs)
    try:
        yield client
    finally:
        client.close()


def put_data(array, client, name):
    """Put ``array`` into the graph once: scattered to the cluster, or one Delayed key.

    Every block task then refers to this one key, so the data are sent to each
    worker at most once instead of being embedded in every task. On a cluster
    every worker holds a replica, so that losing a worker (killed, out of
    memory) does not lose the data that the remaining tasks need.
    """
    import dask

    if client is not None:
        return scatter(client, array, broadcast=True)
    return dask.delayed(array, name=name, pure=True)


def scatter(client, data, **options):
    """``client.scatter(data, hash=False, **options)``, told in words where the cluster cannot take it.

    distributed scatters only to running workers: it times out when all are paused or there are none, and a
    worker pausing while replicas are made fails a broadcast ("Can not use replicate"); both are
    :class:`ClusterStalledError` (:func:`_raise_if_stalled`) after :func:`stall_timeout`. A connection closed
    while the data are sent (a worker restarted for going over its memory limit) is a :class:`RuntimeError`
    saying so.
    """
    try:
        return client.scatter(data, hash=False, timeout=stall_timeout(), **options)
    except (TimeoutError, ValueError, OSError) as exc:
        _raise_if_stalled(client, stall_timeout(), what="no worker accepted the data")
        if isinstance(exc, OSError) and not isinstance(exc, TimeoutError):
            raise RuntimeError(
                f"a worker's connection closed while the data were sent to it ({type(exc).__name__}): a worker "
                f"restarted for going over its memory_limit dies this way; give the workers more memory, or use "
                f"smaller blocks (chunk=, CLI --chunk), and run again."
            ) from exc
        raise


_LOCAL_SCHEDULERS = ("sync", "synchronous", "single-threaded", "threads", "threading", "processes", "multiprocessing")


def local_scheduler():
    """The scheduler for work that must run in this process: the configured local one, else threads.

    A distributed client makes itself Dask's default scheduler; work given
    ``client=False`` (or no client) must not go to it.
    """
    import dask

    configured = dask.config.get("scheduler", None)
    return configured if configured in _LOCAL_SCHEDULERS else "threads"


def stall_timeout():
    """Seconds a cluster run may go without a finished task while all its workers are paused."""
    import dask
    from dask.utils import parse_timedelta

    return parse_timedelta(dask.config.get("dkernel.stall-timeout", DEFAULT_STALL_TIMEOUT), default="s")


# --------------------------------------------------------------------------- #
# Running tasks
# --------------------------------------------------------------------------- #


class PollPause:
    """The pause between two looks at running futures: 1 ms, doubled after each look that found nothing new, up to
    :attr:`longest` (50 ms); back to 1 ms once something finished.

    A task of a few milliseconds is then seen done within about its own time,
    not after a fixed 50 ms (a cluster run of many small tasks, such as the
    solver's steps or sampled alignments, waited mostly on that pause), while
    a long task is looked at 20 times a second.
    """

    shortest = 0.001
    longest = 0.05

    def __init__(self):
        self.seconds = self.shortest

    def wait(self):
        time.sleep(self.seconds)
        self.seconds = min(2 * self.seconds, self.longest)

    def reset(self):
        self.seconds = self.shortest


def compute_with_progress(tasks, client, progress, label="tasks", on_result=None):
    """Compute a list of Delayed objects and return their results in order.

    ``on_result(k, result)``, when given, is called as soon as task ``k``
    has finished, on this machine (in this process with a cluster or a
    threaded run), so that a caller can save results as they come.

    Without a client, Dask's local scheduler runs them. With one, they run on
    the cluster and each result is gathered, and its future released, as soon
    as it finishes (:func:`gather_as_completed`): the cluster forgets a
    finished task and its arguments at once, so a long run holds no memory
    for the tasks it has done. On any error the remaining tasks are cancelled
    and the error is raised; a run whose workers are all paused (memory above
    their pause threshold) and finish nothing for :func:`stall_timeout`
    seconds raises :class:`ClusterStalledError` instead of waiting forever.
    """
    import dask

    if not tasks:
        return []
    bar = TextProgress(len(tasks), label, enabled=progress)
    try:
        if client is None:
            if on_result is not None:
                tasks = [dask.delayed(_reported, pure=False)(task, k, on_result) for k, task in enumerate(tasks)]
            with local_progress(bar):
                results = list(dask.compute(*tasks, scheduler=local_scheduler()))
            bar.update(len(results))
            return results
        futures = client.compute(tasks)
        del tasks
        return gather_as_completed(client, futures, bar, on_result)
    finally:
        bar.close()


def _reported(result, k, on_result):
    on_result(k, result)
    return result


def gather_as_completed(client, futures, progress=None, on_result=None):
    """The results of ``futures`` in their order, each gathered and released as it completes.

    Takes ownership of the list ``futures`` (it is emptied). ``progress`` is a
    :class:`TextProgress` or None. Raises the first failed task's error,
    :class:`ClusterStalledError` when every worker stays paused with nothing
    finishing, and cancels whatever is left on any error.
    """
    from distributed import as_completed

    position = {future.key: k for k, future in enumerate(futures)}
    results = [None] * len(futures)
    pending = as_completed(futures, loop=client.loop, with_results=True, raise_errors=False)
    futures.clear()
    n_done = 0
    last_finished = time.monotonic()
    timeout = stall_timeout()
    pause = PollPause()
    try:
        while not pending.is_empty():
            batch = pending.next_batch(block=False)
            if not batch:
                if time.monotonic() - last_finished > timeout:
                    _raise_if_stalled(client, timeout)
                    last_finished = time.monotonic()
                pause.wait()
                continue
            pause.reset()
            for future, result in batch:
                _raise_task_error(future, result, len(position))
                results[position[future.key]] = result
                if on_result is not None:
                    on_result(position[future.key], result)
            n_done += len(batch)
            del batch, future, result
            last_finished = time.monotonic()
            if progress is not None:
                progress.update(n_done)
        return results
    finally:
        left = list(pending.futures)
        if left:
            client.cancel(left)


def wait_with_progress(client, futures, progress=None):
    """Wait for ``futures`` that stay held afterwards (a persisted collection), with progress and stall checks.

    Raises the first failed task's error, or :class:`ClusterStalledError`
    like :func:`gather_as_completed`.
    """
    timeout = stall_timeout()
    last_done, last_change = -1, time.monotonic()
    pause = PollPause()
    while True:
        n_done = 0
        for future in futures:
            if future.status in ("error", "cancelled"):
                _raise_task_error(future, future.exception() if future.status == "error" else None, len(futures))
            n_done += future.status == "finished"
        now = time.monotonic()
        if n_done != last_done:
            last_done, last_change = n_done, now
            pause.reset()
            if progress is not None:
                progress.update(n_done)
        if n_done == len(futures):
            return
        if now - last_change > timeout:
            _raise_if_stalled(client, timeout)
            last_change = now
        pause.wait()


def _raise_task_error(future, result, n_tasks):
    if future.status == "error":
        if isinstance(result, BaseException):
            raise result
        _, exc, tb = result
        raise exc.with_traceback(tb)
    if future.status == "cancelled":
        raise RuntimeError(
            f"a task of {n_tasks} was cancelled before it finished: a worker died (a worker restarted for going "
            f"over its memory_limit dies this way: then give the workers more memory, or use smaller blocks, chunk= "
            f"or CLI --chunk) or the client disconnected. Running the same computation again resumes from what was "
            f"already written (the finished blocks of a Gram store); other work starts over."
        )


def _raise_if_stalled(client, timeout, what="no task finished"):
    """Raise :class:`ClusterStalledError` when no worker of ``client`` can run tasks (all paused, or none)."""
    import dask
    from dask.utils import format_time

    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    if not workers:
        raise ClusterStalledError(
            f"{what} in {format_time(timeout)} and the cluster has no workers now (none started, or they keep "
            f"dying: workers restarted for going over their memory_limit leave it without any for a while); start "
            f"workers, or give them more memory or smaller blocks (chunk=, CLI --chunk), and run again: the finished "
            f"blocks of a Gram store are kept."
        )
    paused = {address: info for address, info in workers.items() if str(info.get("status", "")).endswith("paused")}
    if len(paused) < len(workers):
        return  # some worker is running: slow tasks, not a stall
    details = "; ".join(
        f"{address}: {_memory(info.get('metrics', {}).get('memory'))} of {_memory(info.get('memory_limit'))}"
        for address, info in sorted(paused.items())
    )
    threshold = dask.config.get("distributed.worker.memory.pause", 0.8)
    raise ClusterStalledError(
        f"{what} in {format_time(timeout)}: all {len(workers)} workers are paused because their "
        f"memory is above the pause threshold ({threshold:.0%} of the memory limit) ({details}). Give the "
        f"workers a larger memory_limit, use smaller blocks (chunk=, CLI --chunk) or fewer threads per "
        f"worker; the blocks already written are kept and a new run resumes from them."
    )


def worker_memory_limit(client):
    """The smallest ``memory_limit`` of the workers of ``client`` in bytes; None without a client, without workers
    or without limits."""
    if client is None:
        return None
    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    limits = [int(info["memory_limit"]) for info in workers.values() if info.get("memory_limit")]
    return min(limits) if limits else None


def _memory(nbytes):
    from dask.utils import format_bytes

    return "?" if not nbytes else format_bytes(nbytes)


def start_local_cluster(n_workers=None, threads_per_worker=None, **kwargs):
    """A :class:`distributed.LocalCluster` of worker processes with every server on 127.0.0.1, and its client.

    The scheduler, the workers, their nannies and the HTTP servers that
    distributed starts beside them (the scheduler's on a free port instead
    of 8787) all listen on the loopback interface only; the dashboard is not
    started. Keyword arguments go to ``LocalCluster`` (``memory_limit=``
    ...); ``host=`` or ``scheduler_kwargs=`` given there replace these
    choices. Closing the client also closes the cluster.
    """
    from distributed import LocalCluster

    options = {
        "processes": True,
        "host": "127.0.0.1",
        # None: no dashboard, and no dashboard=True on the workers either; their HTTP servers bind to ``host``.
        "dashboard_address": None,
        "worker_dashboard_address": None,
        # The scheduler's HTTP server starts even without a dashboard; bind it explicitly.
        "scheduler_kwargs": {"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        **kwargs,
    }
    with _children_ignore_interrupts():
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker, **options)
    try:
        return cluster, _closing_client_class()(cluster)
    except BaseException:
        cluster.close()
        raise


#: Seconds a cluster engine may take to start its workers (dask config ``dkernel.cluster-start-timeout``).
DEFAULT_CLUSTER_START_TIMEOUT = "300s"


def open_client(spec, option="--cluster", n_workers=None, **local_kwargs):
    """A new (not default) client of the cluster spec ``spec``; closing it closes the cluster it started.

    ``spec`` is checked first (:func:`dkernel._runtime.clusters.parse_cluster_spec`,
    errors naming ``option``). ``local`` starts :func:`start_local_cluster`
    servers (``local:N``, else ``n_workers`` worker processes; ``local_kwargs``
    go to ``LocalCluster``); an address or a scheduler file connects
    (:func:`connect`); a cluster YAML file starts its engine (SLURM, PBS,
    SSH, Kubernetes) and waits until its workers have joined, at most
    ``dkernel.cluster-start-timeout`` (default 300 s), else
    :class:`ClusterStartError`.
    """
    spec = parse_cluster_spec(spec, option)
    security = _security(spec)
    if spec.kind == "local":
        return start_local_cluster(n_workers=spec.n_workers or n_workers, **local_kwargs)[1]
    if not spec.starts_cluster and spec.kind != "kubernetes":
        try:
            return connect(spec.address, security)
        except SchedulerUnreachableError as exc:
            raise SchedulerUnreachableError(f"{option} {spec.text}: {exc}") from None
    return _cluster_client(spec.start_engine(security), security, spec, option)


def _cluster_client(cluster, security, spec, option):
    """A client of ``cluster`` that closes it, once its workers have joined; the cluster is closed on failure."""
    try:
        client = _closing_client_class()(cluster, security=security, set_as_default=False)
    except BaseException:
        cluster.close()
        raise
    try:
        _wait_for_workers(client, spec, option)
    except BaseException:
        client.close()
        raise
    return client


def _wait_for_workers(client, spec, option):
    import dask
    from dask.utils import format_time, parse_timedelta

    expected = len(getattr(client.cluster, "plan", ())) or spec.options.get("workers") or 1
    timeout = parse_timedelta(dask.config.get("dkernel.cluster-start-timeout", DEFAULT_CLUSTER_START_TIMEOUT))
    try:
        client.wait_for_workers(expected, timeout=timeout)
    except TimeoutError:
        joined = len(client.scheduler_info(n_workers=-1).get("workers", {}))
        raise ClusterStartError(
            f"{option} {spec.text}: {joined} of {expected} workers joined the scheduler at "
            f"{client.scheduler.address} within {format_time(timeout)}; {_pending_hint(spec)}"
        ) from None


def _pending_hint(spec):
    if spec.kind in ("slurm", "pbs"):
        return "the batch jobs may wait in the queue (squeue / qstat), or their workers cannot reach the " \
               "scheduler (set 'interface' in the spec for workers on other nodes)."
    return "check the engine's logs; dask config dkernel.cluster-start-timeout sets how long to wait."


@functools.cache
def _closing_client_class():
    from distributed import Client

    class ClusterClient(Client):
        """A client of a cluster started for it: closing the client closes the cluster."""

        def close(self, *args, **kwargs):
            try:
                return super().close(*args, **kwargs)
            finally:
                cluster, self.cluster = self.cluster, None
                if cluster is not None and not self._is_finalizing():
                    cluster.close()

    return ClusterClient


def _security(spec):
    """The ``distributed.Security`` of a spec's ``security`` (None without one)."""
    if spec.security is None:
        return None
    from distributed.security import Security

    if spec.security is True:
        return Security.temporary()
    files = {"tls_ca_file": spec.security["ca-file"]}
    for role in ("client", "scheduler", "worker"):
        for part in ("cert", "key"):
            if (spec.security.get(role) or {}).get(part):
                files[f"tls_{role}_{part}"] = spec.security[role][part]
    return Security(require_encryption=True, **files)


def describe_cluster(client):
    """One line on the cluster a client's spec started (engine, scheduler address, workers, batch jobs), or None."""
    cluster = getattr(client, "cluster", None)
    if cluster is None:
        return None
    workers = len(client.scheduler_info(n_workers=-1).get("workers", {}))
    engine = type(cluster).__name__
    name = "a local cluster" if engine == "LocalCluster" else f"a {cluster.name if engine == 'SpecCluster' else engine}"
    jobs = [str(job.job_id) for job in getattr(cluster, "workers", {}).values() if getattr(job, "job_id", None)]
    return f"{name} at {cluster.scheduler_address} with {workers} worker{'' if workers == 1 else 's'}" + (
        f" (batch jobs {', '.join(jobs)})" if jobs else "")


@contextlib.contextmanager
def _children_ignore_interrupts():
    """Start processes that ignore Ctrl-C (SIGINT); this process handles it and closes them.

    A terminal sends Ctrl-C to the whole process group, so worker processes
    would otherwise each print a KeyboardInterrupt traceback while the
    command is already shutting them down. An ignored SIGINT is inherited by
    the processes started meanwhile (Python keeps it ignored); this process's
    own handler is restored on exit. A Ctrl-C during those seconds is lost,
    not deferred: press it again.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
