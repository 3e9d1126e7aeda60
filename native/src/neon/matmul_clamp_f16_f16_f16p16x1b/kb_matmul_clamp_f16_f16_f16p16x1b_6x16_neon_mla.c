/* kb_matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla.c — 6x16 tile, FP16
 * accumulation (FMLA on .8h lanes), the model of FP16-native GEMMs.
 *
 * Per output (bias first, as KleidiAI's FP16 NEON kernels and ONNX
 * Runtime's FP16 fallback): acc = bias[j] (FP16, +0 without a bias); for
 * each k in order acc = fma(a_k, b_k, acc), rounded to FP16 (one rounding
 * per product); clamp; store. In a K-blocked loop the FP16 acc is saved
 * after a block and reloaded for the next one (an FP16 value stored as
 * FP16: unchanged), and only the first block starts from the bias, so the
 * chain is the unblocked one. Declared model: FP16 accumulation, K
 * roundings on one sequential chain (error model gemm_bias_first); its
 * fingerprint is fp16_fma_chain_bias_first.
 *
 * Register plan (inline assembly, nothing spilled): the 6 x 16 FP16
 * accumulators in v20-v31 (row r in v(20+2r), v(21+2r)) for the whole
 * tile, every tap and every K block; per step of 8 k the six A rows in
 * v2-v7 (8 values each, used by element), and per k the B row in v0, v1.
 * No callee-saved vector register is touched. A step of 8 k is 6 A loads,
 * 8 B loads and 96 FMLAs; K mod 8 values follow one k at a time. The tile's
 * fields reach the assembly as register operands (no argument block), and
 * the assembly finds each row's pointers itself (rows past m read row 0).
 *
 * The clamp is kb_store_f16's, done in FP16 without widening: with the
 * FP32 bounds lo, hi and an FP16 accumulator v, "v < lo" equals
 * "v < ceil16(lo)" and "v > hi" equals "v > floor16(hi)" (ceil16 and
 * floor16 round to FP16 towards +inf and -inf), and the values stored for
 * those cases are lo and hi rounded to nearest. Two compares (FCMGT) and
 * two bit inserts (BIT) per vector: NaN and both signs of zero pass exactly
 * as kb_store_f16 passes them. Without a clamp (bounds -inf, +inf) the
 * step is skipped. */
#if defined(__aarch64__)
#include "../kb_neon.h"

#include <arm_neon.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#define MR 6

static size_t m_step(void) { return MR; }
static size_t n_step(void) { return KB_NEON_NR; }
static size_t mr(void) { return MR; }
static size_t nr(void) { return KB_NEON_NR; }
static size_t kr(void) { return 1; }
static size_t acc_bytes(void) { return sizeof(kb_f16); }

#define F_LOAD 1u  /* start from the partial sums (KB_NEON_ACC_LOAD)      */
#define F_STORE 2u /* save them, no clamp or store (KB_NEON_ACC_STORE)    */
#define F_CLAMP 4u /* clamp with the four bounds                          */

/* FP16 bit patterns one step up / down (towards +inf / -inf); NaN never here. */
static uint16_t step_up(uint16_t h) {
    if (h == 0x8000u || h == 0) return 0x0001u;
    return (h & 0x8000u) ? (uint16_t)(h - 1u) : (uint16_t)(h + 1u);
}
static uint16_t step_down(uint16_t h) {
    if (h == 0x8000u || h == 0) return 0x8001u;
    return (h & 0x8000u) ? (uint16_t)(h + 1u) : (uint16_t)(h - 1u);
}

/* ceil16(lo), rne16(lo), floor16(hi), rne16(hi) as four FP16 bit patterns,
 * lowest first. */
static uint64_t bounds(float lo, float hi) {
    __fp16 lh = (__fp16)lo, hh = (__fp16)hi; /* FCVT: to nearest even, as kb_f2h */
    uint16_t l, h;
    memcpy(&l, &lh, sizeof l);
    memcpy(&h, &hh, sizeof h);
    uint64_t up = (float)lh < lo ? step_up(l) : l;   /* smallest FP16 >= lo */
    uint64_t down = (float)hh > hi ? step_down(h) : h; /* largest FP16 <= hi  */
    return up | (uint64_t)l << 16 | down << 32 | (uint64_t)h << 48;
}

static void run(const kb_neon_tile *t) {
#define ROW8(k)                                                           \
    "ld1 {v0.8h, v1.8h}, [%[b]], %[bs]\n"                                 \
    "fmla v20.8h, v0.8h, v2.h[" #k "]\n"                                  \
    "fmla v21.8h, v1.8h, v2.h[" #k "]\n"                                  \
    "fmla v22.8h, v0.8h, v3.h[" #k "]\n"                                  \
    "fmla v23.8h, v1.8h, v3.h[" #k "]\n"                                  \
    "fmla v24.8h, v0.8h, v4.h[" #k "]\n"                                  \
    "fmla v25.8h, v1.8h, v4.h[" #k "]\n"                                  \
    "fmla v26.8h, v0.8h, v5.h[" #k "]\n"                                  \
    "fmla v27.8h, v1.8h, v5.h[" #k "]\n"                                  \
    "fmla v28.8h, v0.8h, v6.h[" #k "]\n"                                  \
    "fmla v29.8h, v1.8h, v6.h[" #k "]\n"                                  \
    "fmla v30.8h, v0.8h, v7.h[" #k "]\n"                                  \
    "fmla v31.8h, v1.8h, v7.h[" #k "]\n"
#define CLAMP(v)                                                          \
    "fcmgt v0.8h, v2.8h, " v ".8h\n"     /* v < ceil16(lo)  */             \
    "fcmgt v1.8h, " v ".8h, v4.8h\n"     /* v > floor16(hi) */             \
    "bit " v ".16b, v3.16b, v0.16b\n"                                     \
    "bit " v ".16b, v5.16b, v1.16b\n"
    const kb_f16 *start = t->bias, *b = t->b;
    uint64_t flags = 0, bnd = 0;
    if (t->acc_mode & KB_NEON_ACC_LOAD) { /* a later K block: the bias is in the sums */
        start = (const kb_f16 *)t->acc;
        flags |= F_LOAD;
    }
    kb_f16 tmp[MR * KB_NEON_NR];
    kb_f16 *out = t->c;
    size_t ldo = t->ldc * sizeof(kb_f16);
    if (t->acc_mode & KB_NEON_ACC_STORE) {
        out = (kb_f16 *)t->acc;
        flags |= F_STORE;
    } else {
        if (t->n != KB_NEON_NR) { /* a partial tile goes through scratch */
            out = tmp;
            ldo = sizeof tmp / MR;
        }
        if (!(t->clamp_min == -INFINITY && t->clamp_max == INFINITY)) {
            bnd = bounds(t->clamp_min, t->clamp_max);
            flags |= F_CLAMP;
        }
    }
    size_t taps = t->taps;
    KB_ASSUME(taps >= 1 && t->tap_len >= 1); /* kb_neon_tile's contract */
    __asm__ volatile(
        /* ---- start: bias, partial sums or zero ---- */
        "cbz %[start], 1f\n"
        "tbnz %[flags], #0, 2f\n"
        "ldp q20, q21, [%[start]]\n"             /* the bias in every row  */
        "ldp q22, q23, [%[start]]\n"
        "ldp q24, q25, [%[start]]\n"
        "ldp q26, q27, [%[start]]\n"
        "ldp q28, q29, [%[start]]\n"
        "ldp q30, q31, [%[start]]\n"
        "b 3f\n"
        "1:\n"
        "movi v20.16b, #0\n"
        "movi v21.16b, #0\n"
        "movi v22.16b, #0\n"
        "movi v23.16b, #0\n"
        "movi v24.16b, #0\n"
        "movi v25.16b, #0\n"
        "movi v26.16b, #0\n"
        "movi v27.16b, #0\n"
        "movi v28.16b, #0\n"
        "movi v29.16b, #0\n"
        "movi v30.16b, #0\n"
        "movi v31.16b, #0\n"
        "b 3f\n"
        "2:\n"                                   /* K blocked: partial sums */
        "ldp q20, q21, [%[start]]\n"
        "ldp q22, q23, [%[start], #32]\n"
        "ldp q24, q25, [%[start], #64]\n"
        "ldp q26, q27, [%[start], #96]\n"
        "ldp q28, q29, [%[start], #128]\n"
        "ldp q30, q31, [%[start], #160]\n"
        "3:\n"
        "cbz %[taps], 19f\n"
        /* row r's tap pointers: a + r * taps (rows past m: row 0's) */
        "lsl x17, %[taps], #3\n"
        "mov x5, %[a]\n"
        "add x6, x5, x17\n"
        "cmp %[m], #1\n"
        "csel x6, x6, x5, hi\n"
        "add x7, x6, x17\n"
        "cmp %[m], #2\n"
        "csel x7, x7, x5, hi\n"
        "add x8, x7, x17\n"
        "cmp %[m], #3\n"
        "csel x8, x8, x5, hi\n"
        "add x9, x8, x17\n"
        "cmp %[m], #4\n"
        "csel x9, x9, x5, hi\n"
        "add x10, x9, x17\n"
        "cmp %[m], #5\n"
        "csel x10, x10, x5, hi\n"
        "4:\n"                                   /* ---- one tap ----      */
        "ldr x11, [x5], #8\n"
        "ldr x12, [x6], #8\n"
        "ldr x13, [x7], #8\n"
        "ldr x14, [x8], #8\n"
        "ldr x15, [x9], #8\n"
        "ldr x16, [x10], #8\n"
        "lsr x17, %[len], #3\n"
        "cbz x17, 6f\n"
        "5:\n"                                   /* 8 k per step           */
        "ldr q2, [x11], #16\n"
        "ldr q3, [x12], #16\n"
        "ldr q4, [x13], #16\n"
        "ldr q5, [x14], #16\n"
        "ldr q6, [x15], #16\n"
        "ldr q7, [x16], #16\n"
        ROW8(0) ROW8(1) ROW8(2) ROW8(3) ROW8(4) ROW8(5) ROW8(6) ROW8(7)
        "subs x17, x17, #1\n"
        "b.ne 5b\n"
        "6:\n"
        "ands x17, %[len], #7\n"
        "b.eq 8f\n"
        "7:\n"                                   /* one k                  */
        "ldr h2, [x11], #2\n"
        "ldr h3, [x12], #2\n"
        "ldr h4, [x13], #2\n"
        "ldr h5, [x14], #2\n"
        "ldr h6, [x15], #2\n"
        "ldr h7, [x16], #2\n"
        ROW8(0)
        "subs x17, x17, #1\n"
        "b.ne 7b\n"
        "8:\n"
        "subs %[taps], %[taps], #1\n"
        "b.ne 4b\n"
        "19:\n"
        /* ---- out: partial sums, or clamp and store rows ---- */
        "tbz %[flags], #1, 9f\n"
        "stp q20, q21, [%[out]]\n"
        "stp q22, q23, [%[out], #32]\n"
        "stp q24, q25, [%[out], #64]\n"
        "stp q26, q27, [%[out], #96]\n"
        "stp q28, q29, [%[out], #128]\n"
        "stp q30, q31, [%[out], #160]\n"
        "b 20f\n"
        "9:\n"
        "tbz %[flags], #2, 10f\n"
        "fmov d2, %[bnd]\n"
        "dup v3.8h, v2.h[1]\n"
        "dup v4.8h, v2.h[2]\n"
        "dup v5.8h, v2.h[3]\n"
        "dup v2.8h, v2.h[0]\n"
        CLAMP("v20") CLAMP("v21") CLAMP("v22") CLAMP("v23") CLAMP("v24") CLAMP("v25")
        CLAMP("v26") CLAMP("v27") CLAMP("v28") CLAMP("v29") CLAMP("v30") CLAMP("v31")
        "10:\n"
        "stp q20, q21, [%[out]]\n"
        "cmp %[m], #6\n"
        "b.ne 11f\n"
        "add %[out], %[out], %[ldo]\n"
        "stp q22, q23, [%[out]]\n"
        "add %[out], %[out], %[ldo]\n"
        "stp q24, q25, [%[out]]\n"
        "add %[out], %[out], %[ldo]\n"
        "stp q26, q27, [%[out]]\n"
        "add %[out], %[out], %[ldo]\n"
        "stp q28, q29, [%[out]]\n"
        "add %[out], %[out], %[ldo]\n"
        "stp q30, q31, [%[out]]\n"
        "b 20f\n"
        "11:\n"                                  /* fewer rows             */
        "cmp %[m], #1\n"
        "b.ls 20f\n"
        "add %[out], %[out], %[ldo]\n"
        "stp q22, q23, [%[out]]\n"
        "cmp %[m], #2\n"
        "b.ls 20f\n"
        "add %[out], %[out], %[ldo]\n"
        "stp q24, q25, [%[out]]\n"
        "cmp %[m], #3\n"
        "b.ls 20f\n"
        "add %[out], %[out], %[ldo]\n"
        "stp q26, q27, [%[out]]\n"
        "cmp %[m], #4\n"
        "b.ls 20f\n"
        "add %[out], %[out], %[ldo]\n"
        "stp q28, q29, [%[out]]\n"
        "20:\n"
        : [b] "+r"(b), [taps] "+r"(taps), [out] "+r"(out)
        : [a] "r"(t->a), [m] "r"(t->m), [len] "r"(t->tap_len),
          [bs] "r"(t->b_stride * sizeof(kb_f16)), [start] "r"(start), [flags] "r"(flags),
          [ldo] "r"(ldo), [bnd] "r"(bnd)
        : "cc", "memory", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
          "x15", "x16", "x17", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v20", "v21",
          "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31");
#undef ROW8
#undef CLAMP
    if (!(flags & F_STORE) && t->n != KB_NEON_NR)
        for (size_t r = 0; r < t->m; r++) memcpy(t->c + r * t->ldc, tmp + r * KB_NEON_NR, t->n * sizeof(kb_f16));
}

const kb_neon_ukernel kb_matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla = {
    m_step, n_step, mr, nr, kr, acc_bytes, run,
};

/* Functions kbench's own drivers never call (kbench run --coverage lists them
 * apart, with the reason). */
#define KB_WHY "the micro-kernel's query: kbench's NEON driver tiles with the family's MR/NR constants"
KB_NOT_DRIVEN(nr, KB_WHY);
#undef KB_WHY

#endif
