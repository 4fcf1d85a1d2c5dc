/*
 * Compiled float32 kernels for the NumPy backend, called through ctypes (which releases the GIL).
 *
 * Why: a NumPy expression makes one pass over memory per operation (GELU is ~20 of them, a layer norm ~10),
 * and each pass is a call with its own overhead. Here each element is read once, in a loop the compiler
 * vectorizes. The arithmetic follows the NumPy kernels of _backend.py step for step in float32; they differ
 * in `exp` (an ulp or so) and in the order of row sums (BLAS's there, eight lanes here). Built with
 * -ffp-contract=off and without -ffast-math, so the AVX2 and the generic version of a loop give the same bits:
 * the result does not depend on the machine, nor on how a caller splits the rows among threads.
 *
 * Optional: if this file does not compile (no C compiler), the backend keeps its NumPy kernels.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_pool.h"

#if defined(_MSC_VER) && !defined(__clang__)
#define restrict __restrict /* MSVC's C compiler knows C99's restrict only under /std:c11 */
#endif

#if defined(__GNUC__) || defined(__clang__)
#define LUCID_INLINE static inline __attribute__((always_inline))
#else
#define LUCID_INLINE static __inline
#endif

#if defined(_WIN32)
#define LUCID_EXPORT __declspec(dllexport)
#else
#define LUCID_EXPORT __attribute__((visibility("default")))
#endif

/* Each kernel's body is an always-inline function, compiled twice: plain (SSE2 on x86-64, NEON on arm64) and, on
 * x86 with GCC or Clang, for AVX2; GELU's also for AVX-512 with GCC 8+ or Clang. 512-bit vectors made GELU faster
 * (216 -> 130 us for 768 x 256 on a Sapphire Rapids VM) and nothing else: layer norm, softmax and attention got
 * 0-28 % slower, the memory-bound updates stayed level. The exported function picks one at run time. */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#if defined(__clang__)
#define LUCID_AVX512 __attribute__((target("avx2,avx512f,avx512dq,avx512bw,avx512vl"), min_vector_width(512)))
#elif __GNUC__ >= 8 /* prefer-vector-width: GCC 8 and later */
#define LUCID_AVX512 __attribute__((target("avx2,avx512f,avx512dq,avx512bw,avx512vl,prefer-vector-width=512")))
#endif
static int simd_level = -1;
static int simd(void) {
    if (simd_level < 0) {
        __builtin_cpu_init();
        simd_level = __builtin_cpu_supports("avx2") ? 1 : 0;
#if defined(LUCID_AVX512)
        if (simd_level && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
            simd_level = 2;
#endif
    }
    return simd_level;
}
/* For tests: 0 runs the plain loops from now on, 1 the AVX2 ones, 2 also GELU's AVX-512 ones, each where the CPU
 * has them (else the widest it has); returns the level. */
LUCID_EXPORT int lucid_set_simd_level(int level) {
    simd_level = -1;
    const int most = simd();
    simd_level = level < most ? (level < 0 ? 0 : level) : most;
    return simd_level;
}
#define LUCID_KERNEL(name, params, args)                                                                 \
    static void name##_generic params { name##_body args; }                                             \
    __attribute__((target("avx2"))) static void name##_avx2 params { name##_body args; }                \
    LUCID_EXPORT void lucid_##name params {                                                              \
        if (simd())                                                                                      \
            name##_avx2 args;                                                                            \
        else                                                                                             \
            name##_generic args;                                                                         \
    }
#if defined(LUCID_AVX512)
#define LUCID_KERNEL_WIDE(name, params, args)                                                            \
    static void name##_generic params { name##_body args; }                                             \
    __attribute__((target("avx2"))) static void name##_avx2 params { name##_body args; }                \
    LUCID_AVX512 static void name##_avx512 params { name##_body args; }                                  \
    LUCID_EXPORT void lucid_##name params {                                                              \
        const int level = simd();                                                                        \
        if (level == 2)                                                                                  \
            name##_avx512 args;                                                                          \
        else if (level == 1)                                                                             \
            name##_avx2 args;                                                                            \
        else                                                                                             \
            name##_generic args;                                                                         \
    }
#else
#define LUCID_KERNEL_WIDE LUCID_KERNEL
#endif
#else
static int simd(void) { return 0; }
LUCID_EXPORT int lucid_set_simd_level(int level) { return (void)level, 0; }
#define LUCID_KERNEL(name, params, args)                                                                 \
    LUCID_EXPORT void lucid_##name params { name##_body args; }
#define LUCID_KERNEL_WIDE LUCID_KERNEL
#endif

/* Which loops run: 2 for the AVX-512 versions, 1 for AVX2, 0 for the plain ones (all give the same bits). */
LUCID_EXPORT int lucid_simd_level(void) { return simd(); }

/* exp(x) in float32: Cody-Waite reduction by ln 2 and Cephes' expf polynomial (about 1 ulp). Below -87.33,
 * where the result leaves float32's normal range, it is 0; above 88.72 it is inf; NaN stays NaN. Plain
 * arithmetic and selects, so it vectorizes. */
LUCID_INLINE float exp_f32(float x) {
    const float lo = -87.33f, hi = 88.72f;
    float xc = x > lo ? x : lo;
    xc = xc < hi ? xc : hi;
    const float shift = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    const float n = (xc * 1.44269504088896341f + shift) - shift;
    const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = (p * (r * r) + r) + 1.0f;
    uint32_t bits;
    memcpy(&bits, &p, sizeof bits);
    bits += (uint32_t)(int32_t)n << 23; /* times 2^n: n is within float32's exponent range here */
    memcpy(&p, &bits, sizeof p);
    p = x > lo ? p : 0.0f;
    p = x > hi ? INFINITY : p;
    return x == x ? p : x;
}

/* Sums in eight lanes, then the lanes pairwise, then the tail: a fixed order, so the same bits whatever the
 * vector width. */
LUCID_INLINE float sum_f32(const float *restrict v, ptrdiff_t d) {
    float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    ptrdiff_t j = 0;
    for (; j + 8 <= d; j += 8)
        for (int l = 0; l < 8; l++)
            acc[l] += v[j + l];
    float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; j < d; j++)
        s += v[j];
    return s;
}

LUCID_INLINE float dot_f32(const float *restrict u, const float *restrict v, ptrdiff_t d) {
    float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    ptrdiff_t j = 0;
    for (; j + 8 <= d; j += 8)
        for (int l = 0; l < 8; l++)
            acc[l] += u[j + l] * v[j + l];
    float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; j < d; j++)
        s += u[j] * v[j];
    return s;
}

/* The largest element of a row, or 0 where that is not finite (a row of -inf, or one holding +inf), as
 * _backend.finite_max; a NaN in the row makes the whole row NaN later either way. */
LUCID_INLINE float finite_max_f32(const float *restrict v, ptrdiff_t d) {
    float acc[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    ptrdiff_t j = 0;
    for (; j + 8 <= d; j += 8)
        for (int l = 0; l < 8; l++)
            acc[l] = v[j + l] > acc[l] ? v[j + l] : acc[l];
    float m = acc[0];
    for (int l = 1; l < 8; l++)
        m = acc[l] > m ? acc[l] : m;
    for (; j < d; j++)
        m = v[j] > m ? v[j] : m;
    return isfinite(m) ? m : 0.0f;
}

/* ---------------------------------------------------------------------------------------------------
 * GELU: out = x Phi(x) (g NULL) or out = g (Phi(x) + x phi(x)), with Phi(-|x|) from Abramowitz and
 * Stegun 7.1.26; `c` holds the halved a1..a5, then p / sqrt(2) (see _backend.gelu32).
 * ------------------------------------------------------------------------------------------------- */
LUCID_INLINE float gelu_phi_neg(float xi, float a, const float *restrict c, float *e) {
    const float t = 1.0f / (a * c[5] + 1.0f);
    float h = t * c[4];
    h = (h + c[3]) * t;
    h = (h + c[2]) * t;
    h = (h + c[1]) * t;
    h = (h + c[0]) * t;
    *e = exp_f32((xi * -0.5f) * xi);
    return h * *e; /* Phi(-|x|); *e = exp(-x^2 / 2) */
}

LUCID_INLINE void gelu_f32_body(const float *restrict x, const float *restrict g, float *restrict out, ptrdiff_t n,
                            const float *restrict c, float inv_sqrt_2pi) {
    if (g == NULL) { /* x Phi(x) = max(x, 0) - |x| Phi(-|x|); at +inf that is inf - inf * 0: pass +inf */
        for (ptrdiff_t i = 0; i < n; i++) {
            const float xi = x[i], a = fabsf(xi);
            float e;
            const float h = gelu_phi_neg(xi, a, c, &e);
            const float y = (xi > 0.0f ? xi : 0.0f) - h * a;
            out[i] = xi == INFINITY ? xi : y;
        }
    } else { /* Phi(x) = 1/2 + sign(x) (1/2 - Phi(-|x|)) */
        for (ptrdiff_t i = 0; i < n; i++) {
            const float xi = x[i], a = fabsf(xi);
            float e;
            const float h = gelu_phi_neg(xi, a, c, &e);
            const float o = copysignf(0.5f - h, xi) + 0.5f;
            out[i] = (o + (e * xi) * inv_sqrt_2pi) * g[i];
        }
    }
}
LUCID_KERNEL_WIDE(gelu_f32,
             (const float *x, const float *g, float *out, ptrdiff_t n, const float *c, float inv_sqrt_2pi),
             (x, g, out, n, c, inv_sqrt_2pi))

/* ---------------------------------------------------------------------------------------------------
 * Rows of an (n, d) C-contiguous matrix, each on its own: softmax and log-softmax in place, the softmax
 * gradient, layer norm and its gradient.
 * ------------------------------------------------------------------------------------------------- */
/* Softmax of row[0:valid] in place, zeros in row[valid:d] (a causal mask's -inf gives exactly those). */
LUCID_INLINE void softmax_row(float *restrict row, ptrdiff_t valid, ptrdiff_t d) {
    const float mx = finite_max_f32(row, valid);
    float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    ptrdiff_t j = 0;
    for (; j + 8 <= valid; j += 8) /* rows are short (attention's 64): whole blocks of 8, no vector prologue */
        for (int l = 0; l < 8; l++) {
            row[j + l] = exp_f32(row[j + l] - mx);
            acc[l] += row[j + l];
        }
    float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; j < valid; j++) {
        row[j] = exp_f32(row[j] - mx);
        s += row[j];
    }
    const float inv = 1.0f / s; /* times the reciprocal (as PyTorch): a divide per element costs more */
    for (j = 0; j + 8 <= valid; j += 8)
        for (int l = 0; l < 8; l++)
            row[j + l] = row[j + l] * inv;
    for (; j < valid; j++)
        row[j] = row[j] * inv;
    for (; j < d; j++)
        row[j] = 0.0f;
}

LUCID_INLINE void softmax_rows_f32_body(float *restrict m, ptrdiff_t n, ptrdiff_t d) {
    for (ptrdiff_t i = 0; i < n; i++)
        softmax_row(m + i * d, d, d);
}
LUCID_KERNEL(softmax_rows_f32, (float *m, ptrdiff_t n, ptrdiff_t d), (m, n, d))

/* Causal attention weights: `heads` stacked (L, S) score matrices, row i of each keeping columns 0..i (the
 * top-left aligned mask, PyTorch's is_causal); the masked scores are neither read nor exponentiated. */
LUCID_INLINE void softmax_causal_f32_body(float *restrict m, ptrdiff_t heads, ptrdiff_t length, ptrdiff_t source) {
    for (ptrdiff_t h = 0; h < heads; h++)
        for (ptrdiff_t i = 0; i < length; i++)
            softmax_row(m + (h * length + i) * source, i + 1 < source ? i + 1 : source, source);
}
LUCID_KERNEL(softmax_causal_f32, (float *m, ptrdiff_t heads, ptrdiff_t length, ptrdiff_t source),
             (m, heads, length, source))

/* ---------------------------------------------------------------------------------------------------
 * Attention, head by head: `heads` C-contiguous (L, E) queries, (S, E) keys, (S, Ev) values, E, Ev and S
 * multiples of 8 (the caller checks). A head's products are too small for BLAS to pay (GPT's are
 * 64 x 16 x 64: a call's packing costs what its arithmetic does), so they run here in tiles of 4 rows x 16
 * columns held in registers. With `causal` (the top-left aligned mask) query i uses keys 0..i only: the
 * masked scores, weights and their gradients are neither computed nor read (as PyTorch's flash attention on
 * the CPU), which halves the work. Every output element is one sum in a fixed order (over the head
 * dimension, or over keys or queries in order), so the bits do not depend on the vector width.
 * ------------------------------------------------------------------------------------------------- */
#if defined(__GNUC__) || defined(__clang__)
#if defined(__GNUC__) && !defined(__clang__)
/* these helpers are always inlined, so the vector-return ABI GCC warns about is never used */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
typedef float v8 __attribute__((vector_size(32))); /* eight lanes: one AVX register, or two SSE ones */
LUCID_INLINE v8 v8_zero(void) { return (v8){0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}; }
LUCID_INLINE void v8_madd(v8 *acc, float a, const float *restrict x) { /* acc += a x, rounded twice */
    v8 t;
    memcpy(&t, x, sizeof t);
    *acc = *acc + (v8){a, a, a, a, a, a, a, a} * t;
}
LUCID_INLINE void v8_store(float *restrict p, const v8 *x) { memcpy(p, x, sizeof *x); }
#else
typedef struct {
    float f[8];
} v8; /* elsewhere (MSVC): the same arithmetic lane by lane */
LUCID_INLINE v8 v8_zero(void) {
    v8 r;
    for (int t = 0; t < 8; t++)
        r.f[t] = 0.0f;
    return r;
}
LUCID_INLINE void v8_madd(v8 *acc, float a, const float *restrict x) {
    for (int t = 0; t < 8; t++)
        acc->f[t] = acc->f[t] + a * x[t];
}
LUCID_INLINE void v8_store(float *restrict p, const v8 *x) {
    for (int t = 0; t < 8; t++)
        p[t] = x->f[t];
}
#endif

/* A 4-row x 16-column tile of sums into out (row stride ld): rows x0..x3 (columns 0-7) and y0..y3 (8-15). */
LUCID_INLINE void store_tile_f32(float *restrict out, ptrdiff_t ld, const v8 *x0, const v8 *x1, const v8 *x2,
                                 const v8 *x3, const v8 *y0, const v8 *y1, const v8 *y2, const v8 *y3) {
    v8_store(out, x0);
    v8_store(out + 8, y0);
    v8_store(out + ld, x1);
    v8_store(out + ld + 8, y1);
    v8_store(out + 2 * ld, x2);
    v8_store(out + 2 * ld + 8, y2);
    v8_store(out + 3 * ld, x3);
    v8_store(out + 3 * ld + 8, y3);
}

/* kt (E, S) = k (S, E) transposed, so that a row of scores is E passes over contiguous keys. */
LUCID_INLINE void transpose_f32(const float *restrict k, float *restrict kt, ptrdiff_t s, ptrdiff_t e) {
    for (ptrdiff_t j = 0; j < s; j++)
        for (ptrdiff_t d = 0; d < e; d++)
            kt[d * s + j] = k[j * e + d];
}

/* out[r, c] = sum_d (a[r, d] scale) bt[d, c] for rows r < rows (<= 4) and columns c < n rounded up to 8 (n <= s):
 * a is (rows, e) with row stride lda, bt (e, s); terms added in order of d. Four rows at a time in named
 * registers (an array indexed by a run-time row count would live in memory); fewer rows one at a time.
 * `as` holds 4 e floats: the scaled rows of a. */
LUCID_INLINE void tile_times_f32(const float *restrict a, ptrdiff_t lda, int rows, const float *restrict bt,
                                 float *restrict out, ptrdiff_t ldo, ptrdiff_t n, ptrdiff_t s, ptrdiff_t e,
                                 float scale, float *restrict as) {
    for (int r = 0; r < rows; r++)
        for (ptrdiff_t d = 0; d < e; d++)
            as[r * e + d] = a[r * lda + d] * scale;
    ptrdiff_t c = 0;
    if (rows == 4) {
        for (; c + 8 < n; c += 16) { /* two column blocks: eight sums in flight */
            v8 x0 = v8_zero(), x1 = v8_zero(), x2 = v8_zero(), x3 = v8_zero();
            v8 y0 = v8_zero(), y1 = v8_zero(), y2 = v8_zero(), y3 = v8_zero();
            for (ptrdiff_t d = 0; d < e; d++) {
                const float *restrict b = bt + d * s + c;
                v8_madd(&x0, as[d], b);
                v8_madd(&y0, as[d], b + 8);
                v8_madd(&x1, as[e + d], b);
                v8_madd(&y1, as[e + d], b + 8);
                v8_madd(&x2, as[2 * e + d], b);
                v8_madd(&y2, as[2 * e + d], b + 8);
                v8_madd(&x3, as[3 * e + d], b);
                v8_madd(&y3, as[3 * e + d], b + 8);
            }
            store_tile_f32(out + c, ldo, &x0, &x1, &x2, &x3, &y0, &y1, &y2, &y3);
        }
    }
    for (; c < n; c += 8)
        for (int r = 0; r < rows; r++) {
            v8 x = v8_zero();
            for (ptrdiff_t d = 0; d < e; d++)
                v8_madd(&x, as[r * e + d], bt + d * s + c);
            v8_store(out + r * ldo + c, &x);
        }
}

/* Softmax of row[0:valid] in place and zeros in row[valid:d], d a multiple of 8: softmax_row on whole blocks of
 * eight, the last block's lanes past `valid` first set to -inf (exp gives them 0). Attention's causal rows
 * are short, and softmax_row's scalar tail would cost as much as the rest; the tail's terms are added in
 * lanes, so the bits are not softmax_row's. */
LUCID_INLINE void softmax_row8(float *restrict row, ptrdiff_t valid, ptrdiff_t d) {
    const ptrdiff_t end = (valid + 7) / 8 * 8;
    for (ptrdiff_t j = valid; j < end; j++)
        row[j] = -INFINITY;
    softmax_row(row, end, d);
}

/* out[r, 0:e] = sum_{j < n_r} m[r, j] x[j, 0:e] for rows r < rows (<= 4), n_r = min(n0 + r, s) (causal) or n0:
 * terms added in order of j; m has row stride ldm, x is (.., e). */
LUCID_INLINE void tile_rows_f32(const float *restrict m, ptrdiff_t ldm, int rows, const float *restrict x,
                                float *restrict out, ptrdiff_t n0, int causal, ptrdiff_t e, ptrdiff_t s) {
    const ptrdiff_t nmax = causal && n0 + rows - 1 < s ? n0 + rows - 1 : causal ? s : n0;
    ptrdiff_t c = 0;
    if (rows == 4) {
        for (; c + 16 <= e; c += 16) { /* eight sums in flight: an add waits for the one before it */
            v8 x0 = v8_zero(), x1 = v8_zero(), x2 = v8_zero(), x3 = v8_zero();
            v8 y0 = v8_zero(), y1 = v8_zero(), y2 = v8_zero(), y3 = v8_zero();
            ptrdiff_t j = 0;
            for (; j < n0; j++) { /* keys every row uses */
                const float *restrict xj = x + j * e + c;
                const float m0 = m[j], m1 = m[ldm + j], m2 = m[2 * ldm + j], m3 = m[3 * ldm + j];
                v8_madd(&x0, m0, xj);
                v8_madd(&y0, m0, xj + 8);
                v8_madd(&x1, m1, xj);
                v8_madd(&y1, m1, xj + 8);
                v8_madd(&x2, m2, xj);
                v8_madd(&y2, m2, xj + 8);
                v8_madd(&x3, m3, xj);
                v8_madd(&y3, m3, xj + 8);
            }
            for (; j < nmax; j++) { /* causal: key j belongs to rows r with j < n0 + r */
                const float *restrict xj = x + j * e + c;
                if (j < n0 + 1) {
                    v8_madd(&x1, m[ldm + j], xj);
                    v8_madd(&y1, m[ldm + j], xj + 8);
                }
                if (j < n0 + 2) {
                    v8_madd(&x2, m[2 * ldm + j], xj);
                    v8_madd(&y2, m[2 * ldm + j], xj + 8);
                }
                v8_madd(&x3, m[3 * ldm + j], xj);
                v8_madd(&y3, m[3 * ldm + j], xj + 8);
            }
            store_tile_f32(out + c, e, &x0, &x1, &x2, &x3, &y0, &y1, &y2, &y3);
        }
    }
    for (; c < e; c += 8)
        for (int r = 0; r < rows; r++) {
            const ptrdiff_t nr = causal && n0 + r < s ? n0 + r : causal ? s : n0;
            v8 acc = v8_zero();
            for (ptrdiff_t j = 0; j < nr; j++)
                v8_madd(&acc, m[r * ldm + j], x + j * e + c);
            v8_store(out + r * e + c, &acc);
        }
}

/* out[j, 0:e] = sum_i m[i, j] x[i, 0:e] for keys j0 <= j < j0 + cols (cols <= 4), over queries i < l, or
 * (causal) j <= i < l: the transposed product (w^T gy, ds^T q), terms added in order of i; m is (l, s). */
LUCID_INLINE void tile_cols_f32(const float *restrict m, ptrdiff_t s, ptrdiff_t j0, int cols,
                                const float *restrict x, float *restrict out, ptrdiff_t l, int causal,
                                ptrdiff_t e) {
    ptrdiff_t c = 0;
    if (cols == 4) {
        for (; c + 16 <= e; c += 16) {
            v8 x0 = v8_zero(), x1 = v8_zero(), x2 = v8_zero(), x3 = v8_zero();
            v8 y0 = v8_zero(), y1 = v8_zero(), y2 = v8_zero(), y3 = v8_zero();
            ptrdiff_t i = causal ? j0 : 0;
            for (; causal && i < j0 + 3 && i < l; i++) { /* queries j0 .. j0 + 2 use only some of the keys */
                const float *restrict xi = x + i * e + c, *restrict mi = m + i * s + j0;
                v8_madd(&x0, mi[0], xi);
                v8_madd(&y0, mi[0], xi + 8);
                if (i >= j0 + 1) {
                    v8_madd(&x1, mi[1], xi);
                    v8_madd(&y1, mi[1], xi + 8);
                }
                if (i >= j0 + 2) {
                    v8_madd(&x2, mi[2], xi);
                    v8_madd(&y2, mi[2], xi + 8);
                }
            }
            for (; i < l; i++) {
                const float *restrict xi = x + i * e + c, *restrict mi = m + i * s + j0;
                v8_madd(&x0, mi[0], xi);
                v8_madd(&y0, mi[0], xi + 8);
                v8_madd(&x1, mi[1], xi);
                v8_madd(&y1, mi[1], xi + 8);
                v8_madd(&x2, mi[2], xi);
                v8_madd(&y2, mi[2], xi + 8);
                v8_madd(&x3, mi[3], xi);
                v8_madd(&y3, mi[3], xi + 8);
            }
            store_tile_f32(out + j0 * e + c, e, &x0, &x1, &x2, &x3, &y0, &y1, &y2, &y3);
        }
    }
    for (; c < e; c += 8)
        for (int r = 0; r < cols; r++) {
            v8 acc = v8_zero();
            for (ptrdiff_t i = causal ? j0 + r : 0; i < l; i++)
                v8_madd(&acc, m[i * s + j0 + r], x + i * e + c);
            v8_store(out + (j0 + r) * e + c, &acc);
        }
}

LUCID_INLINE ptrdiff_t valid_keys(ptrdiff_t i, ptrdiff_t s, int causal) { return causal && i + 1 < s ? i + 1 : s; }

/* out (L, Ev) = softmax((q scale) k^T [masked]) v, and the weights w (L, S) (zeros where masked) for the
 * gradient; scratch holds E * (S + 4) floats. The scale multiplies q (rounded), as the NumPy kernel does. */
LUCID_INLINE void attention_f32_body(const float *restrict q, const float *restrict k, const float *restrict v,
                                     float *restrict out, float *restrict w, float *restrict scratch, ptrdiff_t heads,
                                     ptrdiff_t l, ptrdiff_t s, ptrdiff_t e, ptrdiff_t ev, float scale, int causal) {
    for (ptrdiff_t h = 0; h < heads; h++) {
        const float *restrict qh = q + h * l * e, *restrict vh = v + h * s * ev;
        float *restrict wh = w + h * l * s, *restrict oh = out + h * l * ev;
        transpose_f32(k + h * s * e, scratch, s, e);
        for (ptrdiff_t i = 0; i < l; i += 4) {
            const int rows = l - i < 4 ? (int)(l - i) : 4;
            const ptrdiff_t n0 = valid_keys(i, s, causal);
            tile_times_f32(qh + i * e, e, rows, scratch, wh + i * s, s, valid_keys(i + rows - 1, s, causal), s, e,
                           scale, scratch + e * s);
            for (int r = 0; r < rows; r++)
                softmax_row8(wh + (i + r) * s, valid_keys(i + r, s, causal), s);
            tile_rows_f32(wh + i * s, s, rows, vh, oh + i * ev, n0, causal && n0 < s, ev, s);
        }
    }
}
LUCID_KERNEL(attention_f32,
             (const float *q, const float *k, const float *v, float *out, float *w, float *scratch, ptrdiff_t heads,
              ptrdiff_t l, ptrdiff_t s, ptrdiff_t e, ptrdiff_t ev, float scale, int causal),
             (q, k, v, out, w, scratch, heads, l, s, e, ev, scale, causal))

/* (gq, gk, gv) of attention_f32 from its weights w: gv = w^T gy, dw = gy v^T, ds = (dw - sum(dw w)) w scale,
 * gq = ds k, gk = ds^T q; scratch holds (Ev + L) * S + 4 Ev floats (v transposed, one head's ds). With `causal` the
 * masked weights are skipped, as in the forward pass. */
LUCID_INLINE void attention_grad_f32_body(const float *restrict gy, const float *restrict q, const float *restrict k,
                                          const float *restrict v, const float *restrict w, float *restrict gq,
                                          float *restrict gk, float *restrict gv, float *restrict scratch,
                                          ptrdiff_t heads, ptrdiff_t l, ptrdiff_t s, ptrdiff_t e, ptrdiff_t ev,
                                          float scale, int causal) {
    float *restrict vt = scratch, *restrict ds = scratch + ev * s; /* then 4 Ev for tile_times */
    for (ptrdiff_t h = 0; h < heads; h++) {
        const float *restrict gyh = gy + h * l * ev, *restrict qh = q + h * l * e, *restrict kh = k + h * s * e;
        const float *restrict wh = w + h * l * s;
        float *restrict gqh = gq + h * l * e, *restrict gkh = gk + h * s * e, *restrict gvh = gv + h * s * ev;
        transpose_f32(v + h * s * ev, vt, s, ev);
        for (ptrdiff_t i = 0; i < l; i += 4) {
            const int rows = l - i < 4 ? (int)(l - i) : 4;
            tile_times_f32(gyh + i * ev, ev, rows, vt, ds + i * s, s, valid_keys(i + rows - 1, s, causal), s, ev,
                           1.0f, ds + l * s);
            for (int r = 0; r < rows; r++) {
                const ptrdiff_t n = valid_keys(i + r, s, causal);
                float *restrict dr = ds + (i + r) * s;
                const float *restrict wr = wh + (i + r) * s;
                const float t = dot_f32(dr, wr, n);
                for (ptrdiff_t j = 0; j < n; j++)
                    dr[j] = ((dr[j] - t) * wr[j]) * scale;
            }
            const ptrdiff_t n0 = valid_keys(i, s, causal);
            tile_rows_f32(ds + i * s, s, rows, kh, gqh + i * e, n0, causal && n0 < s, e, s);
        }
        for (ptrdiff_t j = 0; j < s; j += 4) {
            const int cols = s - j < 4 ? (int)(s - j) : 4;
            tile_cols_f32(wh, s, j, cols, gyh, gvh, l, causal, ev);
            tile_cols_f32(ds, s, j, cols, qh, gkh, l, causal, e);
        }
    }
}
LUCID_KERNEL(attention_grad_f32,
             (const float *gy, const float *q, const float *k, const float *v, const float *w, float *gq, float *gk,
              float *gv, float *scratch, ptrdiff_t heads, ptrdiff_t l, ptrdiff_t s, ptrdiff_t e, ptrdiff_t ev,
              float scale, int causal),
             (gy, q, k, v, w, gq, gk, gv, scratch, heads, l, s, e, ev, scale, causal))

LUCID_INLINE void log_softmax_rows_f32_body(float *restrict m, ptrdiff_t n, ptrdiff_t d) {
    float buf[256];
    for (ptrdiff_t i = 0; i < n; i++) {
        float *restrict row = m + i * d;
        const float mx = finite_max_f32(row, d);
        float s = 0.0f;
        for (ptrdiff_t j0 = 0; j0 < d; j0 += 256) { /* exp of a block, then its sum: nothing row-sized */
            const ptrdiff_t k = d - j0 < 256 ? d - j0 : 256;
            for (ptrdiff_t j = 0; j < k; j++) {
                row[j0 + j] = row[j0 + j] - mx;
                buf[j] = exp_f32(row[j0 + j]);
            }
            s += sum_f32(buf, k);
        }
        const float lse = logf(s);
        for (ptrdiff_t j = 0; j < d; j++)
            row[j] = row[j] - lse;
    }
}
LUCID_KERNEL(log_softmax_rows_f32, (float *m, ptrdiff_t n, ptrdiff_t d), (m, n, d))

/* The gradient of softmax, scaled, in place of the incoming gradient: dw = (dw - sum(dw w)) w scale. */
LUCID_INLINE void softmax_grad_rows_f32_body(float *restrict dw, const float *restrict w, ptrdiff_t n, ptrdiff_t d,
                                         float scale) {
    for (ptrdiff_t i = 0; i < n; i++) {
        float *restrict gr = dw + i * d;
        const float *restrict wr = w + i * d;
        const float s = dot_f32(gr, wr, d);
        for (ptrdiff_t j = 0; j < d; j++)
            gr[j] = ((gr[j] - s) * wr[j]) * scale;
    }
}
LUCID_KERNEL(softmax_grad_rows_f32, (float *dw, const float *w, ptrdiff_t n, ptrdiff_t d, float scale),
             (dw, w, n, d, scale))

/* y = (x - mean) rstd (* w) (+ b) per row, with mean and rstd = 1 / sqrt(var + eps) written out. */
LUCID_INLINE void layer_norm_f32_body(const float *restrict x, const float *restrict w, const float *restrict b,
                                  float *restrict y, float *restrict mean, float *restrict rstd, ptrdiff_t n,
                                  ptrdiff_t d, float eps) {
    for (ptrdiff_t i = 0; i < n; i++) {
        const float *restrict xr = x + i * d;
        float *restrict yr = y + i * d;
        const float mu = sum_f32(xr, d) / (float)d;
        for (ptrdiff_t j = 0; j < d; j++)
            yr[j] = xr[j] - mu;
        const float var = dot_f32(yr, yr, d) / (float)d + eps;
        const float r = 1.0f / sqrtf(var);
        mean[i] = mu;
        rstd[i] = r;
        if (w != NULL && b != NULL)
            for (ptrdiff_t j = 0; j < d; j++)
                yr[j] = (yr[j] * r) * w[j] + b[j];
        else if (w != NULL)
            for (ptrdiff_t j = 0; j < d; j++)
                yr[j] = (yr[j] * r) * w[j];
        else if (b != NULL)
            for (ptrdiff_t j = 0; j < d; j++)
                yr[j] = yr[j] * r + b[j];
        else
            for (ptrdiff_t j = 0; j < d; j++)
                yr[j] = yr[j] * r;
    }
}
LUCID_KERNEL(layer_norm_f32,
             (const float *x, const float *w, const float *b, float *y, float *mean, float *rstd, ptrdiff_t n,
              ptrdiff_t d, float eps),
             (x, w, b, y, mean, rstd, n, d, eps))

/* The input gradient of layer norm, per row, and g * xhat (whose column sums are the weight's gradient):
 * xhat = (x - mean) rstd, gx = (g w - mean(g w) - xhat mean(g w xhat)) rstd (w = 1 when NULL). */
LUCID_INLINE void layer_norm_grad_f32_body(const float *restrict g, const float *restrict x,
                                       const float *restrict mean, const float *restrict rstd,
                                       const float *restrict w, float *restrict gx, float *restrict gxh,
                                       ptrdiff_t n, ptrdiff_t d) {
    for (ptrdiff_t i = 0; i < n; i++) {
        const float *restrict gr = g + i * d, *restrict xr = x + i * d;
        float *restrict out = gx + i * d, *restrict gh = gxh + i * d;
        const float mu = mean[i], r = rstd[i];
        for (ptrdiff_t j = 0; j < d; j++)
            gh[j] = gr[j] * ((xr[j] - mu) * r);
        float a, bm;
        if (w != NULL) {
            a = dot_f32(gr, w, d) / (float)d;
            bm = dot_f32(gh, w, d) / (float)d;
            for (ptrdiff_t j = 0; j < d; j++)
                out[j] = (((gr[j] * w[j]) - a) - ((xr[j] - mu) * r) * bm) * r;
        } else {
            a = sum_f32(gr, d) / (float)d;
            bm = sum_f32(gh, d) / (float)d;
            for (ptrdiff_t j = 0; j < d; j++)
                out[j] = ((gr[j] - a) - ((xr[j] - mu) * r) * bm) * r;
        }
    }
}
LUCID_KERNEL(layer_norm_grad_f32,
             (const float *g, const float *x, const float *mean, const float *rstd, const float *w, float *gx,
              float *gxh, ptrdiff_t n, ptrdiff_t d),
             (g, x, mean, rstd, w, gx, gxh, n, d))

/* ---------------------------------------------------------------------------------------------------
 * An embedding's gradient: z[index[i], :] += src[i, :] for i in order, np.add.at's additions bit for bit.
 * The indices are checked and made non-negative by the caller.
 * ------------------------------------------------------------------------------------------------- */
LUCID_INLINE void index_add_rows_f32_body(float *restrict z, const int64_t *restrict index,
                                          const float *restrict src, ptrdiff_t n, ptrdiff_t d) {
    for (ptrdiff_t i = 0; i < n; i++) {
        float *restrict row = z + index[i] * d;
        const float *restrict s = src + i * d;
        for (ptrdiff_t j = 0; j < d; j++)
            row[j] = row[j] + s[j];
    }
}
LUCID_KERNEL(index_add_rows_f32, (float *z, const int64_t *index, const float *src, ptrdiff_t n, ptrdiff_t d),
             (z, index, src, n, d))

/* ---------------------------------------------------------------------------------------------------
 * CNN pieces: ReLU's gradient, and 2-D max-pool over non-overlapping k1 x k2 tiles of (planes, h, w).
 * ------------------------------------------------------------------------------------------------- */
/* out = g where x > 0, else +0 (a NaN x gives 0): the NumPy kernel's bits (gy AND a mask). */
LUCID_INLINE void relu_grad_f32_body(const float *restrict g, const float *restrict x, float *restrict out,
                                     ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++)
        out[i] = x[i] > 0.0f ? g[i] : 0.0f;
}
LUCID_KERNEL(relu_grad_f32, (const float *g, const float *x, float *out, ptrdiff_t n), (g, x, out, n))

/* np.maximum(a, b): a NaN in either gives NaN; ties give a. Two selects, no branch (data-dependent branches
 * mispredict on every other element), so the loops vectorize. */
LUCID_INLINE float maximum_f32(float a, float b) {
    const float m = a >= b ? a : b;
    return a != a ? a : m;
}

/* np.maximum(x, 0): ReLU with NumPy's bits (NaN stays NaN; -0.0 gives 0.0, NumPy's second operand). */
LUCID_INLINE void relu_f32_body(const float *restrict x, float *restrict y, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) {
        const float m = x[i] > 0.0f ? x[i] : 0.0f;
        y[i] = x[i] != x[i] ? x[i] : m;
    }
}
LUCID_KERNEL(relu_f32, (const float *x, float *y, ptrdiff_t n), (x, y, n))

/* y[p, i, j] = the maximum of x[p, i k1 : (i + 1) k1, j k2 : (j + 1) k2], taken in row-major order. */
LUCID_INLINE void max_pool2_f32_body(const float *restrict x, float *restrict y, ptrdiff_t planes, ptrdiff_t h,
                                     ptrdiff_t w, ptrdiff_t k1, ptrdiff_t k2, ptrdiff_t o1, ptrdiff_t o2) {
    for (ptrdiff_t p = 0; p < planes; p++)
        for (ptrdiff_t i = 0; i < o1; i++) {
            const float *restrict row = x + (p * h + i * k1) * w;
            float *restrict yr = y + (p * o1 + i) * o2;
            if (k1 == 2 && k2 == 2) { /* the common case, unrolled */
                const float *restrict r0 = row, *restrict r1 = row + w;
                for (ptrdiff_t j = 0; j < o2; j++)
                    yr[j] = maximum_f32(maximum_f32(maximum_f32(r0[2 * j], r0[2 * j + 1]), r1[2 * j]), r1[2 * j + 1]);
            }
            else
                for (ptrdiff_t j = 0; j < o2; j++) {
                    const float *t = row + j * k2;
                    float m = t[0];
                    for (ptrdiff_t a = 0; a < k1; a++)
                        for (ptrdiff_t b = (a == 0); b < k2; b++)
                            m = maximum_f32(m, t[a * w + b]);
                    yr[j] = m;
                }
        }
}
LUCID_KERNEL(max_pool2_f32,
             (const float *x, float *y, ptrdiff_t planes, ptrdiff_t h, ptrdiff_t w, ptrdiff_t k1, ptrdiff_t k2,
              ptrdiff_t o1, ptrdiff_t o2),
             (x, y, planes, h, w, k1, k2, o1, o2))

/* The gradient of max_pool2, routed as PyTorch does: each tile's gy goes to its first maximum in row-major
 * order (a NaN is its tile's maximum), every other element gets +0; rows and columns beyond the last whole
 * tile get 0. The NumPy kernel's bits (a select, so an inf or NaN gy stays in its winner only). */
/* bitwise | and &, never || and &&: short-circuits are branches, which kept the loops below from vectorizing
 * (2.1 ms for W2's first pooling gradient; 0.29 ms branch-free, the same bits) */
LUCID_INLINE int tile_hit_f32(float v, float m) { return (v == m) | (v != v); }
LUCID_INLINE void max_pool2_grad_f32_body(const float *restrict gy, const float *restrict x,
                                          const float *restrict y, float *restrict out, ptrdiff_t planes,
                                          ptrdiff_t h, ptrdiff_t w, ptrdiff_t k1, ptrdiff_t k2, ptrdiff_t o1,
                                          ptrdiff_t o2) {
    for (ptrdiff_t p = 0; p < planes; p++) {
        const float *restrict xp = x + p * h * w;
        float *restrict op = out + p * h * w;
        for (ptrdiff_t i = 0; i < o1; i++) {
            const float *restrict yr = y + (p * o1 + i) * o2, *restrict gr = gy + (p * o1 + i) * o2;
            if (k1 == 2 && k2 == 2) { /* the common case, without a data-dependent branch */
                const float *restrict r0 = xp + 2 * i * w, *restrict r1 = r0 + w;
                float *restrict s0 = op + 2 * i * w, *restrict s1 = s0 + w;
                for (ptrdiff_t j = 0; j < o2; j++) {
                    const float m = yr[j], g = gr[j];
                    const int a = tile_hit_f32(r0[2 * j], m);
                    const int b = tile_hit_f32(r0[2 * j + 1], m) & !a;
                    const int c = tile_hit_f32(r1[2 * j], m) & !(a | b);
                    const int d = tile_hit_f32(r1[2 * j + 1], m) & !(a | b | c);
                    s0[2 * j] = a ? g : 0.0f;
                    s0[2 * j + 1] = b ? g : 0.0f;
                    s1[2 * j] = c ? g : 0.0f;
                    s1[2 * j + 1] = d ? g : 0.0f;
                }
            } else
                for (ptrdiff_t j = 0; j < o2; j++) {
                    const ptrdiff_t at = i * k1 * w + j * k2;
                    const float m = yr[j], g = gr[j];
                    int taken = 0;
                    for (ptrdiff_t a = 0; a < k1; a++)
                        for (ptrdiff_t b = 0; b < k2; b++) {
                            const int win = !taken & tile_hit_f32(xp[at + a * w + b], m);
                            op[at + a * w + b] = win ? g : 0.0f;
                            taken |= win;
                        }
                }
            for (ptrdiff_t a = 0; a < k1; a++) /* columns past the last tile */
                for (ptrdiff_t c = o2 * k2; c < w; c++)
                    op[(i * k1 + a) * w + c] = 0.0f;
        }
        for (ptrdiff_t r = o1 * k1 * w; r < h * w; r++) /* rows past the last tile */
            op[r] = 0.0f;
    }
}
LUCID_KERNEL(max_pool2_grad_f32,
             (const float *gy, const float *x, const float *y, float *out, ptrdiff_t planes, ptrdiff_t h,
              ptrdiff_t w, ptrdiff_t k1, ptrdiff_t k2, ptrdiff_t o1, ptrdiff_t o2),
             (gy, x, y, out, planes, h, w, k1, k2, o1, o2))

/* ---------------------------------------------------------------------------------------------------
 * 2-D convolution's column buffer and its adjoint, for samples of x (n, c, h, w) and output positions
 * (oh, ow): column row (channel, ki, kj) holds x[channel, oi sh + ki dh - ph, oj sw + kj dw - pw] (0 outside).
 * ------------------------------------------------------------------------------------------------- */
/* cols: per sample `groups` blocks of `rows` rows (rows >= c / groups * kh * kw: a bias row may follow) of
 * oh * ow; channel ch goes to block ch / (c / groups). */
LUCID_INLINE void im2col2_f32_body(const float *restrict x, float *restrict cols, ptrdiff_t n, ptrdiff_t c,
                                   ptrdiff_t h, ptrdiff_t w, const ptrdiff_t *restrict geo, ptrdiff_t groups,
                                   ptrdiff_t rows) {
    const ptrdiff_t kh = geo[0], kw = geo[1], sh = geo[2], sw = geo[3], dh = geo[4], dw = geo[5], ph = geo[6],
                    pw = geo[7], oh = geo[8], ow = geo[9];
    const ptrdiff_t p = oh * ow, cg = c / groups, k = kh * kw;
    for (ptrdiff_t s = 0; s < n; s++)
        for (ptrdiff_t ch = 0; ch < c; ch++) {
            const float *restrict plane = x + (s * c + ch) * h * w;
            float *restrict block = cols + ((s * groups + ch / cg) * rows + (ch % cg) * k) * p;
            for (ptrdiff_t ki = 0; ki < kh; ki++)
                for (ptrdiff_t kj = 0; kj < kw; kj++) {
                    float *restrict dst = block + (ki * kw + kj) * p;
                    const ptrdiff_t j0 = kj * dw - pw; /* input column of output column 0 */
                    /* output columns whose input column lies in [0, w): lo <= oj < hi */
                    ptrdiff_t lo = j0 >= 0 ? 0 : (-j0 + sw - 1) / sw, hi = w - j0 > 0 ? (w - j0 + sw - 1) / sw : 0;
                    hi = hi < ow ? hi : ow;
                    lo = lo < hi ? lo : hi;
                    for (ptrdiff_t oi = 0; oi < oh; oi++) {
                        float *restrict out = dst + oi * ow;
                        const ptrdiff_t ii = oi * sh + ki * dh - ph;
                        if (ii < 0 || ii >= h) {
                            for (ptrdiff_t oj = 0; oj < ow; oj++)
                                out[oj] = 0.0f;
                            continue;
                        }
                        const float *restrict src = plane + ii * w;
                        for (ptrdiff_t oj = 0; oj < lo; oj++)
                            out[oj] = 0.0f;
                        if (sw == 1)
                            memcpy(out + lo, src + j0 + lo, (size_t)(hi - lo) * sizeof(float));
                        else
                            for (ptrdiff_t oj = lo; oj < hi; oj++)
                                out[oj] = src[j0 + oj * sw];
                        for (ptrdiff_t oj = hi; oj < ow; oj++)
                            out[oj] = 0.0f;
                    }
                }
        }
}
LUCID_KERNEL(im2col2_f32,
             (const float *x, float *cols, ptrdiff_t n, ptrdiff_t c, ptrdiff_t h, ptrdiff_t w, const ptrdiff_t *geo,
              ptrdiff_t groups, ptrdiff_t rows),
             (x, cols, n, c, h, w, geo, groups, rows))

/* z (n, c, h, w) = the sum of each column row's values at the input positions it was read from, added
 * in (ki, kj) order: the composed col2im's additions for every position of z, bit for bit. */
LUCID_INLINE void col2im2_f32_body(const float *restrict cols, float *restrict z, ptrdiff_t n, ptrdiff_t c,
                                   ptrdiff_t h, ptrdiff_t w, const ptrdiff_t *restrict geo) {
    const ptrdiff_t kh = geo[0], kw = geo[1], sh = geo[2], sw = geo[3], dh = geo[4], dw = geo[5], ph = geo[6],
                    pw = geo[7], oh = geo[8], ow = geo[9];
    const ptrdiff_t p = oh * ow, k = kh * kw;
    for (ptrdiff_t s = 0; s < n; s++)
        for (ptrdiff_t ch = 0; ch < c; ch++) {
            float *restrict plane = z + (s * c + ch) * h * w;
            const float *restrict block = cols + (s * c + ch) * k * p;
            for (ptrdiff_t e = 0; e < h * w; e++)
                plane[e] = 0.0f;
            for (ptrdiff_t ki = 0; ki < kh; ki++)
                for (ptrdiff_t kj = 0; kj < kw; kj++) {
                    const float *restrict src = block + (ki * kw + kj) * p;
                    const ptrdiff_t j0 = kj * dw - pw;
                    ptrdiff_t lo = j0 >= 0 ? 0 : (-j0 + sw - 1) / sw, hi = w - j0 > 0 ? (w - j0 + sw - 1) / sw : 0;
                    hi = hi < ow ? hi : ow;
                    lo = lo < hi ? lo : hi;
                    for (ptrdiff_t oi = 0; oi < oh; oi++) {
                        const ptrdiff_t ii = oi * sh + ki * dh - ph;
                        if (ii < 0 || ii >= h)
                            continue;
                        float *restrict row = plane + ii * w;
                        const float *restrict in = src + oi * ow;
                        if (sw == 1)
                            for (ptrdiff_t oj = lo; oj < hi; oj++)
                                row[j0 + oj] = row[j0 + oj] + in[oj];
                        else
                            for (ptrdiff_t oj = lo; oj < hi; oj++)
                                row[j0 + oj * sw] = row[j0 + oj * sw] + in[oj];
                    }
                }
        }
}
LUCID_KERNEL(col2im2_f32,
             (const float *cols, float *z, ptrdiff_t n, ptrdiff_t c, ptrdiff_t h, ptrdiff_t w, const ptrdiff_t *geo),
             (cols, z, n, c, h, w, geo))

/* ---------------------------------------------------------------------------------------------------
 * Adam's update in place, the composed kernel's float32 operations in its order (lucid_core.kernels):
 * c = {w, 1 - w, beta2, 1 - beta2, -step_size, sqrt(bias correction 2), eps}, `far` when w >= 0.5.
 * ------------------------------------------------------------------------------------------------- */
LUCID_INLINE void adam_step_f32_body(float *restrict p, const float *restrict g, float *restrict m,
                                     float *restrict v, ptrdiff_t n, const float *restrict c, int far) {
    const float w = c[0], w1 = c[1], b2 = c[2], omb2 = c[3], neg_step = c[4], bc2 = c[5], eps = c[6];
    if (far)
        for (ptrdiff_t i = 0; i < n; i++)
            m[i] = g[i] - (g[i] - m[i]) * w1;
    else
        for (ptrdiff_t i = 0; i < n; i++)
            m[i] = m[i] + (g[i] - m[i]) * w;
    for (ptrdiff_t i = 0; i < n; i++) {
        const float vi = v[i] * b2 + (g[i] * g[i]) * omb2;
        v[i] = vi;
        p[i] = p[i] + (m[i] * neg_step) / (sqrtf(vi) / bc2 + eps);
    }
}
LUCID_KERNEL(adam_step_f32, (float *p, const float *g, float *m, float *v, ptrdiff_t n, const float *c, int far),
             (p, g, m, v, n, c, far))

/* SGD with momentum in place, the composed kernel's operations in its order: c = {momentum, buf_scale, lr};
 * flags: 1 buf_scale != 1, 2 nesterov, 4 lr != 1 (a factor of 1 is no multiply there either). */
LUCID_INLINE void sgd_step_f32_body(float *restrict p, const float *restrict g, float *restrict b, ptrdiff_t n,
                                    const float *restrict c, int flags) {
    const float mom = c[0], scale = c[1], lr = c[2];
    const int scaled = flags & 1, nesterov = flags & 2, lr_scaled = flags & 4;
    for (ptrdiff_t i = 0; i < n; i++) {
        const float bi = b[i] * mom + (scaled ? g[i] * scale : g[i]);
        const float d = nesterov ? g[i] + bi * mom : bi;
        b[i] = bi;
        p[i] = p[i] - (lr_scaled ? d * lr : d);
    }
}
LUCID_KERNEL(sgd_step_f32, (float *p, const float *g, float *b, ptrdiff_t n, const float *c, int flags),
             (p, g, b, n, c, flags))

/* Adadelta, in place: c = {rho, 1 - rho, eps, lr}; `lr_scaled` 0 when lr is 1 (no multiply). The per-op update's
 * roundings in its order (kernels.py's _adadelta_step); sqrt and the division are correctly rounded. */
LUCID_INLINE void adadelta_step_f32_body(float *restrict p, const float *restrict g, float *restrict v,
                                         float *restrict u, ptrdiff_t n, const float *restrict c, int lr_scaled) {
    const float rho = c[0], omr = c[1], eps = c[2], lr = c[3];
    for (ptrdiff_t i = 0; i < n; i++) {
        const float gi = g[i];
        const float vi = v[i] * rho + gi * gi * omr;
        const float d = sqrtf(u[i] + eps) / sqrtf(vi + eps) * gi;
        u[i] = u[i] * rho + d * d * omr;
        v[i] = vi;
        p[i] = p[i] - (lr_scaled ? d * lr : d);
    }
}
LUCID_KERNEL(adadelta_step_f32,
             (float *p, const float *g, float *v, float *u, ptrdiff_t n, const float *c, int lr_scaled),
             (p, g, v, u, n, c, lr_scaled))

/* ---------------------------------------------------------------------------------------------------
 * The same kernels split over the thread pool (_pool.c): items lo..n (rows, heads or elements; the kernel's count
 * is the end) in `parts` slices, each computed exactly as the whole call computes it (rows, heads and elements are
 * independent), so the bits do not depend on the split. `parts` is the caller's choice (_parallel.run_compiled);
 * 1 runs on the calling thread.
 * ------------------------------------------------------------------------------------------------- */
struct rows_args {
    float *m;
    const float *w;
    ptrdiff_t d, l, s;
    float scale;
    void (*rows)(float *m, ptrdiff_t n, ptrdiff_t d); /* softmax or log-softmax, each row in place */
};
static void rows_part(void *p, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const struct rows_args *a = p;
    (void)part;
    a->rows(a->m + lo * a->d, hi - lo, a->d);
}
LUCID_EXPORT void lucid_par_softmax_rows_f32(float *m, ptrdiff_t n, ptrdiff_t d, ptrdiff_t lo, int parts) {
    struct rows_args a = {m, NULL, d, 0, 0, 0.0f, lucid_softmax_rows_f32};
    lucid_pool_for(rows_part, &a, lo, n, parts, 1);
}
LUCID_EXPORT void lucid_par_log_softmax_rows_f32(float *m, ptrdiff_t n, ptrdiff_t d, ptrdiff_t lo, int parts) {
    struct rows_args a = {m, NULL, d, 0, 0, 0.0f, lucid_log_softmax_rows_f32};
    lucid_pool_for(rows_part, &a, lo, n, parts, 1);
}
static void softmax_causal_part(void *p, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const struct rows_args *a = p;
    (void)part;
    lucid_softmax_causal_f32(a->m + lo * a->l * a->s, hi - lo, a->l, a->s);
}
LUCID_EXPORT void lucid_par_softmax_causal_f32(float *m, ptrdiff_t heads, ptrdiff_t l, ptrdiff_t s, ptrdiff_t lo,
                                               int parts) {
    struct rows_args a = {m, NULL, 0, l, s, 0.0f, NULL};
    lucid_pool_for(softmax_causal_part, &a, lo, heads, parts, 1);
}
static void softmax_grad_rows_part(void *p, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const struct rows_args *a = p;
    (void)part;
    lucid_softmax_grad_rows_f32(a->m + lo * a->d, a->w + lo * a->d, hi - lo, a->d, a->scale);
}
LUCID_EXPORT void lucid_par_softmax_grad_rows_f32(float *dw, const float *w, ptrdiff_t n, ptrdiff_t d, float scale,
                                                  ptrdiff_t lo, int parts) {
    struct rows_args a = {dw, w, d, 0, 0, scale, NULL};
    lucid_pool_for(softmax_grad_rows_part, &a, lo, n, parts, 1);
}

struct norm_args {
    const float *x, *g, *w, *b, *mean, *rstd;
    float *y, *mean_out, *rstd_out, *gxh;
    ptrdiff_t d;
    float eps;
};
static void layer_norm_part(void *p, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const struct norm_args *a = p;
    (void)part;
    lucid_layer_norm_f32(a->x + lo * a->d, a->w, a->b, a->y + lo * a->d, a->mean_out + lo, a->rstd_out + lo, hi - lo,
                         a->d, a->eps);
}
LUCID_EXPORT void lucid_par_layer_norm_f32(const float *x, const float *w, const float *b, float *y, float *mean,
                                           float *rstd, ptrdiff_t n, ptrdiff_t d, float eps, ptrdiff_t lo, int parts) {
    struct norm_args a = {x, NULL, w, b, NULL, NULL, y, mean, rstd, NULL, d, eps};
    lucid_pool_for(layer_norm_part, &a, lo, n, parts, 1);
}
static void layer_norm_grad_part(void *p, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const struct norm_args *a = p;
    (void)part;
    lucid_layer_norm_grad_f32(a->g + lo * a->d, a->x + lo * a->d, a->mean + lo, a->rstd + lo, a->w, a->y + lo * a->d,
                              a->gxh + lo * a->d, hi - lo, a->d);
}
LUCID_EXPORT void lucid_par_layer_norm_grad_f32(const float *g, const float *x, const float *mean, const float *rstd,
                                                const float *w, float *gx, float *gxh, ptrdiff_t n, ptrdiff_t d,
                                                ptrdiff_t lo, int parts) {
    struct norm_args a = {x, g, w, NULL, mean, rstd, gx, NULL, NULL, gxh, d, 0.0f};
    lucid_pool_for(layer_norm_grad_part, &a, lo, n, parts, 1);
}

struct attention_args {
    const float *gy, *q, *k, *v, *w_in;
    float *out, *w, *gq, *gk, *gv, *scratch;
    ptrdiff_t l, s, e, ev, scratch_size;
    float scale;
    int causal;
};
static void attention_part(void *p, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const struct attention_args *a = p;
    lucid_attention_f32(a->q + lo * a->l * a->e, a->k + lo * a->s * a->e, a->v + lo * a->s * a->ev,
                        a->out + lo * a->l * a->ev, a->w + lo * a->l * a->s, a->scratch + part * a->scratch_size,
                        hi - lo, a->l, a->s, a->e, a->ev, a->scale, a->causal);
}
/* scratch: parts * E * (S + 4) floats */
LUCID_EXPORT void lucid_par_attention_f32(const float *q, const float *k, const float *v, float *out, float *w,
                                          float *scratch, ptrdiff_t heads, ptrdiff_t l, ptrdiff_t s, ptrdiff_t e,
                                          ptrdiff_t ev, float scale, int causal, ptrdiff_t lo, int parts) {
    struct attention_args a = {NULL, q, k, v, NULL, out, w, NULL, NULL, NULL, scratch, l, s, e, ev, e * (s + 4),
                               scale, causal};
    lucid_pool_for(attention_part, &a, lo, heads, parts, 1);
}
static void attention_grad_part(void *p, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const struct attention_args *a = p;
    lucid_attention_grad_f32(a->gy + lo * a->l * a->ev, a->q + lo * a->l * a->e, a->k + lo * a->s * a->e,
                             a->v + lo * a->s * a->ev, a->w_in + lo * a->l * a->s, a->gq + lo * a->l * a->e,
                             a->gk + lo * a->s * a->e, a->gv + lo * a->s * a->ev, a->scratch + part * a->scratch_size,
                             hi - lo, a->l, a->s, a->e, a->ev, a->scale, a->causal);
}
/* scratch: parts * ((Ev + L) * S + 4 Ev) floats */
LUCID_EXPORT void lucid_par_attention_grad_f32(const float *gy, const float *q, const float *k, const float *v,
                                               const float *w, float *gq, float *gk, float *gv, float *scratch,
                                               ptrdiff_t heads, ptrdiff_t l, ptrdiff_t s, ptrdiff_t e, ptrdiff_t ev,
                                               float scale, int causal, ptrdiff_t lo, int parts) {
    struct attention_args a = {gy, q, k, v, w, NULL, NULL, gq, gk, gv, scratch, l, s, e, ev, (ev + l) * s + 4 * ev,
                               scale, causal};
    lucid_pool_for(attention_grad_part, &a, lo, heads, parts, 1);
}

struct elementwise_args {
    float *p, *m, *v, *out;
    const float *x, *g, *c;
    float inv;
    int flags;
};
static void gelu_part(void *p, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const struct elementwise_args *a = p;
    (void)part;
    lucid_gelu_f32(a->x + lo, a->g == NULL ? NULL : a->g + lo, a->out + lo, hi - lo, a->c, a->inv);
}
LUCID_EXPORT void lucid_par_gelu_f32(const float *x, const float *g, float *out, ptrdiff_t n, const float *c,
                                     float inv_sqrt_2pi, ptrdiff_t lo, int parts) {
    struct elementwise_args a = {NULL, NULL, NULL, out, x, g, c, inv_sqrt_2pi, 0};
    lucid_pool_for(gelu_part, &a, lo, n, parts, 16);
}
static void relu_part(void *p, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const struct elementwise_args *a = p;
    (void)part;
    lucid_relu_f32(a->x + lo, a->out + lo, hi - lo);
}
LUCID_EXPORT void lucid_par_relu_f32(const float *x, float *y, ptrdiff_t n, ptrdiff_t lo, int parts) {
    struct elementwise_args a = {NULL, NULL, NULL, y, x, NULL, NULL, 0.0f, 0};
    lucid_pool_for(relu_part, &a, lo, n, parts, 16);
}
static void relu_grad_part(void *p, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const struct elementwise_args *a = p;
    (void)part;
    lucid_relu_grad_f32(a->g + lo, a->x + lo, a->out + lo, hi - lo);
}
LUCID_EXPORT void lucid_par_relu_grad_f32(const float *g, const float *x, float *out, ptrdiff_t n, ptrdiff_t lo,
                                          int parts) {
    struct elementwise_args a = {NULL, NULL, NULL, out, x, g, NULL, 0.0f, 0};
    lucid_pool_for(relu_grad_part, &a, lo, n, parts, 16);
}
static void adam_part(void *p, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const struct elementwise_args *a = p;
    (void)part;
    lucid_adam_step_f32(a->p + lo, a->g + lo, a->m + lo, a->v + lo, hi - lo, a->c, a->flags);
}
LUCID_EXPORT void lucid_par_adam_step_f32(float *p, const float *g, float *m, float *v, ptrdiff_t n, const float *c,
                                          int far, ptrdiff_t lo, int parts) {
    struct elementwise_args a = {p, m, v, NULL, NULL, g, c, 0.0f, far};
    lucid_pool_for(adam_part, &a, lo, n, parts, 16);
}
static void sgd_part(void *p, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const struct elementwise_args *a = p;
    (void)part;
    lucid_sgd_step_f32(a->p + lo, a->g + lo, a->m + lo, hi - lo, a->c, a->flags);
}
LUCID_EXPORT void lucid_par_sgd_step_f32(float *p, const float *g, float *b, ptrdiff_t n, const float *c, int flags,
                                         ptrdiff_t lo, int parts) {
    struct elementwise_args a = {p, b, NULL, NULL, NULL, g, c, 0.0f, flags};
    lucid_pool_for(sgd_part, &a, lo, n, parts, 16);
}
static void adadelta_part(void *p, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const struct elementwise_args *a = p;
    (void)part;
    lucid_adadelta_step_f32(a->p + lo, a->g + lo, a->m + lo, a->v + lo, hi - lo, a->c, a->flags);
}
LUCID_EXPORT void lucid_par_adadelta_step_f32(float *p, const float *g, float *v, float *u, ptrdiff_t n,
                                              const float *c, int lr_scaled, ptrdiff_t lo, int parts) {
    struct elementwise_args a = {p, v, u, NULL, NULL, g, c, 0.0f, lr_scaled};
    lucid_pool_for(adadelta_part, &a, lo, n, parts, 16);
}

/* A module object so that the file builds and imports as an ordinary extension; its functions are
 * reached through ctypes (the loader is _native.py), not as Python methods. */
/* address(array, offset=0) -> int: where a C-contiguous buffer's element `offset` (in items) lies; ~4x faster
 * than NumPy's `array.ctypes.data`, which builds a helper object per call (a kernel call takes up to nine). */
static PyObject *address(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "address(array, offset=0) takes one or two arguments");
        return NULL;
    }
    Py_ssize_t offset = 0;
    if (nargs == 2) {
        offset = PyLong_AsSsize_t(args[1]);
        if (offset == -1 && PyErr_Occurred())
            return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (offset < 0 || (offset > 0 && offset * view.itemsize > view.len)) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_IndexError, "address: offset %zd is outside the buffer's %zd items", offset,
                     view.itemsize ? view.len / view.itemsize : 0);
        return NULL;
    }
    char *p = (char *)view.buf + offset * view.itemsize;
    PyBuffer_Release(&view);
    return PyLong_FromVoidPtr(p);
}

/* Blocks of 16 float64 uniforms to normals, as PyTorch's scalar NormalFill16<double>: the platform's libm log,
 * cos and sin one value at a time (NumPy's float64 ufuncs use SVML where AVX-512 is present, which differs from
 * libm in the last bit now and then). Not vectorized, so no vector math library stands in for libm. */
LUCID_EXPORT __attribute__((optimize("no-tree-vectorize"))) void lucid_box_muller_f64(const double *u, double *out,
                                                                                       ptrdiff_t blocks) {
    const double two_pi = 2.0 * 3.14159265358979323846;
    for (ptrdiff_t b = 0; b < blocks; b++) {
        const double *ub = u + 16 * b;
        double *ob = out + 16 * b;
        for (int j = 0; j < 8; j++) {
            double radius = sqrt(-2.0 * log(1.0 - ub[j]));
            double theta = two_pi * ub[8 + j];
            ob[j] = radius * cos(theta);
            ob[8 + j] = radius * sin(theta);
        }
    }
}

/* Blocks of 16 float32 uniforms to normals, as PyTorch's normal_fill_16_AVX2: avx_mathfun.h's Cephes log256_ps and
 * sincos256_ps with the multiply-adds GCC contracts into FMAs there, each written here as an explicit fmaf (one
 * rounding, so the plain build, which calls libm's fmaf, and the FMA build give the same bits; -ffp-contract=off
 * fuses nothing else). _torch_random.py holds the same steps in NumPy and says why each is there. */
LUCID_INLINE float bm_log32(float x) {
    const float p0 = 7.0376836292e-2f, p1 = -1.1514610310e-1f, p2 = 1.1676998740e-1f, p3 = -1.2420140846e-1f,
                p4 = 1.4249322787e-1f, p5 = -1.6668057665e-1f, p6 = 2.0000714765e-1f, p7 = -2.4999993993e-1f,
                p8 = 3.3333331174e-1f;
    union { float f; int32_t i; } v, m;
    v.f = x < 1.17549435e-38f ? 1.17549435e-38f : x;
    float e = (float)((v.i >> 23) - 0x7F) + 1.0f;
    m.i = (v.i & ~0x7F800000) | 0x3F000000;
    float xm = m.f;
    const int small = xm < 0.707106781186547524f;
    float tmp = small ? xm : 0.0f;
    e = e - (small ? 1.0f : 0.0f);
    xm = (xm - 1.0f) + tmp;
    float z = xm * xm;
    float y = fmaf(p0, xm, p1);
    y = fmaf(y, xm, p2);
    y = fmaf(y, xm, p3);
    y = fmaf(y, xm, p4);
    y = fmaf(y, xm, p5);
    y = fmaf(y, xm, p6);
    y = fmaf(y, xm, p7);
    y = fmaf(y, xm, p8);
    y = fmaf(y * xm, z, e * -2.12194440e-4f);
    y = fmaf(-z, 0.5f, y);
    return fmaf(e, 0.693359375f, xm + y);
}

LUCID_INLINE void bm_sincos32(float x, float *s_out, float *c_out) { /* x >= 0 */
    int32_t j = (int32_t)(x * 1.27323954473516f);
    j = (j + 1) & ~1;
    const float y = (float)j;
    x = fmaf(y, -0.78515625f, x);
    x = fmaf(y, -2.4187564849853515625e-4f, x);
    x = fmaf(y, -3.77489497744594108e-8f, x);
    const float z = x * x;
    float yc = fmaf(2.443315711809948e-5f, z, -1.388731625493765e-3f);
    yc = fmaf(yc, z, 4.166664568298827e-2f);
    yc = fmaf(yc * z, z, -(z * 0.5f)) + 1.0f;
    float ys = fmaf(-1.9515295891e-4f, z, 8.3321608736e-3f);
    ys = fmaf(ys, z, -1.6666654611e-1f);
    ys = fmaf(ys * z, x, x);
    const int poly = (j & 2) == 0;
    float s = poly ? ys : yc, c = poly ? yc : ys;
    *s_out = (j & 4) ? -s : s;
    *c_out = (~(j - 2) & 4) ? -c : c;
}

LUCID_INLINE void box_muller_f32_body(const float *restrict u, float *restrict out, ptrdiff_t blocks, float mean,
                                      float std, int plain) {
    const float two_pi = (float)(2.0 * 3.14159265358979323846);
    for (ptrdiff_t b = 0; b < blocks; b++) {
        const float *ub = u + 16 * b;
        float *ob = out + 16 * b;
        for (int j = 0; j < 8; j++) {
            const float radius = sqrtf(-2.0f * bm_log32(1.0f - ub[j]));
            float s, c;
            bm_sincos32(two_pi * ub[8 + j], &s, &c);
            ob[j] = radius * c;
            ob[8 + j] = radius * s;
        }
    }
    const ptrdiff_t n = 16 * blocks;
    if (plain) /* PyTorch's fma(n, 1, 0): exact, but -0 becomes +0 */
        for (ptrdiff_t i = 0; i < n; i++)
            out[i] = out[i] + 0.0f;
    else
        for (ptrdiff_t i = 0; i < n; i++)
            out[i] = fmaf(out[i], std, mean);
}

static void box_muller_f32_generic(const float *u, float *out, ptrdiff_t blocks, float mean, float std, int plain) {
    box_muller_f32_body(u, out, blocks, mean, std, plain);
}
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2,fma"))) static void box_muller_f32_fma(const float *u, float *out, ptrdiff_t blocks,
                                                                   float mean, float std, int plain) {
    box_muller_f32_body(u, out, blocks, mean, std, plain);
}
#endif

/* u and out hold blocks * 16 floats; plain: mean 0 and std 1 (no final fma, as PyTorch's kernel). */
LUCID_EXPORT void lucid_box_muller_f32(const float *u, float *out, ptrdiff_t blocks, float mean, float std, int plain) {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    if (simd() && __builtin_cpu_supports("fma")) {
        box_muller_f32_fma(u, out, blocks, mean, std, plain);
        return;
    }
#endif
    box_muller_f32_generic(u, out, blocks, mean, std, plain);
}

/* float32 uniforms in [lo, hi) as PyTorch draws them: 24 bits of each 32-bit engine word (held in a uint64) times
 * 2**-24, then fma(x, hi - lo, lo) with one rounding, a value that rounds up to hi becoming lo. plain: [0, 1). */
LUCID_INLINE void uniform_f32_body(const uint64_t *restrict words, float *restrict out, ptrdiff_t n, float lo,
                                   float hi, int plain) {
    const float scale = 5.9604644775390625e-08f, width = hi - lo; /* 2**-24 */
    if (plain) {
        for (ptrdiff_t i = 0; i < n; i++)
            out[i] = (float)(int32_t)(words[i] & 0xFFFFFF) * scale;
        return;
    }
    for (ptrdiff_t i = 0; i < n; i++) {
        const float v = fmaf((float)(int32_t)(words[i] & 0xFFFFFF) * scale, width, lo);
        out[i] = v == hi ? lo : v;
    }
}

static void uniform_f32_generic(const uint64_t *w, float *out, ptrdiff_t n, float lo, float hi, int plain) {
    uniform_f32_body(w, out, n, lo, hi, plain);
}
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2,fma"))) static void uniform_f32_fma(const uint64_t *w, float *out, ptrdiff_t n, float lo,
                                                               float hi, int plain) {
    uniform_f32_body(w, out, n, lo, hi, plain);
}
#endif

LUCID_EXPORT void lucid_uniform_f32(const uint64_t *words, float *out, ptrdiff_t n, float lo, float hi, int plain) {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    if (simd() && __builtin_cpu_supports("fma")) {
        uniform_f32_fma(words, out, n, lo, hi, plain);
        return;
    }
#endif
    uniform_f32_generic(words, out, n, lo, hi, plain);
}

static PyMethodDef methods[] = {
    {"address", (PyCFunction)(void (*)(void))address, METH_FASTCALL, "address(array, offset=0) -> int"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ckernels", "Lucid's compiled float32 kernels.", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ckernels(void) { return PyModule_Create(&module); }
