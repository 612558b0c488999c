"""Graf & Borer's threshold correction for an SVM on a normalized kernel (eq. 3).

Normalizing a kernel (``K_ij / sqrt(K_ii K_jj)``, eq. 2; lazy in
:class:`dkernel.views.NormalizedGram`) puts every point on the unit sphere
of feature space. There the hyperplane found by the SVM is moved to the
bisector of the arcs cut by its two margins, ``b'`` (eq. 3), leaving ``w``
unchanged: :func:`graf_threshold` for the paper's position ``b``,
:func:`graf_intercept` for an SVM's intercept, :func:`weight_norm` for ``‖w‖``.

References
----------
.. [1] A. B. A. Graf and S. Borer, "Normalization in support vector machines",
   DAGM 2001.
"""

import math
import warnings

import numpy as np

from ..exceptions import DKernelError

__all__ = ["GrafThresholdError", "graf_intercept", "graf_threshold", "weight_norm"]


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
