"""Threads: the cores a process may use, BLAS limited to one thread for a block, bands of work on a pool.

Where this process runs its own threads over one shared array (the row
bands of a Gram, the binary problems of a fit), each thread calls BLAS on
small products: BLAS's own threads would then oversubscribe the cores and
cost more to wake than the products take. :class:`BlasThreads` limits BLAS
to one thread for the length of a ``with`` block and restores it after.

Finding the BLAS libraries of a process takes threadpoolctl 6 to 8 ms in a
fit's process: it resolves the path of every library loaded (over 200),
though on Linux the kernel lists them resolved. :func:`blas_controller` hands
it only those whose file name is a BLAS library's (2 to 3 ms). A fit that
limits BLAS several times (once per binary problem) holds one
:class:`BlasThreads` for its length, which finds them once. Nothing is kept
from one fit to the next.
"""

import contextlib
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed

import numpy as np

from .progress import TextProgress

__all__ = ["BlasThreads", "SplitRange", "blas_controller", "run_bands", "single_blas_thread", "usable_cores"]


def usable_cores():
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


#: The path of each file mapped in a process, as Linux lists them in ``/proc/self/maps`` (resolved, no symlink).
MAPPED_PATH = re.compile(rb"^\S+ \S+ \S+ \S+ \S+ +(/[^\n]*)$", re.MULTILINE)


def blas_controller(maps="/proc/self/maps"):
    """A :class:`threadpoolctl.ThreadpoolController` of the BLAS libraries loaded in this process.

    threadpoolctl's own search resolves the path of every library loaded
    (its symlinks: a BLAS may be loaded through a generic name) before
    reading its file name. The paths Linux lists in ``maps`` are resolved
    already: only those whose file name starts as a BLAS library's
    (threadpoolctl's own prefixes) are handed to threadpoolctl, which
    checks their symbols as it always does. Without ``maps`` (not Linux), or
    with a threadpoolctl whose internals differ, its whole search.
    """
    import threadpoolctl

    controllers = getattr(threadpoolctl, "_ALL_CONTROLLERS", None)
    try:
        with open(maps, "rb") as f:
            listed = f.read()
        prefixes = tuple(prefix for c in controllers if c.user_api == "blas" for prefix in c.filename_prefixes)
        controller = threadpoolctl.ThreadpoolController._from_controllers([])
        add = controller._make_controller_from_path
    except (OSError, TypeError, AttributeError):
        return threadpoolctl.ThreadpoolController()
    for path in sorted(set(MAPPED_PATH.findall(listed))):
        path = os.fsdecode(path)
        if os.path.basename(path).lower().startswith(prefixes):
            add(path)
    return controller


class BlasThreads:
    """The BLAS libraries of this process, found when first limited, and their thread count limited on demand.

    One object serves one computation (a fit, a Gram); its :meth:`single`
    blocks may be entered from any thread.
    """

    def __init__(self):
        self._controller = None
        self._lock = threading.Lock()

    def controller(self):
        """The :func:`blas_controller` of this process's libraries, found once per object."""
        with self._lock:
            if self._controller is None:
                self._controller = blas_controller()
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
