/* kb_matmul_clamp_f16_f16_f16p16x1b_4x16_neon_cvt_mla.c — 4x16 tile, FP32
 * accumulation for CPUs with FP16 arithmetic but no FEAT_FHM: B rows are
 * widened with FCVTL and multiplied by widened A values with FMLA .4s. A
 * product of two widened FP16 values is exact in FP32, so each step rounds
 * once, as with FMLAL.
 *
 * Per output: acc = +0 (FP32); for each k in order acc = acc + a_k * b_k;
 * acc = acc + bias; clamp; round to FP16 — the scalar reference's order.
 * In a K-blocked loop the FP32 acc is saved after a block and reloaded for
 * the next one unchanged, so the chain is the same.
 * Declared model: FP32, K + 1 roundings. */
#if defined(__aarch64__)
#include "../kb_neon.h"

#include <arm_neon.h>
#include <string.h>

#define MR 4

static size_t m_step(void) { return MR; }
static size_t n_step(void) { return KB_NEON_NR; }
static size_t mr(void) { return MR; }
static size_t nr(void) { return KB_NEON_NR; }
static size_t kr(void) { return 1; }
static size_t acc_bytes(void) { return sizeof(float); }

static void run(const kb_neon_tile *t) {
    KB_ASSUME(t->taps >= 1 && t->tap_len >= 1); /* kb_neon_tile's contract */
    float32x4_t acc[MR][4];
    const kb_f16 *rows[MR];
    if (t->acc_mode & KB_NEON_ACC_LOAD) {
        kb_neon_f32_acc_load(t, acc, MR);
    } else {
        for (size_t r = 0; r < MR; r++)
            for (int j = 0; j < 4; j++) acc[r][j] = vdupq_n_f32(0.0f);
    }
    const kb_f16 *b = t->b;
    for (size_t tap = 0; tap < t->taps; tap++) {
        for (size_t r = 0; r < MR; r++) rows[r] = t->a[(r < t->m ? r : 0) * t->taps + tap];
        size_t k = 0;
        for (; k + 4 <= t->tap_len; k += 4) {
            float32x4_t av[MR];
            for (size_t r = 0; r < MR; r++) av[r] = vcvt_f32_f16(vld1_f16((const __fp16 *)rows[r] + k));
#define STEP(L)                                                                  \
    do {                                                                         \
        float16x8_t b0 = vld1q_f16((const __fp16 *)b), b1 = vld1q_f16((const __fp16 *)b + 8); \
        b += t->b_stride;                                                        \
        float32x4_t w0 = vcvt_f32_f16(vget_low_f16(b0)), w1 = vcvt_f32_f16(vget_high_f16(b0)); \
        float32x4_t w2 = vcvt_f32_f16(vget_low_f16(b1)), w3 = vcvt_f32_f16(vget_high_f16(b1)); \
        for (size_t r = 0; r < MR; r++) {                                        \
            acc[r][0] = vfmaq_laneq_f32(acc[r][0], w0, av[r], L);                \
            acc[r][1] = vfmaq_laneq_f32(acc[r][1], w1, av[r], L);                \
            acc[r][2] = vfmaq_laneq_f32(acc[r][2], w2, av[r], L);                \
            acc[r][3] = vfmaq_laneq_f32(acc[r][3], w3, av[r], L);                \
        }                                                                        \
    } while (0)
            STEP(0); STEP(1); STEP(2); STEP(3);
#undef STEP
        }
        for (; k < t->tap_len; k++) {
            float16x8_t b0 = vld1q_f16((const __fp16 *)b), b1 = vld1q_f16((const __fp16 *)b + 8);
            b += t->b_stride;
            float32x4_t w[4] = {vcvt_f32_f16(vget_low_f16(b0)), vcvt_f32_f16(vget_high_f16(b0)),
                                vcvt_f32_f16(vget_low_f16(b1)), vcvt_f32_f16(vget_high_f16(b1))};
            for (size_t r = 0; r < MR; r++) {
                float32x4_t a = vdupq_n_f32(kb_h2f(rows[r][k]));
                for (int j = 0; j < 4; j++) acc[r][j] = vfmaq_f32(acc[r][j], w[j], a);
            }
        }
    }
    if (t->acc_mode & KB_NEON_ACC_STORE)
        kb_neon_f32_acc_store(t, acc, MR); /* a later K block continues the sums */
    else
        kb_neon_f32_epilogue(t, acc, MR);
}

const kb_neon_ukernel kb_matmul_clamp_f16_f16_f16p16x1b_4x16_neon_cvt_mla = {
    m_step, n_step, mr, nr, kr, acc_bytes, run,
};

/* Functions kbench's own drivers never call (kbench run --coverage lists them
 * apart, with the reason). */
#define KB_WHY "the micro-kernel's query: kbench's NEON driver tiles with the family's MR/NR constants"
KB_NOT_DRIVEN(nr, KB_WHY);
#undef KB_WHY

#endif
