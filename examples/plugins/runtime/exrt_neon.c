/* exrt_neon.c — the NEON path of the runtime-like example (what a runtime
 * runs where there is neither SME2 nor SVE2.1): FP16 in, FP32 accumulation.
 *
 * Tiles of 4 rows x 16 columns of FP32 accumulators (16 vectors) starting from
 * the bias (FP16 widened exactly) or +0; per k, 16 values of B's row k widened
 * to FP32 and one FMA per accumulator with the row's a[k] (a product of two
 * FP16 values is exact in FP32, so the fused multiply-add rounds once, as an
 * add would): a sequential FP32 chain in increasing k. Then the clamp by
 * compare and select (v < lo gives lo, v > hi gives hi, NaN stays), one
 * rounding to FP16, and a store of the columns inside N.
 *
 * On purpose, as runtimes do (MLAS declares BufOverRead = 32 for this): the
 * last column block loads B's rows and the bias as whole 16-value vectors
 * even when fewer than 16 columns are left, so it reads up to 30 bytes past
 * the end of a row, and of plain B and of the bias (2 x (16 - N % 16) bytes);
 * the lanes past N are computed and never stored. The plugin declares 32
 * bytes for B and the bias (exrt.c); its own packed B has rows of
 * roundup(N, 16) values and is never read past its end.
 *
 * Built with -DEXRT_OVERREAD_33 (a planted defect, libexrt_overread33.so):
 * after its last row of plain B the kernel also loads the 16 bytes that end
 * 33 bytes past the end of that row (a look-ahead for a next row that does not
 * exist), one byte more than the declared 32. */
#include "exrt.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#include <string.h>

static size_t exrt_neon_vl_bytes(void) { return 0; }

static size_t exrt_neon_scratch_bytes(const exrt_gemm *g) {
    (void)g;
    return 0;
}

/* 16 FP16 values widened to four FP32 vectors (a whole-vector load: see above) */
static inline void exrt_neon_load16(const kb_f16 *p, float32x4_t out[4]) {
    float16x8_t lo = vreinterpretq_f16_u16(vld1q_u16(p)), hi = vreinterpretq_f16_u16(vld1q_u16(p + 8));
    out[0] = vcvt_f32_f16(vget_low_f16(lo));
    out[1] = vcvt_high_f32_f16(lo);
    out[2] = vcvt_f32_f16(vget_low_f16(hi));
    out[3] = vcvt_high_f32_f16(hi);
}

static inline float32x4_t exrt_neon_clamp(float32x4_t v, float32x4_t lo, float32x4_t hi) {
    v = vbslq_f32(vcltq_f32(v, lo), lo, v);
    return vbslq_f32(vcgtq_f32(v, hi), hi, v);
}

/* one row of a tile: clamp, round, store `cols` (<= 16) values */
static inline void exrt_neon_store(kb_f16 *dst, const float32x4_t acc[4], size_t cols, float32x4_t lo,
                                   float32x4_t hi) {
    float16x8_t h0 = vcombine_f16(vcvt_f16_f32(exrt_neon_clamp(acc[0], lo, hi)),
                                  vcvt_f16_f32(exrt_neon_clamp(acc[1], lo, hi)));
    float16x8_t h1 = vcombine_f16(vcvt_f16_f32(exrt_neon_clamp(acc[2], lo, hi)),
                                  vcvt_f16_f32(exrt_neon_clamp(acc[3], lo, hi)));
    if (cols == EXRT_NEON_COLS) {
        vst1q_u16(dst, vreinterpretq_u16_f16(h0));
        vst1q_u16(dst + 8, vreinterpretq_u16_f16(h1));
        return;
    }
    kb_f16 tmp[EXRT_NEON_COLS];
    vst1q_u16(tmp, vreinterpretq_u16_f16(h0));
    vst1q_u16(tmp + 8, vreinterpretq_u16_f16(h1));
    memcpy(dst, tmp, cols * sizeof(kb_f16));
}

static void exrt_neon_tile(const exrt_gemm *g, const kb_f16 *b, size_t ldb, size_t i0, size_t rows, size_t j0) {
    float32x4_t acc[4][4], bv[4];
    float32x4_t lo = vdupq_n_f32(g->clamp_min), hi = vdupq_n_f32(g->clamp_max);
    if (g->bias) {
        exrt_neon_load16(g->bias + j0, bv);
    } else {
        for (int q = 0; q < 4; q++) bv[q] = vdupq_n_f32(0.0f);
    }
    for (int r = 0; r < 4; r++)
        for (int q = 0; q < 4; q++) acc[r][q] = bv[q];
    const kb_f16 *arow[4];
    for (size_t r = 0; r < 4; r++) arow[r] = g->a + (i0 + (r < rows ? r : rows - 1)) * g->lda;
    for (size_t kk = 0; kk < g->k; kk++) {
        exrt_neon_load16(b + kk * ldb + j0, bv);
        for (int r = 0; r < 4; r++) {
            float16x4_t a16 = vreinterpret_f16_u16(vld1_dup_u16(arow[r] + kk));
            float32x4_t av = vcvt_f32_f16(a16);
            for (int q = 0; q < 4; q++) acc[r][q] = vfmaq_f32(acc[r][q], av, bv[q]);
        }
    }
    size_t cols = g->n - j0 < EXRT_NEON_COLS ? g->n - j0 : EXRT_NEON_COLS;
    for (size_t r = 0; r < rows; r++) exrt_neon_store(g->c + (i0 + r) * g->ldc + j0, acc[r], cols, lo, hi);
}

static void exrt_neon_gemm(const exrt_gemm *g) {
    const kb_f16 *b = g->packed ? (const kb_f16 *)(const void *)g->packed : g->b;
    size_t ldb = g->packed ? exrt_roundup(g->n, EXRT_NEON_COLS) : g->ldb;
    for (size_t j0 = 0; j0 < g->n; j0 += EXRT_NEON_COLS)
        for (size_t i0 = 0; i0 < g->m; i0 += 4) exrt_neon_tile(g, b, ldb, i0, g->m - i0 < 4 ? g->m - i0 : 4, j0);
#ifdef EXRT_OVERREAD_33
    if (!g->packed) { /* the planted defect: 16 bytes ending 33 bytes past B's last row */
        const unsigned char *end = (const unsigned char *)(g->b + (g->k - 1) * ldb + g->n);
        __asm__ volatile("ldr q31, [%0]" : : "r"(end + 17) : "v31", "memory");
    }
#endif
}

const exrt_path_ops exrt_neon_ops = {
    .path = EXRT_PATH_NEON,
    .name = "neon",
    .vl_bytes = exrt_neon_vl_bytes,
    .payload_bytes = exrt_rows_payload_bytes,
    .pack = exrt_rows_pack,
    .scratch_bytes = exrt_neon_scratch_bytes,
    .gemm = exrt_neon_gemm,
};
#endif
