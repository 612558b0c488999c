"""Reading the user's files: data matrices (.npy, .npz, svmlight/libsvm, .csv) and labels.

Labels are a NumPy ``.npy`` array, or text with one label per line (``.csv``:
comma-separated): the labels of a data matrix, or of the rows of a Gram store,
in the order of the data the Gram was computed from.

Every failure (missing file, unknown extension, unparsable content) raises
:class:`InputFileError` naming the path (and, for data, the supported formats).
"""

import os

import numpy as np

from ..exceptions import InputFileError

__all__ = ["load_input", "load_labels", "SUPPORTED_FORMATS"]

SUPPORTED_FORMATS = {
    ".npy": "NumPy array (n_samples, n_features)",
    ".npz": "NumPy archive with an array 'X' (and optionally 'y'), or a single array",
    ".svmlight": "svmlight/libsvm text, 'label index:value ...' (read as a sparse CSR matrix)",
    ".libsvm": "svmlight/libsvm text (same as .svmlight)",
    ".svm": "svmlight/libsvm text (same as .svmlight)",
    ".csv": "comma-separated numbers, one sample per line; a header line is skipped",
}


def _formats_text():
    return ", ".join(SUPPORTED_FORMATS)


def load_input(path, *, label_column=None):
    """Read a data matrix (and labels when the format has them) from a file.

    Parameters
    ----------
    path : str or path-like
        A file whose extension is one of :data:`SUPPORTED_FORMATS`.
    label_column : int, default=None
        CSV only: the column holding the labels (e.g. ``-1`` for the last);
        ``None`` reads every column as a feature.

    Returns
    -------
    X : ndarray or scipy.sparse.csr_matrix of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,) or None

    Raises
    ------
    InputFileError
        If the file is missing, unreadable, of an unknown format or not a 2-D
        numeric matrix. The message names the path and the supported formats.
    """
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if ext not in SUPPORTED_FORMATS:
        raise InputFileError(
            f"cannot read {path}: unknown format {ext or '(no extension)'!r}; supported formats are "
            f"{_formats_text()}."
        )
    if not os.path.isfile(path):
        raise InputFileError(f"cannot read {path}: no such file.")
    try:
        if ext == ".npy":
            X, y = np.load(path, allow_pickle=False), None
        elif ext == ".npz":
            X, y = _load_npz(path)
        elif ext == ".csv":
            X, y = _load_csv(path, label_column)
        else:
            from sklearn.datasets import load_svmlight_file

            X, y = load_svmlight_file(path)
    except InputFileError:
        raise
    except (OSError, ValueError, EOFError, KeyError) as exc:
        raise InputFileError(
            f"cannot read {path} as {ext} ({SUPPORTED_FORMATS[ext]}): {exc}. Supported formats are "
            f"{_formats_text()}."
        ) from exc
    if getattr(X, "ndim", 2) != 2:
        raise InputFileError(
            f"{path} holds an array of shape {X.shape}; a data matrix of shape (n_samples, n_features) is "
            f"expected."
        )
    if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
        raise InputFileError(f"{path} holds an array of dtype {X.dtype}; real numbers are expected.")
    return X, y


def _load_npz(path):
    with np.load(path, allow_pickle=False) as archive:
        names = list(archive.files)
        if "X" in names:
            return archive["X"], (archive["y"] if "y" in names else None)
        if len(names) == 1:
            return archive[names[0]], None
    raise InputFileError(
        f"{path} holds arrays {names}; name the data matrix 'X' (and the labels 'y') when saving it, "
        f"e.g. np.savez(path, X=X, y=y)."
    )


def _load_csv(path, label_column):
    with open(path, encoding="utf-8") as fh:
        first = fh.readline()
    skip = 0
    try:
        [float(v) for v in first.strip().split(",") if v.strip()]
    except ValueError:
        skip = 1  # a header line
    data = np.loadtxt(path, delimiter=",", skiprows=skip, ndmin=2, dtype=np.float64)
    if label_column is None:
        return data, None
    y = data[:, label_column]
    return np.delete(data, label_column, axis=1), y


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
