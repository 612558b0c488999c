"""Reading the user's files: data matrices (.npy, .npz, svmlight/libsvm, .csv) and labels.

Labels are a NumPy ``.npy`` array, or text with one label per line (``.csv``:
comma-separated): the labels of a data matrix, or of the rows of a Gram store,
in the order of the data the Gram was computed from. Labels are numbers or
text (``cat``, ``dog``) in either form: a text file whose values are all
numbers is read as numbers, else as text. A first line that is not numbers
above lines of numbers is a header, skipped, in a labels file as in a CSV
data file; in a file of text labels it is read as a label (text cannot tell
a header from a label), and a label count one too many says so.

Every failure (missing file, unknown extension, unparsable content) raises
:class:`InputFileError` naming the path (and, for data, the supported formats).
"""

import os
import warnings

from ..exceptions import InputFileError

__all__ = ["load_input", "load_labels", "SUPPORTED_FORMATS"]

SUPPORTED_FORMATS = {
    ".npy": "NumPy array (n_samples, n_features)",
    ".npz": "NumPy archive with an array 'X' (and optionally 'y'), or a single array",
    ".svmlight": "svmlight/libsvm text, 'label index:value ...' (read as a sparse CSR matrix)",
    ".libsvm": "svmlight/libsvm text (same as .svmlight)",
    ".svm": "svmlight/libsvm text (same as .svmlight)",
    ".csv": "comma-separated numbers, one sample per line; a first line that is not numbers is a header, skipped",
}


def _formats_text():
    return ", ".join(SUPPORTED_FORMATS)


def _not_a_file(path):
    """Why ``path`` cannot be read as a file: it is a folder (a store, perhaps), or there is nothing there."""
    return "a folder, not a file" if os.path.isdir(path) else "no such file"


def load_npy(path, name=None):
    """The array of the ``.npy`` file ``path`` (given with the flag ``name``); a file that is no ``.npy`` array, or
    one of Python objects, is told in those words (never NumPy's advice on pickles)."""
    import numpy as np

    shown = f"{name} {path}" if name else f"{path}"
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputFileError(f"{shown}: no such file.") from None
    except (OSError, ValueError, EOFError) as exc:
        try:
            with open(path, "rb") as fh:
                npy = fh.read(6) == b"\x93NUMPY"
        except OSError:
            npy = False
        why = (" of numbers or text (it holds Python objects, which dkernel does not read)"
               if npy and "pickle" in str(exc) else "")
        said = f"{shown} is not" if name else f"cannot read {path}: it is not"
        raise InputFileError(f"{said} a .npy array{why}.") from None


def header_hint(path, n_labels, n_rows):
    """``" (its first line 'label' may be a header: remove it)"`` when the text labels file ``path`` has one label
    more than the ``n_rows`` expected and its first value is one no other line holds; else ``""``.

    A file of text labels cannot tell a header from a label: its first line is read as a label.
    """
    if n_labels != n_rows + 1 or str(path).endswith(".npy"):
        return ""
    try:
        with open(path, encoding="utf-8") as fh:
            values = [line.strip().split(",")[0].strip() for line in fh if line.strip()]
    except (OSError, UnicodeDecodeError):
        return ""
    if not values or values.count(values[0]) != 1:
        return ""
    return f" (its first line {values[0]!r} may be a header: remove it)"


def load_input(path, *, label_column=None, name=None):
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
    import numpy as np

    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if ext not in SUPPORTED_FORMATS:
        raise InputFileError(
            f"cannot read {path}: unknown format {ext or '(no extension)'!r}; supported formats are "
            f"{_formats_text()}."
        )
    if not os.path.isfile(path):
        raise InputFileError(f"cannot read {path}: {_not_a_file(path)}.")
    try:
        if ext == ".npy":
            X, y = load_npy(path, name), None
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
            f"cannot read {path} as {ext} ({SUPPORTED_FORMATS[ext]}): {str(exc).rstrip('.')}. Supported formats are "
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
    import numpy as np

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
    import numpy as np

    with open(path, encoding="utf-8") as fh:
        first = fh.readline()
    skip = 0
    try:
        [float(v) for v in first.strip().split(",") if v.strip()]
    except ValueError:
        skip = 1  # a header line
    try:
        data = _loadtxt(path, delimiter=",", skiprows=skip, ndmin=2, dtype=np.float64)
    except ValueError as exc:  # NumPy counts the rows below the header from 0: told as the file's line
        raise ValueError(_csv_line_message(str(exc), skip)) from None
    if data.size == 0:
        raise InputFileError(f"{path} holds no data{' below its header line' if skip else ''}; a data matrix of "
                             f"shape (n_samples, n_features) is expected, one sample per line.")
    if label_column is None:
        return data, None
    y = data[:, label_column]
    return np.delete(data, label_column, axis=1), y


def _csv_line_message(message, skip):
    """NumPy's ``... at row R, column C.`` as ``... on line L, column C`` of the file (``skip`` header lines), the
    final period dropped (the caller's sentence goes on)."""
    import re

    def line(match):
        return f"on line {int(match.group(1)) + 1 + skip}, column {match.group(2)}"

    return re.sub(r"at row (\d+), column (\d+)", line, message).rstrip(".")


def _loadtxt(path, **kwargs):
    """``np.loadtxt`` without its warning on an empty file (the caller reports it as an error)."""
    import numpy as np

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*input contained no data", category=UserWarning)
        return np.loadtxt(path, **kwargs)


def _unreadable(path, exc):
    """Why the labels file ``path`` could not be read, in words (not the reader's message)."""
    if isinstance(exc, UnicodeDecodeError):
        return "it holds binary data, and is neither text nor a .npy array"
    if isinstance(exc, EOFError):
        return "the file is empty or cut short"
    if not path.endswith(".npy"):
        return "its lines do not hold one value each" if isinstance(exc, ValueError) else str(exc)
    if "pickle" in str(exc):
        return "it is not a NumPy .npy array (or holds Python objects, which dkernel does not read)"
    return f"it is not a readable NumPy .npy array ({exc})"


def load_labels(path, name="--labels"):
    """The labels in the file ``path``, as a 1-D array of numbers or of text.

    ``name`` is how the user gave the path (a flag), for the messages.

    Raises
    ------
    InputFileError
        If the file is missing or unreadable, holds no labels, holds an
        array that is not one label per row (e.g. of shape (400, 2)), or
        holds NaN or infinite labels (the message names ``name`` and the
        first such row).
    """
    import numpy as np

    path = os.fspath(path)
    label = f"{name} {path}"
    if not os.path.isfile(path):
        raise InputFileError(f"{label}: {_not_a_file(path)}.")
    if path.endswith(".npy"):
        y = load_npy(path, name)
    else:
        y = _load_text_labels(path, label)
        if y.shape[1] > 1:  # (a line of several values, a 1 x k table: not k labels)
            raise InputFileError(f"{label} holds {y.shape[1]} values on a line; labels are one per line.")
    return _checked_labels(y, label)


def _load_text_labels(path, label):
    """The labels of a text file, one row per line: numbers when every line (but a header line, skipped as in
    --data) is one, else text, the first line included (text labels cannot tell a header from a label)."""
    try:
        delimiter = "," if path.endswith(".csv") else None
        try:
            return _loadtxt(path, delimiter=delimiter, ndmin=2)
        except ValueError:
            pass
        try:
            y = _loadtxt(path, delimiter=delimiter, ndmin=2, skiprows=1)  # numbers below a header line
            if y.size:
                return y
        except ValueError:
            pass
        return _loadtxt(path, delimiter=delimiter, ndmin=2, dtype=str)  # text labels
    except (OSError, ValueError, EOFError, UnicodeDecodeError) as exc:
        raise InputFileError(f"{label}: cannot read labels (a .npy array, or text with one label per line): "
                             f"{_unreadable(path, exc)}.") from None


def _checked_labels(y, label):
    import numpy as np

    if y.dtype.kind not in "biufU":
        raise InputFileError(f"{label} holds an array of dtype {y.dtype}; labels are numbers or text.")
    if y.ndim > 1 and sum(side > 1 for side in y.shape) > 1:
        raise InputFileError(f"{label} holds an array of shape {y.shape}; labels are one value per row (a 1-D "
                             f"array, or text with one label per line).")
    y = y.ravel()
    if y.size == 0:
        raise InputFileError(f"{label} holds no labels.")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        bad = np.flatnonzero(~np.isfinite(y))
        n_nan = int(np.isnan(y[bad]).sum())
        what = " and ".join(part for part in (f"{n_nan} NaN" if n_nan else "",
                                             f"{len(bad) - n_nan} infinite" if len(bad) > n_nan else "") if part)
        raise InputFileError(f"{label} holds {what} label{'s' if len(bad) > 1 else ''} (first in row {bad[0]}); "
                             f"give every row a label, or remove the rows without one (and their rows of the data).")
    return y
