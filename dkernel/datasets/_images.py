"""Loaders of the image sets: USPS handwritten digits (npz or LIBSVM files) and COIL-20."""

from __future__ import annotations

import numpy as np

from ._dataset import Dataset, _dataset, _loader
from ._fetch import _fetch_first, fetch_file
from ._registry import _COIL20_MAT, _COIL20_NPZ, _USPS_LIBSVM_TEST, _USPS_LIBSVM_TRAIN, _USPS_NPZ


def load_svmlight_usps(path) -> tuple[np.ndarray, np.ndarray]:
    """Read a LIBSVM-format USPS file (``usps.bz2`` or ``usps.t.bz2``).

    Parameters
    ----------
    path : str or path-like
        The file as distributed by LIBSVM; ``.bz2`` and ``.gz`` files are
        decompressed on the fly.

    Returns
    -------
    X : ndarray of shape (n_samples, 256), float64
        Pixels in [-1, 1] (LIBSVM's scaling).
    y : ndarray of shape (n_samples,), int64
        Digits 0..9 (the file's labels 1..10 minus 1).
    """
    from sklearn.datasets import load_svmlight_file

    X, labels = load_svmlight_file(str(path), n_features=256, dtype=np.float64)
    valid = (labels >= 1) & (labels <= 10) & (labels == np.round(labels))
    if not valid.all():
        raise ValueError(
            f"{path} has labels outside 1..10 (found {np.unique(labels)[:12]}); "
            "it is not the LIBSVM USPS file."
        )
    return X.toarray(), labels.astype(np.int64) - 1


@_loader("usps")
def _load_usps(data_home, *, download, verify, source="npz") -> Dataset:
    if source == "npz":
        path = fetch_file(_USPS_NPZ, data_home, download=download, verify=verify)
        with np.load(path) as arrays:
            fields = {k: arrays[k] for k in ("X_train", "y_train", "X_test", "y_test")}
        files = [path]
        X, X_test = fields["X_train"].astype(np.float64), fields["X_test"].astype(np.float64)
        y, y_test = fields["y_train"].astype(np.int64), fields["y_test"].astype(np.int64)
    elif source == "libsvm":
        train = fetch_file(_USPS_LIBSVM_TRAIN, data_home, download=download, verify=verify)
        test = fetch_file(_USPS_LIBSVM_TEST, data_home, download=download, verify=verify)
        files = [train, test]
        X, y = load_svmlight_usps(train)
        X_test, y_test = load_svmlight_usps(test)
    else:
        raise ValueError(f"source must be 'npz' or 'libsvm', got {source!r}.")
    return _dataset(
        "usps", X, y, files, X_test=X_test, y_test=y_test,
        target_names=tuple(range(10)), metadata={"source": source},
    )  # fmt: skip


@_loader("coil20")
def _load_coil20(data_home, *, download, verify) -> Dataset:
    data_file, path = _fetch_first(
        (_COIL20_NPZ, _COIL20_MAT), data_home, download=download, verify=verify
    )
    if data_file is _COIL20_NPZ:
        with np.load(path) as arrays:
            images, labels, pose = arrays["images"], arrays["labels"], arrays["pose"]
    else:
        from scipy.io import loadmat

        mat = loadmat(path)
        # MATLAB stores each 32 x 32 image column-major in its row of X.
        images = mat["X"].reshape(-1, 32, 32, order="F")
        labels = mat["Y"].ravel()
        pose = np.tile(np.arange(72), len(labels) // 72)
    X = images.reshape(len(images), -1).astype(np.float64)
    return _dataset(
        "coil20", X, labels.astype(np.int64), [path],
        target_names=tuple(range(1, 21)),
        metadata={"pose": pose.astype(np.int64), "image_shape": (32, 32)},
    )  # fmt: skip

