"""Binary tasks made from multiclass labels, as in Meilă (2002), Table 1."""

from __future__ import annotations

import numpy as np


def binary_task(y, positive) -> np.ndarray:
    """Turn multiclass labels into a one-versus-rest task with labels +1 / -1.

    Meilă (2002), Table 1, uses "class 1 vs all others" for cmc and "class 2
    vs all others" for glass.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels.
    positive : label or collection of labels
        The class (or classes) labelled +1; every other class is -1.

    Returns
    -------
    y_binary : ndarray of shape (n_samples,), int64
        +1 for ``positive``, -1 otherwise.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}.")
    if isinstance(positive, (set, frozenset)):
        positive = sorted(positive)
    positives = np.atleast_1d(np.asarray(positive))
    is_positive = np.isin(y, positives)
    present = np.unique(y)
    if not is_positive.any():
        raise ValueError(
            f"positive class {positive!r} does not occur in y; "
            f"its classes are {present.tolist()}."
        )
    if is_positive.all():
        raise ValueError(
            f"every label is in the positive class {positive!r}; a binary task needs "
            f"other classes too (y has {present.tolist()})."
        )
    return np.where(is_positive, 1, -1).astype(np.int64)


def pair_task(X, y, positive, negative):
    """Keep two classes and label them +1 / -1 (e.g. digit a vs digit b).

    Meilă (2002), Table 1, builds the "digiab" tasks this way from the
    handwritten digits, ``a, b in {0, 1, 2, 6}``.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    positive, negative : label
        The class labelled +1 and the class labelled -1; rows of other
        classes are dropped.

    Returns
    -------
    X_pair : same type as X
        The rows of the two classes, in their original order.
    y_pair : ndarray, int64
        +1 for ``positive``, -1 for ``negative``.
    """
    y = np.asarray(y)
    if positive == negative:
        raise ValueError(f"positive and negative must be different classes, both are {positive!r}.")
    present = np.unique(y).tolist()
    for label in (positive, negative):
        if label not in present:
            raise ValueError(f"class {label!r} does not occur in y; its classes are {present}.")
    keep = np.flatnonzero((y == positive) | (y == negative))
    return X[keep], np.where(y[keep] == positive, 1, -1).astype(np.int64)

