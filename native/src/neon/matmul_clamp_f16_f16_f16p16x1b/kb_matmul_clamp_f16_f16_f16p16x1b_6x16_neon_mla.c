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
 * 8 B loads and 96 FMLAs; K mod 8 values follow one k at a time.
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

#define F_LOAD 1u  /* start from acc_in (KB_NEON_ACC_LOAD)           */
#define F_STORE 2u /* save to acc_out, no epilogue (KB_NEON_ACC_STORE) */
#define F_CLAMP 4u /* clamp with the four bounds                     */

typedef struct f16_args {
    const kb_f16 *const *rowp[MR]; /* per row: its pointers, one per tap   */
    const kb_f16 *b;
    size_t b_stride;               /* bytes between B rows                  */
    size_t taps, tap_len;
    const kb_f16 *start;           /* bias (16 values), acc_in, or NULL: 0  */
    kb_f16 *out;                   /* C tile (or scratch), or acc_out       */
    size_t ldo;                    /* bytes between rows of out             */
    size_t rows;                   /* rows to store (1..6)                  */
    uint64_t flags;
    kb_f16 bounds[4];              /* ceil16(lo), rne16(lo), floor16(hi), rne16(hi) */
} f16_args;

/* FP16 bit patterns one step up / down (towards +inf / -inf); NaN never here. */
static uint16_t step_up(uint16_t h) {
    if (h == 0x8000u || h == 0) return 0x0001u;
    return (h & 0x8000u) ? (uint16_t)(h - 1u) : (uint16_t)(h + 1u);
}
static uint16_t step_down(uint16_t h) {
    if (h == 0x8000u || h == 0) return 0x8001u;
    return (h & 0x8000u) ? (uint16_t)(h + 1u) : (uint16_t)(h - 1u);
}

static void set_bounds(f16_args *g, float lo, float hi) {
    __fp16 lh = (__fp16)lo, hh = (__fp16)hi; /* FCVT: to nearest even, as kb_f2h */
    kb_f16 l, h;
    memcpy(&l, &lh, sizeof l);
    memcpy(&h, &hh, sizeof h);
    g->bounds[0] = (float)lh < lo ? step_up(l) : l;   /* smallest FP16 >= lo */
    g->bounds[1] = l;
    g->bounds[2] = (float)hh > hi ? step_down(h) : h; /* largest FP16 <= hi  */
    g->bounds[3] = h;
}

/* acc (v20 .. v31) += the tile's taps x tap_len products, from its start. */
static void tile(const f16_args *g) {
#define ROW8(k)                                                           \
    "ld1 {v0.8h, v1.8h}, [x1], x2\n"                                      \
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
    __asm__ volatile(
        /* ---- start: bias, partial sums or zero ---- */
        "ldr x17, [%x[g], %[o_flags]]\n"
        "ldr x1, [%x[g], %[o_start]]\n"
        "cbz x1, 1f\n"
        "tbnz x17, #0, 2f\n"
        "ldp q20, q21, [x1]\n"                   /* the bias in every row  */
        "ldp q22, q23, [x1]\n"
        "ldp q24, q25, [x1]\n"
        "ldp q26, q27, [x1]\n"
        "ldp q28, q29, [x1]\n"
        "ldp q30, q31, [x1]\n"
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
        "ldp q20, q21, [x1]\n"
        "ldp q22, q23, [x1, #32]\n"
        "ldp q24, q25, [x1, #64]\n"
        "ldp q26, q27, [x1, #96]\n"
        "ldp q28, q29, [x1, #128]\n"
        "ldp q30, q31, [x1, #160]\n"
        "3:\n"
        /* ---- taps ---- */
        "ldr x1, [%x[g], %[o_b]]\n"
        "ldr x2, [%x[g], %[o_bs]]\n"
        "ldr x3, [%x[g], %[o_taps]]\n"
        "ldr x4, [%x[g], %[o_len]]\n"
        "ldp x5, x6, [%x[g]]\n"
        "ldp x7, x8, [%x[g], #16]\n"
        "ldp x9, x10, [%x[g], #32]\n"
        "cbz x3, 19f\n"
        "4:\n"
        "ldr x11, [x5], #8\n"                    /* this tap's row pointers */
        "ldr x12, [x6], #8\n"
        "ldr x13, [x7], #8\n"
        "ldr x14, [x8], #8\n"
        "ldr x15, [x9], #8\n"
        "ldr x16, [x10], #8\n"
        "lsr x17, x4, #3\n"
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
        "ands x17, x4, #7\n"
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
        "subs x3, x3, #1\n"
        "b.ne 4b\n"
        "19:\n"
        /* ---- out: partial sums, or clamp and store rows ---- */
        "ldr x17, [%x[g], %[o_flags]]\n"
        "ldr x1, [%x[g], %[o_out]]\n"
        "ldr x2, [%x[g], %[o_ldo]]\n"
        "tbz x17, #1, 9f\n"
        "stp q20, q21, [x1]\n"
        "stp q22, q23, [x1, #32]\n"
        "stp q24, q25, [x1, #64]\n"
        "stp q26, q27, [x1, #96]\n"
        "stp q28, q29, [x1, #128]\n"
        "stp q30, q31, [x1, #160]\n"
        "b 20f\n"
        "9:\n"
        "tbz x17, #2, 10f\n"
        "ldr d2, [%x[g], %[o_bounds]]\n"
        "dup v3.8h, v2.h[1]\n"
        "dup v4.8h, v2.h[2]\n"
        "dup v5.8h, v2.h[3]\n"
        "dup v2.8h, v2.h[0]\n"
        CLAMP("v20") CLAMP("v21") CLAMP("v22") CLAMP("v23") CLAMP("v24") CLAMP("v25")
        CLAMP("v26") CLAMP("v27") CLAMP("v28") CLAMP("v29") CLAMP("v30") CLAMP("v31")
        "10:\n"
        "ldr x3, [%x[g], %[o_rows]]\n"
        "cmp x3, #6\n"
        "b.ne 11f\n"
        "stp q20, q21, [x1]\n"
        "add x1, x1, x2\n"
        "stp q22, q23, [x1]\n"
        "add x1, x1, x2\n"
        "stp q24, q25, [x1]\n"
        "add x1, x1, x2\n"
        "stp q26, q27, [x1]\n"
        "add x1, x1, x2\n"
        "stp q28, q29, [x1]\n"
        "add x1, x1, x2\n"
        "stp q30, q31, [x1]\n"
        "b 20f\n"
        "11:\n"                                  /* fewer rows             */
        "stp q20, q21, [x1]\n"
        "subs x3, x3, #1\n"
        "b.eq 20f\n"
        "add x1, x1, x2\n"
        "stp q22, q23, [x1]\n"
        "subs x3, x3, #1\n"
        "b.eq 20f\n"
        "add x1, x1, x2\n"
        "stp q24, q25, [x1]\n"
        "subs x3, x3, #1\n"
        "b.eq 20f\n"
        "add x1, x1, x2\n"
        "stp q26, q27, [x1]\n"
        "subs x3, x3, #1\n"
        "b.eq 20f\n"
        "add x1, x1, x2\n"
        "stp q28, q29, [x1]\n"
        "20:\n"
        :
        : [g] "r"(g), [o_b] "I"(offsetof(f16_args, b)),
          [o_bs] "I"(offsetof(f16_args, b_stride)), [o_taps] "I"(offsetof(f16_args, taps)),
          [o_len] "I"(offsetof(f16_args, tap_len)), [o_start] "I"(offsetof(f16_args, start)),
          [o_out] "I"(offsetof(f16_args, out)), [o_ldo] "I"(offsetof(f16_args, ldo)),
          [o_rows] "I"(offsetof(f16_args, rows)), [o_flags] "I"(offsetof(f16_args, flags)),
          [o_bounds] "I"(offsetof(f16_args, bounds))
        : "cc", "memory", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11",
          "x12", "x13", "x14", "x15", "x16", "x17", "v0", "v1", "v2", "v3", "v4", "v5", "v6",
          "v7", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30",
          "v31");
#undef ROW8
#undef CLAMP
}

static void run(const kb_neon_tile *t) {
    f16_args g;
    for (size_t r = 0; r < MR; r++) g.rowp[r] = t->a + (r < t->m ? r : 0) * t->taps;
    g.b = t->b;
    g.b_stride = t->b_stride * sizeof(kb_f16);
    g.taps = t->taps;
    g.tap_len = t->tap_len;
    g.flags = 0;
    g.start = t->bias;
    if (t->acc_mode & KB_NEON_ACC_LOAD) { /* a later K block: the bias is in the sums */
        g.start = (const kb_f16 *)t->acc;
        g.flags |= F_LOAD;
    }
    kb_f16 tmp[MR * KB_NEON_NR];
    g.rows = t->m;
    g.ldo = 0;
    if (t->acc_mode & KB_NEON_ACC_STORE) {
        g.out = (kb_f16 *)t->acc;
        g.flags |= F_STORE;
    } else if (t->n == KB_NEON_NR) {
        g.out = t->c;
        g.ldo = t->ldc * sizeof(kb_f16);
    } else { /* a partial tile goes through scratch */
        g.out = tmp;
        g.ldo = sizeof tmp / MR;
    }
    if (!(g.flags & F_STORE) && !(t->clamp_min == -INFINITY && t->clamp_max == INFINITY)) {
        set_bounds(&g, t->clamp_min, t->clamp_max);
        g.flags |= F_CLAMP;
    }
    if (t->tap_len == 0) g.taps = 0; /* no products: only the start */
    tile(&g);
    if (g.out == tmp)
        for (size_t r = 0; r < t->m; r++) memcpy(t->c + r * t->ldc, tmp + r * KB_NEON_NR, t->n * sizeof(kb_f16));
}

const kb_neon_ukernel kb_matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla = {
    m_step, n_step, mr, nr, kr, acc_bytes, run,
};
#endif
