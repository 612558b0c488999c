"""Exception and warning classes raised by dkernel.

Every error derives from :class:`DKernelError` and from the matching built-in
exception (``ValueError``, ``FileNotFoundError`` ...), so ``except ValueError``
keeps working for callers that do not know about dkernel.
"""

__all__ = [
    "DKernelError",
    "InvalidKernelParameterError",
    "NonFiniteInputError",
    "EmptyInputError",
    "FeatureMismatchError",
    "StoreMismatchError",
    "IncompleteStoreError",
    "InputFileError",
    "ClusterStalledError",
]


class DKernelError(Exception):
    """Base class of all dkernel errors."""


class InvalidKernelParameterError(DKernelError, ValueError):
    """A kernel parameter is out of its valid range (e.g. ``gamma <= 0``)."""


class NonFiniteInputError(DKernelError, ValueError):
    """The data contain NaN or infinite values."""


class EmptyInputError(DKernelError, ValueError):
    """The data have no rows or no features."""


class FeatureMismatchError(DKernelError, ValueError):
    """Two data matrices do not have the same number of features."""


class StoreMismatchError(DKernelError, ValueError):
    """An existing Gram store was built from other data, another kernel or other parameters."""


class IncompleteStoreError(DKernelError, RuntimeError):
    """A Gram store is read where some of its blocks have not been computed yet."""


class InputFileError(DKernelError, OSError):
    """An input file is missing, unreadable or in an unknown format."""


class ClusterStalledError(DKernelError, RuntimeError):
    """A cluster run stopped making progress: every worker is paused (memory) or there are none."""
