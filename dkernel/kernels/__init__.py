"""Kernel objects and their compiled block evaluation.

A kernel evaluates a block ``K(X, Z)`` through one BLAS product ``X Zᵀ`` and an
element-wise map, gives its diagonal without forming a block, and round-trips
through JSON. Every algorithm in dkernel works with every kernel through this
narrow interface (:mod:`._kernels`), user-defined kernels included.

=================== ==========================================================================
``_kernels``        :class:`Kernel` and the linear, polynomial, RBF, sigmoid and normalized
                    kernels; the registry (:func:`register_kernel`, :func:`get_kernel`)
``_widths``         the papers' RBF widths σ² as ``gamma`` (:func:`gamma_from_sigma2`)
``_blocks``         the arithmetic of a block: products ``X Zᵀ`` (BLAS, and why no kernel value's last bits
                    are promised), the RBF map and its exponential, RBF rows over few features summed
                    from the data, a square block's mirror; the passes compiled at install time
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
