"""dkernel's compiled inner loops, built from Cython and C when the package is installed.

Each module is the compiled half of one of dkernel's modules, which imports it
and documents its place in the algorithm:

=============  ===============================================================
``rbf``        the RBF kernel's element-wise map (``dkernel.kernels._blocks``)
``mirror``     a square block's upper triangle mirrored (``dkernel.kernels._blocks.mirror_upper``)
``on_demand``  the rest of an on-demand Gram (``dkernel.gram._on_demand_compiled``)
``smo``        SMO on a working set (``dkernel.solver._smo``)
``gradient``   the gradient step and the working set's block (``dkernel.solver._gradient_compiled``)
``select``     the working-set candidates (``dkernel.solver._select_compiled``)
``alignment``  a block's target-alignment sums (``dkernel.alignment._measures``)
=============  ===============================================================

Built ahead of time, the loops cost nothing to load: no compiler runs in a
user's process. Every loop runs without the GIL. This package sits beside
``dkernel``, not in it, so that a checkout of the sources (which holds no
build outputs) imports the installed loops.
"""
