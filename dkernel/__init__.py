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

Importing dkernel runs no computation, starts no cluster and imports the modules
behind these names only when a name is first used.
"""

import importlib

#: Where each public name lives: a module is imported when one of its names is
#: first used, so ``import dkernel`` loads neither Dask's array module, zarr,
#: numba nor distributed, and ``dkernel.SVC`` loads only what a fit needs.
_EXPORTS = {
    "._sources": ("DenseGram", "KernelGram"),
    ".alignment": ("AlignmentEstimate", "alignment", "sampled_target_alignment", "target_alignment"),
    ".centering": ("Centering", "decision_function_original_kernel", "delta_b"),
    ".exceptions": (
        "ArtifactPathError",
        "CorruptStoreError",
        "DKernelError",
        "EmptyInputError",
        "FeatureMismatchError",
        "IncompleteStoreError",
        "InputFileError",
        "InvalidKernelParameterError",
        "NonFiniteInputError",
        "StoreMismatchError",
        "UnverifiableStoreError",
        "UnverifiedStoreWarning",
    ),
    ".general_centering": ("general_centering",),
    ".gram": ("GramMatrix",),
    ".kernels": (
        "Kernel",
        "LinearKernel",
        "NormalizedKernel",
        "PolynomialKernel",
        "RBFKernel",
        "SigmoidKernel",
        "gamma_from_sigma2",
        "get_kernel",
        "kernel_from_dict",
        "register_kernel",
    ),
    ".normalization": ("graf_intercept", "graf_threshold"),
    ".operators": ("CenteredGram", "NormalizedGram", "ShiftedGram"),
    ".svm": ("SVC", "load_model"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name):
    """A public name or a subpackage (``dkernel.gram``), imported on first use (PEP 562)."""
    module = _MODULE_OF.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module, __name__), name)
    elif not name.startswith("__"):
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_MODULE_OF))


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
