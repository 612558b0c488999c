"""Block buffers owned by a worker process for the length of one run.

A Gram block task evaluates its block into a buffer and writes it to the
store; the next task on the same thread can reuse that buffer instead of
allocating (and page-faulting) a new block. The pool lives in the process
that runs the tasks (a worker, or this process with Dask's local
scheduler), under the run's id; a task's arguments carry only that id, never
the buffers, so nothing a finished task leaves behind (distributed keeps a
task's arguments while its future is held) holds block memory.

A pool holds at most as many buffers as tasks ran at once in that process
(one per worker thread). Buffers are keyed by their size in bytes, and a
smaller block (an edge block of the grid) takes a view on a full-size one.
:func:`release_pool` drops a run's pool once the run has ended.
"""

import contextlib
import threading

import numpy as np

__all__ = ["block_buffer", "release_pool", "pool_nbytes"]

_POOLS = {}
_POOLS_LOCK = threading.Lock()


class _BufferPool:
    """Free byte buffers of one run in this process, by size in bytes."""

    def __init__(self):
        self.free = {}
        self.lock = threading.Lock()

    def take(self, nbytes):
        with self.lock:
            free = self.free.get(nbytes)
            if free:
                return free.pop()
        return np.empty(nbytes, dtype=np.uint8)

    def give(self, buffer):
        with self.lock:
            self.free.setdefault(buffer.nbytes, []).append(buffer)

    def nbytes(self):
        with self.lock:
            return sum(buffer.nbytes for buffers in self.free.values() for buffer in buffers)


def _pool(run_id):
    with _POOLS_LOCK:
        pool = _POOLS.get(run_id)
        if pool is None:
            pool = _POOLS[run_id] = _BufferPool()
        return pool


@contextlib.contextmanager
def block_buffer(run_id, shape, dtype, capacity_bytes):
    """An uninitialized ``shape`` array of ``dtype`` on a reused buffer of ``capacity_bytes`` bytes.

    ``capacity_bytes`` is the size of the run's largest block, so that every
    block of the run, edge blocks included, fits in the same buffers. The
    buffer goes back to the run's pool on exit; if the run's pool was
    released meanwhile (the run ended), it is dropped.
    """
    dtype = np.dtype(dtype)
    need = int(np.prod(shape)) * dtype.itemsize
    capacity = max(int(capacity_bytes), need)
    pool = _pool(run_id)
    buffer = pool.take(capacity)
    try:
        yield buffer[:need].view(dtype).reshape(shape)
    finally:
        with _POOLS_LOCK:
            alive = _POOLS.get(run_id) is pool
        if alive:
            pool.give(buffer)


def release_pool(run_id):
    """Drop the buffers of run ``run_id`` in this process (run on every worker when the run ends)."""
    with _POOLS_LOCK:
        _POOLS.pop(run_id, None)


def pool_nbytes(run_id=None):
    """Bytes held by the free buffers of ``run_id`` (all runs: None) in this process."""
    with _POOLS_LOCK:
        pools = list(_POOLS.values()) if run_id is None else [_POOLS[run_id]] if run_id in _POOLS else []
    return sum(pool.nbytes() for pool in pools)
