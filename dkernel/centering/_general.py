"""General centering: the origin that maximizes a criterion of the centered Gram (Meilă §5).

The origin ``a`` is moved by gradient ascent on a criterion ``J(K_a)`` of the
centered Gram matrix ``K_a = K - 1hᵀ - h1ᵀ + h0`` (eq. 14): the between-class
sum (eq. 10), its cosine form (eq. 20) or the kernel alignment (eq. 21). The
feature-space gradient follows from ``∂J/∂K_a`` (eqs. 24–25), a step
``δa = η∇_a J`` is a combination of ``a`` and the training points (eqs. 27–28),
and the state ``(w, h, h0)`` is updated without forming ``K`` anew
(eqs. 30–33). With ``n_sample`` the criterion is evaluated on a random
sample's ``n' × n'`` submatrix and the origin is a sampled
:class:`~dkernel.centering.Centering`.

References
----------
.. [1] M. Meilă, "Data centering in feature space", AISTATS 2003 (Technical
   Report 421, University of Washington, 2002), section 5.
"""

import dataclasses
import math
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..gram._sources import principal_submatrix, source_n
from .._runtime.validation import check_labels
from ._origins import Centering, InvalidWeightsError, centered_block, class_balanced_weights
from ..exceptions import InvalidLabelsError

__all__ = [
    "CenteringResult",
    "Criterion",
    "criterion",
    "feature_space_gradient",
    "general_centering",
]


@dataclasses.dataclass(frozen=True)
class Criterion:
    """A centering criterion ``J(K_a)`` to be maximized, with ``∂J/∂K_a``.

    ``value(K_a) -> float`` and ``gradient(K_a) -> ndarray (m, m)``, both on the
    ``m × m`` Gram matrix where the criterion is evaluated. The gradient treats
    the entries as independent (it is symmetrized before use).
    """

    name: str
    value: callable
    gradient: callable


def _between_class_mask(y):
    classes = np.unique(y)
    if len(classes) != 2:
        raise InvalidLabelsError(
            f"the between-class criteria need exactly two classes; the labels have {len(classes)}."
        )
    pos = y == classes[1]
    return np.outer(pos, ~pos).astype(np.float64)


def _alignment_value(K, t, tt):
    fro = math.sqrt(float(np.vdot(K, K)))
    if fro == 0:
        return 0.0
    return float(t @ K @ t) / (tt * fro)


def criterion(name, y=None):
    """A built-in centering criterion for labels ``y`` (to be maximized).

    ``"between-class"``
        ``-Σ_{y_i=+1} Σ_{y_j=-1} K_a(x_i, x_j)``: minus Meilă's eq. (10),
        maximized by the class-balanced origin (eq. 12).
    ``"between-class-cosine"``
        ``-Σ_{y_i=+1} Σ_{y_j=-1} cos∠(x_i - a, x_j - a)`` (eq. 20).
    ``"alignment"``
        ``yᵀK_a y / (‖y‖² ‖K_a‖_F)`` (eq. 21; with ±1 labels ``‖y‖² = n``).
    """
    if isinstance(name, Criterion):
        return name
    if y is None:
        raise InvalidLabelsError(f"the {name!r} criterion needs labels y.")
    y = check_labels(y)
    if name == "between-class":
        M = _between_class_mask(y)
        return Criterion(name, lambda K: -float(np.vdot(M, K)), lambda K: -M)
    if name == "between-class-cosine":
        M = _between_class_mask(y)

        def value(K):
            d = np.diagonal(K)
            if np.any(d <= 0):
                return -math.inf
            s = 1.0 / np.sqrt(d)
            return -float(s @ (M * K) @ s)

        def gradient(K):
            d = np.diagonal(K)
            s = 1.0 / np.sqrt(d)
            C = K * np.outer(s, s)
            G = M * np.outer(s, s)
            # ∂cos_ij/∂K_ii = -cos_ij / (2 K_ii), for the rows and the columns of M.
            np.fill_diagonal(G, np.diagonal(G) - 0.5 * ((M * C).sum(axis=1) + (M * C).sum(axis=0)) / d)
            return -G

        return Criterion(name, value, gradient)
    if name == "alignment":
        classes = np.unique(y)
        if len(classes) != 2:
            raise InvalidLabelsError(f"the alignment criterion needs two classes; the labels have {len(classes)}.")
        t = np.where(y == classes[1], 1.0, -1.0)
        T = np.outer(t, t)
        tt = float(t @ t)

        def gradient(K):
            fro = math.sqrt(float(np.vdot(K, K)))
            A = float(t @ K @ t) / (tt * fro)
            return T / (tt * fro) - A * K / fro**2

        return Criterion(name, lambda K: _alignment_value(K, t, tt), gradient)
    raise ValueError(
        f"unknown criterion {name!r}; use 'between-class', 'between-class-cosine', 'alignment' "
        f"or a Criterion(name, value, gradient)."
    )


def feature_space_gradient(K, weights, crit):
    """``J(K_a)`` and the feature-space gradient ``∇_a J`` in the γ representation.

    With ``G = ∂J/∂K_a`` (symmetrized) and ``r = G1``, eqs. (24)–(25) give
    ``∇_a J = Σ_i (-2 r_i) φ(x_i) + 2 (Σ_i r_i) a``; with ``a = Σ_i w_i φ(x_i)``
    its weights are ``g = -2r + 2(1ᵀr) w``. The directional derivative along
    ``d = Σ_i β_i φ(x_i)`` is ``⟨∇J, d⟩ = gᵀKβ``.

    Parameters
    ----------
    K : ndarray of shape (m, m)
        The uncentered Gram matrix where the criterion is evaluated.
    weights : ndarray of shape (m,)
        The weights ``w`` of the origin ``a``.
    crit : Criterion

    Returns
    -------
    value : float
    g : ndarray of shape (m,)
    """
    h = K @ weights
    h0 = float(weights @ h)
    Ka = centered_block(K, h, h, h0)
    G = np.asarray(crit.gradient(Ka), dtype=np.float64)
    r = 0.5 * (G.sum(axis=1) + G.sum(axis=0))
    return float(crit.value(Ka)), -2.0 * r + 2.0 * r.sum() * weights


@dataclasses.dataclass(frozen=True)
class CenteringResult:
    """Outcome of :func:`general_centering`.

    Attributes
    ----------
    centering : Centering
        The origin found (supported on the sample for the sampled version).
    h : ndarray
        ``⟨a, x_i⟩`` on the points where ``J`` was evaluated.
    h0 : float
    history : ndarray
        ``J`` after each accepted step (``history[0]`` at the start).
    n_iter : int
    stop_reason : str
        ``"tol"``, ``"max_iter"`` or ``"step"`` (no step size increased ``J``).
    """

    centering: Centering
    h: np.ndarray
    h0: float
    history: np.ndarray
    n_iter: int
    stop_reason: str

    @property
    def converged(self):
        return self.stop_reason in ("tol", "step")


def general_centering(
    source,
    y=None,
    crit="alignment",
    *,
    init=None,
    n_sample=None,
    random_state=None,
    max_iter=200,
    tol=1e-8,
    step=None,
    min_step=1e-14,
):
    """Move the origin by gradient ascent on a criterion ``J(K_a)`` (Meilă §5, eqs. 23–33).

    The state is the origin's weights ``w`` with ``h = ⟨a, x_i⟩`` and
    ``h0 = ⟨a, a⟩``; ``K_a = K - 1hᵀ - h1ᵀ + h0`` is formed only to evaluate
    ``J``. A step ``δa = η∇_a J = γ0 a + Σ γ_i x_i`` (eqs. 27–28) updates the
    state by eqs. (30)–(33):
    ``h ← h + γ0 h + Kγ``, ``h0 ← h0 + 2⟨δa, a⟩ + ⟨δa, δa⟩``, ``w ← (1+γ0) w + γ``.
    The step size ``η`` is found by backtracking (halved until ``J`` increases,
    doubled after a success), so ``J`` increases monotonically.

    Parameters
    ----------
    source : Gram source
        The Gram matrix ``K`` of the training points.
    y : array-like of shape (n,), optional
        Labels, required by the built-in criteria.
    crit : {"alignment", "between-class", "between-class-cosine"} or Criterion
        The criterion to maximize (:func:`criterion`); a user criterion is a
        :class:`Criterion` with its gradient ``∂J/∂K_a``.
    init : None, "standard", "class-balanced" or Centering
        The starting origin; ``None`` starts at ``a = 0`` (``K_a = K``).
    n_sample : int, optional
        Evaluate ``J`` on the ``n' × n'`` submatrix of a random stratified
        sample only. The resulting origin is represented by the sample (a
        sampled :class:`Centering`) and applied to the full ``K``. This
        optimizes the criterion *of the sample*: as Meilă notes, it does not
        suit every criterion, but it is a reasonable approximation for those
        that concentrate around their expectation, such as the kernel
        alignment (Shawe-Taylor et al.); for sums over pairs (eqs. 10, 20)
        it optimizes the sample's sum, an unbiased estimate up to scale.
    random_state : int, Generator or None
        Seed of the sample.
    max_iter : int, default=200
    tol : float, default=1e-8
        Stop when an accepted step changes ``J`` by less than ``tol · max(1, |J|)``.
    step : float, optional
        Initial step size ``η``; by default the step moves ``a`` by 10% of the
        data's typical feature-space norm.
    min_step : float, default=1e-14
        Stop (``stop_reason="step"``) when backtracking goes below this
        fraction of the initial step.

    Returns
    -------
    CenteringResult
    """
    n = source_n(source)
    if y is not None:
        y = check_labels(y, n)
    if n_sample is not None:
        if y is not None and len(np.unique(y)) > 1:
            sample = Centering.sampled(y, n_sample, "multiclass", random_state=random_state)
        else:
            sample = Centering.sampled(n, n_sample, "standard", random_state=random_state)
        S = sample.indices
    else:
        S = np.arange(n)
    K = principal_submatrix(source, S)
    y_eval = None if y is None else y[S]
    crit = criterion(crit, y_eval)
    m = len(S)

    if init is None:
        w = np.zeros(m)
    elif isinstance(init, str):
        if init == "standard":
            w = np.full(m, 1.0 / m)
        elif init in ("class-balanced", "multiclass"):
            w = class_balanced_weights(y_eval)
        else:
            raise ValueError(f"init must be None, 'standard', 'class-balanced' or a Centering; got {init!r}.")
    elif isinstance(init, Centering):
        if init.n != n:
            raise InvalidWeightsError(f"init is defined for n={init.n} points; the Gram matrix has {n}.")
        dense = init.dense()
        if n_sample is not None and np.any(np.delete(dense, S) != 0):
            raise InvalidWeightsError(
                "init has weight outside the sample; with n_sample, start from None, 'standard' or "
                "'class-balanced' (computed on the sample)."
            )
        w = dense[S]
    else:
        raise ValueError(f"init must be None, 'standard', 'class-balanced' or a Centering; got {init!r}.")

    h = K @ w
    h0 = float(w @ h)
    J = float(crit.value(centered_block(K, h, h, h0)))
    if not math.isfinite(J):
        raise ValueError(f"the criterion is not finite at the initial origin (J={J}); choose another init.")
    history = [J]

    eta = step
    eta0 = None
    stop_reason = "max_iter"
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        Ka = centered_block(K, h, h, h0)
        G = np.asarray(crit.gradient(Ka), dtype=np.float64)
        r = 0.5 * (G.sum(axis=1) + G.sum(axis=0))
        # Eq. (28) per unit step: γ̂_i = -2 r_i, γ̂0 = -Σ γ̂_i.
        g_hat = -2.0 * r
        g0_hat = -g_hat.sum()
        Kg_hat = K @ g_hat
        # ‖∇J‖² = ‖γ̂0 a + Σγ̂_i x_i‖², for the default step size.
        grad_sq = g0_hat**2 * h0 + 2 * g0_hat * float(g_hat @ h) + float(g_hat @ Kg_hat)
        if grad_sq <= 0:
            stop_reason = "tol"
            break
        if eta is None:
            scale = math.sqrt(max(float(np.mean(np.diagonal(Ka))), np.finfo(float).tiny))
            eta = 0.1 * scale / math.sqrt(grad_sq)
        if eta0 is None:
            eta0 = eta
        accepted = False
        while eta >= min_step * eta0:
            gam, gam0 = eta * g_hat, eta * g0_hat
            delta_h = gam0 * h + eta * Kg_hat  # eq. (30)
            delta_a = gam0 * h0 + float(gam @ h)  # eq. (31)
            delta_sq = float(gam @ (eta * Kg_hat)) + 2 * gam0 * float(gam @ h) + gam0**2 * h0  # eq. (32)
            h_new = h + delta_h  # eq. (33)
            h0_new = h0 + 2 * delta_a + delta_sq
            J_new = float(crit.value(centered_block(K, h_new, h_new, h0_new)))
            if math.isfinite(J_new) and J_new > J:
                accepted = True
                break
            eta *= 0.5
        if not accepted:
            stop_reason = "step"
            n_iter -= 1
            break
        w = (1.0 + gam0) * w + gam
        change = J_new - J
        h, h0, J = h_new, h0_new, J_new
        history.append(J)
        eta *= 2.0
        if change <= tol * max(1.0, abs(J)):
            stop_reason = "tol"
            break

    if n_sample is None:
        centering = Centering(n, w, None, f"general-{crit.name}")
    else:
        centering = Centering(n, w, S, f"sampled-general-{crit.name}")
    if stop_reason == "max_iter":
        warnings.warn(
            f"general centering stopped after max_iter={max_iter} steps before J changed by less than "
            f"tol={tol}; increase max_iter or loosen tol.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return CenteringResult(centering, h, float(h0), np.asarray(history), n_iter, stop_reason)
