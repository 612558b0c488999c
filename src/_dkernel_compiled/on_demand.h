/* The rest of an on-demand Gram's rows: gathers and scatters through the samples' index arrays. */
#ifndef DK_ON_DEMAND_H
#define DK_ON_DEMAND_H

#include "simd.h"

/* Rows and columns of a tile of the transposed read (a few tens of KB: stays in L1/L2). */
#define DK_ON_DEMAND_TILE 64

/* M[R + i, computed[k]] = M[k, remaining[i]] for i in start .. stop - 1, k in 0 .. R - 1 (R = the rows
 * computed), the rows computed read in tiles of DK_ON_DEMAND_TILE x DK_ON_DEMAND_TILE. M's rows are `rows`
 * elements apart, its columns `cols` (inlined with cols = 1 for a C-ordered M). */
#define DK_DEFINE_COPY_COMPUTED_COLUMNS(NAME, T)                                                              \
    DK_INLINE void NAME##_strided(T *M, ptrdiff_t rows, ptrdiff_t cols, const ptrdiff_t *computed,           \
                                  ptrdiff_t R, const ptrdiff_t *remaining, ptrdiff_t start, ptrdiff_t stop)   \
    {                                                                                                         \
        for (ptrdiff_t i0 = start; i0 < stop; i0 += DK_ON_DEMAND_TILE) {                                     \
            ptrdiff_t i1 = i0 + DK_ON_DEMAND_TILE < stop ? i0 + DK_ON_DEMAND_TILE : stop;                     \
            for (ptrdiff_t k0 = 0; k0 < R; k0 += DK_ON_DEMAND_TILE) {                                         \
                ptrdiff_t k1 = k0 + DK_ON_DEMAND_TILE < R ? k0 + DK_ON_DEMAND_TILE : R;                       \
                for (ptrdiff_t i = i0; i < i1; i++) {                                                         \
                    T *row = M + (R + i) * rows;                                                              \
                    const T *column = M + remaining[i] * cols;                                                \
                    for (ptrdiff_t k = k0; k < k1; k++)                                                       \
                        row[computed[k] * cols] = column[k * rows];                                           \
                }                                                                                             \
            }                                                                                                 \
        }                                                                                                     \
    }                                                                                                         \
    static void NAME(T *M, ptrdiff_t rows, ptrdiff_t cols, const ptrdiff_t *computed, ptrdiff_t R,            \
                     const ptrdiff_t *remaining, ptrdiff_t start, ptrdiff_t stop)                             \
    {                                                                                                         \
        if (cols == 1)                                                                                        \
            NAME##_strided(M, rows, 1, computed, R, remaining, start, stop);                                  \
        else                                                                                                  \
            NAME##_strided(M, rows, cols, computed, R, remaining, start, stop);                               \
    }

DK_DEFINE_COPY_COMPUTED_COLUMNS(dk_copy_computed_columns_f64, double)
DK_DEFINE_COPY_COMPUTED_COLUMNS(dk_copy_computed_columns_f32, float)

/* The kernel values P[i, j] (m x p, rows p_rows apart, columns p_cols) of K[remaining[a + i], remaining[c + j]]
 * written at M[R + a + i, remaining[c + j]]; with `mirror`, also at M[R + c + j, remaining[a + i]], as short
 * runs along each of those rows, DK_ON_DEMAND_TILE of them at a time. */
#define DK_DEFINE_WRITE_REMAINING_TILE(NAME, T, V)                                                            \
    DK_INLINE void NAME##_strided(T *M, ptrdiff_t rows, ptrdiff_t cols, ptrdiff_t R, const ptrdiff_t *remaining, \
                                  const V *P, ptrdiff_t p_rows, ptrdiff_t p_cols, ptrdiff_t m, ptrdiff_t p,     \
                                  ptrdiff_t a, ptrdiff_t c, int mirror)                                       \
    {                                                                                                         \
        for (ptrdiff_t i = 0; i < m; i++) {                                                                   \
            T *row = M + (R + a + i) * rows;                                                                  \
            const V *values = P + i * p_rows;                                                                 \
            for (ptrdiff_t j = 0; j < p; j++)                                                                 \
                row[remaining[c + j] * cols] = (T)values[j * p_cols];                                         \
        }                                                                                                     \
        if (!mirror)                                                                                          \
            return;                                                                                           \
        for (ptrdiff_t j0 = 0; j0 < p; j0 += DK_ON_DEMAND_TILE) {                                             \
            ptrdiff_t j1 = j0 + DK_ON_DEMAND_TILE < p ? j0 + DK_ON_DEMAND_TILE : p;                           \
            for (ptrdiff_t j = j0; j < j1; j++) {                                                             \
                T *row = M + (R + c + j) * rows;                                                              \
                const V *values = P + j * p_cols;                                                             \
                for (ptrdiff_t i = 0; i < m; i++)                                                             \
                    row[remaining[a + i] * cols] = (T)values[i * p_rows];                                     \
            }                                                                                                 \
        }                                                                                                     \
    }                                                                                                         \
    static void NAME(T *M, ptrdiff_t rows, ptrdiff_t cols, ptrdiff_t R, const ptrdiff_t *remaining, const V *P, \
                     ptrdiff_t p_rows, ptrdiff_t p_cols, ptrdiff_t m, ptrdiff_t p, ptrdiff_t a, ptrdiff_t c,      \
                     int mirror)                                                                              \
    {                                                                                                         \
        if (cols == 1 && p_cols == 1)                                                                         \
            NAME##_strided(M, rows, 1, R, remaining, P, p_rows, 1, m, p, a, c, mirror);                       \
        else                                                                                                  \
            NAME##_strided(M, rows, cols, R, remaining, P, p_rows, p_cols, m, p, a, c, mirror);               \
    }

DK_DEFINE_WRITE_REMAINING_TILE(dk_write_remaining_tile_f64_f64, double, double)
DK_DEFINE_WRITE_REMAINING_TILE(dk_write_remaining_tile_f64_f32, double, float)
DK_DEFINE_WRITE_REMAINING_TILE(dk_write_remaining_tile_f32_f64, float, double)
DK_DEFINE_WRITE_REMAINING_TILE(dk_write_remaining_tile_f32_f32, float, float)

#endif
