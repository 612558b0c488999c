"""numba, loaded once per process with the garbage collector paused.

Importing numba and dispatching its first function (even one loaded from the
on-disk cache) builds numba's typing and target registries: hundreds of
thousands of Python objects. With the collector running, its collections of
the growing young generations take 0.3–0.4 s of the 0.8 s this costs on a
fresh process. The collector is paused while this module loads numba and
dispatches one trivial cached function, and resumed after (if it was on).
The compiled modules take ``njit`` from here, so the first of them to be
imported pays this once, with the collector paused.
"""

import gc

__all__ = ["njit"]


def _load_numba():
    """Import numba and build its registries (the first dispatch of a cached function); return ``numba.njit``."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        from numba import njit as numba_njit

        @numba_njit(cache=True)
        def _first_dispatch(value):
            return value

        _first_dispatch(0)
        return numba_njit
    finally:
        if collecting:
            gc.enable()


njit = _load_numba()
