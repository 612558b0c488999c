/* Wide SIMD where the CPU has it, from a build that runs on any CPU of its architecture.
 *
 * DK_CLONES on a loop's function compiles it three times (AVX-512, AVX2 and the architecture's
 * baseline) and picks one when the module loads, from the CPU it runs on (GCC and Clang's
 * target_clones, through glibc's ifunc on x86-64 Linux). Elsewhere the loop is compiled once, for the
 * baseline the compiler targets. The build never targets its own machine (-march=native): a wheel
 * built on one machine runs on another.
 */
#ifndef DK_SIMD_H
#define DK_SIMD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__) && \
    ((defined(__clang__) && __clang_major__ >= 14) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8))
#define DK_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DK_CLONES
#endif

#if defined(__GNUC__) || defined(__clang__)
#define DK_RESTRICT __restrict__
#define DK_INLINE static inline __attribute__((always_inline))
/* A loop's sums taken in vector lanes (an OpenMP SIMD reduction: -fopenmp-simd, no OpenMP runtime). */
#define DK_PRAGMA(text) _Pragma(#text)
#define DK_SIMD_SUMS8(a, b, c, d, e, f, g, h) DK_PRAGMA(omp simd reduction(+ : a, b, c, d, e, f, g, h))
/* A loop unrolled: several loads of a gather in flight where no vector gather serves. */
#define DK_UNROLL4 DK_PRAGMA(GCC unroll 4)
#elif defined(_MSC_VER)
#define DK_RESTRICT __restrict
#define DK_INLINE static __forceinline
#define DK_SIMD_SUMS8(a, b, c, d, e, f, g, h)
#define DK_UNROLL4
#else
#define DK_RESTRICT
#define DK_INLINE static inline
#define DK_SIMD_SUMS8(a, b, c, d, e, f, g, h)
#define DK_UNROLL4
#endif

#endif
