"""The SVM dual QP, solved by block-coordinate decomposition.

.. math::

    \\min_\\alpha \\tfrac12 \\alpha^\\top Q \\alpha + p^\\top \\alpha
    \\quad\\text{s.t.}\\quad 0 \\le \\alpha_i \\le C_i,\\; E\\alpha = e,
    \\qquad Q_{ij} = y_i y_j K_{ij}.

Each outer iteration (:mod:`._loop`) picks a working set by maximal KKT
violation (the maximal violating pairs of Keerthi et al. and libsvm,
:mod:`._select`), solves the sub-problem on it with the other variables fixed
(a compiled SMO for the one row ``y^T alpha = const``, :mod:`._smo`, and for
two rows that fix the sum of each label, libsvm's ν problems, with its pairs
taken within a label; an exact active-set method for other rows,
:mod:`._active_set`) and updates the
gradient ``G = Q alpha + p``. The gradient lives in this process or, given a
Dask client, on the workers (the strategies of :mod:`._gradient`); the bias
comes from the final gradient (:mod:`._bias`). On a cluster a worker's loss
is survived (:mod:`._actors`); a :class:`Checkpoint` keeps the state on disk
so that a killed run resumes (:mod:`._checkpoint`).

The solver sees the kernel only through a row provider (``n``,
``rows(idx)``, ``diag()``, optionally ``submatrix`` and ``column_slab``;
:mod:`._rows`), so in-memory arrays and on-the-fly kernels
(:class:`dkernel.DenseGram`, :class:`dkernel.KernelGram`), zarr-backed Gram
matrices and lazily transformed views plug in unchanged.
"""

from .._runtime.exports import lazy_exports
from ._qp import QPResult
from ._solve import solve_qp, solve_qp_distributed

# A solve without a checkpoint loads none of the checkpoint's code.
__getattr__, __dir__ = lazy_exports(__name__, {"._checkpoint": ("Checkpoint",)})[:2]
__all__ = ["Checkpoint", "QPResult", "solve_qp", "solve_qp_distributed"]
