"""Feature-space normalization (Graf & Borer 2001): the normalized Gram (eq. 2) and the corrected threshold b' (eq. 3).

:class:`NormalizedGram` is ``K_ij / √(K_ii K_jj)``, a lazy view (every point
on the unit sphere of the feature space); an SVM trained on it is evaluated
with the original kernel once its threshold is corrected to b'
(:func:`graf_threshold`, :func:`graf_intercept`).

References
----------
.. [1] A. B. A. Graf and S. Borer, "Normalization in support vector machines",
   DAGM 2001, eqs. 2–3.
"""

import math
import warnings

import numpy as np

from ..exceptions import DKernelError
from ..gram._sources import as_gram
from ._base import _base_cross, _base_cross_diag, _base_describe, _GramView, scaled_block

__all__ = ["GrafThresholdError", "NormalizedGram", "graf_intercept", "graf_threshold", "weight_norm"]


class GrafThresholdError(DKernelError, ValueError):
    """Graf & Borer's threshold b' is undefined: a margin lies outside the unit sphere."""


def weight_norm(dual_coef, K_sv):
    """``‖w‖ = sqrt(cᵀ K c)`` with ``c = α y`` and ``K`` the Gram of the support vectors."""
    c = np.asarray(dual_coef, dtype=np.float64).reshape(-1)
    K_sv = np.asarray(K_sv, dtype=np.float64)
    if K_sv.shape != (c.shape[0], c.shape[0]):
        raise ValueError(f"K_sv must have shape ({c.shape[0]}, {c.shape[0]}); got {K_sv.shape}.")
    return math.sqrt(max(float(c @ K_sv @ c), 0.0))


def graf_threshold(b, w_norm, *, on_invalid="clip"):
    """The corrected hyperplane position b' for a normalized kernel (Graf & Borer eq. 3).

    On the unit sphere of a normalized feature space, the margins of the
    hyperplane ``⟨ŵ, z⟩ = b`` (``ŵ = w/‖w‖``) lie at ``⟨ŵ, z⟩ = b ∓ 1/‖w‖``
    and meet the sphere at the angles ``α₁ = arccos(b − 1/‖w‖)`` and
    ``α₂ = arccos(b + 1/‖w‖)``. Graf & Borer move the hyperplane to the
    bisector of the two arcs,

    .. math::

        b' = \\cos\\left(\\frac{\\arccos(b - 1/\\|w\\|) + \\arccos(b + 1/\\|w\\|)}{2}\\right)

    leaving ``w`` unchanged. ``b`` here is the paper's position, the signed
    distance of the hyperplane from the origin along ``ŵ``; for the intercept
    of a trained SVM use :func:`graf_intercept`.

    Parameters
    ----------
    b : float
        Hyperplane position (``|b| <= 1`` on the unit sphere).
    w_norm : float
        ``‖w‖ > 0``, e.g. from :func:`weight_norm` (``‖w‖² = αᵀQα``).
    on_invalid : {"clip", "raise"}, default="clip"
        When a margin misses the sphere (``b ± 1/‖w‖`` outside ``[-1, 1]``,
        common for small ``‖w‖``): ``"clip"`` clips it to ``[-1, 1]`` (the
        margin is taken at the pole it passes) and issues a RuntimeWarning;
        ``"raise"`` raises :class:`GrafThresholdError`.

    Returns
    -------
    float
    """
    if on_invalid not in ("clip", "raise"):
        raise ValueError(f"on_invalid must be 'clip' or 'raise'; got {on_invalid!r}.")
    b, w_norm = float(b), float(w_norm)
    if not (math.isfinite(b) and math.isfinite(w_norm) and w_norm > 0):
        raise ValueError(f"b must be finite and w_norm finite and > 0; got b={b!r}, w_norm={w_norm!r}.")
    delta = 1.0 / w_norm
    lo, hi = b - delta, b + delta
    if lo < -1.0 or hi > 1.0:
        message = (
            f"the margins b ± 1/‖w‖ = [{lo:.6g}, {hi:.6g}] leave [-1, 1], so at least one margin misses the "
            f"unit sphere and Graf & Borer's b' is undefined"
        )
        if on_invalid == "raise":
            raise GrafThresholdError(message + "; use on_invalid='clip' or keep the uncorrected b.")
        warnings.warn(message + "; the margins were clipped to [-1, 1].", RuntimeWarning, stacklevel=2)
        lo, hi = max(lo, -1.0), min(hi, 1.0)
    return math.cos(0.5 * (math.acos(lo) + math.acos(hi)))


def graf_intercept(intercept, w_norm, *, on_invalid="clip"):
    """Graf & Borer's correction applied to an SVM intercept (decision ``Σ α_i y_i K̃(x, x_i) + c``).

    The hyperplane ``⟨w, z⟩ + c = 0`` sits at position ``b = -c/‖w‖`` along
    ``ŵ``; :func:`graf_threshold` moves it to ``b'`` and the corrected
    intercept is ``c' = -b' ‖w‖``, which replaces ``c``.
    """
    w_norm = float(w_norm)
    if not (math.isfinite(w_norm) and w_norm > 0):
        raise ValueError(f"w_norm must be finite and > 0; got {w_norm!r}.")
    b = -float(np.asarray(intercept).reshape(-1)[0]) / w_norm
    return -graf_threshold(b, w_norm, on_invalid=on_invalid) * w_norm


def _inv_sqrt(d):
    d = np.asarray(d, dtype=np.float64)
    s = np.zeros_like(d)
    positive = d > 0
    s[positive] = 1.0 / np.sqrt(d[positive])
    return s



def _positive_diagonal(diag):
    """The Gram's diagonal, refused where some ``K(x, x) <= 0``: eq. (2) divides by ``sqrt(K(x, x))``."""
    diag = np.asarray(diag, dtype=np.float64)
    bad = np.flatnonzero(~(diag > 0))
    if bad.size:
        shown = ", ".join(str(int(i)) for i in bad[:10]) + (", ..." if bad.size > 10 else "")
        raise ValueError(
            f"feature-space normalization K(x, z)/sqrt(K(x, x) K(z, z)) (Graf & Borer eq. 2) is undefined for "
            f"{bad.size} of the {diag.size} training samples: K(x, x) <= 0 at sample index {shown} (e.g. an "
            f"all-zero row under a linear kernel, which has no direction in feature space). Remove these "
            f"samples, or use a kernel with K(x, x) > 0 (e.g. 'poly' with coef0 > 0)."
        )
    return diag



class NormalizedGram(_GramView):
    """Feature-space normalization of any Gram (Graf & Borer eq. 2).

    .. math::

        \\tilde K_{ij} = \\frac{K_{ij}}{\\sqrt{K_{ii} K_{jj}}}

    Every point moves to the unit sphere in feature space. A training point
    with ``K_ii <= 0`` (an all-zero row under a linear kernel) has no
    direction there: the view refuses it with a ``ValueError`` naming its
    index. For test points, ``cross(X_new)`` gives
    ``K(x, x_i) / sqrt(K(x, x) K(x_i, x_i))`` (0 where ``K(x, x) = 0``, as in
    :class:`dkernel.kernels.NormalizedKernel`).

    Parameters
    ----------
    base : Gram source
    """

    def __init__(self, base):
        self.base = as_gram(base)
        self._base_diag = _positive_diagonal(self.base.diag())
        self._vector = _inv_sqrt(self._base_diag)

    _apply = staticmethod(scaled_block)

    def diag(self):
        return (self._base_diag > 0).astype(np.float64)

    def cross(self, X_new, X_train=None, columns=None):
        K = _base_cross(self.base, X_new, X_train, columns=columns)
        s_test = _inv_sqrt(_base_cross_diag(self.base, X_new, X_train))
        s = self._vector if columns is None else self._vector[np.asarray(columns, dtype=np.intp)]
        return scaled_block(K, s_test, s)

    def cross_diag(self, X_new, X_train=None):
        return (np.asarray(_base_cross_diag(self.base, X_new, X_train)) > 0).astype(np.float64)

    def _step(self):
        return {"name": "normalized"}

    def describe(self):
        return {"name": "normalized", "base": _base_describe(self.base)}
