/* kb_neon.h — the NEON FP16 backend: micro-kernel interface and drivers.
 *
 * Every micro-kernel computes one tile of at most mr x 16 outputs. Its A
 * operand is a table of row pointers, `taps` runs of `tap_len` values per
 * row: a plain GEMM has one run of K values per row, an indirect-GEMM
 * convolution one run of c_in/groups values per filter tap (a pointer to a
 * zero row stands for padding). B is a panel of taps*tap_len rows of 16
 * values, `b_stride` elements apart; bias holds 16 values or is NULL.
 *
 * A driver that blocks K runs a tile once per K block. The tile's partial
 * sums then live in `acc` (mr rows of 16 accumulator values, in the
 * kernel's accumulator format: FP32 or FP16, see get_acc_bytes) between
 * blocks: with KB_NEON_ACC_LOAD the kernel starts from them instead of
 * zero, with KB_NEON_ACC_STORE it writes them back instead of running its
 * epilogue (bias, clamp, store). The accumulators pass through memory
 * unchanged, so the chain of roundings per output is the unblocked one.
 * Kernels allocate nothing. */
#ifndef KB_NEON_H
#define KB_NEON_H

#include "../core/kb_internal.h"

#define KB_NEON_NR 16

typedef struct kb_neon_tile {
    size_t m, n;               /* rows (1..mr) and columns (1..16) to store  */
    size_t taps, tap_len;      /* both >= 1 (K >= 1, at least one tap)       */
    const kb_f16 *const *a;    /* a[r * taps + t]                            */
    const kb_f16 *b;
    size_t b_stride;
    const kb_f16 *bias;        /* 16 values or NULL                          */
    kb_f16 *c;
    size_t ldc;
    float clamp_min, clamp_max;
    void *acc;                 /* K-blocked: this tile's partial sums, or NULL */
    unsigned acc_mode;         /* KB_NEON_ACC_*; 0 = one pass over all of K   */
} kb_neon_tile;

#define KB_NEON_ACC_LOAD 1u    /* start from acc, not from zero                */
#define KB_NEON_ACC_STORE 2u   /* save the sums to acc; no epilogue, no store  */

/* The KleidiAI-style query/run interface of one micro-kernel. */
typedef struct kb_neon_ukernel {
    size_t (*get_m_step)(void);
    size_t (*get_n_step)(void);
    size_t (*get_mr)(void);
    size_t (*get_nr)(void);
    size_t (*get_kr)(void);
    size_t (*get_acc_bytes)(void); /* bytes of one accumulator value: 4 or 2 */
    void (*run)(const kb_neon_tile *t);
} kb_neon_ukernel;

#if defined(__aarch64__) && defined(__ARM_FEATURE_FP16_VECTOR_ARITHMETIC)
#include <arm_neon.h>
#include <math.h>
#include <string.h>

/* The FP32-accumulating kernels' partial sums across K blocks: mr rows of
 * 16 FP32 values, stored and reloaded bit for bit. */
static inline void kb_neon_f32_acc_load(const kb_neon_tile *t, float32x4_t (*acc)[4], size_t mr) {
    const float *p = (const float *)t->acc;
    for (size_t r = 0; r < mr; r++)
        for (int j = 0; j < 4; j++) acc[r][j] = vld1q_f32(p + r * KB_NEON_NR + 4 * j);
}

static inline void kb_neon_f32_acc_store(const kb_neon_tile *t, float32x4_t (*acc)[4], size_t mr) {
    float *p = (float *)t->acc;
    for (size_t r = 0; r < mr; r++)
        for (int j = 0; j < 4; j++) vst1q_f32(p + r * KB_NEON_NR + 4 * j, acc[r][j]);
}

/* The FP32-accumulating kernels' epilogue: + bias (one FP32 rounding), clamp
 * (NaN passes), round to FP16, store the tile's m rows of n columns.
 *
 * The clamp is kb_store_f16's. FMAX/FMIN keep NaN (the NaN operand is
 * returned) and differ from it only on zeros of opposite sign: these
 * accumulators are never -0 (the chain starts from +0; a sum that is not
 * exactly zero cannot round to zero in FP32), so FMAX(v, lo) is exact, and
 * FMIN(w, hi) is exact unless hi is -0 (FMIN(+0, -0) = -0, the clamp keeps
 * +0): for that bound the upper clamp is a compare and select. */
static inline void kb_neon_f32_epilogue(const kb_neon_tile *t, float32x4_t (*acc)[4], size_t mr) {
    if (t->bias) {
        float16x8_t b0 = vld1q_f16((const __fp16 *)t->bias), b1 = vld1q_f16((const __fp16 *)t->bias + 8);
        float32x4_t bq[4] = {vcvt_f32_f16(vget_low_f16(b0)), vcvt_f32_f16(vget_high_f16(b0)),
                             vcvt_f32_f16(vget_low_f16(b1)), vcvt_f32_f16(vget_high_f16(b1))};
        for (size_t r = 0; r < mr; r++)
            for (int j = 0; j < 4; j++) acc[r][j] = vaddq_f32(acc[r][j], bq[j]);
    }
    float32x4_t vmin = vdupq_n_f32(t->clamp_min), vmax = vdupq_n_f32(t->clamp_max);
    bool hi_neg_zero = t->clamp_max == 0.0f && signbit(t->clamp_max);
    for (size_t r = 0; r < t->m; r++) {
        float16x4_t h[4];
        for (int i = 0; i < 4; i++) {
            float32x4_t w = vmaxq_f32(acc[r][i], vmin);
            w = hi_neg_zero ? vbslq_f32(vcgtq_f32(w, vmax), vmax, w) : vminq_f32(w, vmax);
            h[i] = vcvt_f16_f32(w);
        }
        kb_f16 tmp[KB_NEON_NR];
        vst1q_f16((__fp16 *)tmp, vcombine_f16(h[0], h[1]));
        vst1q_f16((__fp16 *)tmp + 8, vcombine_f16(h[2], h[3]));
        memcpy(t->c + r * t->ldc, tmp, t->n * sizeof(kb_f16));
    }
}
#endif

#if defined(__aarch64__)
extern const kb_neon_ukernel kb_matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla;
extern const kb_neon_ukernel kb_matmul_clamp_f16_f16_f16p16x1b_4x16_neon_fhm_mlal;
extern const kb_neon_ukernel kb_matmul_clamp_f16_f16_f16p16x1b_4x16_neon_cvt_mla;
#endif

/* Cache blocking of the GEMM driver: output blocks of mb rows x nb columns
 * are the units of work (split over threads); within one, K is walked in
 * blocks of kb, and for each K block every tile of the output block runs
 * (n tiles outer, m tiles inner), so the A block (mb x kb) and B block
 * (kb x nb) are reused from cache. Partial sums stay in the accumulator
 * format between K blocks (per-thread scratch of mb x nb values), so the
 * result is bit-identical to the unblocked driver. 0 = not blocked in that
 * dimension; mb is rounded up to a multiple of mr and nb to one of 16. */
typedef struct kb_neon_blocking {
    size_t mb, nb, kb;
} kb_neon_blocking;

/* Drivers (kb_neon_driver.c): GEMM for every form of B, and the indirect
 * convolution, over any micro-kernel; both split tiles over threads.
 * blk NULL (or all zero): the unblocked loop over tiles. */
kb_status kb_neon_gemm(const kb_neon_ukernel *uk, const kb_neon_blocking *blk, const kb_gemm_call *c,
                       kb_error *err);
kb_status kb_neon_conv_indirect(const kb_neon_ukernel *uk, const kb_conv_desc *d, size_t oh,
                                size_t ow, const kb_f16 *input, const kb_f16 *filter,
                                const kb_f16 *bias, kb_f16 *output, int threads,
                                kb_error *err);
/* A panel of w < 16 columns of B (src = its first column; `before` values
 * of B precede src on row 0): K rows of 16 values, columns past w zero. */
void kb_neon_pack_narrow(size_t w, size_t k, const kb_f16 *src, size_t ldb, size_t before,
                         kb_f16 *dst);


#endif
