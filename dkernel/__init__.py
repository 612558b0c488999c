"""dkernel: kernel methods at scale on Dask.

Kernels evaluated blockwise by Dask and stored in zarr, feature-space
centering (Meilă 2002), normalization (Graf & Borer 2001), kernel-target
alignment (Kandola et al. 2002) and a block-coordinate SVM solver.
"""

from .exceptions import (
    DKernelError,
    EmptyInputError,
    FeatureMismatchError,
    IncompleteStoreError,
    InputFileError,
    InvalidKernelParameterError,
    NonFiniteInputError,
    StoreMismatchError,
)
from .kernels import (
    Kernel,
    LinearKernel,
    NormalizedKernel,
    PolynomialKernel,
    RBFKernel,
    SigmoidKernel,
    get_kernel,
    kernel_from_dict,
)

__version__ = "0.1.0"

__all__ = [
    "DKernelError",
    "EmptyInputError",
    "FeatureMismatchError",
    "IncompleteStoreError",
    "InputFileError",
    "InvalidKernelParameterError",
    "NonFiniteInputError",
    "StoreMismatchError",
    "Kernel",
    "LinearKernel",
    "NormalizedKernel",
    "PolynomialKernel",
    "RBFKernel",
    "SigmoidKernel",
    "get_kernel",
    "kernel_from_dict",
]
