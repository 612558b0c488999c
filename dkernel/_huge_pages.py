"""Large in-memory Gram arrays allocated on transparent huge pages.

A whole Gram is written once, then read many times; its first write touches
every page. With 4 KiB pages that is one page fault per 4 KiB, and on a
virtual machine a fault costs microseconds: a 12000² float32 Gram (576 MB)
spends about 0.75 s faulting, longer than evaluating its kernel. Anonymous
memory mapped with ``MADV_HUGEPAGE`` is faulted 2 MiB at a time (0.16 s for
the same array). NumPy asks for huge pages on its own large allocations, but
through ``malloc``, whose mappings do not start on a 2 MiB boundary, and the
kernel then gives none; a mapping of our own does.

Where the platform has no ``MADV_HUGEPAGE`` (macOS, Windows) or refuses the
mapping, the array comes from :func:`numpy.empty`.
"""

import mmap

import numpy as np

__all__ = ["HUGE_PAGE_MIN_BYTES", "empty_on_huge_pages"]

#: Arrays of at least this many bytes are mapped on huge pages; smaller ones come from ``numpy.empty``.
HUGE_PAGE_MIN_BYTES = 2**23

_HUGE_PAGE_BYTES = 2**21


def empty_on_huge_pages(shape, dtype=np.float64):
    """An uninitialized C-contiguous array, on transparent huge pages where the OS allows it.

    The memory is an anonymous private mapping advised ``MADV_HUGEPAGE``;
    the array holds the mapping, which is unmapped when the array (and
    every view of it) is gone.

    Examples
    --------
    >>> K = empty_on_huge_pages((4096, 4096), np.float32)
    >>> K.shape, K.dtype, K.flags.c_contiguous, K.flags.writeable
    ((4096, 4096), dtype('float32'), True, True)
    """
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if nbytes < HUGE_PAGE_MIN_BYTES or advice is None or not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.empty(shape, dtype=dtype)
    length = -(-nbytes // _HUGE_PAGE_BYTES) * _HUGE_PAGE_BYTES
    try:
        mapping = mmap.mmap(-1, length, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        mapping.madvise(advice)
    except (OSError, ValueError):
        return np.empty(shape, dtype=dtype)
    return np.frombuffer(mapping, dtype=dtype, count=nbytes // dtype.itemsize).reshape(shape)
