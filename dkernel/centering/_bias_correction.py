"""The bias correction of an SVM trained on a centered Gram (Meilă §4, eqs. 16 and 19).

An SVM trained on ``K_a`` (the Gram of the data translated to the origin
``a``, :mod:`dkernel.centering`) is the same classifier as
``Σ_i α_i y_i K(x, x_i) + b − Δb`` with the original kernel, where
``Δb = (αy)ᵀh`` and ``h = Kγ``: prediction needs no centered kernel.
"""

import numpy as np

__all__ = ["decision_function_original_kernel", "delta_b"]




def delta_b(dual_coef, h, *, support=None):
    """The bias correction Δb = Σ_i Σ_j α_i y_i γ_j K(x_i, x_j) = (αy)ᵀh (Meilă eq. 19).

    An SVM trained on the centered Gram ``K_a`` has the decision function
    ``f(x) = Σ_i α_i y_i K_a(x, x_i) + b``. Since
    ``K_a(x, x_i) = K(x, x_i) - ⟨x, a⟩ - h_i + h0`` and ``Σ_i α_i y_i = 0``,
    the terms in ``⟨x, a⟩`` and ``h0`` cancel and

    .. math::

        f(x) = \\sum_i \\alpha_i y_i K(x, x_i) + b - \\Delta b

    (eq. 16): the same classifier evaluated with the original kernel.

    Parameters
    ----------
    dual_coef : array-like of shape (n,) or (n_sv,) or (1, n_sv)
        The products ``α_i y_i`` (scikit-learn's ``dual_coef_``).
    h : array-like of shape (n,), or a CenteredGram
        ``h = Kγ`` of the centering used in training (a view's ``h``).
    support : array-like of shape (n_sv,), optional
        Training indices of the entries of ``dual_coef`` (``support_``);
        omitted when ``dual_coef`` has one entry per training point.

    Returns
    -------
    delta_b : float
        Subtract it from the intercept: ``b_original = b - Δb``.
    """
    h = np.asarray(getattr(h, "h", h), dtype=np.float64)
    coef = np.asarray(dual_coef, dtype=np.float64)
    if coef.ndim == 2:
        if coef.shape[0] != 1:
            raise ValueError(
                f"dual_coef has {coef.shape[0]} rows; Δb is defined for a binary classifier "
                f"(one row of α_i y_i). Apply it to each one-vs-one problem separately."
            )
        coef = coef[0]
    if support is not None:
        support = np.asarray(support, dtype=np.intp)
        if support.shape != coef.shape:
            raise ValueError(f"support has shape {support.shape} but dual_coef has {coef.shape}.")
        h = h[support]
    elif coef.shape != h.shape:
        raise ValueError(
            f"dual_coef has {coef.shape[0]} entries but h has {h.shape[0]}; pass support= "
            f"(the training indices of the support vectors)."
        )
    return float(coef @ h)


def decision_function_original_kernel(K_test, dual_coef, intercept, delta_b):
    """Decision values of an SVM trained on ``K_a``, evaluated with the original kernel (eq. 16).

    Parameters
    ----------
    K_test : array-like of shape (m, n_sv)
        Original kernel values ``K(x, x_i)`` between test points and the
        training points of ``dual_coef`` (the support vectors).
    dual_coef : array-like of shape (n_sv,) or (1, n_sv)
        ``α_i y_i``.
    intercept : float
        The intercept ``b`` found on ``K_a`` (scikit-learn's ``intercept_``).
    delta_b : float
        From :func:`delta_b`.

    Returns
    -------
    ndarray of shape (m,)
        ``Σ_i α_i y_i K(x, x_i) + b − Δb``.
    """
    coef = np.asarray(dual_coef, dtype=np.float64).reshape(-1)
    K_test = np.asarray(K_test, dtype=np.float64)
    if K_test.ndim != 2 or K_test.shape[1] != coef.shape[0]:
        raise ValueError(
            f"K_test must have shape (m, {coef.shape[0]}) (one column per support vector); "
            f"got {K_test.shape}."
        )
    b = float(np.asarray(intercept).reshape(-1)[0])
    return K_test @ coef + (b - float(delta_b))
