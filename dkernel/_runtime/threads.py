"""Threads: the cores a process may use, BLAS limited to one thread for a block, bands of work on a pool.

Where this process runs its own threads over one shared array (the row
bands of a Gram, the binary problems of a fit), each thread calls BLAS on
small products: BLAS's own threads would then oversubscribe the cores and
cost more to wake than the products take. :class:`BlasThreads` limits BLAS
to one thread for the length of a ``with`` block and restores it after.

Finding the BLAS libraries of a process (threadpoolctl reads the path of
every library loaded, in Python) takes 3 to 11 ms; a fit that limits BLAS
several times (once per binary problem) holds one :class:`BlasThreads` for
its length, which finds them once. Nothing is kept from one fit to the next.
"""

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed

import numpy as np

from .progress import TextProgress

__all__ = ["BlasThreads", "SplitRange", "run_bands", "single_blas_thread", "usable_cores"]


def usable_cores():
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class BlasThreads:
    """The BLAS libraries of this process, found when first limited, and their thread count limited on demand.

    One object serves one computation (a fit, a Gram); its :meth:`single`
    blocks may be entered from any thread.
    """

    def __init__(self):
        self._controller = None
        self._lock = threading.Lock()

    def controller(self):
        """The :class:`threadpoolctl.ThreadpoolController` of this process's libraries, found once per object."""
        with self._lock:
            if self._controller is None:
                from threadpoolctl import ThreadpoolController

                self._controller = ThreadpoolController()
            return self._controller

    @contextlib.contextmanager
    def single(self, enabled=True):
        """Run the block with BLAS limited to one thread, restoring the previous count after.

        Process-wide: enter it from the thread that starts the parallel work.
        ``enabled=False`` leaves BLAS as it is (and finds no library).
        """
        if not enabled:
            yield
            return
        with self.controller().limit(limits=1, user_api="blas"):
            yield


def single_blas_thread(enabled=True, blas=None):
    """:meth:`BlasThreads.single` of ``blas``, or of a new :class:`BlasThreads` when None."""
    return (blas or BlasThreads()).single(enabled)


def run_bands(band, starts, threads, description, progress=False, blas=None):
    """``band(start)`` for each of ``starts`` (the first first) on a pool of ``threads`` threads, one BLAS thread
    each (the bands themselves run in parallel; ``blas``: a :class:`BlasThreads`, a new one when None), the bands
    done shown on a bar (:class:`TextProgress`)."""
    bar = TextProgress(len(starts), description, enabled=progress)
    try:
        pool = ThreadPoolExecutor(max_workers=max(1, min(threads, len(starts))))
        with (blas or BlasThreads()).single(), pool:
            for done, finished in enumerate(as_completed([pool.submit(band, start) for start in starts]), 1):
                finished.result()
                bar.update(done)
    finally:
        bar.close()


class SplitRange:
    """One call's range ``[0, size)`` split between ``threads`` threads, this one included.

    The other threads are started on the first call that splits and stay
    until :meth:`close` (a later call starts them again): one object serves
    one computation (the rows of an on-demand Gram, the gradient steps of a
    solver), whose calls come one after another from one thread.
    """

    def __init__(self, threads, name):
        self.threads = max(1, int(threads))
        self.name = name
        self._pool = None

    def run(self, part, size, parts):
        """``part(a, b)`` on ``min(parts, threads)`` consecutive ranges of ``[0, size)``, the first in this thread."""
        parts = min(self.threads, parts)
        if parts < 2:
            return part(0, size)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.threads - 1, thread_name_prefix=self.name)
        bounds = np.linspace(0, size, parts + 1).astype(int)
        others = [self._pool.submit(part, a, b) for a, b in zip(bounds[1:-1], bounds[2:])]
        part(0, bounds[1])
        for other in others:
            other.result()

    def close(self):
        """Stop the other threads."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None
