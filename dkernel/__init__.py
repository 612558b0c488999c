"""dkernel: kernel methods at scale on Dask.

Kernels evaluated blockwise by Dask and stored in zarr (:class:`GramMatrix`),
feature-space centering (Meilă 2002: :class:`Centering`, :class:`CenteredGram`,
:func:`delta_b`), normalization (Graf & Borer 2001: :class:`NormalizedGram`,
:func:`graf_threshold`), kernel-target alignment (Kandola et al. 2002:
:func:`target_alignment`) and a block-coordinate SVM solver behind a
scikit-learn estimator (:class:`SVC`).

Where each concept lives:

=============================== ==========================================================================
``dkernel.kernels``             kernel objects (:class:`Kernel`, :func:`get_kernel`)
``dkernel._sources``            the Gram protocol; :class:`KernelGram` (on the fly, row cache), in-memory
                                and subset Grams, which are also the solver's row providers
``dkernel.gram``                :class:`GramMatrix`: blockwise Dask computation, zarr store
``dkernel.operators``           lazy views: :class:`CenteredGram`, :class:`ShiftedGram`,
                                :class:`NormalizedGram`
``dkernel.centering``           origin weights :class:`Centering`, ``h``, ``h0``, :func:`delta_b` (Meilă)
``dkernel.general_centering``   :func:`general_centering`, gradient ascent on a criterion (Meilă §5)
``dkernel.normalization``       :func:`graf_threshold`, :func:`graf_intercept` (Graf & Borer eq. 3)
``dkernel.alignment``           :func:`alignment`, :func:`target_alignment` and sampled estimates
``dkernel.solver``              the QP solver
``dkernel.svm``                 :class:`SVC`, :func:`load_model`
``dkernel.exceptions``          the errors dkernel raises
=============================== ==========================================================================

Importing dkernel runs no computation and starts no cluster.
"""

from ._sources import DenseGram, KernelGram
from .alignment import AlignmentEstimate, alignment, sampled_target_alignment, target_alignment
from .centering import Centering, decision_function_original_kernel, delta_b
from .exceptions import (
    ArtifactPathError,
    CorruptStoreError,
    DKernelError,
    EmptyInputError,
    FeatureMismatchError,
    IncompleteStoreError,
    InputFileError,
    InvalidKernelParameterError,
    NonFiniteInputError,
    StoreMismatchError,
    UnverifiableStoreError,
    UnverifiedStoreWarning,
)
from .general_centering import general_centering
from .gram import GramMatrix
from .kernels import (
    Kernel,
    LinearKernel,
    NormalizedKernel,
    PolynomialKernel,
    RBFKernel,
    SigmoidKernel,
    gamma_from_sigma2,
    get_kernel,
    kernel_from_dict,
    register_kernel,
)
from .normalization import graf_intercept, graf_threshold
from .operators import CenteredGram, NormalizedGram, ShiftedGram
from .svm import SVC, load_model

__version__ = "0.1.0"

__all__ = [
    "AlignmentEstimate",
    "ArtifactPathError",
    "CenteredGram",
    "Centering",
    "CorruptStoreError",
    "DKernelError",
    "DenseGram",
    "EmptyInputError",
    "FeatureMismatchError",
    "GramMatrix",
    "IncompleteStoreError",
    "InputFileError",
    "InvalidKernelParameterError",
    "Kernel",
    "KernelGram",
    "LinearKernel",
    "NonFiniteInputError",
    "NormalizedGram",
    "NormalizedKernel",
    "PolynomialKernel",
    "RBFKernel",
    "SVC",
    "ShiftedGram",
    "SigmoidKernel",
    "StoreMismatchError",
    "UnverifiableStoreError",
    "UnverifiedStoreWarning",
    "alignment",
    "decision_function_original_kernel",
    "delta_b",
    "gamma_from_sigma2",
    "general_centering",
    "get_kernel",
    "graf_intercept",
    "graf_threshold",
    "kernel_from_dict",
    "load_model",
    "register_kernel",
    "sampled_target_alignment",
    "target_alignment",
]
