"""Labels read from files: a NumPy ``.npy`` array, or text with one label per line (``.csv``: comma-separated).

The labels of a data matrix, or of the rows of a Gram store, in the order of
the data the Gram was computed from. Every failure raises
:class:`~dkernel.exceptions.InputFileError` naming the path.
"""

import numpy as np

from .exceptions import InputFileError

__all__ = ["load_labels"]


def load_labels(path):
    """The labels in the file ``path``, as a 1-D array."""
    path = str(path)
    try:
        if path.endswith(".npy"):
            y = np.load(path, allow_pickle=False)
        else:
            y = np.loadtxt(path, delimiter="," if path.endswith(".csv") else None)
    except (OSError, ValueError) as exc:
        raise InputFileError(f"cannot read labels from {path} (.npy, or text with one label per line): {exc}") from exc
    return y.ravel()
