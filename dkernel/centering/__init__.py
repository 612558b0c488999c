"""Origins in feature space and the bias correction that lets prediction use the original kernel (Meilă 2002).

=================== ==========================================================================
``_origins``        origins ``a = Σ γ_i φ(x_i)``: :class:`Centering` (standard, class-balanced
                    eq. 13, multiclass, sampled), ``h = Kγ`` and ``h0 = γᵀKγ`` (eqs. 17–18)
``_bias_correction`` Δb (eq. 19) and the decision function through the original kernel (eq. 16)
``_general``        general centering: the origin that maximizes a criterion (§5, eqs. 24–33)
=================== ==========================================================================

The centered Gram ``K_a`` itself (eq. 14) is a lazy view: :class:`dkernel.views.CenteredGram`.
"""

from .._runtime.exports import lazy_exports

_EXPORTS = {
    "._origins": ("Centering", "InvalidLabelsError", "InvalidWeightsError", "SampleSizeError",
                  "class_balanced_weights", "origin_products"),
    "._bias_correction": ("decision_function_original_kernel", "delta_b"),
    "._general": ("CenteringResult", "Criterion", "criterion", "feature_space_gradient", "general_centering"),
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
