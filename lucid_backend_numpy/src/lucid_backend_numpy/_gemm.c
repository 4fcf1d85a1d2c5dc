/*
 * Single-precision matrix product for x86-64 CPUs with AVX-512, or with AVX2 and FMA (see _parallel.py's `gemm` for
 * when it is used).
 *
 * On an AVX-512 Xeon (Sapphire Rapids, 2 cores) NumPy's OpenBLAS 0.3.31 ran the MLP's products at 135-170
 * GFLOPS a core and PyTorch's MKL at ~165, so an MLP step lost 20 % to PyTorch in its products alone. This
 * is the classic register-blocked product (Goto/BLIS): C is cut into 12 x 32 tiles, each held in 24 vector
 * registers while a panel of B (kc x 32, packed contiguously, so it stays in L1) meets 12 rows of A, which
 * are read where they lie (a broadcast per element: A needs no packing in either layout). K is cut into
 * blocks of KC; each block adds its partial sums to C. Threads split the 32-column panels of C (or its
 * rows, when C has fewer panels than threads): every element of C is one dot product summed in the same
 * order whatever the split, so the bits do not depend on the thread count.
 *
 * Two sets of micro-kernels share that driver (blocking, packing, threading), chosen when first used by the CPU's
 * flags (`__builtin_cpu_supports`): AVX-512 first, else AVX2 with FMA, whose 16 ymm registers cannot hold a
 * 12 x 32 tile (48 vectors): there each tile is four blocks of 6 x 16 (12 accumulators, two vectors of B, one
 * broadcast of A; the blocks of one 16-column half of the panel in turn, so that half stays in L1). Both paths
 * give each element of C the same operations in the same order: within a K block one chain of fused
 * multiply-adds over k starting from zero, that sum added to C (the earlier blocks' sum), then the bias: their
 * bits are equal on every input, and equal to a scalar loop of `fmaf` in that order (tests/backends/
 * test_gemm_isa.py).
 *
 * Elsewhere (neither, another compiler or CPU) `lucid_gemm_available` is 0 and NumPy multiplies.
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "_pool.h"

#if defined(_WIN32)
#define LUCID_EXPORT __declspec(dllexport)
#else
#define LUCID_EXPORT __attribute__((visibility("default")))
#endif

#if defined(__GNUC__) && defined(__x86_64__) && !defined(_WIN32)
#include <immintrin.h>
#include <pthread.h>

#define MR 12  /* rows of a C tile */
#define NR 32  /* columns of a C tile: two AVX-512 vectors, four AVX2 ones */
#define KC 256 /* depth of a K block: a packed panel of B is KC * NR * 4 = 32 KiB */
#define PC 16  /* the most panels of B packed at once: PC * KC * NR * 4 = 512 KiB a thread, in L2 */
#define AVX512 __attribute__((target("avx512f")))
#define AVX2 __attribute__((target("avx2,fma")))

/* -- AVX-512 micro-kernels --------------------------------------------------------------------------------- */

/* C[0:12, 0:32] (+)= A[0:12, 0:kc] @ Bp, A at `a` with strides `rsa` (rows) and `csa` (depth) in elements,
 * Bp packed (kc rows of 32). `acc`: add to C (a later K block) instead of overwriting it; then `bias` (32
 * floats, or NULL) is added to every row: (C + A @ Bp) + bias, the order of a product followed by its bias. */
AVX512 static void tile512(ptrdiff_t kc, const float *a, ptrdiff_t rsa, ptrdiff_t csa, const float *restrict bp,
                        float *c, ptrdiff_t ldc, int acc, const float *bias) {
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00;
    __m512 c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
    __m512 c80 = c00, c81 = c00, c90 = c00, c91 = c00, ca0 = c00, ca1 = c00, cb0 = c00, cb1 = c00;
    /* four row pointers and two byte offsets: every broadcast is one addressing mode, no spilled pointer */
    const char *a0 = (const char *)a, *a3 = (const char *)(a + 3 * rsa);
    const char *a6 = (const char *)(a + 6 * rsa), *a9 = (const char *)(a + 9 * rsa);
    const ptrdiff_t o1 = rsa * (ptrdiff_t)sizeof(float), o2 = 2 * o1, step = csa * (ptrdiff_t)sizeof(float);
    for (ptrdiff_t k = 0; k < kc; k++) {
        const __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16);
        __m512 x;
#define ROW(p, c0, c1)                                                                                          \
    x = _mm512_set1_ps(*(const float *)(p));                                                                    \
    c0 = _mm512_fmadd_ps(x, b0, c0);                                                                            \
    c1 = _mm512_fmadd_ps(x, b1, c1);
        ROW(a0, c00, c01) ROW(a0 + o1, c10, c11) ROW(a0 + o2, c20, c21)
        ROW(a3, c30, c31) ROW(a3 + o1, c40, c41) ROW(a3 + o2, c50, c51)
        ROW(a6, c60, c61) ROW(a6 + o1, c70, c71) ROW(a6 + o2, c80, c81)
        ROW(a9, c90, c91) ROW(a9 + o1, ca0, ca1) ROW(a9 + o2, cb0, cb1)
#undef ROW
        a0 += step, a3 += step, a6 += step, a9 += step;
        bp += NR;
    }
    const __m512 bias0 = bias ? _mm512_loadu_ps(bias) : c00, bias1 = bias ? _mm512_loadu_ps(bias + 16) : c00;
#define STORE(r, c0, c1)                                                                                        \
    {                                                                                                           \
        float *p = c + (r) * ldc;                                                                               \
        if (acc) {                                                                                              \
            c0 = _mm512_add_ps(_mm512_loadu_ps(p), c0);                                                         \
            c1 = _mm512_add_ps(_mm512_loadu_ps(p + 16), c1);                                                    \
        }                                                                                                       \
        if (bias) {                                                                                             \
            c0 = _mm512_add_ps(c0, bias0);                                                                      \
            c1 = _mm512_add_ps(c1, bias1);                                                                      \
        }                                                                                                       \
        _mm512_storeu_ps(p, c0);                                                                                \
        _mm512_storeu_ps(p + 16, c1);                                                                           \
    }
    STORE(0, c00, c01) STORE(1, c10, c11) STORE(2, c20, c21) STORE(3, c30, c31) STORE(4, c40, c41)
    STORE(5, c50, c51) STORE(6, c60, c61) STORE(7, c70, c71) STORE(8, c80, c81) STORE(9, c90, c91)
    STORE(10, ca0, ca1) STORE(11, cb0, cb1)
#undef STORE
}

/* `tile512` for C's edges: `rows` (1 to 12, a constant at each call below) rows, the lanes of each of the two
 * vectors of a row that fall past C's columns masked off (`m0`, `m1`: the lanes kept). The same sums in the same
 * order as `tile512`, written straight into C: A's rows past C's never read, no buffer in between (the 8 rows left
 * of a 128-row C cost as much as a full tile through a 12-row buffer: 4 % of a 128 x 512 x 768 product). */
AVX512 static inline __attribute__((always_inline)) void tile_edge512(const int rows, ptrdiff_t kc, const float *a,
                                                                    ptrdiff_t rsa, ptrdiff_t csa,
                                                                    const float *restrict bp, float *c, ptrdiff_t ldc,
                                                                    int acc, const float *bias, __mmask16 m0,
                                                                    __mmask16 m1) {
    __m512 c0[MR], c1[MR];
    for (int r = 0; r < rows; r++)
        c0[r] = c1[r] = _mm512_setzero_ps();
    for (ptrdiff_t k = 0; k < kc; k++, a += csa, bp += NR) {
        const __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16);
        for (int r = 0; r < rows; r++) {
            const __m512 x = _mm512_set1_ps(a[r * rsa]);
            c0[r] = _mm512_fmadd_ps(x, b0, c0[r]);
            c1[r] = _mm512_fmadd_ps(x, b1, c1[r]);
        }
    }
    const __m512 zero = _mm512_setzero_ps();
    const __m512 bias0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : zero;
    const __m512 bias1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : zero;
    for (int r = 0; r < rows; r++) {
        float *p = c + r * ldc;
        if (acc) {
            c0[r] = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, p), c0[r]);
            c1[r] = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, p + 16), c1[r]);
        }
        if (bias) {
            c0[r] = _mm512_add_ps(c0[r], bias0);
            c1[r] = _mm512_add_ps(c1[r], bias1);
        }
        _mm512_mask_storeu_ps(p, m0, c0[r]);
        _mm512_mask_storeu_ps(p + 16, m1, c1[r]);
    }
}

/* An edge tile of h rows (1 to 12) and w columns (1 to 32), through `tile_edge512` compiled for each row count. */
AVX512 static void tile_part512(ptrdiff_t h, ptrdiff_t w, ptrdiff_t kc, const float *a, ptrdiff_t rsa, ptrdiff_t csa,
                             const float *restrict bp, float *c, ptrdiff_t ldc, int acc, const float *bias) {
    const __mmask16 m0 = (__mmask16)(w >= 16 ? 0xFFFFu : (1u << w) - 1u);
    const __mmask16 m1 = (__mmask16)(w >= 32 ? 0xFFFFu : w > 16 ? (1u << (w - 16)) - 1u : 0u);
#define EDGE(n)                                                                                                  \
    case n:                                                                                                      \
        tile_edge512(n, kc, a, rsa, csa, bp, c, ldc, acc, bias, m0, m1);                                            \
        break;
    switch (h) {
        EDGE(1) EDGE(2) EDGE(3) EDGE(4) EDGE(5) EDGE(6) EDGE(7) EDGE(8) EDGE(9) EDGE(10) EDGE(11) EDGE(12)
    default:
        break;
    }
#undef EDGE
}

/* dst (16 vectors) = the 16 x 16 block at src (rows `ld` floats apart), transposed */
AVX512 static void transpose16(const float *src, ptrdiff_t ld, float *dst, ptrdiff_t ldd) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++)
        r[i] = _mm512_loadu_ps(src + i * ld);
    for (int i = 0; i < 16; i += 2) { /* within 128-bit lanes: pairs of rows interleaved */
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) { /* within lanes: 4 x 4 blocks transposed */
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) { /* lanes across groups of rows 0-3 / 4-7 and 8-11 / 12-15 */
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
    }
    for (int i = 0; i < 8; i++) { /* and across the two halves */
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
    }
    for (int i = 0; i < 16; i++) /* r[i] is column i of the block */
        _mm512_storeu_ps(dst + i * ldd, r[i]);
}

/* -- AVX2 + FMA micro-kernels ------------------------------------------------------------------------------ */

/* C[0:rows, 0:16] (+)= A[0:rows, 0:kc] @ Bp[:, 0:16], Bp's rows NR floats apart (a half of a packed panel), then
 * (+ bias, 16 floats, or NULL): `tile512`'s operations in its order for these elements. `rows` (1 to 6) and
 * `masked` are constants at each call: masked, only the lanes of C and of the bias that `m0` and `m1` keep (the
 * two vectors' lanes, sign bit set) are read or written; B past C's columns is packed as zeros. */
AVX2 static inline __attribute__((always_inline)) void block6(const int rows, const int masked, ptrdiff_t kc,
                                                               const float *a, ptrdiff_t rsa, ptrdiff_t csa,
                                                               const float *restrict bp, float *c, ptrdiff_t ldc,
                                                               int acc, const float *bias, __m256i m0, __m256i m1) {
    __m256 c0[6], c1[6];
    for (int r = 0; r < rows; r++)
        c0[r] = c1[r] = _mm256_setzero_ps();
    /* two row pointers and two byte offsets, as in `tile512`: every broadcast is one addressing mode */
    const char *a0 = (const char *)a, *a3 = (const char *)(a + 3 * rsa);
    const ptrdiff_t o1 = rsa * (ptrdiff_t)sizeof(float), step = csa * (ptrdiff_t)sizeof(float);
    for (ptrdiff_t k = 0; k < kc; k++, a0 += step, a3 += step, bp += NR) {
        const __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
        for (int r = 0; r < rows; r++) {
            const __m256 x = _mm256_broadcast_ss((const float *)((r < 3 ? a0 : a3) + (r % 3) * o1));
            c0[r] = _mm256_fmadd_ps(x, b0, c0[r]);
            c1[r] = _mm256_fmadd_ps(x, b1, c1[r]);
        }
    }
    const __m256 zero = _mm256_setzero_ps();
    __m256 bias0 = zero, bias1 = zero;
    if (bias) {
        bias0 = masked ? _mm256_maskload_ps(bias, m0) : _mm256_loadu_ps(bias);
        bias1 = masked ? _mm256_maskload_ps(bias + 8, m1) : _mm256_loadu_ps(bias + 8);
    }
    for (int r = 0; r < rows; r++) {
        float *p = c + r * ldc;
        if (acc) { /* C's earlier blocks + this block's sum, the operands in `tile512`'s order */
            c0[r] = _mm256_add_ps(masked ? _mm256_maskload_ps(p, m0) : _mm256_loadu_ps(p), c0[r]);
            c1[r] = _mm256_add_ps(masked ? _mm256_maskload_ps(p + 8, m1) : _mm256_loadu_ps(p + 8), c1[r]);
        }
        if (bias) {
            c0[r] = _mm256_add_ps(c0[r], bias0);
            c1[r] = _mm256_add_ps(c1[r], bias1);
        }
        if (masked) {
            _mm256_maskstore_ps(p, m0, c0[r]);
            _mm256_maskstore_ps(p + 8, m1, c1[r]);
        } else {
            _mm256_storeu_ps(p, c0[r]);
            _mm256_storeu_ps(p + 8, c1[r]);
        }
    }
}

/* `tile512` on AVX2: C[0:12, 0:32] as four 6 x 16 blocks, the two of each half of the panel in turn */
AVX2 static void tile256(ptrdiff_t kc, const float *a, ptrdiff_t rsa, ptrdiff_t csa, const float *restrict bp,
                         float *c, ptrdiff_t ldc, int acc, const float *bias) {
    const __m256i all = _mm256_set1_epi32(-1);
    for (int j = 0; j < NR; j += 16)
        for (int i = 0; i < MR; i += 6)
            block6(6, 0, kc, a + i * rsa, rsa, csa, bp + j, c + i * ldc + j, ldc, acc, bias ? bias + j : NULL, all,
                   all);
}

/* `tile_part512` on AVX2: an edge tile of h rows (1 to 12) and w columns (1 to 32) as blocks of up to 6 x 16, the
 * columns past w masked off; a half of the panel wholly past w is skipped. */
AVX2 static void tile_part256(ptrdiff_t h, ptrdiff_t w, ptrdiff_t kc, const float *a, ptrdiff_t rsa, ptrdiff_t csa,
                              const float *restrict bp, float *c, ptrdiff_t ldc, int acc, const float *bias) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (ptrdiff_t j = 0; j < w; j += 16) {
        const int cols = w - j < 16 ? (int)(w - j) : 16;
        const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols), lane);
        const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols - 8), lane);
        const float *const bj = bias ? bias + j : NULL;
        for (ptrdiff_t i = 0; i < h; i += 6) {
            const ptrdiff_t rows = h - i < 6 ? h - i : 6;
            const float *const ai = a + i * rsa;
            float *const ci = c + i * ldc + j;
#define EDGE(n)                                                                                                  \
    case n:                                                                                                      \
        block6(n, 1, kc, ai, rsa, csa, bp + j, ci, ldc, acc, bj, m0, m1);                                        \
        break;
            if (rows == 6 && cols == 16) {
                block6(6, 0, kc, ai, rsa, csa, bp + j, ci, ldc, acc, bj, m0, m1);
                continue;
            }
            switch (rows) {
                EDGE(1) EDGE(2) EDGE(3) EDGE(4) EDGE(5) EDGE(6)
            default:
                break;
            }
#undef EDGE
        }
    }
}

/* dst (8 vectors, rows `ldd` floats apart) = the 8 x 8 block at src (rows `ld` floats apart), transposed */
AVX2 static void transpose8(const float *src, ptrdiff_t ld, float *dst, ptrdiff_t ldd) {
    __m256 r[8], t[8];
    for (int i = 0; i < 8; i++)
        r[i] = _mm256_loadu_ps(src + i * ld);
    for (int i = 0; i < 8; i += 2) { /* within 128-bit lanes: pairs of rows interleaved */
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) { /* within lanes: 4 x 4 blocks transposed (columns c and c + 4 of rows i..i+3) */
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) { /* across the two groups of rows: low lanes are columns 0-3, high ones 4-7 */
        _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
        _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
    }
}

/* -- the driver, shared by both ---------------------------------------------------------------------------- */

/* One instruction set's micro-kernels: a full 12 x 32 tile, an edge tile (h rows, w columns; the same sums for
 * those elements) and a `width` x `width` transpose for packing a transposed B; and how many panels of B to pack
 * at once (up to PC), sized for the L2 of that set's CPUs. */
typedef struct {
    void (*tile)(ptrdiff_t kc, const float *a, ptrdiff_t rsa, ptrdiff_t csa, const float *restrict bp, float *c,
                 ptrdiff_t ldc, int acc, const float *bias);
    void (*tile_part)(ptrdiff_t h, ptrdiff_t w, ptrdiff_t kc, const float *a, ptrdiff_t rsa, ptrdiff_t csa,
                      const float *restrict bp, float *c, ptrdiff_t ldc, int acc, const float *bias);
    void (*transpose)(const float *src, ptrdiff_t ld, float *dst, ptrdiff_t ldd);
    int width;
    int panels;
} gemm_isa;

/* AVX2 CPUs have 256-512 KiB of L2 a core (Zen 2/3, Haswell to Skylake): 16 packed panels (512 KiB) filled it, and
 * A's block (128 KiB for 128 rows) went to L3; 4 (128 KiB) ran an MLP's 128 x 784 x 512 product at 53 GFLOPS a
 * core, 16 at 48 (EPYC, Zen; 1024^3 within noise). The order of every element's sums does not depend on it. */
static const gemm_isa isa_avx512 = {tile512, tile_part512, transpose16, 16, PC};
static const gemm_isa isa_avx2 = {tile256, tile_part256, transpose8, 8, 4};

/* 2: AVX-512, 1: AVX2 and FMA, 0: neither (no kernel); -1 until the CPU is first asked */
static int isa_level = -1;

static int isa_most(void) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return 2;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
}

static int isa_current(void) {
    int level = __atomic_load_n(&isa_level, __ATOMIC_RELAXED);
    if (level < 0) { /* every thread that asks first finds the same answer */
        level = isa_most();
        __atomic_store_n(&isa_level, level, __ATOMIC_RELAXED);
    }
    return level;
}

static const gemm_isa *isa_kernels(void) {
    const int level = isa_current();
    return level == 2 ? &isa_avx512 : level == 1 ? &isa_avx2 : NULL;
}

/* Which micro-kernels the products run on: 2 AVX-512, 1 AVX2 with FMA, 0 none (then every entry point below
 * returns -1 and the caller multiplies). */
LUCID_EXPORT int lucid_gemm_available(void) { return isa_current(); }

/* For tests and measurements: run later products on `level` (as above), or on the widest the CPU has where it has
 * not that one; returns the level now in use. Not while a product runs. */
LUCID_EXPORT int lucid_gemm_set_isa(int level) {
    const int most = isa_most();
    level = level < 0 ? 0 : level < most ? level : most;
    __atomic_store_n(&isa_level, level, __ATOMIC_RELAXED);
    return level;
}

/* Bp (kc rows of NR, zero past column w) = B[0:kc, 0:w], B with strides rsb (depth) and csb (columns) */
static void pack_b(const gemm_isa *isa, ptrdiff_t kc, ptrdiff_t w, const float *b, ptrdiff_t rsb, ptrdiff_t csb,
                   float *bp) {
    ptrdiff_t k = 0;
    if (csb == 1 && w == NR) {
        for (; k < kc; k++)
            memcpy(bp + k * NR, b + k * rsb, NR * sizeof(float));
        return;
    }
    const ptrdiff_t t = isa->width;
    if (rsb == 1 && w == NR) { /* B transposed (W.T of a row-major W): t x t blocks */
        for (; k + t <= kc; k += t)
            for (ptrdiff_t j = 0; j < NR; j += t)
                isa->transpose(b + k + j * csb, csb, bp + k * NR + j, NR);
    }
    for (; k < kc; k++) {
        ptrdiff_t j = 0;
        for (; j < w; j++)
            bp[k * NR + j] = b[k * rsb + j * csb];
        for (; j < NR; j++)
            bp[k * NR + j] = 0.0f;
    }
}

/* ap[kk * MR + x] = A[x, kk] for the h rows of a tile: depth-major, as `tile` and `tile_part` read it with
 * strides (1, MR) (an edge tile's part reads only its h rows). For A transposed (a row-major X's X.T) a row of A is a column of X, rows of X apart, and a
 * tile reading it in place would touch a new page per step of depth. */
static void pack_a(ptrdiff_t h, ptrdiff_t kc, const float *a, ptrdiff_t rsa, ptrdiff_t csa, float *ap) {
    if (rsa == 1 && h == MR) {
        for (ptrdiff_t kk = 0; kk < kc; kk++)
            memcpy(ap + kk * MR, a + kk * csa, MR * sizeof(float));
        return;
    }
    for (ptrdiff_t kk = 0; kk < kc; kk++)
        for (ptrdiff_t x = 0; x < h; x++)
            ap[kk * MR + x] = a[x * rsa + kk * csa];
}

/* The most elements of C a slice's chunk of panels may span for the panels to be the outer loop (run_block): 1 MiB
 * of C, in L2, as an MLP's (MLP step 1-1.5 % faster at two threads, the transformer and CNN steps unchanged);
 * larger C is written a row tile at a time. 0: never. lucid_gemm_set_panel_outer changes it (for measurements). */
static ptrdiff_t panel_outer_max = 1 << 18;

LUCID_EXPORT ptrdiff_t lucid_gemm_set_panel_outer(ptrdiff_t elements) {
    const ptrdiff_t old = panel_outer_max;
    panel_outer_max = elements;
    return old;
}

typedef struct {
    ptrdiff_t m, n, k;
    const float *a, *b;
    ptrdiff_t rsa, csa, rsb, csb, ldc;
    float *c;
    int by_rows; /* the split's items: 0 = panels of NR columns, 1 = tiles of MR rows */
    int failed;  /* set by a slice whose thread could not get its buffer */
    ptrdiff_t terms, sa, sb; /* C = the sum of `terms` products, the t-th A and B `t sa`, `t sb` elements on */
    const float *bias;       /* n floats added to every row of C after its last K block, or NULL */
    const gemm_isa *isa;     /* the micro-kernels, chosen once per call */
} gemm_job;

/* C's panels p0..p1 (NR columns each) and row tiles r0..r1 (MR rows each), every K block; `bp` is this slice's
 * buffer for packed panels of B. A tile of A (in place, or packed: 12 KiB) stays in L1 while it meets up to PC
 * panels (isa->panels; from L2), so C is written a row tile at a time, that many panels wide: rows of C stream out in order
 * (a 64-sample convolution's 42 MB of gradient columns written panel by panel took twice as long). */
static void run_block(const gemm_job *g, ptrdiff_t p0, ptrdiff_t p1, ptrdiff_t r0, ptrdiff_t r1, float *bp) {
    float ap[MR * KC] __attribute__((aligned(64)));
    const gemm_isa *const isa = g->isa;
    const int direct = g->csa == 1; /* rows of A contiguous: read in place */
    for (ptrdiff_t term = 0, pc = 0; term < g->terms; pc += KC) {
        if (pc >= g->k) { /* the next product of a sum: its K blocks add on */
            if (++term == g->terms)
                break;
            pc = 0;
        }
        const ptrdiff_t kc = g->k - pc < KC ? g->k - pc : KC;
        const int acc = term > 0 || pc > 0;
        const float *const bias = term == g->terms - 1 && pc + kc >= g->k ? g->bias : NULL; /* the last block */
        const float *const ga = g->a + term * g->sa, *const gb = g->b + term * g->sb;
        for (ptrdiff_t q0 = p0; q0 < p1; q0 += isa->panels) {
            const ptrdiff_t q1 = p1 - q0 < isa->panels ? p1 : q0 + isa->panels;
            for (ptrdiff_t p = q0; p < q1; p++) {
                const ptrdiff_t j = p * NR, w = g->n - j < NR ? g->n - j : NR;
                pack_b(isa, kc, w, gb + pc * g->rsb + j * g->csb, g->rsb, g->csb, bp + (p - q0) * KC * NR);
            }
            if (direct && (r1 - r0) * MR * (q1 - q0) * NR <= panel_outer_max) {
                /* C's block in L2: one packed panel of B stays in L1 while the tiles of A's rows (read in place)
                 * meet it; every element of C gets the same sums as in the other order */
                for (ptrdiff_t p = q0; p < q1; p++) {
                    const ptrdiff_t j = p * NR, w = g->n - j < NR ? g->n - j : NR;
                    const float *b = bp + (p - q0) * KC * NR;
                    for (ptrdiff_t r = r0; r < r1; r++) {
                        const ptrdiff_t i = r * MR, h = g->m - i < MR ? g->m - i : MR;
                        const float *a = ga + i * g->rsa + pc;
                        float *c = g->c + i * g->ldc + j;
                        if (h == MR && w == NR)
                            isa->tile(kc, a, g->rsa, 1, b, c, g->ldc, acc, bias ? bias + j : NULL);
                        else
                            isa->tile_part(h, w, kc, a, g->rsa, 1, b, c, g->ldc, acc, bias ? bias + j : NULL);
                    }
                }
                continue;
            }
            for (ptrdiff_t r = r0; r < r1; r++) {
                const ptrdiff_t i = r * MR, h = g->m - i < MR ? g->m - i : MR;
                const float *a = ga + i * g->rsa + pc;
                ptrdiff_t rsa = g->rsa, csa = 1;
                if (!direct) {
                    pack_a(h, kc, ga + i * g->rsa + pc * g->csa, g->rsa, g->csa, ap);
                    a = ap, rsa = 1, csa = MR;
                }
                for (ptrdiff_t p = q0; p < q1; p++) {
                    const ptrdiff_t j = p * NR, w = g->n - j < NR ? g->n - j : NR;
                    const float *b = bp + (p - q0) * KC * NR;
                    float *c = g->c + i * g->ldc + j;
                    if (h == MR && w == NR)
                        isa->tile(kc, a, rsa, csa, b, c, g->ldc, acc, bias ? bias + j : NULL);
                    else /* C's last rows or columns */
                        isa->tile_part(h, w, kc, a, rsa, csa, b, c, g->ldc, acc, bias ? bias + j : NULL);
                }
            }
        }
    }
}

/* This thread's buffer for packed panels of B (PC * KC * NR floats, 64-byte aligned for aligned loads and
 * stores), made on its first product and kept until the thread ends (a pthread key's destructor frees it: a
 * thread that multiplies once and exits, a data loader's, leaves nothing behind). One allocated and freed per
 * call fragmented the heap instead (a transformer step's peak RSS grew by 15 MB). NULL if there is no memory. */
static pthread_key_t panels_key;
static pthread_once_t panels_once = PTHREAD_ONCE_INIT;
static int panels_key_ok;

static void make_panels_key(void) { panels_key_ok = pthread_key_create(&panels_key, free) == 0; }

static float *thread_panels(void) {
    pthread_once(&panels_once, make_panels_key);
    if (!panels_key_ok)
        return NULL;
    float *bp = pthread_getspecific(panels_key);
    void *p = NULL;
    if (bp == NULL && posix_memalign(&p, 64, (size_t)PC * KC * NR * sizeof(float)) == 0) {
        if (pthread_setspecific(panels_key, p) != 0) {
            free(p);
            return NULL;
        }
        bp = p;
    }
    return bp;
}

static void gemm_part(void *arg, ptrdiff_t lo, ptrdiff_t hi, int part) {
    gemm_job *g = arg;
    const ptrdiff_t panels = (g->n + NR - 1) / NR, tiles = (g->m + MR - 1) / MR;
    float *bp = thread_panels();
    (void)part;
    if (bp == NULL) {
        __atomic_store_n(&g->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    if (g->by_rows)
        run_block(g, 0, panels, lo, hi, bp);
    else
        run_block(g, lo, hi, 0, tiles, bp);
}

/* C (m x n, rows ldc apart) = A (m x k) @ B (k x n) (+ bias, n floats added to every row, unless NULL), strides
 * in elements, in `parts` slices on the pool. Returns 0, or -1 where a thread could not allocate its buffer (C
 * incomplete: the caller multiplies), or where the CPU has neither instruction set. */
LUCID_EXPORT int lucid_gemm_f32(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, const float *a, ptrdiff_t rsa,
                                ptrdiff_t csa, const float *b, ptrdiff_t rsb, ptrdiff_t csb, float *c, ptrdiff_t ldc,
                                const float *bias, int parts) {
    const gemm_isa *const isa = isa_kernels();
    if (isa == NULL)
        return -1;
    if (m <= 0 || n <= 0)
        return 0;
    if (k <= 0) {
        for (ptrdiff_t i = 0; i < m; i++)
            for (ptrdiff_t j = 0; j < n; j++)
                c[i * ldc + j] = bias ? 0.0f + bias[j] : 0.0f;
        return 0;
    }
    const ptrdiff_t panels = (n + NR - 1) / NR, tiles = (m + MR - 1) / MR;
    /* split the longer side: each slice packs its share of that side's operand and all of the other's */
    gemm_job g = {m, n, k, a, b, rsa, csa, rsb, csb, ldc, c, tiles * MR >= panels * NR, 0, 1, 0, 0, bias, isa};
    lucid_pool_for(gemm_part, &g, 0, g.by_rows ? tiles : panels, parts, 1);
    return g.failed ? -1 : 0;
}

typedef struct {
    gemm_job g; /* the first product; the others are `sa`, `sb`, `sc` elements further on */
    ptrdiff_t sa, sb, sc;
} batch_job;

static void batch_part(void *arg, ptrdiff_t lo, ptrdiff_t hi, int part) {
    batch_job *bj = arg;
    for (ptrdiff_t i = lo; i < hi; i++) {
        gemm_job g = bj->g;
        g.a += i * bj->sa, g.b += i * bj->sb, g.c += i * bj->sc;
        gemm_part(&g, 0, g.by_rows ? (g.m + MR - 1) / MR : (g.n + NR - 1) / NR, part);
        if (g.failed)
            __atomic_store_n(&bj->g.failed, 1, __ATOMIC_RELAXED);
    }
}

/* C[i] = A[i] @ B[i] for i < batch, the i-th matrices `sa`, `sb`, `sc` elements after the first (0: shared);
 * the products are split over the pool, each on one thread. Returns 0, or -1 (no buffer; C incomplete). */
LUCID_EXPORT int lucid_gemm_batch_f32(ptrdiff_t batch, ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, const float *a,
                                      ptrdiff_t sa, ptrdiff_t rsa, ptrdiff_t csa, const float *b, ptrdiff_t sb,
                                      ptrdiff_t rsb, ptrdiff_t csb, float *c, ptrdiff_t sc, ptrdiff_t ldc, int parts) {
    const gemm_isa *const isa = isa_kernels();
    if (isa == NULL)
        return -1;
    if (batch <= 0 || m <= 0 || n <= 0)
        return 0;
    if (k <= 0) {
        for (ptrdiff_t t = 0; t < batch; t++)
            for (ptrdiff_t i = 0; i < m; i++)
                memset(c + t * sc + i * ldc, 0, (size_t)n * sizeof(float));
        return 0;
    }
    batch_job bj = {{m, n, k, a, b, rsa, csa, rsb, csb, ldc, c, 1, 0, 1, 0, 0, NULL, isa}, sa, sb, sc};
    lucid_pool_for(batch_part, &bj, 0, batch, parts, 1);
    return bj.g.failed ? -1 : 0;
}

/* C = A[0] @ B[0] + A[1] @ B[1] + ... (`terms` products; the t-th operands `t sa`, `t sb` elements after the
 * first): one long product whose depth runs through each term in turn, every element summed in that order
 * whatever the split over the pool (a convolution's weight gradient over the samples of a batch). Returns 0, or
 * -1 (no buffer; C incomplete). */
LUCID_EXPORT int lucid_gemm_sum_f32(ptrdiff_t terms, ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, const float *a,
                                    ptrdiff_t sa, ptrdiff_t rsa, ptrdiff_t csa, const float *b, ptrdiff_t sb,
                                    ptrdiff_t rsb, ptrdiff_t csb, float *c, ptrdiff_t ldc, int parts) {
    const gemm_isa *const isa = isa_kernels();
    if (isa == NULL)
        return -1;
    if (m <= 0 || n <= 0)
        return 0;
    if (k <= 0 || terms <= 0) {
        for (ptrdiff_t i = 0; i < m; i++)
            memset(c + i * ldc, 0, (size_t)n * sizeof(float));
        return 0;
    }
    const ptrdiff_t panels = (n + NR - 1) / NR, tiles = (m + MR - 1) / MR;
    gemm_job g = {m, n, k, a, b, rsa, csa, rsb, csb, ldc, c, tiles * MR >= panels * NR, 0, terms, sa, sb, NULL, isa};
    lucid_pool_for(gemm_part, &g, 0, g.by_rows ? tiles : panels, parts, 1);
    return g.failed ? -1 : 0;
}

#else
LUCID_EXPORT int lucid_gemm_available(void) { return 0; }
LUCID_EXPORT int lucid_gemm_set_isa(int level) { return (void)level, 0; }
LUCID_EXPORT ptrdiff_t lucid_gemm_set_panel_outer(ptrdiff_t elements) { return (void)elements, 0; }
LUCID_EXPORT int lucid_gemm_f32(ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, const float *a, ptrdiff_t rsa,
                                ptrdiff_t csa, const float *b, ptrdiff_t rsb, ptrdiff_t csb, float *c, ptrdiff_t ldc,
                                const float *bias, int parts) {
    (void)m, (void)n, (void)k, (void)a, (void)rsa, (void)csa, (void)b, (void)rsb, (void)csb, (void)c, (void)ldc;
    (void)bias, (void)parts;
    return -1;
}
LUCID_EXPORT int lucid_gemm_batch_f32(ptrdiff_t batch, ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, const float *a,
                                      ptrdiff_t sa, ptrdiff_t rsa, ptrdiff_t csa, const float *b, ptrdiff_t sb,
                                      ptrdiff_t rsb, ptrdiff_t csb, float *c, ptrdiff_t sc, ptrdiff_t ldc, int parts) {
    (void)batch, (void)m, (void)n, (void)k, (void)a, (void)sa, (void)rsa, (void)csa, (void)b, (void)sb, (void)rsb;
    (void)csb, (void)c, (void)sc, (void)ldc, (void)parts;
    return -1;
}
LUCID_EXPORT int lucid_gemm_sum_f32(ptrdiff_t terms, ptrdiff_t m, ptrdiff_t n, ptrdiff_t k, const float *a,
                                    ptrdiff_t sa, ptrdiff_t rsa, ptrdiff_t csa, const float *b, ptrdiff_t sb,
                                    ptrdiff_t rsb, ptrdiff_t csb, float *c, ptrdiff_t ldc, int parts) {
    (void)terms, (void)m, (void)n, (void)k, (void)a, (void)sa, (void)rsa, (void)csa, (void)b, (void)sb, (void)rsb;
    (void)csb, (void)c, (void)ldc, (void)parts;
    return -1;
}
#endif
