"""The exponential of the RBF kernel, ``exp(t)`` for ``t <= 0``, as a polynomial that compiles to vector code.

NumPy evaluates ``exp`` in float64 one element at a time through the C
library where the CPU lacks AVX-512 (about 10 ns an element here). Written
out as arithmetic, the exponential vectorizes (:mod:`dkernel.kernels._rbf_compiled`:
four float64 lanes with AVX2, eight with AVX-512):

* range reduction (Cody & Waite): ``t = k ln 2 + r``, ``k = round(t / ln 2)``,
  ``|r| ≤ ln 2 / 2``, ``ln 2`` split in a high part with trailing zero bits
  (``k · LN2_HI`` exact) and a low part;
* ``exp(r)`` by its Taylor polynomial of degree 13 in Horner form (truncation
  below ``r¹⁴/14! < 5e-18`` relative);
* ``2^k`` built in the exponent bits: ``k`` read from the low bits of
  ``t / ln 2 + 1.5 · 2⁵²`` (the rounding-shift trick), shifted into place.

Strict IEEE arithmetic (no fused multiply-adds), so that :func:`exp_nonpositive`
here, the same operations in NumPy, gives the same bits as the compiled loop.
Results are within 1 ulp of NumPy's ``exp``; ``t < -708`` (a value below the
smallest normal float64) gives 0, and ``t = 0`` gives exactly 1.
"""

import numpy as np

__all__ = ["exp_nonpositive"]

LOG2E = 1.4426950408889634
LN2_HI = 6.93147180369123816490e-01  # fdlibm's ln2HI: its low 32 bits are zero
LN2_LO = 1.90821492927058770002e-10
#: 1.5 · 2⁵²: adding it rounds to an integer held in the low bits of the mantissa.
ROUNDING_SHIFT = 6755399441055744.0
#: Below this exponent the value is under the smallest normal float64, and is 0.
UNDERFLOW = -708.0

#: 1/k! for k = 13 … 0, Horner's order.
TAYLOR = (1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
          1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0)


def exp_nonpositive(t):
    """``exp(t)`` for ``t <= 0``, in NumPy, by the operations of the compiled loop.

    The same IEEE operations in the same order as
    :func:`dkernel.kernels._rbf_compiled.exp_nonpositive_into`, so the same bits: from
    the same products, a kernel value does not depend on which of the two its block's size selects.

    Examples
    --------
    >>> import numpy as np
    >>> exp_nonpositive(np.array([0.0, -1.0, -800.0])).tolist() == [1.0, float(np.exp(-1.0)), 0.0]
    True
    """
    x = np.maximum(t, UNDERFLOW)
    s = x * LOG2E + ROUNDING_SHIFT
    k = s - ROUNDING_SHIFT
    r = (x - k * LN2_HI) - k * LN2_LO
    p = np.full_like(r, TAYLOR[0])
    for c in TAYLOR[1:]:
        p *= r
        p += c
    bits = s.view(np.int64)
    bits += 1023
    bits <<= 52
    p *= bits.view(np.float64)
    p[t < UNDERFLOW] = 0.0
    return p
