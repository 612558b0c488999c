/* The gradient step's loops: the weighted sum of a working set's rows, the gradient's update, and the
 * gather of the working set's block. */
#ifndef DK_GRADIENT_H
#define DK_GRADIENT_H

#include <math.h>

#include "simd.h"

/* step[a] = sum_s weights[s] M[positions[s], columns[a]] in float64, over the s of nonzero weight and
 * position >= 0, one row after the other (the order of summation of every partition). M's rows are `rows`
 * elements apart, its columns `cols`; all_columns: columns[a] = a (not read). */
#define DK_DEFINE_WEIGHTED_ROWS_STEP(NAME, T)                                                                 \
    DK_CLONES static void NAME(const T *M, ptrdiff_t rows, ptrdiff_t cols, const ptrdiff_t *positions,        \
                               const double *weights, ptrdiff_t n_rows, const ptrdiff_t *columns,             \
                               int all_columns, double *DK_RESTRICT step, ptrdiff_t n_step)                   \
    {                                                                                                         \
        for (ptrdiff_t a = 0; a < n_step; a++)                                                                \
            step[a] = 0.0;                                                                                    \
        for (ptrdiff_t s = 0; s < n_rows; s++) {                                                              \
            double w = weights[s];                                                                            \
            if (w == 0.0 || positions[s] < 0)                                                                 \
                continue;                                                                                     \
            const T *DK_RESTRICT row = M + positions[s] * rows;                                               \
            if (all_columns && cols == 1)                                                                     \
                for (ptrdiff_t a = 0; a < n_step; a++)                                                        \
                    step[a] += w * (double)row[a];                                                            \
            else if (all_columns)                                                                             \
                for (ptrdiff_t a = 0; a < n_step; a++)                                                        \
                    step[a] += w * (double)row[a * cols];                                                     \
            else                                                                                              \
                DK_UNROLL4 for (ptrdiff_t a = 0; a < n_step; a++)                                             \
                    step[a] += w * (double)row[columns[a] * cols];                                            \
        }                                                                                                     \
    }

DK_DEFINE_WEIGHTED_ROWS_STEP(dk_weighted_rows_step_f64, double)
DK_DEFINE_WEIGHTED_ROWS_STEP(dk_weighted_rows_step_f32, float)

/* out[r, c] = K[rows[r], columns[c]] (out: n_rows x n_columns, C order); whether every value is finite. */
#define DK_DEFINE_GATHER_BLOCK(NAME, T)                                                                       \
    DK_CLONES static int NAME(const T *K, ptrdiff_t k_rows, ptrdiff_t k_cols, const ptrdiff_t *rows,          \
                              ptrdiff_t n_rows, const ptrdiff_t *columns, ptrdiff_t n_columns,                \
                              double *DK_RESTRICT out)                                                        \
    {                                                                                                         \
        int finite = 1;                                                                                       \
        for (ptrdiff_t r = 0; r < n_rows; r++) {                                                              \
            const T *DK_RESTRICT src = K + rows[r] * k_rows;                                                  \
            double *DK_RESTRICT dst = out + r * n_columns;                                                    \
            DK_UNROLL4 for (ptrdiff_t c = 0; c < n_columns; c++) {                                            \
                double value = (double)src[columns[c] * k_cols];                                              \
                dst[c] = value;                                                                               \
                finite &= isfinite(value) != 0;                                                               \
            }                                                                                                 \
        }                                                                                                     \
        return finite;                                                                                        \
    }

DK_DEFINE_GATHER_BLOCK(dk_gather_block_f64, double)
DK_DEFINE_GATHER_BLOCK(dk_gather_block_f32, float)

/* G[active[a]] += y[active[a]] * step[a]; 1 where every step[a] is finite, 0 where one is not, -1 (G updated up
 * to it) at an active index outside 0 .. n - 1. */
DK_CLONES static int dk_add_gradient_step(double *G, const double *y, ptrdiff_t n, const ptrdiff_t *active,
                                          ptrdiff_t n_active, const double *step)
{
    int finite = 1;
    for (ptrdiff_t a = 0; a < n_active; a++) {
        ptrdiff_t i = active[a];
        if ((size_t)i >= (size_t)n)
            return -1;
        G[i] += y[i] * step[a];
        finite &= isfinite(step[a]) != 0;
    }
    return finite;
}

#endif
