"""The two-dimensional synthetic data of Meilă (2002), Fig. 1 and Section 6:
two classes around concentric circles, balanced or with one class ``ratio``
times larger."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state


def _check_n_samples(n_samples) -> None:
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 2:
        raise ValueError(f"n_samples must be an integer >= 2, got {n_samples!r}.")


def _class_sizes(n_samples: int, weights) -> tuple[int, int]:
    _check_n_samples(n_samples)
    if weights is None:
        weights = (0.5, 0.5)
    weights = np.asarray(weights, dtype=np.float64).ravel()
    if weights.size == 1:
        weights = np.array([weights[0], 1.0 - weights[0]])
    if weights.size != 2 or np.any(weights <= 0) or not np.isclose(weights.sum(), 1.0):
        raise ValueError(
            f"weights must be two positive class proportions summing to 1 "
            f"(positive class first), got {weights.tolist()}."
        )
    n_positive = int(round(n_samples * weights[0]))
    n_positive = min(max(n_positive, 1), n_samples - 1)
    return n_positive, n_samples - n_positive


def make_concentric_circles(
    n_samples=300, *, radii=(1.0, 2.0), noise=0.25, weights=None, shuffle=True, random_state=None
):
    """Two classes normally distributed around two concentric circles in 2-D.

    The data of Meilă (2002), Fig. 1 and Section 6: each point is
    ``r_c (cos t, sin t) + noise * N(0, I_2)`` with ``t`` uniform on
    ``[0, 2 pi)``, ``r_c = radii[0]`` for the positive (inner) class and
    ``radii[1]`` for the negative (outer) class. With the defaults (radii 1
    and 2, noise 0.25) the rings are 4 standard deviations apart: the classes
    overlap a little (Bayes error about 2%), so they are not linearly or
    trivially separable, but an RBF or degree-2 polynomial SVM separates them
    well.

    Parameters
    ----------
    n_samples : int, default=300
        Number of points (Meilă's training sets have 300).
    radii : (float, float), default=(1.0, 2.0)
        Radii of the inner (+1) and outer (-1) circles.
    noise : float, default=0.25
        Standard deviation of the isotropic Gaussian around each circle.
    weights : float or (float, float), default=None
        Class proportions, positive (inner) first; None for balanced classes.
    shuffle : bool, default=True
        Whether to shuffle the rows; otherwise positives come first.
    random_state : int, RandomState instance or None, default=None
        Seed of the draw, for reproducible output.

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
    y : ndarray of shape (n_samples,), int64
        +1 (inner circle) or -1 (outer circle).

    References
    ----------
    M. Meilă, "Data centering in feature space", 2002, Fig. 1.
    """
    n_positive, n_negative = _class_sizes(n_samples, weights)
    radii = tuple(float(r) for r in radii)
    if len(radii) != 2 or min(radii) <= 0 or radii[0] == radii[1]:
        raise ValueError(f"radii must be two different positive numbers, got {radii!r}.")
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise must be a finite number >= 0, got {noise!r}.")
    rng = check_random_state(random_state)
    sizes = (n_positive, n_negative)
    blocks = []
    for radius, size in zip(radii, sizes):
        angle = rng.uniform(0.0, 2.0 * np.pi, size)
        ring = radius * np.column_stack([np.cos(angle), np.sin(angle)])
        blocks.append(ring + noise * rng.standard_normal((size, 2)))
    X = np.vstack(blocks)
    y = np.concatenate([np.ones(n_positive, np.int64), -np.ones(n_negative, np.int64)])
    if shuffle:
        order = rng.permutation(n_samples)
        X, y = X[order], y[order]
    return X, y


def make_imbalanced(
    n_samples=210, ratio=20, *, radii=(1.0, 2.0), noise=0.25, shuffle=True, random_state=None
):
    """Concentric circles with ``ratio`` times more positive than negative points.

    The unbalanced experiment of Meilă (2002), Section 6 and Fig. 5, where
    ``n+ = 20 n-``: the inner class (+1) is the majority. The sizes are
    ``n- = round(n_samples / (ratio + 1))`` and ``n+ = n_samples - n-``, so
    ``n+ = ratio * n-`` exactly when ``ratio + 1`` divides ``n_samples``.

    Parameters
    ----------
    n_samples : int, default=210
        Number of points.
    ratio : float, default=20
        ``n+ / n-``; must be > 0. A ratio below 1 makes the outer class the
        majority.
    radii, noise, shuffle, random_state
        As in :func:`make_concentric_circles`.

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
    y : ndarray of shape (n_samples,), int64
        +1 (inner circle, majority) or -1 (outer circle).
    """
    if not np.isfinite(ratio) or ratio <= 0:
        raise ValueError(f"ratio must be a positive number, got {ratio!r}.")
    _check_n_samples(n_samples)
    n_negative = int(round(n_samples / (ratio + 1.0)))
    if n_negative < 1 or n_negative >= n_samples:
        raise ValueError(
            f"n_samples={n_samples} with ratio={ratio} leaves a class empty; "
            f"use n_samples >= {int(np.ceil(ratio + 1))}."
        )
    return make_concentric_circles(
        n_samples,
        radii=radii,
        noise=noise,
        weights=((n_samples - n_negative) / n_samples, n_negative / n_samples),
        shuffle=shuffle,
        random_state=random_state,
    )
