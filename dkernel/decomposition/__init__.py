"""Kernel principal component analysis over the Gram sources and views of dkernel.

=================== ==========================================================================
``_kernel_pca``     :class:`KernelPCA` (Schölkopf, Smola & Müller 1998): eigenpairs of the Gram
                    centered on an origin in feature space (Meilă eq. 14; standard, class-balanced,
                    multiclass or sampled); projections of new points
                    through the centered test kernel
``_steps``          the steps of a fit: the origin, the centered Gram, scikit-learn's post-processing
                    of the eigenpairs (rounding taken as 0), projections of new points; scikit-learn's
                    evaluation of a kernel function; the memory rule of ``eigen_solver="auto"``
``_eigensolvers``   the k largest eigenpairs of the centered Gram: dense (LAPACK), ARPACK,
                    randomized subspace iteration and LOBPCG, the last two through blockwise
                    products with the base Gram only
``_inverse``        the pre-image map of ``inverse_transform``: kernel ridge regression from the
                    training projections back to the training data (scikit-learn's)
=================== ==========================================================================
"""

from .._runtime.exports import lazy_exports

_EXPORTS = {
    "._kernel_pca": ("KernelPCA",),
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
