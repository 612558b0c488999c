"""SMO on a working set with one equality row ``sum_i y_i alpha_i = const``.

The sub-problem over the working set ``B`` (the other variables fixed) is a
C-SVC dual of size ``q`` with the local gradient ``G_B``. It is solved by
pairwise SMO steps with second-order working-pair selection (Fan, Chen & Lin
2005, WSS 2) and libsvm's two-variable update, compiled at install time
(:mod:`_dkernel_compiled.smo`) and run outside the GIL. With the sum of each
label fixed (the ν problems), :func:`smo_nu_subproblem` takes its pairs
within one label, as libsvm's ``Solver_NU``.
"""

from _dkernel_compiled.smo import TAU, select_pair, smo_nu_subproblem, smo_subproblem, update_pair

__all__ = ["TAU", "select_pair", "smo_nu_subproblem", "smo_subproblem", "update_pair"]
