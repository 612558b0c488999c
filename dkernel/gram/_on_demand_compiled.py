"""The rest of an on-demand Gram's rows, written around the rows already computed: compiled, outside the GIL.

Rows computed on demand fill the first rows of the on-demand Gram's matrix
``M`` (in the order they were computed, each over all columns). The row of a
remaining sample ``u`` then needs its values at the columns of the samples
computed, which the Gram's symmetry gives from their rows (``K[u, s] =
K[s, u]``, :func:`copy_computed_columns`): copied, not computed again, for
the solver has read those values already and a value computed in another
block may differ in the last bit (:mod:`dkernel.kernels._products`). Its
values at the columns of the remaining samples come from their Gram,
computed tile by tile, each tile written with its mirror
(:func:`write_remaining_tile`).
"""

from .._runtime.jit import njit

__all__ = ["copy_computed_columns", "write_remaining_tile"]

#: Rows and columns of a tile of the transposed read (a few tens of KB: stays in L1/L2).
TILE = 64


@njit(cache=True, nogil=True)
def copy_computed_columns(M, computed, remaining, start, stop):
    """``M[R + i, computed[k]] = M[k, remaining[i]]`` for ``i`` in ``start .. stop - 1``, ``R = computed.size``.

    ``M[k]`` is the row of sample ``computed[k]``; row ``R + i`` becomes
    that of ``remaining[i]``. The rows computed are read in tiles of
    :data:`TILE` × :data:`TILE`.
    """
    R = computed.size
    for i0 in range(start, stop, TILE):
        i1 = min(i0 + TILE, stop)
        for k0 in range(0, R, TILE):
            k1 = min(k0 + TILE, R)
            for i in range(i0, i1):
                row = M[R + i]
                u = remaining[i]
                for k in range(k0, k1):
                    row[computed[k]] = M[k, u]


@njit(cache=True, nogil=True)
def write_remaining_tile(M, R, remaining, P, a, c, mirror):
    """Kernel values ``P[i, j] = K[remaining[a + i], remaining[c + j]]`` written at ``M[R + a + i, remaining[c + j]]``.

    With ``mirror`` (a tile off the diagonal) also at ``M[R + c + j,
    remaining[a + i]]``, as short runs along each of those rows.
    """
    m, p = P.shape
    for i in range(m):
        row = M[R + a + i]
        values = P[i]
        for j in range(p):
            row[remaining[c + j]] = values[j]
    if mirror:
        for j0 in range(0, p, TILE):
            j1 = min(j0 + TILE, p)
            for j in range(j0, j1):
                row = M[R + c + j]
                for i in range(m):
                    row[remaining[a + i]] = P[i, j]
