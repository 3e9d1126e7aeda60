/* kb_matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla.c — 6x16 tile, FP16
 * accumulation (FMLA on .8h lanes), the model of FP16-native GEMMs.
 *
 * Per output: acc = +0 (FP16); for each k in order acc = fma(a_k, b_k, acc),
 * rounded to FP16 (one rounding per product); acc = acc + bias (FP16);
 * clamp in FP32 (NaN passes); round to FP16. In a K-blocked loop the FP16
 * acc is saved after a block and reloaded for the next one (an FP16 value
 * stored as FP16: unchanged), so the chain is the unblocked one. Declared
 * model: FP16 accumulation, K + 1 roundings on one sequential chain. */
#if defined(__aarch64__)
#include "../kb_neon.h"

#include <arm_neon.h>
#include <string.h>

#define MR 6

static size_t m_step(void) { return MR; }
static size_t n_step(void) { return KB_NEON_NR; }
static size_t mr(void) { return MR; }
static size_t nr(void) { return KB_NEON_NR; }
static size_t kr(void) { return 1; }
static size_t acc_bytes(void) { return sizeof(kb_f16); }

static inline void store_row(kb_f16 *out, size_t n, float16x8_t lo, float16x8_t hi, float cmin,
                             float cmax) {
    float32x4_t vmin = vdupq_n_f32(cmin), vmax = vdupq_n_f32(cmax);
    float32x4_t q[4] = {vcvt_f32_f16(vget_low_f16(lo)), vcvt_f32_f16(vget_high_f16(lo)),
                        vcvt_f32_f16(vget_low_f16(hi)), vcvt_f32_f16(vget_high_f16(hi))};
    float16x4_t h[4];
    for (int i = 0; i < 4; i++) h[i] = vcvt_f16_f32(vminq_f32(vmaxq_f32(q[i], vmin), vmax));
    float16x8_t r0 = vcombine_f16(h[0], h[1]), r1 = vcombine_f16(h[2], h[3]);
    if (n == KB_NEON_NR) {
        vst1q_f16((__fp16 *)out, r0);
        vst1q_f16((__fp16 *)out + 8, r1);
    } else {
        kb_f16 tmp[KB_NEON_NR];
        vst1q_f16((__fp16 *)tmp, r0);
        vst1q_f16((__fp16 *)tmp + 8, r1);
        memcpy(out, tmp, n * sizeof(kb_f16));
    }
}

static void run(const kb_neon_tile *t) {
    float16x8_t acc[MR][2];
    const kb_f16 *rows[MR];
    const __fp16 *part = (const __fp16 *)t->acc;
    for (size_t r = 0; r < MR; r++) {
        bool load = (t->acc_mode & KB_NEON_ACC_LOAD) != 0;
        acc[r][0] = load ? vld1q_f16(part + r * KB_NEON_NR) : vdupq_n_f16(0);
        acc[r][1] = load ? vld1q_f16(part + r * KB_NEON_NR + 8) : vdupq_n_f16(0);
    }
    const kb_f16 *b = t->b;
    for (size_t tap = 0; tap < t->taps; tap++) {
        for (size_t r = 0; r < MR; r++) rows[r] = t->a[(r < t->m ? r : 0) * t->taps + tap];
        size_t k = 0;
        for (; k + 8 <= t->tap_len; k += 8) {
            float16x8_t av[MR];
            for (size_t r = 0; r < MR; r++) av[r] = vld1q_f16((const __fp16 *)rows[r] + k);
#define STEP(L)                                                                  \
    do {                                                                         \
        float16x8_t b0 = vld1q_f16((const __fp16 *)b), b1 = vld1q_f16((const __fp16 *)b + 8); \
        b += t->b_stride;                                                        \
        for (size_t r = 0; r < MR; r++) {                                        \
            acc[r][0] = vfmaq_laneq_f16(acc[r][0], b0, av[r], L);                \
            acc[r][1] = vfmaq_laneq_f16(acc[r][1], b1, av[r], L);                \
        }                                                                        \
    } while (0)
            STEP(0); STEP(1); STEP(2); STEP(3); STEP(4); STEP(5); STEP(6); STEP(7);
#undef STEP
        }
        for (; k < t->tap_len; k++) {
            float16x8_t b0 = vld1q_f16((const __fp16 *)b), b1 = vld1q_f16((const __fp16 *)b + 8);
            b += t->b_stride;
            for (size_t r = 0; r < MR; r++) {
                float16x8_t a = vld1q_dup_f16((const __fp16 *)rows[r] + k);
                acc[r][0] = vfmaq_f16(acc[r][0], b0, a);
                acc[r][1] = vfmaq_f16(acc[r][1], b1, a);
            }
        }
    }
    if (t->acc_mode & KB_NEON_ACC_STORE) { /* a later K block continues the FP16 sums */
        __fp16 *out = (__fp16 *)t->acc;
        for (size_t r = 0; r < MR; r++) {
            vst1q_f16(out + r * KB_NEON_NR, acc[r][0]);
            vst1q_f16(out + r * KB_NEON_NR + 8, acc[r][1]);
        }
        return;
    }
    if (t->bias) {
        float16x8_t bias0 = vld1q_f16((const __fp16 *)t->bias), bias1 = vld1q_f16((const __fp16 *)t->bias + 8);
        for (size_t r = 0; r < MR; r++) {
            acc[r][0] = vaddq_f16(acc[r][0], bias0);
            acc[r][1] = vaddq_f16(acc[r][1], bias1);
        }
    }
    for (size_t r = 0; r < t->m; r++)
        store_row(t->c + r * t->ldc, t->n, acc[r][0], acc[r][1], t->clamp_min, t->clamp_max);
}

const kb_neon_ukernel kb_matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla = {
    m_step, n_step, mr, nr, kr, acc_bytes, run,
};
#endif
