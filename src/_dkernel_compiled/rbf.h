/* The RBF kernel's element-wise map, from products xᵀz to kernel values, as loops the compiler vectorizes.
 *
 * The exponential is the polynomial of exp_nonpositive in dkernel/kernels/_blocks.py, with the same constants and the same
 * IEEE operations in the same order (the build contracts no multiply-add into an FMA), so that its
 * NumPy twin gives the same bits.
 */
#ifndef DK_RBF_H
#define DK_RBF_H

#include "simd.h"

#define DK_LOG2E 1.4426950408889634
#define DK_LN2_HI 6.93147180369123816490e-01 /* fdlibm's ln2HI: its low 32 bits are zero */
#define DK_LN2_LO 1.90821492927058770002e-10
#define DK_ROUNDING_SHIFT 6755399441055744.0 /* 1.5 * 2^52 */
#define DK_UNDERFLOW (-708.0)

/* Rows of a tile mapped and written (with their mirror) at a time: 64 rows of a 256-column tile are 128 KB. */
#define DK_TILE_PASS_ROWS 64

/* exp(t) for t <= 0; 0 below DK_UNDERFLOW (and for a NaN t). */
DK_INLINE double dk_exp_nonpositive(double t)
{
    double x = t > DK_UNDERFLOW ? t : DK_UNDERFLOW;
    double s = x * DK_LOG2E + DK_ROUNDING_SHIFT;
    double k = s - DK_ROUNDING_SHIFT;
    double r = (x - k * DK_LN2_HI) - k * DK_LN2_LO;
    double p = 1.0 / 6227020800.0; /* Taylor's 1/k!, k = 13 ... 0, in Horner's order */
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    uint64_t bits; /* the low bits of s hold k: 2^k built in the exponent bits */
    memcpy(&bits, &s, sizeof bits);
    bits = (bits + 1023) << 52;
    double scale;
    memcpy(&scale, &bits, sizeof scale);
    double value = p * scale;
    return t >= DK_UNDERFLOW ? value : 0.0;
}

DK_CLONES static void dk_exp_nonpositive_into(const double *t, double *out, ptrdiff_t n)
{
    for (ptrdiff_t j = 0; j < n; j++)
        out[j] = dk_exp_nonpositive(t[j]);
}

/* P[i, j] <- exp(neg_gamma * max((-2 P[i, j] + x_sq[i]) + z_sq[j], 0)) over m rows of p values, rows
 * row_stride apart; with diagonal_offset >= 0, P[i, i + diagonal_offset] <- 1 (a point and itself). */
DK_INLINE void dk_rbf_rows_inline(
    double *P, ptrdiff_t m, ptrdiff_t p, ptrdiff_t row_stride, const double *x_sq, const double *z_sq,
    double neg_gamma, ptrdiff_t diagonal_offset)
{
    for (ptrdiff_t i = 0; i < m; i++) {
        double *DK_RESTRICT row = P + i * row_stride;
        const double *DK_RESTRICT z = z_sq;
        double xi = x_sq[i];
        for (ptrdiff_t j = 0; j < p; j++) {
            double d = (-2.0 * row[j] + xi) + z[j];
            d = d < 0.0 ? 0.0 : d;
            row[j] = dk_exp_nonpositive(d * neg_gamma);
        }
        if (diagonal_offset >= 0 && i + diagonal_offset < p)
            row[i + diagonal_offset] = 1.0;
    }
}

DK_CLONES static void dk_rbf_rows(double *P, ptrdiff_t m, ptrdiff_t p, ptrdiff_t row_stride, const double *x_sq,
                                  const double *z_sq, double neg_gamma, ptrdiff_t diagonal_offset)
{
    dk_rbf_rows_inline(P, m, p, row_stride, x_sq, z_sq, neg_gamma, diagonal_offset);
}

/* The RBF values of the products P (m x p, rows p_stride apart: rows row0 ..., columns col0 ... of a Gram)
 * written at K[row0 + i, col0 + j] and at the mirrored K[col0 + j, row0 + i], DK_TILE_PASS_ROWS rows at a
 * time while they are in cache; P is overwritten with the values. K's rows are k_rows apart, its columns
 * k_cols apart (elements). */
#define DK_DEFINE_RBF_TILE_INTO_GRAM(NAME, GRAM_T)                                                            \
    DK_CLONES static void NAME(double *P, ptrdiff_t m, ptrdiff_t p, ptrdiff_t p_stride, const double *x_sq,   \
                               const double *z_sq, double neg_gamma, GRAM_T *K, ptrdiff_t k_rows,             \
                               ptrdiff_t k_cols, ptrdiff_t row0, ptrdiff_t col0)                              \
    {                                                                                                         \
        for (ptrdiff_t a = 0; a < m; a += DK_TILE_PASS_ROWS) {                                                \
            ptrdiff_t b = a + DK_TILE_PASS_ROWS < m ? a + DK_TILE_PASS_ROWS : m;                              \
            dk_rbf_rows_inline(P + a * p_stride, b - a, p, p_stride, x_sq + a, z_sq, neg_gamma, -1);          \
            for (ptrdiff_t i = a; i < b; i++) {                                                               \
                const double *DK_RESTRICT values = P + i * p_stride;                                          \
                GRAM_T *DK_RESTRICT out = K + (row0 + i) * k_rows + col0 * k_cols;                            \
                if (k_cols == 1)                                                                              \
                    for (ptrdiff_t j = 0; j < p; j++)                                                         \
                        out[j] = (GRAM_T)values[j];                                                           \
                else                                                                                          \
                    for (ptrdiff_t j = 0; j < p; j++)                                                         \
                        out[j * k_cols] = (GRAM_T)values[j];                                                  \
            }                                                                                                 \
            for (ptrdiff_t j = 0; j < p; j++) {                                                               \
                GRAM_T *DK_RESTRICT out = K + (col0 + j) * k_rows + row0 * k_cols;                            \
                for (ptrdiff_t i = a; i < b; i++)                                                             \
                    out[i * k_cols] = (GRAM_T)P[i * p_stride + j];                                            \
            }                                                                                                 \
        }                                                                                                     \
    }

DK_DEFINE_RBF_TILE_INTO_GRAM(dk_rbf_tile_into_gram_f64, double)
DK_DEFINE_RBF_TILE_INTO_GRAM(dk_rbf_tile_into_gram_f32, float)

/* Columns of the direct evaluation's pass: their sums (2 KB) stay in L1, with Zᵀ's columns of a few features. */
#define DK_DIRECT_COLUMNS 256

/* out[i, j] <- exp(neg_gamma * sum_k (X[i, k] - Zt[k, j])^2) for m rows of d features (rows x_stride apart)
 * and p columns of Zt (its d rows zt_stride apart), out's rows out_stride apart: the squared distance summed
 * directly, not from products, and each value written once in out's type. */
#define DK_DEFINE_RBF_DIRECT_ROWS(NAME, OUT_T)                                                                \
    DK_CLONES static void NAME(const double *X, ptrdiff_t m, ptrdiff_t d, ptrdiff_t x_stride, const double *Zt, \
                               ptrdiff_t p, ptrdiff_t zt_stride, double neg_gamma, OUT_T *out,                \
                               ptrdiff_t out_stride)                                                          \
    {                                                                                                         \
        double sums[DK_DIRECT_COLUMNS];                                                                       \
        for (ptrdiff_t c = 0; c < p; c += DK_DIRECT_COLUMNS) {                                                \
            ptrdiff_t w = p - c < DK_DIRECT_COLUMNS ? p - c : DK_DIRECT_COLUMNS;                              \
            for (ptrdiff_t i = 0; i < m; i++) {                                                               \
                const double *DK_RESTRICT x = X + i * x_stride;                                               \
                double *DK_RESTRICT s = sums;                                                                 \
                for (ptrdiff_t j = 0; j < w; j++)                                                             \
                    s[j] = 0.0;                                                                               \
                for (ptrdiff_t k = 0; k < d; k++) {                                                           \
                    const double *DK_RESTRICT z = Zt + k * zt_stride + c;                                     \
                    double xk = x[k];                                                                         \
                    for (ptrdiff_t j = 0; j < w; j++) {                                                       \
                        double t = xk - z[j];                                                                 \
                        s[j] += t * t;                                                                        \
                    }                                                                                         \
                }                                                                                             \
                OUT_T *DK_RESTRICT o = out + i * out_stride + c;                                              \
                for (ptrdiff_t j = 0; j < w; j++)                                                             \
                    o[j] = (OUT_T)dk_exp_nonpositive(s[j] * neg_gamma);                                       \
            }                                                                                                 \
        }                                                                                                     \
    }

DK_DEFINE_RBF_DIRECT_ROWS(dk_rbf_direct_rows_f64, double)
DK_DEFINE_RBF_DIRECT_ROWS(dk_rbf_direct_rows_f32, float)

#endif
