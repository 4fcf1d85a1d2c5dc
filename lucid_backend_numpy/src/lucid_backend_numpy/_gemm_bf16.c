/*
 * bfloat16 matrix product on x86-64 CPUs with AVX512_BF16 (Cooper Lake, Sapphire Rapids, Zen 4 and later): C (bfloat16)
 * = A (bfloat16) @ B (bfloat16), every product and sum in float32, C rounded to bfloat16 once (to nearest, ties to
 * even), as PyTorch's CPU bfloat16 GEMM.
 *
 * `vdpbf16ps` multiplies 32 pairs of bfloat16 and adds each pair's two products into one of 16 float32 lanes: twice
 * the multiply-adds of one float32 FMA a cycle, from half the bytes. So the depth runs two at a time, and both
 * operands are packed once per product into pair-interleaved panels (any strides in, a C-contiguous or transposed
 * operand being the usual ones):
 *   A: per tile of MR = 12 rows, for each pair of depth p, 12 dwords (A[r, 2p], A[r, 2p + 1]): one broadcast a row;
 *   B: per panel of NR = 32 columns, for each pair p, 64 bfloat16 (B[2p, j], B[2p + 1, j]) for j < 32: two vectors.
 * Rows past m, columns past n and the odd depth's partner are zeros, so every tile is computed whole and only its
 * valid part stored. The depth is cut into blocks of KP pairs (a packed panel of B: KP * 128 bytes = 16 KiB, in L1
 * while the tiles of A stream from L2); a tile's 24 float32 accumulators add each block's sums to the earlier ones
 * (kept in a float32 scratch of C) and the last block rounds to bfloat16 as it stores. Packing and the product are
 * each split over the compiled pool (_pool.c): packing by tiles and panels, the product by 32-column panels (or by
 * row tiles when C has fewer panels than threads), so every element of C is summed in the same order whatever the
 * split and its bits do not depend on the thread count.
 *
 * The instruction's float32 arithmetic treats denormal inputs and results as zero (DAZ, FTZ: magnitudes below
 * 1.2e-38), and adds a pair's two products before the running sum; the float32 product (`_gemm.c`) rounds in another
 * order, so the two agree within float32 rounding, not bit for bit. Elsewhere (no AVX512_BF16, another compiler)
 * `lucid_gemm_bf16_available` is 0 and the caller multiplies in float32.
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_pool.h"

#if defined(_WIN32)
#define LUCID_EXPORT __declspec(dllexport)
#else
#define LUCID_EXPORT __attribute__((visibility("default")))
#endif

#if defined(__GNUC__) && defined(__x86_64__) && !defined(_WIN32) && (defined(__clang__) || __GNUC__ >= 10)
#include <immintrin.h>

#define MR 12  /* rows of a C tile */
#define NR 32  /* columns of a C tile: two vectors of 16 float32 */
#define KP 128 /* pairs of depth in a block: a packed panel of B is KP * NR * 2 * 2 = 16 KiB */
#define BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

typedef struct {
    ptrdiff_t m, n, k, kp; /* kp: pairs of depth, (k + 1) / 2 */
    const uint16_t *a, *b;
    ptrdiff_t rsa, csa, rsb, csb;
    uint16_t *c;  /* C in bfloat16, or NULL when `cf` takes the float32 sums */
    float *cf;
    ptrdiff_t ldc;
    uint32_t *ap; /* packed A: tiles * kp * MR dwords */
    uint16_t *bp; /* packed B: panels * kp * NR * 2 */
    float *acc;   /* float32 sums of the earlier depth blocks (m x n), NULL with one block */
    const float *bias; /* n floats added to every row before rounding, or NULL */
    ptrdiff_t tiles, panels;
    int by_rows;
} bf16_job;

/* the tile of A starting at row `r0` packed as kp groups of MR dwords */
static void pack_a_tile(const bf16_job *g, ptrdiff_t r0, uint32_t *dst) {
    const ptrdiff_t k = g->k, kp = g->kp;
    if (g->rsa == 1 && g->m - r0 >= MR) { /* a transpose (a weight gradient's g.T): a pair's rows lie side by side */
        for (ptrdiff_t p = 0; p < kp; p++) {
            const uint16_t *lo = g->a + 2 * p * g->csa + r0, *hi = lo + g->csa;
            const int odd = 2 * p + 1 >= k;
            for (ptrdiff_t r = 0; r < MR; r++)
                dst[p * MR + r] = (uint32_t)lo[r] | (odd ? 0u : (uint32_t)hi[r] << 16);
        }
        return;
    }
    for (ptrdiff_t r = 0; r < MR; r++) {
        const ptrdiff_t row = r0 + r;
        if (row >= g->m) {
            for (ptrdiff_t p = 0; p < kp; p++)
                dst[p * MR + r] = 0;
            continue;
        }
        const uint16_t *src = g->a + row * g->rsa;
        const ptrdiff_t cs = g->csa, full = k / 2;
        if (cs == 1) {
            for (ptrdiff_t p = 0; p < full; p++) {
                uint32_t pair;
                memcpy(&pair, src + 2 * p, sizeof pair); /* little-endian: A[r, 2p] in the low half */
                dst[p * MR + r] = pair;
            }
        } else {
            for (ptrdiff_t p = 0; p < full; p++)
                dst[p * MR + r] = (uint32_t)src[2 * p * cs] | (uint32_t)src[(2 * p + 1) * cs] << 16;
        }
        if (k & 1)
            dst[full * MR + r] = src[(k - 1) * cs];
    }
}

/* the panel of B starting at column `c0` packed as kp groups of NR pairs */
static void pack_b_panel(const bf16_job *g, ptrdiff_t c0, uint16_t *dst) {
    const ptrdiff_t k = g->k, kp = g->kp, w = g->n - c0 < NR ? g->n - c0 : NR;
    const ptrdiff_t rs = g->rsb, cs = g->csb;
    const uint16_t *b = g->b + c0 * cs;
    if (rs == 1) { /* a transpose (a linear layer's weight.T): each column's pairs are dwords side by side */
        const ptrdiff_t full = k / 2;
        for (ptrdiff_t j = 0; j < NR; j++) {
            const uint16_t *col = b + j * cs;
            uint16_t *d = dst + 2 * j;
            if (j >= w) {
                for (ptrdiff_t p = 0; p < kp; p++)
                    memset(d + p * 2 * NR, 0, 2 * sizeof(uint16_t));
                continue;
            }
            for (ptrdiff_t p = 0; p < full; p++)
                memcpy(d + p * 2 * NR, col + 2 * p, 2 * sizeof(uint16_t));
            if (k & 1)
                d[full * 2 * NR] = col[k - 1], d[full * 2 * NR + 1] = 0;
        }
        return;
    }
    for (ptrdiff_t p = 0; p < kp; p++) {
        uint16_t *d = dst + p * 2 * NR;
        const uint16_t *lo = b + 2 * p * rs, *hi = lo + rs;
        const int odd = 2 * p + 1 >= k;
        ptrdiff_t j = 0;
        if (cs == 1)
            for (; j < w; j++)
                d[2 * j] = lo[j], d[2 * j + 1] = odd ? 0 : hi[j];
        else
            for (; j < w; j++)
                d[2 * j] = lo[j * cs], d[2 * j + 1] = odd ? 0 : hi[j * cs];
        for (; j < NR; j++)
            d[2 * j] = d[2 * j + 1] = 0;
    }
}

static void pack_part(void *arg, ptrdiff_t lo, ptrdiff_t hi, int part) {
    bf16_job *g = arg;
    (void)part;
    for (ptrdiff_t i = lo; i < hi; i++) {
        if (i < g->tiles)
            pack_a_tile(g, i * MR, g->ap + i * g->kp * MR);
        else
            pack_b_panel(g, (i - g->tiles) * NR, g->bp + (i - g->tiles) * g->kp * 2 * NR);
    }
}

/* out[0:12, 0:32] = the sums over `kp` pairs of the packed tile `ap` and panel `bp` (float32, 64-byte aligned) */
BF16 static void tile_bf16(ptrdiff_t kp, const uint32_t *ap, const uint16_t *bp, float *out) {
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00;
    __m512 c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
    __m512 c80 = c00, c81 = c00, c90 = c00, c91 = c00, ca0 = c00, ca1 = c00, cb0 = c00, cb1 = c00;
    for (ptrdiff_t p = 0; p < kp; p++) {
        const __m512bh b0 = (__m512bh)_mm512_load_si512(bp), b1 = (__m512bh)_mm512_load_si512(bp + 32);
        __m512bh x;
#define ROW(r, c0, c1)                                                                                          \
    x = (__m512bh)_mm512_set1_epi32((int)ap[r]);                                                                \
    c0 = _mm512_dpbf16_ps(c0, x, b0);                                                                           \
    c1 = _mm512_dpbf16_ps(c1, x, b1);
        ROW(0, c00, c01) ROW(1, c10, c11) ROW(2, c20, c21) ROW(3, c30, c31) ROW(4, c40, c41) ROW(5, c50, c51)
        ROW(6, c60, c61) ROW(7, c70, c71) ROW(8, c80, c81) ROW(9, c90, c91) ROW(10, ca0, ca1) ROW(11, cb0, cb1)
#undef ROW
        ap += MR;
        bp += 2 * NR;
    }
#define PUT(r, c0, c1) _mm512_store_ps(out + (r) * NR, c0), _mm512_store_ps(out + (r) * NR + 16, c1);
    PUT(0, c00, c01) PUT(1, c10, c11) PUT(2, c20, c21) PUT(3, c30, c31) PUT(4, c40, c41) PUT(5, c50, c51)
    PUT(6, c60, c61) PUT(7, c70, c71) PUT(8, c80, c81) PUT(9, c90, c91) PUT(10, ca0, ca1) PUT(11, cb0, cb1)
#undef PUT
}

/* rows r0.. and columns c0.. of C from a computed tile: added to the earlier blocks' sums (`more`: not the first
 * block), kept in the scratch (`last` 0) or, plus the bias, rounded to bfloat16 into C */
BF16 static void store_tile(const bf16_job *g, ptrdiff_t r0, ptrdiff_t c0, const float *t, int more, int last) {
    const ptrdiff_t h = g->m - r0 < MR ? g->m - r0 : MR, w = g->n - c0 < NR ? g->n - c0 : NR;
    const __mmask16 m0 = w >= 16 ? 0xFFFF : (__mmask16)((1u << w) - 1);
    const __mmask16 m1 = w <= 16 ? 0 : w >= 32 ? 0xFFFF : (__mmask16)((1u << (w - 16)) - 1);
    for (ptrdiff_t r = 0; r < h; r++) {
        __m512 v0 = _mm512_load_ps(t + r * NR), v1 = _mm512_load_ps(t + r * NR + 16);
        float *s = g->acc ? g->acc + (r0 + r) * g->n + c0 : NULL;
        if (more) {
            v0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, s), v0);
            v1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, s + 16), v1);
        }
        if (!last) {
            _mm512_mask_storeu_ps(s, m0, v0);
            _mm512_mask_storeu_ps(s + 16, m1, v1);
        } else {
            if (g->bias) {
                v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, g->bias + c0));
                v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, g->bias + c0 + 16));
            }
            if (g->cf) { /* float32 out: the sums unrounded (a convolution's gradient adds them up further) */
                float *cf = g->cf + (r0 + r) * g->ldc + c0;
                _mm512_mask_storeu_ps(cf, m0, v0);
                _mm512_mask_storeu_ps(cf + 16, m1, v1);
                continue;
            }
            uint16_t *c = g->c + (r0 + r) * g->ldc + c0;
            _mm256_mask_storeu_epi16(c, m0, (__m256i)_mm512_cvtneps_pbh(v0));
            _mm256_mask_storeu_epi16(c + 16, m1, (__m256i)_mm512_cvtneps_pbh(v1));
        }
    }
}

/* panels p0..p1 by row tiles t0..t1 of C, the depth block by block */
BF16 static void run_part(const bf16_job *g, ptrdiff_t p0, ptrdiff_t p1, ptrdiff_t t0, ptrdiff_t t1) {
    float out[MR * NR] __attribute__((aligned(64)));
    for (ptrdiff_t q0 = 0; q0 < g->kp; q0 += KP) {
        const ptrdiff_t kb = g->kp - q0 < KP ? g->kp - q0 : KP;
        const int more = q0 > 0, last = q0 + kb >= g->kp;
        for (ptrdiff_t p = p0; p < p1; p++) {
            const uint16_t *bp = g->bp + (p * g->kp + q0) * 2 * NR;
            for (ptrdiff_t t = t0; t < t1; t++) {
                tile_bf16(kb, g->ap + (t * g->kp + q0) * MR, bp, out);
                store_tile(g, t * MR, p * NR, out, more, last);
            }
        }
    }
}

static void product_part(void *arg, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const bf16_job *g = arg;
    (void)part;
    if (g->by_rows)
        run_part(g, 0, g->panels, lo, hi);
    else
        run_part(g, lo, hi, 0, g->tiles);
}

static int bf16_level = -1; /* 1: the CPU has AVX512_BF16; -1 until first asked */

static int bf16_supported(void) {
    int level = __atomic_load_n(&bf16_level, __ATOMIC_RELAXED);
    if (level < 0) {
        __builtin_cpu_init();
        level = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
        __atomic_store_n(&bf16_level, level, __ATOMIC_RELAXED);
    }
    return level;
}

/* 1 where the bfloat16 product runs here (the CPU has AVX512_BF16), else 0 (every call returns -1) */
LUCID_EXPORT int lucid_gemm_bf16_available(void) { return bf16_supported(); }

/* C (m x n, rows ldc apart) = A (m x k) @ B (k x n) (+ bias: n float32 added to every row in float32 before the
 * rounding, or NULL), bfloat16 operands with strides in elements (any; a C-contiguous or a transposed matrix packs
 * fastest), in `parts` slices on the pool; C is bfloat16, or with `out_f32` the float32 sums unrounded. Returns 0,
 * or -1 where memory for the packed operands could not be had or the CPU lacks AVX512_BF16 (C untouched: the
 * caller multiplies). */
LUCID_EXPORT int lucid_gemm_bf16(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, const uint16_t *a, ptrdiff_t rsa,
                                 ptrdiff_t csa, const uint16_t *b, ptrdiff_t rsb, ptrdiff_t csb, void *c,
                                 ptrdiff_t ldc, const float *bias, int out_f32, int parts) {
    if (!bf16_supported())
        return -1;
    if (m <= 0 || n <= 0)
        return 0;
    if (k <= 0) {
        for (ptrdiff_t i = 0; i < m; i++)
            for (ptrdiff_t j = 0; j < n; j++) { /* +0, or the bias (rounded to bfloat16 unless `out_f32`) */
                float v = bias ? 0.0f + bias[j] : 0.0f;
                uint32_t u;
                memcpy(&u, &v, sizeof u);
                if (out_f32)
                    ((float *)c)[i * ldc + j] = v;
                else
                    ((uint16_t *)c)[i * ldc + j] = (u & 0x7FFFFFFFu) > 0x7F800000u
                                                       ? (uint16_t)((u >> 16 & 0x8000u) | 0x7FC0u)
                                                       : (uint16_t)((u + 0x7FFFu + (u >> 16 & 1)) >> 16);
            }
        return 0;
    }
    const ptrdiff_t kp = (k + 1) / 2, tiles = (m + MR - 1) / MR, panels = (n + NR - 1) / NR;
    void *ap = NULL, *bp = NULL;
    float *acc = NULL;
    if (posix_memalign(&ap, 64, (size_t)(tiles * kp * MR) * sizeof(uint32_t)) != 0)
        return -1;
    if (posix_memalign(&bp, 64, (size_t)(panels * kp * 2 * NR) * sizeof(uint16_t)) != 0) {
        free(ap);
        return -1;
    }
    if (kp > KP && (acc = malloc((size_t)(m * n) * sizeof(float))) == NULL) {
        free(ap), free(bp);
        return -1;
    }
    bf16_job g = {m,  n,   k,  kp,  a,    b,     rsa,    csa,    rsb, csb, out_f32 ? NULL : c, out_f32 ? c : NULL,
                  ldc, ap, bp, acc, bias, tiles, panels, panels < parts};
    lucid_pool_for(pack_part, &g, 0, tiles + panels, parts, 1);
    lucid_pool_for(product_part, &g, 0, g.by_rows ? tiles : panels, parts, 1);
    free(ap), free(bp), free(acc);
    return 0;
}

/* C[i] = A[i] @ B[i] for i < batch, the i-th matrices `sa`, `sb`, `sc` elements after the first (0: shared), each
 * product split over the pool in turn (C bfloat16, or float32 with `out_f32`). Returns 0, or -1 (as lucid_gemm_bf16; C may be partly written). */
LUCID_EXPORT int lucid_gemm_batch_bf16(ptrdiff_t batch, ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, const uint16_t *a,
                                       ptrdiff_t sa, ptrdiff_t rsa, ptrdiff_t csa, const uint16_t *b, ptrdiff_t sb,
                                       ptrdiff_t rsb, ptrdiff_t csb, void *c, ptrdiff_t sc, ptrdiff_t ldc,
                                       int out_f32, int parts) {
    const size_t size = out_f32 ? sizeof(float) : sizeof(uint16_t);
    for (ptrdiff_t i = 0; i < batch; i++) {
        void *ci = (char *)c + (size_t)(i * sc) * size;
        if (lucid_gemm_bf16(m, n, k, a + i * sa, rsa, csa, b + i * sb, rsb, csb, ci, ldc, NULL, out_f32, parts) != 0)
            return -1;
    }
    return 0;
}

#endif

/* -- conversions (any CPU) ------------------------------------------------------------------------------------ */

/* float32 -> bfloat16, to nearest with ties to even, NaN -> the quiet NaN of its sign (ml_dtypes' bits; denormals
 * kept, unlike vcvtneps2bf16); plain integer arithmetic that the compiler vectorizes: ~10x ml_dtypes' loop */
static void to_bf16_part(void *arg, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const uint32_t *src = ((const uint32_t *const *)arg)[0];
    uint16_t *dst = ((uint16_t *const *)arg)[1];
    (void)part;
    for (ptrdiff_t i = lo; i < hi; i++) {
        const uint32_t u = src[i];
        const uint16_t r = (uint16_t)((u + 0x7FFFu + (u >> 16 & 1u)) >> 16);
        dst[i] = (u & 0x7FFFFFFFu) > 0x7F800000u ? (uint16_t)((u >> 16 & 0x8000u) | 0x7FC0u) : r;
    }
}

static void from_bf16_part(void *arg, ptrdiff_t lo, ptrdiff_t hi, int part) {
    const uint16_t *src = ((const uint16_t *const *)arg)[0];
    uint32_t *dst = ((uint32_t *const *)arg)[1];
    (void)part;
    for (ptrdiff_t i = lo; i < hi; i++)
        dst[i] = (uint32_t)src[i] << 16; /* exact */
}

/* dst[i] = src[i] rounded to bfloat16 (float32 bits in, bfloat16 bits out), n elements in `parts` slices */
LUCID_EXPORT void lucid_f32_to_bf16(const uint32_t *src, uint16_t *dst, ptrdiff_t n, int parts) {
    void *arg[2] = {(void *)src, dst};
    lucid_pool_for(to_bf16_part, arg, 0, n, parts, 64);
}

/* dst[i] = src[i] widened to float32 (bfloat16 bits in, float32 bits out), n elements in `parts` slices */
LUCID_EXPORT void lucid_bf16_to_f32(const uint16_t *src, uint32_t *dst, ptrdiff_t n, int parts) {
    void *arg[2] = {(void *)src, dst};
    lucid_pool_for(from_bf16_part, arg, 0, n, parts, 64);
}

#if !(defined(__GNUC__) && defined(__x86_64__) && !defined(_WIN32) && (defined(__clang__) || __GNUC__ >= 10))
LUCID_EXPORT int lucid_gemm_bf16_available(void) { return 0; }
LUCID_EXPORT int lucid_gemm_bf16(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, const uint16_t *a, ptrdiff_t rsa,
                                 ptrdiff_t csa, const uint16_t *b, ptrdiff_t rsb, ptrdiff_t csb, void *c,
                                 ptrdiff_t ldc, const float *bias, int out_f32, int parts) {
    (void)m, (void)n, (void)k, (void)a, (void)rsa, (void)csa, (void)b, (void)rsb, (void)csb, (void)c, (void)ldc;
    (void)bias, (void)out_f32, (void)parts;
    return -1;
}
LUCID_EXPORT int lucid_gemm_batch_bf16(ptrdiff_t batch, ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, const uint16_t *a,
                                       ptrdiff_t sa, ptrdiff_t rsa, ptrdiff_t csa, const uint16_t *b, ptrdiff_t sb,
                                       ptrdiff_t rsb, ptrdiff_t csb, void *c, ptrdiff_t sc, ptrdiff_t ldc,
                                       int out_f32, int parts) {
    (void)batch, (void)m, (void)n, (void)k, (void)a, (void)sa, (void)rsa, (void)csa, (void)b, (void)sb, (void)rsb;
    (void)csb, (void)c, (void)sc, (void)ldc, (void)out_f32, (void)parts;
    return -1;
}
#endif
