/* The mirror of a square matrix's upper triangle onto its lower one, tile by tile. */
#ifndef DK_MIRROR_H
#define DK_MIRROR_H

#include "simd.h"

/* Rows and columns of a tile (64 x 64 float64 values: 32 KB, with its mirror in L1/L2). */
#define DK_MIRROR_TILE 64

/* K[j, i] = K[i, j] for every i < j of the n x n matrix K, its rows `rows` and its columns `cols` elements
 * apart: each tile read along its rows and written along the columns of its mirror while both are in cache. */
#define DK_DEFINE_MIRROR(NAME, T)                                                                             \
    DK_CLONES static void NAME(T *K, ptrdiff_t n, ptrdiff_t rows, ptrdiff_t cols)                             \
    {                                                                                                         \
        for (ptrdiff_t a = 0; a < n; a += DK_MIRROR_TILE) {                                                   \
            ptrdiff_t a_end = a + DK_MIRROR_TILE < n ? a + DK_MIRROR_TILE : n;                                \
            for (ptrdiff_t b = a; b < n; b += DK_MIRROR_TILE) {                                               \
                ptrdiff_t b_end = b + DK_MIRROR_TILE < n ? b + DK_MIRROR_TILE : n;                            \
                for (ptrdiff_t i = a; i < a_end; i++) {                                                       \
                    const T *upper = K + i * rows;                                                            \
                    T *lower = K + i * cols;                                                                  \
                    for (ptrdiff_t j = (b > i + 1 ? b : i + 1); j < b_end; j++)                               \
                        lower[j * rows] = upper[j * cols];                                                    \
                }                                                                                             \
            }                                                                                                 \
        }                                                                                                     \
    }

DK_DEFINE_MIRROR(dk_mirror_upper_into_lower_f64, double)
DK_DEFINE_MIRROR(dk_mirror_upper_into_lower_f32, float)

#endif
