"""Wall-clock timing of the benchmarks: every script measures its seconds with :func:`timed`.

Before the clock starts, garbage is collected and, on request, some fresh
memory is touched (:func:`touch_free_memory`), so that every timed call
starts from the same state whatever ran before it.

Importing this module imports nothing but the standard library: a fresh
process (``_fresh_fit.py``) times the import of the library it measures
with :func:`timed`, and numpy imported here first would shorten that time.
"""

import dataclasses
import gc
import math
import time

__all__ = ["LAST_PROCESS", "SETTLE_MIN_BYTES", "SETTLE_SECONDS", "LastProcess", "process_ended", "settle_memory",
           "timed", "touch_free_memory"]

#: Seconds of rest after a large fresh process, for the memory it freed to go back to the host
#: (``_fresh.py`` says why and what it measured).
SETTLE_SECONDS = 6.0
#: A process whose peak resident memory passed this many bytes is followed by :data:`SETTLE_SECONDS` of rest.
SETTLE_MIN_BYTES = 2**28  # a process of the tiny sets peaks at about 0.16 GB: the interpreter and its libraries


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


@dataclasses.dataclass
class LastProcess:
    """When the last fresh process ended, and its peak resident memory (bytes; None: unknown, as a failed one's)."""

    ended: float = -math.inf
    peak_bytes: float = 0


#: The last fresh process of this benchmark (``_fresh.run_fit`` keeps it).
LAST_PROCESS = LastProcess()


def process_ended(peak_bytes=None):
    """Keep the end of a fresh process, now, and its peak (None until known)."""
    LAST_PROCESS.ended, LAST_PROCESS.peak_bytes = time.monotonic(), peak_bytes


def settle_memory(last=None, *, sleep=time.sleep, clock=time.monotonic):
    """Rest until :data:`SETTLE_SECONDS` have passed since the last process ended, where its peak was large.

    Returns the seconds rested. ``last``: the :class:`LastProcess` to go by (:data:`LAST_PROCESS` when None).
    """
    last = LAST_PROCESS if last is None else last
    if last.peak_bytes is not None and last.peak_bytes < SETTLE_MIN_BYTES:
        return 0.0
    rest = max(0.0, SETTLE_SECONDS - (clock() - last.ended))
    if rest:
        sleep(rest)
    return rest
