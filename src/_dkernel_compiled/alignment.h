/* One pass over a Gram block for the target alignment: t_rowsᵀ K t_cols and ‖K‖²_F, in float64. */
#ifndef DK_ALIGNMENT_H
#define DK_ALIGNMENT_H

#include "simd.h"

/* A row's sums in vector lanes, in any order (a reduction, like NumPy's pairwise sums): the row's four
 * quarters summed side by side, so that four additions are in flight; K's rows `rows` elements apart, its
 * columns `cols`. */
#define DK_DEFINE_TARGET_SUMS(NAME, T)                                                                        \
    DK_CLONES static void NAME(const T *K, ptrdiff_t m, ptrdiff_t p, ptrdiff_t rows, ptrdiff_t cols,          \
                               const double *t_rows, const double *t_cols, double *q_out, double *f_out)      \
    {                                                                                                         \
        double q = 0.0, f = 0.0;                                                                              \
        ptrdiff_t quarter = cols == 1 ? p / 4 : 0;                                                            \
        for (ptrdiff_t i = 0; i < m; i++) {                                                                   \
            const T *DK_RESTRICT row = K + i * rows;                                                          \
            const T *DK_RESTRICT row1 = row + quarter, *DK_RESTRICT row2 = row1 + quarter;                   \
            const T *DK_RESTRICT row3 = row2 + quarter;                                                       \
            const double *t1 = t_cols + quarter, *t2 = t1 + quarter, *t3 = t2 + quarter;                      \
            double r0 = 0.0, r1 = 0.0, r2 = 0.0, r3 = 0.0, s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;            \
            DK_SIMD_SUMS8(r0, r1, r2, r3, s0, s1, s2, s3)                                                     \
            for (ptrdiff_t j = 0; j < quarter; j++) {                                                         \
                double v0 = (double)row[j], v1 = (double)row1[j], v2 = (double)row2[j], v3 = (double)row3[j]; \
                r0 += v0 * t_cols[j];                                                                         \
                r1 += v1 * t1[j];                                                                             \
                r2 += v2 * t2[j];                                                                             \
                r3 += v3 * t3[j];                                                                             \
                s0 += v0 * v0;                                                                                \
                s1 += v1 * v1;                                                                                \
                s2 += v2 * v2;                                                                                \
                s3 += v3 * v3;                                                                                \
            }                                                                                                 \
            double r = (r0 + r1) + (r2 + r3), s = (s0 + s1) + (s2 + s3);                                      \
            for (ptrdiff_t j = 4 * quarter; j < p; j++) {                                                     \
                double v = (double)row[j * cols];                                                             \
                r += v * t_cols[j];                                                                           \
                s += v * v;                                                                                   \
            }                                                                                                 \
            q += t_rows[i] * r;                                                                               \
            f += s;                                                                                           \
        }                                                                                                     \
        *q_out = q;                                                                                           \
        *f_out = f;                                                                                           \
    }

DK_DEFINE_TARGET_SUMS(dk_target_sums_f64, double)
DK_DEFINE_TARGET_SUMS(dk_target_sums_f32, float)

#endif
