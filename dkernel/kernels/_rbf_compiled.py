"""The RBF kernel's element-wise map compiled at install time: from products ``xᵀz`` to kernel values in one pass.

Each of NumPy's element-wise steps is a pass over the whole block: on a Gram
of a few features, those passes and NumPy's scalar float64 ``exp`` cost several
times the BLAS product. The compiled loops (:mod:`_dkernel_compiled.rbf`, C
vectorized for AVX-512 or AVX2 where the CPU has them) run the steps, distance,
clip, scale and the exponential of :mod:`dkernel.kernels._rbf_exp`, in one pass
over each row, outside the GIL; a Gram's tile is written with its mirror in the
same pass. Rows over few features are evaluated from the data directly, the
squared distance summed feature by feature.
"""

from _dkernel_compiled.rbf import (
    TILE_PASS_ROWS,
    exp_nonpositive_into,
    rbf_direct_rows_into,
    rbf_tile_into_gram,
    rbf_values_into,
)

__all__ = ["TILE_PASS_ROWS", "exp_nonpositive_into", "rbf_direct_rows_into", "rbf_tile_into_gram", "rbf_values_into"]
