"""Kernel blocks from inner products: the arithmetic under every kernel's ``block``.

A kernel's block ``K(X, Z)`` is one BLAS product ``X Zᵀ`` (:func:`dot_block`)
followed by an element-wise map (:mod:`dkernel.kernels._kernels`). Here is
that arithmetic: the products, the RBF map (:func:`map_block`) and its
exponential (:func:`exp_nonpositive`), RBF rows summed from the data over few
features (:func:`direct_rows_into`), and a square block's mirror
(:func:`mirror_upper`). The passes compiled at install time
(:mod:`_dkernel_compiled.rbf`, :mod:`_dkernel_compiled.mirror`) are loaded
on the first block large enough to use them: a tiny fit loads no compiled code.
"""

import numpy as np
from sklearn.utils.extmath import safe_sparse_dot

__all__ = ["DIRECT_MAX_FEATURES", "FUSED_MIN_VALUES", "PASS_ROWS", "dot_block", "dot_block_into", "direct_rows_into",
           "exp_nonpositive", "map_block", "map_mirrored_tiles", "map_strips", "mirror_upper", "transposed_columns"]


def _dense_pair(X, Z):
    return isinstance(X, np.ndarray) and isinstance(Z, np.ndarray) and X.ndim == Z.ndim == 2


def dot_block(X, Z):
    """``X Zᵀ`` as a dense, C-contiguous array (BLAS for dense, sparse product for CSR).

    The last bits of a product are BLAS's to choose, and they depend on the
    block a value is computed in, not only on its two vectors: NumPy hands a
    one-row product to ``gemv``, whose sums round differently from ``gemm``'s;
    a ``gemm`` kernel sums the rows at a block's edge, and each thread's share
    of rows, in orders of its own; MKL's results may depend on the arrays'
    alignment. With OpenBLAS 0.3.31's SkylakeX kernels on one thread (an AMD
    EPYC, 3 to 784 features), a row computed in a block of 7 rows and in one of
    302 differs in the last bit in 0.02 to 0.4 % of its values, a row computed
    alone in 18 to 91 %; computing the last of an odd number of rows as the
    second of a pair, or a single row as one of two, does not remove it there,
    and costs 1.2 to 2.8 times the product. A product summed in one fixed order
    per value (a compiled loop instead of BLAS) would give every block the same
    bits, at 2 to 16 times BLAS's time (8 to 784 features; 1.3 to 15 times a
    whole RBF row with its map).

    So dkernel promises no bits: a kernel value computed in two blocks agrees to
    rounding (about ``1e-15`` relative), and nothing depends on more. What a
    solver needs is that the values it reads do not change under it: a Gram held
    in memory computes each value once (the on-demand Gram too:
    :mod:`dkernel.gram._in_memory`), and rows computed again on the fly differ
    from the first by rounding, as the solver's own updates of the gradient do.
    A fit's result depends on the kernel values to rounding, and on the solver's
    tolerance far more.
    """
    if _dense_pair(X, Z):
        return dot_block_into(X, Z, np.empty((X.shape[0], Z.shape[0]), dtype=np.result_type(X, Z)))
    return np.asarray(safe_sparse_dot(X, Z.T, dense_output=True))


def dot_block_into(X, Z, out):
    """:func:`dot_block` of dense ``X`` and ``Z`` written into ``out`` (C-contiguous, of their dtype); ``out``."""
    return np.matmul(X, Z.T, out=out)


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

    NumPy evaluates ``exp`` in float64 one element at a time through the C
    library where the CPU lacks AVX-512 (about 10 ns an element here). Written
    out as arithmetic, the exponential vectorizes (four float64 lanes with
    AVX2, eight with AVX-512):

    * range reduction (Cody & Waite): ``t = k ln 2 + r``, ``k = round(t / ln 2)``,
      ``|r| ≤ ln 2 / 2``, ``ln 2`` split in a high part with trailing zero bits
      (``k · LN2_HI`` exact) and a low part;
    * ``exp(r)`` by its Taylor polynomial of degree 13 in Horner form (truncation
      below ``r¹⁴/14! < 5e-18`` relative);
    * ``2^k`` built in the exponent bits: ``k`` read from the low bits of
      ``t / ln 2 + 1.5 · 2⁵²`` (the rounding-shift trick), shifted into place.

    Strict IEEE arithmetic (no fused multiply-adds): results are within 1 ulp
    of NumPy's ``exp``; ``t < -708`` (a value below the smallest normal
    float64) gives 0, and ``t = 0`` gives exactly 1.

    The same IEEE operations in the same order as
    :func:`_dkernel_compiled.rbf.exp_nonpositive_into`, so the same bits: from
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


#: Rows per element-wise pass of :func:`map_strips` (a few hundred KB to 2 MB: stays in L2).
PASS_ROWS = 64

#: Blocks of at least this many float64 values are mapped by the compiled pass.
FUSED_MIN_VALUES = 2**15

#: Columns of a tile of :func:`map_mirrored_tiles` (1024 rows: 2 MB of products, in L2).
MIRROR_TILE_COLUMNS = 256


def _compiled(D):
    """Whether the products ``D`` are mapped by the compiled pass: C-contiguous float64, large enough."""
    return D.dtype == np.float64 and D.ndim == 2 and D.flags.c_contiguous and D.size >= FUSED_MIN_VALUES


def _as_float64(v):
    return np.ascontiguousarray(v, dtype=np.float64)


def _map_numpy(D, x_sq, z_sq, gamma, diagonal_offset):
    D *= -2
    D += x_sq.reshape(-1, 1)
    D += z_sq.reshape(1, -1)
    np.maximum(D, 0, out=D)
    if diagonal_offset >= 0:
        diagonal = np.arange(diagonal_offset, min(diagonal_offset + D.shape[0], D.shape[1]))
        D[diagonal - diagonal_offset, diagonal] = 0
    D *= -gamma
    if D.dtype == np.float64:
        D[...] = exp_nonpositive(D)
    else:  # float32 data: NumPy's float32 exp (vectorized), as the kernel's float32 blocks always were
        np.exp(D, out=D)


def map_block(D, x_sq, z_sq, gamma, *, diagonal_offset=-1, compiled=None):
    """Map the products ``D = X Zᵀ`` to RBF values in place: ``K = exp(-γ max(|x|² + |z|² - 2xᵀz, 0))``.

    The squared distance is formed in the order of
    ``sklearn.metrics.euclidean_distances`` (float64 results agree with it to
    rounding), clipped at zero, exactly zero for a point and itself
    (``K(x, x) = 1.0`` exactly). Two evaluations of the same map:

    * NumPy, one pass over the block per step, the exponential by the same
      polynomial (:func:`exp_nonpositive`): small blocks (a tiny fit, the
      prediction of a few points), which then load no compiled code;
    * compiled (:mod:`_dkernel_compiled.rbf`, C vectorized for AVX-512 or
      AVX2, outside the GIL), all steps in one pass over each row: float64
      blocks of :data:`FUSED_MIN_VALUES` values or more, where NumPy's
      per-step passes and its scalar float64 ``exp`` cost several times the
      BLAS product.

    Both give the same bits from the same products: the map is element-wise,
    the same operations in the same order, so a value does not depend on the
    size of its block, on which evaluation maps it, or on whether the block is
    mapped whole (:meth:`RBFKernel.block <dkernel.kernels.RBFKernel.block>`)
    or strip by strip into a buffer (:func:`map_strips`); the products
    themselves are BLAS's (:func:`dot_block`). float32 data keep NumPy's
    float32 ``exp``.

    ``diagonal_offset >= 0``: row ``i`` and column ``i + diagonal_offset``
    are one point (value exactly 1). ``compiled`` (default: decided by
    ``D``) chooses the evaluation; a strip of a larger block follows its
    block's choice.
    """
    if compiled is None:
        compiled = _compiled(D)
    offset = diagonal_offset
    if compiled:
        from _dkernel_compiled.rbf import rbf_values_into

        rbf_values_into(D, _as_float64(x_sq), _as_float64(z_sq), -gamma, offset)
    else:
        _map_numpy(D, x_sq, z_sq, gamma, offset)
    return D


def map_strips(D, x_sq, z_sq, gamma, *, symmetric=False, on_strip=None):
    """:func:`map_block` on strips of :data:`PASS_ROWS` rows, each while in cache; ``on_strip(a, S)`` after each."""
    compiled = _compiled(D)
    for a in range(0, D.shape[0], PASS_ROWS):
        S = D[a : a + PASS_ROWS]
        map_block(S, x_sq[a : a + PASS_ROWS], z_sq, gamma, diagonal_offset=a if symmetric else -1, compiled=compiled)
        if on_strip is not None:
            on_strip(a, S)
    return D


def map_mirrored_tiles(X, Z, x_sq, z_sq, gamma, K, row0, col0):
    """``K(X, Z)`` written at ``K[row0:, col0:]`` and its transpose at ``K[col0:, row0:]``, tile by tile.

    For a Gram's blocks off the diagonal: per tile of
    :data:`MIRROR_TILE_COLUMNS` columns, the BLAS product, then one compiled
    pass that maps it and writes both places
    (:func:`_dkernel_compiled.rbf.rbf_tile_into_gram`): no block of the whole band
    in between, no second pass for the mirror. Dense float64 ``X``, ``Z``.
    """
    from _dkernel_compiled.rbf import rbf_tile_into_gram

    x_sq, z_sq = _as_float64(x_sq), _as_float64(z_sq)
    for c in range(0, Z.shape[0], MIRROR_TILE_COLUMNS):
        P = dot_block(X, Z[c : c + MIRROR_TILE_COLUMNS])
        rbf_tile_into_gram(P, x_sq, z_sq[c : c + MIRROR_TILE_COLUMNS], -gamma, K, row0, col0 + c)


#: Dense data of at most this many features have their RBF rows evaluated directly.
DIRECT_MAX_FEATURES = 16


def transposed_columns(Z):
    """``Zᵀ`` (C-ordered) where rows against ``Z`` are evaluated directly: dense float64 ``Z`` of at most
    :data:`DIRECT_MAX_FEATURES` features; else None."""
    if isinstance(Z, np.ndarray) and Z.ndim == 2 and Z.dtype == np.float64 and Z.shape[1] <= DIRECT_MAX_FEATURES:
        return np.ascontiguousarray(Z.T)
    return None


def direct_rows_into(X, Zt, gamma, out):
    """``out[i, j] = exp(-gamma Σ_k (X[i, k] - Zt[k, j])²)`` in one compiled pass, ``out`` of float32 or float64
    (its rows contiguous, as a slice of the columns of a C-ordered array).

    The solver asks for a few rows at a time (22 in the median request). Over
    few features, a BLAS product of so few rows is mostly packing, and it is
    followed by the element-wise map and the copy into float32 rows: three
    passes. One compiled pass sums each distance directly, maps it and writes
    the value once in the rows' dtype. One core, requests of 12 to 64 rows
    against 12000 samples, float32 rows: 3.9 against 2.6 ns a value at 10
    features, 4.3 against 3.5 at 16, 4.9 against 4.5 at 20 (the sum costs
    about 0.15 ns a feature; the product's cost hardly grows with them).

    The values agree with the product form's (:meth:`dkernel.kernels.RBFKernel.block`)
    to rounding: the direct sum has no cancellation, so it is the more accurate of
    the two; a point and itself are at distance exactly 0, value exactly 1.
    """
    from _dkernel_compiled.rbf import rbf_direct_rows_into

    rbf_direct_rows_into(np.ascontiguousarray(X, dtype=np.float64), Zt, -gamma, out)


def mirror_upper(K):
    """``K`` (a square block ``K(X, X)``) made exactly symmetric in place: its upper triangle copied onto the lower.

    A Gram evaluated as one BLAS product holds both triangles, which rounding
    may make differ in the last bit. In NumPy the copy within a diagonal block
    is a fancy index (a gather and a scatter through index arrays): 0.44 ms for
    a 249-sample Gram, a seventh of a tiny fit. The compiled loop
    (:mod:`_dkernel_compiled.mirror`) goes over tiles, each read along its rows
    and written along the columns of its mirror while both are in cache.
    """
    from _dkernel_compiled.mirror import mirror_upper_into_lower

    mirror_upper_into_lower(K)
    return K
