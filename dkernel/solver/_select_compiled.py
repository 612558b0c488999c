"""The selection of :mod:`._select` over the active variables of one process, compiled.

:meth:`~._shrinking.ShrinkingGradients.candidates` runs once per outer
iteration. With NumPy it is some twenty calls on arrays of a few thousand
values, each holding the GIL: the binary problems of a one-vs-one fit, solved
in parallel threads, then wait on each other for it (USPS, 45 problems of
about 1500 samples, solved no faster on two threads than on one). Here it is
one call, compiled at install time (:mod:`_dkernel_compiled.select`), that
releases the GIL, with the same result to the bit and in the same order as
:func:`~._select.violation_sets`, :func:`~._select.extreme_violations` and
:func:`~._select.candidate_lists` (ties broken by the sample index), which
tests check.

Over many active variables (:data:`HEAP_MIN_ACTIVE` or more) the scan is
one pass that keeps the ``k`` most violating variables of each end in a
bounded heap: past the first few hundred variables a new one rarely beats
the ``k``-th kept, so the pass costs about a comparison per variable, and
``O(log k)`` where one does (variables in the worst order). Over fewer
variables (the problems of a one-vs-one fit), or for ``k`` above
:data:`HEAP_MAX_K`, each end is selected (a quickselect) and its ``k`` most
violating sorted.
"""

from _dkernel_compiled.select import HEAP_MAX_K, HEAP_MIN_ACTIVE, active_candidates

__all__ = ["HEAP_MAX_K", "HEAP_MIN_ACTIVE", "active_candidates"]
