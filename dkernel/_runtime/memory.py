"""The peak memory of a process, and of a cluster's worker processes.

The figures that the benchmarks, the pipelines' records and the tests give
for memory come from here: on Linux the kernel's own peak of a process
(``VmHWM``), reset at the start of what is measured (``/proc/self/clear_refs``),
so that no short peak is missed.
"""

__all__ = ["PeakMemory", "exact_peaks", "peak_memory", "reset_peak_memory"]


# --------------------------------------------------------------------------- #
# Peak memory of a process, and of a cluster's worker processes
# --------------------------------------------------------------------------- #


def exact_peaks():
    """Whether this system resets and reads a process's own resident peak (Linux ``/proc/self/clear_refs``)."""
    import os

    return os.path.exists("/proc/self/clear_refs")


def _status_bytes(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field + ":"))


def reset_peak_memory():
    """Start a new peak of this process's resident memory (Linux ``VmHWM``); return its resident memory now.

    Without ``/proc/self/clear_refs`` nothing is reset and None is returned:
    :func:`peak_memory` then gives the peak since the process started.
    """
    if not exact_peaks():
        return None
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_bytes("VmRSS")


def peak_memory():
    """This process's peak resident memory in bytes since :func:`reset_peak_memory` (or since it started)."""
    if exact_peaks():
        return _status_bytes("VmHWM")
    import resource
    import sys

    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss if sys.platform == "darwin" else maxrss * 1024  # bytes on macOS, KiB on Linux


def _monitor_count(dask_worker):
    return dask_worker.monitor.count


def _monitor_peak(counts, dask_worker):
    monitor = dask_worker.monitor
    recorded = monitor.range_query(counts.get(dask_worker.address, 0))["memory"]
    return max((rss for rss in recorded if rss is not None), default=monitor.get_process_memory())


class PeakMemory:
    """Peak resident memory during a ``with`` block: this process's (``client_bytes``) and each worker's.

    ``worker_bytes`` maps each worker's address to the peak of its process.
    On Linux the kernel's own peak of each process (``VmHWM``) is reset on
    entry and read on exit, so no short peak is missed; elsewhere a worker's
    peak is the largest resident memory its system monitor
    (``distributed.system_monitor``, every 0.5 s) recorded during the block,
    and this process's is its peak since it started. ``client=None``
    measures this process only.
    """

    def __init__(self, client=None):
        self.client = client
        self.exact = exact_peaks()
        self.client_bytes = None
        self.worker_bytes = {}
        self._counts = {}

    @property
    def largest_worker_bytes(self):
        """The largest peak of one worker process (None without workers)."""
        return max(self.worker_bytes.values(), default=None)

    def __enter__(self):
        reset_peak_memory()
        if self.client is not None:
            if self.exact:
                self.client.run(reset_peak_memory)
            else:
                self._counts = self.client.run(_monitor_count)
        return self

    def __exit__(self, *exc):
        if self.client is not None:
            self.worker_bytes = self.client.run(peak_memory if self.exact else _monitor_peak,
                                                *(() if self.exact else (self._counts,)))
        self.client_bytes = peak_memory()
