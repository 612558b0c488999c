"""Small Dask helpers: which client to use, shipping data once, progress display.

``distributed`` is imported only when a client is involved, so that the
threaded scheduler works without starting (or importing) anything else.
"""

import contextlib
import sys

import dask

__all__ = ["resolve_client", "put_data", "compute_with_progress", "start_local_cluster"]


def resolve_client(client):
    """Return ``(client, owned)`` for a Client, an address string, or ``None``.

    ``None`` means the current default client if one exists (``Client(...)``
    makes itself the default), else no client: Dask's local scheduler.
    ``owned`` is True when the client was opened here and must be closed by
    the caller.
    """
    if client is None:
        if "distributed" not in sys.modules:
            return None, False
        import distributed

        try:
            return distributed.default_client(), False
        except ValueError:
            return None, False
    if isinstance(client, str):
        from distributed import Client

        return Client(client), True
    return client, False


def put_data(array, client, name):
    """Put ``array`` into the graph once: scattered to the cluster, or one Delayed key.

    Every block task then refers to this one key, so the data are sent to each
    worker at most once instead of being embedded in every task. On a cluster
    every worker holds a replica, so that losing a worker (killed, out of
    memory) does not lose the data that the remaining tasks need.
    """
    if client is not None:
        return client.scatter(array, broadcast=True, hash=False)
    return dask.delayed(array, name=name, pure=True)


def compute_with_progress(tasks, client, progress):
    """Compute a list of Delayed objects and return their results in order.

    With a client, the tasks run on the cluster and :func:`distributed.progress`
    shows a text bar; without one, Dask's local scheduler runs them under a
    :class:`dask.diagnostics.ProgressBar`. On any error the remaining tasks are
    cancelled and the error is raised.
    """
    if not tasks:
        return []
    if client is None:
        bar = contextlib.nullcontext()
        if progress:
            from dask.diagnostics import ProgressBar

            bar = ProgressBar()
        with bar:
            return list(dask.compute(*tasks))
    from distributed import wait

    futures = client.compute(tasks)
    try:
        if progress:
            from distributed import progress as distributed_progress

            distributed_progress(futures, notebook=False)
        try:
            wait(futures)
        except Exception:  # noqa: BLE001
            # A lost worker can surface here as a cancellation of some other task;
            # the first failed task's own error (KilledWorker, ...) is raised below.
            pass
        _raise_first_task_error(futures)
        return client.gather(futures)
    finally:
        client.cancel([f for f in futures if not f.done()])


def _raise_first_task_error(futures):
    """Raise the error of the first failed task (e.g. KilledWorker), not a later cancellation."""
    for future in futures:
        if future.status == "error":
            future.result()
    cancelled = [f for f in futures if f.status == "cancelled"]
    if cancelled:
        raise RuntimeError(
            f"{len(cancelled)} of {len(futures)} tasks were cancelled before they finished (a worker died or the "
            f"client disconnected); run the same computation again to resume from the blocks already written."
        )


def start_local_cluster(n_workers=None, threads_per_worker=None):
    """A :class:`distributed.LocalCluster` of worker processes bound to 127.0.0.1, and its client.

    The dashboard is not started, so that nothing listens beyond the scheduler
    and worker ports on the loopback interface.
    """
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=n_workers,
        threads_per_worker=threads_per_worker,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    )
    return cluster, Client(cluster)
