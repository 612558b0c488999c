"""Kernel-target alignment and kernel adaptation by alignment (Kandola, Shawe-Taylor & Cristianini).

=================================== ======================================================================
:func:`alignment`,                  ``A(K₁, K₂)`` and ``A(K, ttᵀ)`` (Definition 1, eq. 1), exact in one
:func:`target_alignment`            streaming pass over the blocks (``_measures``)
:func:`sampled_target_alignment`    the same estimated from a sample, with its standard error
:func:`top_eigenpairs`              leading eigenpairs: exact, randomized range finder over the Gram's
                                    blocks on Dask workers, or Nyström (``_spectrum``)
:func:`alignment_weights`           ``α_i ∝ ⟨v_i, t⟩²`` (eq. 5) and the alignment of eq. 6
:func:`transductive_adaptation`     Algorithm 1: ``G`` over labelled and unlabelled points (``_reweighting``)
:class:`AdaptedGram`                ``G = U diag(α) Uᵀ`` as a lazy low-rank Gram view (``_adapted_gram``)
:class:`KernelAligner`              Algorithm 2: a scikit-learn transformer; ``adapted_kernel_`` is a kernel
                                    function for ``dkernel.SVC`` and scikit-learn (``_inductive``)
=================================== ======================================================================

Targets (:func:`alignment_target`): ``"classification"`` (``±1``), ``"uneven"`` (eq. 9) and
``"regression"`` (eq. 7); for more than two classes ``"multiclass"`` (``T = YYᵀ``, the simplex code ``Y``)
and :func:`one_vs_rest_alignment` (one binary alignment per class).
"""

from .._runtime.exports import lazy_exports

_EXPORTS = {
    "._measures": ("AlignmentEstimate", "alignment", "alignment_target", "frobenius_norm",
                   "multiclass_target", "one_vs_rest_alignment", "sampled_target_alignment", "target_alignment"),
    "._adapted_gram": ("AdaptedGram",),
    "._inductive": ("AdaptedKernel", "KernelAligner"),
    "._reweighting": ("alignment_weights", "labelled_target", "numerical_rank_tol", "optimal_alignment",
                      "transductive_adaptation"),
    "._spectrum": ("METHODS", "Spectrum", "top_eigenpairs"),
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
