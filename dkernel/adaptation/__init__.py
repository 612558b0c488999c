"""Kernel adaptation by alignment (Kandola, Shawe-Taylor & Cristianini, "On the extensions of kernel alignment").

=================================== ======================================================================
:func:`top_eigenpairs`              leading eigenpairs: exact, randomized range finder over the Gram's
                                    blocks on Dask workers, or Nyström (``_spectrum``)
:func:`alignment_weights`           ``α_i ∝ ⟨v_i, t⟩²`` (eq. 5) and the alignment of eq. 6
:func:`transductive_adaptation`     Algorithm 1: ``G`` over labelled and unlabelled points (``_reweighting``)
:class:`AdaptedGram`                ``G = U diag(α) Uᵀ`` as a lazy low-rank Gram view (``_gram_view``)
:class:`KernelAligner`              Algorithm 2: a scikit-learn transformer; ``adapted_kernel_`` is a kernel
                                    function for ``dkernel.SVC`` and scikit-learn (``_inductive``)
=================================== ======================================================================

Targets are those of :func:`dkernel.alignment.alignment_target`: ``"classification"`` (``±1``),
``"uneven"`` (eq. 9) and ``"regression"`` (eq. 7).
"""

from ._gram_view import AdaptedGram
from ._inductive import AdaptedKernel, KernelAligner
from ._reweighting import alignment_weights, optimal_alignment, transductive_adaptation
from ._spectrum import Spectrum, top_eigenpairs

__all__ = [
    "AdaptedGram",
    "AdaptedKernel",
    "KernelAligner",
    "Spectrum",
    "alignment_weights",
    "optimal_alignment",
    "top_eigenpairs",
    "transductive_adaptation",
]
