"""The synthetic classification problems that the benchmarks time: Gaussian points with ±1 labels."""

import numpy as np

__all__ = ["noisy_threshold_labels", "overlapping_classes"]


def noisy_threshold_labels(n, d, seed, threshold, dtype=np.float64):
    """``X ~ N(0, I_d)`` (n points, in ``dtype``) and ``y = sign(x_0 + 0.5 ε - threshold)``, ``ε ~ N(0, 1)``.

    The larger ``threshold``, the fewer points are labelled +1.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(dtype, copy=False)
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > threshold, 1, -1)
    return X, y


def overlapping_classes(n, d, rng, separation=1.0):
    """Two unit Gaussians whose means are ``separation`` apart: heavily overlapping classes."""
    y = np.where(rng.random(n) < 0.5, 1, -1)
    X = rng.normal(size=(n, d))
    X[:, 0] += 0.5 * separation * y
    return X, y
