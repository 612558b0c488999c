"""Exception and warning classes raised by dkernel.

Every error derives from :class:`DKernelError` and from the matching built-in
exception (``ValueError``, ``FileNotFoundError`` ...), so ``except ValueError``
keeps working for callers that do not know about dkernel.
"""

__all__ = [
    "InvalidLabelsError",
    "DKernelError",
    "InvalidKernelParameterError",
    "NonFiniteInputError",
    "EmptyInputError",
    "FeatureMismatchError",
    "StoreMismatchError",
    "IncompleteStoreError",
    "InputFileError",
    "ClusterStalledError",
    "SchedulerUnreachableError",
    "ClusterSpecError",
    "ClusterStartError",
    "ArtifactPathError",
    "CorruptStoreError",
    "UnverifiableStoreError",
    "UnverifiedStoreWarning",
    "RepairedStoreWarning",
    "CorruptModelError",
    "ModelFormatError",
    "UnverifiedModelWarning",
]


class DKernelError(Exception):
    """Base class of all dkernel errors."""


class InvalidLabelsError(DKernelError, ValueError):
    """Labels do not fit the data or the requested scheme (wrong length, a single class ...)."""


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


class CorruptStoreError(DKernelError, OSError):
    """Stored data do not match the checksums written with them, or a stored file cannot be decoded.

    ``path`` is the store, ``blocks`` the ``(i, j)`` blocks found bad and
    ``detail`` what was found. The message names the command that rewrites
    exactly those blocks.
    """

    def __init__(self, message, path=None, blocks=(), detail=None):
        super().__init__(message)
        self.path = path
        self.blocks = [tuple(int(v) for v in b) for b in blocks]
        self.detail = detail


class UnverifiableStoreError(DKernelError, ValueError):
    """A Gram store written without checksums (by an older dkernel) cannot be verified."""


class UnverifiedStoreWarning(UserWarning):
    """A Gram store written without checksums is read without verifying its data."""


class RepairedStoreWarning(UserWarning):
    """A fit found damaged blocks in the Gram store it reads, and computed them again before reading them."""


class CorruptModelError(DKernelError, OSError):
    """A saved model is damaged, or the path holds no dkernel model.

    Its arrays or metadata do not match the checksums written with them, a
    file of it is missing, truncated or cannot be decoded, or the folder is
    not a model at all. ``path`` is the model and ``detail`` what was found;
    a damaged model is never used: it must be fitted and saved again.
    """

    def __init__(self, message, path=None, detail=None):
        super().__init__(message)
        self.path = path
        self.detail = detail


class ModelFormatError(DKernelError, ValueError):
    """A model is read as another estimator than the one it holds, or is of a format version this dkernel lacks."""


class UnverifiedModelWarning(UserWarning):
    """A model written without checksums (by an older dkernel) is loaded without verifying its data."""


class InputFileError(DKernelError, OSError):
    """An input file is missing, unreadable or in an unknown format."""


class ClusterStalledError(DKernelError, RuntimeError):
    """A cluster run stopped making progress: every worker is paused (memory) or there are none."""


class SchedulerUnreachableError(DKernelError, OSError):
    """No Dask scheduler answered at the given address within the connection timeout."""


class ClusterSpecError(DKernelError, ValueError):
    """A cluster spec (``--cluster``, ``client=``) is malformed, names a missing file or needs a package."""


class ClusterStartError(DKernelError, RuntimeError):
    """A cluster engine (SLURM, PBS, SSH, Kubernetes) did not start its workers in time."""


class ArtifactPathError(DKernelError, FileExistsError):
    """An output path holds something dkernel does not replace.

    A file, a folder that is not a dkernel artifact, an artifact of another
    kind (a model where a Gram store is asked), or an artifact of the same
    kind without ``overwrite``. Nothing at the path is deleted.
    """
