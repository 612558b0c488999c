"""Kernel objects and their compiled block evaluation.

A kernel evaluates a block ``K(X, Z)`` through one BLAS product ``X Zᵀ`` and an
element-wise map, gives its diagonal without forming a block, and round-trips
through JSON. Every algorithm in dkernel works with every kernel through this
narrow interface (:mod:`._kernels`), user-defined kernels included.

=================== ==========================================================================
``_kernels``        :class:`Kernel` and the linear, polynomial, RBF, sigmoid and normalized
                    kernels; the registry (:func:`register_kernel`, :func:`get_kernel`)
``_widths``         the papers' RBF widths σ² as ``gamma`` (:func:`gamma_from_sigma2`)
``_products``       inner-product blocks ``X Zᵀ`` (BLAS), and why no kernel value's last bits are promised
``_rbf_map``        the RBF map from inner products to kernel values, in place
``_rbf_exp``        ``exp(t)``, ``t <= 0``, as a polynomial that compiles to vector code
``_rbf_direct``     RBF rows over few features from the data: distances summed directly, no product
``_rbf_compiled``   the RBF map and the direct rows, compiled at install time
``_mirror_compiled`` the mirror of a square block's upper triangle onto its lower one, compiled
=================== ==========================================================================
"""

from .._runtime.exports import lazy_exports

_EXPORTS = {
    "._kernels": ("KERNELS", "Kernel", "LinearKernel", "NormalizedKernel", "PolynomialKernel", "RBFKernel",
                  "SigmoidKernel", "describe_kernel", "get_kernel", "kernel_from_dict", "output_dtype",
                  "register_kernel"),
    "._widths": ("gamma_from_sigma2",),
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
