"""The SVM dual QP: working-set selection, numba SMO, distributed gradient updates.

The solver sees the kernel only through a row provider (``n``,
``rows(idx)``, ``diag()``), so in-memory arrays, on-the-fly kernels and
zarr-backed or lazily transformed Gram matrices plug in unchanged.
"""

from ._decomposition import solve_qp
from ._distributed import solve_qp_distributed
from ._qp import QPResult
from ._rows import DenseRows, KernelRows

__all__ = ["DenseRows", "KernelRows", "QPResult", "solve_qp", "solve_qp_distributed"]
