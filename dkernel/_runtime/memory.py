"""Memory: large in-memory Gram arrays on transparent huge pages, and the peak memory of processes.

A whole Gram is written once, then read many times; its first write touches
every page. With 4 KiB pages that is one page fault per 4 KiB, and on a
virtual machine a fault costs microseconds: a 12000² float32 Gram (576 MB)
spends about 0.75 s faulting, longer than evaluating its kernel. Anonymous
memory mapped with ``MADV_HUGEPAGE`` is faulted 2 MiB at a time (0.16 s for
the same array). NumPy asks for huge pages on its own large allocations, but
through ``malloc``, whose mappings do not start on a 2 MiB boundary, and the
kernel then gives none; a mapping of our own does.

Faulting still costs 0.3 to 3 ms a huge page here (the kernel zeroes 2 MiB,
and compacts memory first where no free huge page is at hand), and 0.8 ms
a MiB of 4 KiB pages. A process that fits again and again (a grid search,
cross-validation) would pay it on every fit, for the same arrays: a tiny
fit's Gram and its ``Q`` are faulted afresh each time, as the allocator
hands their memory back to the OS between fits. So arrays from
:data:`MAPPED_MIN_BYTES` are mappings of their own (advised huge pages from
:data:`HUGE_PAGE_MIN_BYTES`), and a mapping released is kept for a later
array that fits in it, its first pages still faulted in: at most
:data:`KEPT_BYTES` of them over all the kept mappings, the rest given back
to the OS (``MADV_DONTNEED``), the oldest mapping unmapped first. A mapping
is kept only once no array or view of it is left (a finalizer on the
array), so two arrays never share memory.

Where the platform has no ``MADV_HUGEPAGE`` (macOS, Windows) or refuses the
mapping, the array comes from :func:`numpy.empty`.
"""

import mmap
import weakref

import numpy as np

__all__ = ["HUGE_PAGE_MIN_BYTES", "KEPT_BYTES", "MAPPED_MIN_BYTES", "PeakMemory", "empty_on_huge_pages", "fault_in",
           "peak_memory", "reset_peak_memory"]

#: Arrays of at least this many bytes are mappings of their own, kept for reuse once released; smaller ones
#: come from ``numpy.empty``.
MAPPED_MIN_BYTES = 2**18

#: Arrays of at least this many bytes are mapped on huge pages.
HUGE_PAGE_MIN_BYTES = 2**23

#: Bytes the kept mappings hold faulted in, at most, all together (64 MiB).
KEPT_BYTES = 2**26

_HUGE_PAGE_BYTES = 2**21

_kept = []  # mappings released, the most recent last


def empty_on_huge_pages(shape, dtype=np.float64):
    """An uninitialized C-contiguous array, on transparent huge pages where it is large enough and the OS allows.

    From :data:`MAPPED_MIN_BYTES` the memory is an anonymous private mapping
    (a kept one where one fits), advised ``MADV_HUGEPAGE`` from
    :data:`HUGE_PAGE_MIN_BYTES`; the array holds the mapping, which is kept
    or unmapped when the array (and every view of it) is gone.

    Examples
    --------
    >>> K = empty_on_huge_pages((4096, 4096), np.float32)
    >>> K.shape, K.dtype, K.flags.c_contiguous, K.flags.writeable
    ((4096, 4096), dtype('float32'), True, True)
    """
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if nbytes < MAPPED_MIN_BYTES or advice is None or not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.empty(shape, dtype=dtype)
    huge = nbytes >= HUGE_PAGE_MIN_BYTES
    unit = _HUGE_PAGE_BYTES if huge else mmap.PAGESIZE
    length = -(-nbytes // unit) * unit
    mapping = _take_kept(length)
    if mapping is None:
        try:
            mapping = mmap.mmap(-1, length, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            if huge:
                mapping.madvise(advice)
        except (OSError, ValueError):
            return np.empty(shape, dtype=dtype)
    values = np.frombuffer(mapping, dtype=dtype, count=nbytes // dtype.itemsize)
    weakref.finalize(values, _keep, mapping).atexit = False  # every view's base: the last of them to go
    return values.reshape(shape)


def fault_in(a):
    """Write ``0`` at one value of each page of the C-contiguous ``a``: the OS maps its memory now, not at the first
    writes of its values (NumPy's strided write runs without the GIL). ``a``'s values are undefined after."""
    flat = a.reshape(-1)
    flat[:: max(1, mmap.PAGESIZE // a.itemsize)] = 0
    return a


def _take_kept(length):
    """The smallest kept mapping of at least ``length`` bytes (no longer kept), or None.

    No lock: the garbage collector may run a finalizer (:func:`_keep`) in the
    middle of this function, which would wait on it forever. Another thread
    taking the same mapping first makes ``remove`` fail: then None.
    """
    fitting = [mapping for mapping in list(_kept) if len(mapping) >= length]
    if not fitting:
        return None
    mapping = min(fitting, key=len)
    try:
        _kept.remove(mapping)
    except ValueError:
        return None
    return mapping


def _keep(mapping):
    """Keep a released mapping, its pages past :data:`KEPT_BYTES` given back to the OS; unmap the oldest kept
    until those kept hold at most :data:`KEPT_BYTES` faulted in."""
    dontneed = getattr(mmap, "MADV_DONTNEED", None)
    if dontneed is None:
        return
    if len(mapping) > KEPT_BYTES:
        try:
            mapping.madvise(dontneed, KEPT_BYTES, len(mapping) - KEPT_BYTES)
        except (OSError, ValueError):
            return
    _kept.append(mapping)
    while sum(min(len(kept), KEPT_BYTES) for kept in list(_kept)) > KEPT_BYTES:
        try:
            del _kept[0]
        except IndexError:
            break


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
