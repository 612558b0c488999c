"""Wall-clock timing of the benchmarks: every script measures its seconds with :func:`timed`.

Before the clock starts, garbage is collected and, on request, some fresh
memory is touched (:func:`touch_free_memory`), so that every timed call
starts from the same state whatever ran before it.

Importing this module imports nothing but the standard library: a fresh
process (``_fresh_fit.py``) times the import of the library it measures
with :func:`timed`, and numpy imported here first would shorten that time.
"""

import gc
import time

__all__ = ["timed", "touch_free_memory"]


def touch_free_memory(nbytes):
    """Write to ``nbytes`` of fresh memory and free it again.

    On a virtual machine, memory the guest has left free for a few seconds
    may be handed back to the host, and the next use of those pages faults
    them in again (here: page-cache writes into such pages ran at 1.1 GB/s
    instead of 5.5 GB/s). Touching as much memory as the next run will use
    before each timed run puts the runs compared side by side in the same
    state: that of a process that keeps working.
    """
    if nbytes > 0:
        import numpy as np

        np.ones(int(nbytes) // 8).fill(0.0)


def timed(fn, warm_bytes=0):
    """``(fn(), seconds)``: the result of one call of ``fn`` and its wall time.

    ``warm_bytes`` of fresh memory are touched (:func:`touch_free_memory`)
    and garbage is collected before the clock starts.
    """
    touch_free_memory(warm_bytes)
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start
