"""The RBF width conventions of the papers, and their ``gamma``.

The papers write the RBF kernel with a width σ² in two ways:

* Meilă (2002) and Graf & Borer (2001): ``exp(-|x - z|² / σ²)``, so
  ``gamma = 1 / σ²`` (Meilă's Table 1: σ² = 1000 → gamma = 0.001);
* Kandola et al. and many texts: ``exp(-|x - z|² / (2σ²))``, so
  ``gamma = 1 / (2σ²)``.

:func:`gamma_from_sigma2` converts either convention.
"""

import math
from numbers import Real

from ..exceptions import InvalidKernelParameterError

__all__ = ["gamma_from_sigma2"]


def gamma_from_sigma2(sigma2, convention="meila"):
    """Convert an RBF width σ² to scikit-learn's ``gamma``.

    Parameters
    ----------
    sigma2 : float
        The width σ² > 0.
    convention : {"meila", "gaussian"}, default="meila"
        ``"meila"`` for ``exp(-|x-z|²/σ²)`` (Meilă 2002, Graf & Borer 2001),
        giving ``gamma = 1/σ²``; ``"gaussian"`` for ``exp(-|x-z|²/(2σ²))``,
        giving ``gamma = 1/(2σ²)``.
    """
    if not (isinstance(sigma2, Real) and sigma2 > 0 and math.isfinite(sigma2)):
        raise InvalidKernelParameterError(f"sigma2 must be a finite number > 0; got {sigma2!r}.")
    if convention == "meila":
        return 1.0 / sigma2
    if convention == "gaussian":
        return 1.0 / (2.0 * sigma2)
    raise ValueError(f"convention must be 'meila' or 'gaussian'; got {convention!r}.")
