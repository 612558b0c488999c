"""dkernel: kernel methods at scale on Dask.

Kernels evaluated blockwise by Dask and stored in zarr (:class:`GramMatrix`),
feature-space centering (Meilă 2002: :class:`Centering`, :class:`CenteredGram`,
:func:`delta_b`), normalization (Graf & Borer 2001: :class:`NormalizedGram`,
:func:`graf_threshold`), kernel-target alignment (Kandola et al. 2002:
:func:`target_alignment`) and a block-coordinate SVM solver behind a
scikit-learn estimators (:class:`SVC`, :class:`SVR`, :class:`OneClassSVM`,
:class:`NuSVR`, :class:`NuSVC`); kernel PCA with the
origin chosen (:class:`KernelPCA`).

Where each concept lives, in the order the data flow (X → kernel → Gram → view → solver → model):

=============================== ==========================================================================
``dkernel.kernels``             kernel objects (:class:`Kernel`, :func:`get_kernel`) and their compiled maps
``dkernel.gram``                the Gram protocol and its sources: :class:`DenseGram`, :class:`KernelGram`,
                                :class:`GramMatrix` (blockwise Dask computation, zarr store)
``dkernel.centering``           origins :class:`Centering`, ``h``, ``h0``, :func:`delta_b` (Meilă §3),
                                :func:`general_centering` (Meilă §5)
``dkernel.views``               lazy views: :class:`CenteredGram`, :class:`ShiftedGram`,
                                :class:`NormalizedGram` and Graf & Borer's b' (eq. 3), conformal scaling
``dkernel.alignment``           :func:`alignment`, :func:`target_alignment`, sampled estimates, and
                                Kandola's adaptation by alignment
``dkernel.solver``              the QP solver; it sees a Gram only through its rows
``dkernel.svm``                 :class:`SVC`, :class:`SVR`, :class:`OneClassSVM`, :class:`NuSVR`,
                                :class:`NuSVC`, :class:`ConformalSVC`,
                                :class:`GeneralizedBiasSVC`, the Parzen window classifier, :func:`load_model`
``dkernel.decomposition``       :class:`KernelPCA` on the Gram centered at a chosen origin (Meilă eq. 14)
``dkernel.datasets``            data set loaders and the papers' synthetic generators
``dkernel.cli``                 the ``dkernel`` command
``dkernel.exceptions``          the errors dkernel raises
=============================== ==========================================================================

Importing dkernel runs no computation, starts no cluster and imports the modules
behind these names only when a name is first used.
"""

from ._runtime.exports import lazy_exports

#: Where each public name lives: a module is imported when one of its names is
#: first used, so ``import dkernel`` loads neither Dask's array module, zarr
#: nor distributed, and ``dkernel.SVC`` loads only what a fit needs.
_EXPORTS = {
    ".kernels": ("Kernel", "LinearKernel", "NormalizedKernel", "PolynomialKernel", "RBFKernel", "SigmoidKernel",
                 "gamma_from_sigma2", "get_kernel", "kernel_from_dict", "register_kernel"),
    ".gram": ("DenseGram", "GramMatrix", "KernelGram"),
    ".centering": ("Centering", "decision_function_original_kernel", "delta_b", "general_centering"),
    ".views": ("CenteredGram", "NormalizedGram", "ShiftedGram", "graf_intercept", "graf_threshold"),
    ".alignment": ("AlignmentEstimate", "alignment", "sampled_target_alignment", "target_alignment"),
    ".svm": ("ConformalSVC", "GeneralizedBiasSVC", "ParzenWindowClassifier", "NuSVC", "NuSVR", "OneClassSVM", "SVC",
             "SVR", "load_model"),
    ".decomposition": ("KernelPCA",),
    ".exceptions": ("ArtifactPathError", "CorruptModelError", "CorruptStoreError", "DKernelError", "EmptyInputError",
                    "FeatureMismatchError", "IncompleteStoreError", "InputFileError", "InvalidKernelParameterError",
                    "ModelFormatError", "NonFiniteInputError", "StoreMismatchError", "UnverifiableStoreError",
                    "RepairedStoreWarning", "UnverifiedModelWarning", "UnverifiedStoreWarning"),
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)

__version__ = "0.1.0"
