/* kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa.c
 *
 * FP16 GEMM micro-kernel for SME2: packed LHS (x16p2vlx2) x packed RHS with
 * bias (x16p2vlx2b), output blocks of 2VL x 2VL FP16 values (mr = nr =
 * 2 * VL32), computed in the four 32-bit ZA tiles:
 *     za0 = rows [0, VL32)     x columns [0, VL32)
 *     za1 = rows [0, VL32)     x columns [VL32, 2*VL32)
 *     za2 = rows [VL32, 2VL32) x columns [0, VL32)
 *     za3 = rows [VL32, 2VL32) x columns [VL32, 2*VL32)
 * with widening FMOPA (FP16 pairs into FP32). The SME2 parts: the k loop
 * takes sixteen k pairs per step from four-register contiguous loads (LD1H
 * {z.h-z.h} under a predicate-as-counter, two pairs per load), then eight,
 * four, two and one pair as the pair count's bits say (no loop for the
 * rest); the store reads rows r of all four tiles in one MOVA (the 8-bit
 * tile view), clamps four vectors per FMAX/FMIN and narrows the two halves
 * of a C row into one FP16 vector per FCVT (multi-vector).
 *
 * Edge blocks use only the tiles that hold their rows and columns (see the
 * block variants below): the FMOPA count of a call is ceil(M / VL32) x
 * ceil(N / VL32) per k pair, nothing for the bias.
 *
 * Accumulation is that of the SME kernel, step for step: the tiles start
 * from the bias (ADDHA of the bias widened to FP32, a -0 bias made +0), then
 * one FMOPA per k pair in increasing k, each a fused 2-way dot product added
 * to the FP32 tile; the store clamps in FP32 (FMAX then FMIN, exact for these
 * accumulators; compare/select when clamp_max is -0: see kb_sme_asm.h) and
 * rounds once to FP16. At most K FP32 roundings on any chain: the "fp32,
 * k_per_rounding = 1" model.
 *
 * Registers: z16-z27 and z8-z11 k-loop operands, z0-z11 and z16-z19 store
 * rows, z12/z13 bias, z14/z15 the clamp bounds (the single-vector operand of
 * an SME2 multi-vector FMAX/FMIN must be in z0-z15), z28 +0, z30/z31 the
 * bounds for KB_SME_CLAMP.
 *
 * The kernel enters streaming mode and enables ZA itself (SMSTART) and
 * leaves both off (SMSTOP) before it returns. */
#include "../kb_sme.h"

#if defined(__aarch64__)
#include "../kb_sme_asm.h"

#include <stddef.h>

/* out of line: the driver and the public run entry point share one copy */
/* ---- block variants ------------------------------------------------------
 * A block of C is computed only in the tiles that hold its rows and columns:
 * all four when it has more than VL32 rows and more than VL32 columns (22),
 * za0/za1 for at most VL32 rows (12), za0/za2 for at most VL32 columns (21),
 * za0 alone for both (11). Over a whole call that is ceil(M / VL32) x
 * ceil(N / VL32) FMOPAs per k pair, the floor of the 1-VL32 granularity the
 * packed layouts have (their blocks of 2 VL32 rows and columns split into
 * halves). A block that starts from partial sums (KB_SME_ACC_LOAD) always
 * takes all four tiles: the partial sums of the padding are in the buffer
 * and nothing of them reaches the output.
 *
 * One k pair: LHS rows [0, VL32) in A0 and [VL32, 2VL32) in A1, RHS columns
 * [0, VL32) in B0 and [VL32, 2VL32) in B1. */
#define KB_MOPA(t, a, b) "fmopa za" #t ".s, p0/m, p0/m, " a ".h, " b ".h\n"
#define KB_PAIR_22(a0, a1, b0, b1) KB_MOPA(0, a0, b0) KB_MOPA(1, a0, b1) KB_MOPA(2, a1, b0) KB_MOPA(3, a1, b1)
#define KB_PAIR_12(a0, a1, b0, b1) KB_MOPA(0, a0, b0) KB_MOPA(1, a0, b1)
#define KB_PAIR_21(a0, a1, b0, b1) KB_MOPA(0, a0, b0) KB_MOPA(2, a1, b0)
#define KB_PAIR_11(a0, a1, b0, b1) KB_MOPA(0, a0, b0)

/* The k loop of one variant: sixteen k pairs per step from four-register
 * contiguous loads (two pairs per load, immediate offsets 0 .. 28 VL), then
 * eight, four, two and one pair as the pair count's bits say. */
#define KB_KLOOP(PAIR)                                                                  \
        "mov x23, x1\n"                                                                 \
        "add x24, x19, x5\n"                                                            \
        "lsr x25, x8, #4\n"                                                             \
        "cbz x25, 52f\n"                                                                \
        "51:\n"                                   /* sixteen pairs per step */          \
        ".inst 0xa040a2f0\n" /* ld1h {z16.h-z19.h}, pn8/z, [x23] */                     \
        ".inst 0xa040a318\n" /* ld1h {z24.h-z27.h}, pn8/z, [x24] */                     \
        PAIR("z16", "z17", "z24", "z25") PAIR("z18", "z19", "z26", "z27")               \
        ".inst 0xa041a2f4\n" /* ld1h {z20.h-z23.h}, pn8/z, [x23, #4, mul vl] */         \
        ".inst 0xa041a308\n" /* ld1h {z8.h-z11.h}, pn8/z, [x24, #4, mul vl] */          \
        PAIR("z20", "z21", "z8", "z9") PAIR("z22", "z23", "z10", "z11")                 \
        ".inst 0xa042a2f0\n" /* ld1h {z16.h-z19.h}, pn8/z, [x23, #8, mul vl] */         \
        ".inst 0xa042a318\n" /* ld1h {z24.h-z27.h}, pn8/z, [x24, #8, mul vl] */         \
        PAIR("z16", "z17", "z24", "z25") PAIR("z18", "z19", "z26", "z27")               \
        ".inst 0xa043a2f4\n" /* ld1h {z20.h-z23.h}, pn8/z, [x23, #12, mul vl] */        \
        ".inst 0xa043a308\n" /* ld1h {z8.h-z11.h}, pn8/z, [x24, #12, mul vl] */         \
        PAIR("z20", "z21", "z8", "z9") PAIR("z22", "z23", "z10", "z11")                 \
        ".inst 0xa044a2f0\n" /* ld1h {z16.h-z19.h}, pn8/z, [x23, #16, mul vl] */        \
        ".inst 0xa044a318\n" /* ld1h {z24.h-z27.h}, pn8/z, [x24, #16, mul vl] */        \
        PAIR("z16", "z17", "z24", "z25") PAIR("z18", "z19", "z26", "z27")               \
        ".inst 0xa045a2f4\n" /* ld1h {z20.h-z23.h}, pn8/z, [x23, #20, mul vl] */        \
        ".inst 0xa045a308\n" /* ld1h {z8.h-z11.h}, pn8/z, [x24, #20, mul vl] */         \
        PAIR("z20", "z21", "z8", "z9") PAIR("z22", "z23", "z10", "z11")                 \
        ".inst 0xa046a2f0\n" /* ld1h {z16.h-z19.h}, pn8/z, [x23, #24, mul vl] */        \
        ".inst 0xa046a318\n" /* ld1h {z24.h-z27.h}, pn8/z, [x24, #24, mul vl] */        \
        PAIR("z16", "z17", "z24", "z25") PAIR("z18", "z19", "z26", "z27")               \
        ".inst 0xa047a2f4\n" /* ld1h {z20.h-z23.h}, pn8/z, [x23, #28, mul vl] */        \
        ".inst 0xa047a308\n" /* ld1h {z8.h-z11.h}, pn8/z, [x24, #28, mul vl] */         \
        PAIR("z20", "z21", "z8", "z9") PAIR("z22", "z23", "z10", "z11")                 \
        "add x23, x23, x17, lsl #5\n"             /* 32 VL                  */          \
        "add x24, x24, x17, lsl #5\n"                                                   \
        "subs x25, x25, #1\n"                                                           \
        "b.ne 51b\n"                                                                    \
        "52:\n"                                                                         \
        "tbz x8, #3, 53f\n"                       /* eight pairs            */          \
        ".inst 0xa040a2f0\n" /* ld1h {z16.h-z19.h}, pn8/z, [x23] */                     \
        ".inst 0xa040a318\n" /* ld1h {z24.h-z27.h}, pn8/z, [x24] */                     \
        PAIR("z16", "z17", "z24", "z25") PAIR("z18", "z19", "z26", "z27")               \
        ".inst 0xa041a2f4\n" /* ld1h {z20.h-z23.h}, pn8/z, [x23, #4, mul vl] */         \
        ".inst 0xa041a308\n" /* ld1h {z8.h-z11.h}, pn8/z, [x24, #4, mul vl] */          \
        PAIR("z20", "z21", "z8", "z9") PAIR("z22", "z23", "z10", "z11")                 \
        ".inst 0xa042a2f0\n" /* ld1h {z16.h-z19.h}, pn8/z, [x23, #8, mul vl] */         \
        ".inst 0xa042a318\n" /* ld1h {z24.h-z27.h}, pn8/z, [x24, #8, mul vl] */         \
        PAIR("z16", "z17", "z24", "z25") PAIR("z18", "z19", "z26", "z27")               \
        ".inst 0xa043a2f4\n" /* ld1h {z20.h-z23.h}, pn8/z, [x23, #12, mul vl] */        \
        ".inst 0xa043a308\n" /* ld1h {z8.h-z11.h}, pn8/z, [x24, #12, mul vl] */         \
        PAIR("z20", "z21", "z8", "z9") PAIR("z22", "z23", "z10", "z11")                 \
        "addvl x23, x23, #16\n"                                                         \
        "addvl x24, x24, #16\n"                                                         \
        "53:\n"                                                                         \
        "tbz x8, #2, 54f\n"                       /* four pairs             */          \
        ".inst 0xa040a2f0\n" /* ld1h {z16.h-z19.h}, pn8/z, [x23] */                     \
        ".inst 0xa040a318\n" /* ld1h {z24.h-z27.h}, pn8/z, [x24] */                     \
        PAIR("z16", "z17", "z24", "z25") PAIR("z18", "z19", "z26", "z27")               \
        ".inst 0xa041a2f4\n" /* ld1h {z20.h-z23.h}, pn8/z, [x23, #4, mul vl] */         \
        ".inst 0xa041a308\n" /* ld1h {z8.h-z11.h}, pn8/z, [x24, #4, mul vl] */          \
        PAIR("z20", "z21", "z8", "z9") PAIR("z22", "z23", "z10", "z11")                 \
        "addvl x23, x23, #8\n"                                                          \
        "addvl x24, x24, #8\n"                                                          \
        "54:\n"                                                                         \
        "tbz x8, #1, 55f\n"                       /* two pairs              */          \
        ".inst 0xa040a2f0\n" /* ld1h {z16.h-z19.h}, pn8/z, [x23] */                     \
        ".inst 0xa040a318\n" /* ld1h {z24.h-z27.h}, pn8/z, [x24] */                     \
        PAIR("z16", "z17", "z24", "z25") PAIR("z18", "z19", "z26", "z27")               \
        "addvl x23, x23, #4\n"                                                          \
        "addvl x24, x24, #4\n"                                                          \
        "55:\n"                                                                         \
        "tbz x8, #0, 56f\n"                       /* one pair               */          \
        ".inst 0xa04022f0\n" /* ld1h {z16.h-z17.h}, pn8/z, [x23] */                     \
        ".inst 0xa0402318\n" /* ld1h {z24.h-z25.h}, pn8/z, [x24] */                     \
        PAIR("z16", "z17", "z24", "z25")                                                \
        "56:\n"

/* The tiles start from the bias: ZA zeroed, the block's bias (FP16, one per
 * 32-bit container) widened to FP32, a -0 made +0 (+0 added, as the scalar
 * reference's +0 start does), then added to every row of a tile by ADDHA, an
 * integer add onto +0 that writes the FP32 value's bits: no outer product. */
#define KB_BIAS1                                                                   \
        "zero {za}\n"                                                              \
        "ld1h {z12.s}, p0/z, [x19]\n"             /* bias[j] in container j */     \
        "fcvt z12.s, p0/m, z12.h\n"                                                \
        "fadd z12.s, z12.s, z28.s\n"
#define KB_BIAS2                                                                   \
        KB_BIAS1                                                                   \
        "ld1h {z13.s}, p0/z, [x19, #1, mul vl]\n"                                  \
        "fcvt z13.s, p0/m, z13.h\n"                                                \
        "fadd z13.s, z13.s, z28.s\n"
#define KB_ADDHA(t, z) "addha za" #t ".s, p0/m, p0/m, " z ".s\n"

/* Narrow one clamped FP32 row of at most VL32 columns and store it (p4). */
#define KB_CVT_STORE1(z)                                                           \
        "fcvt " z ".h, p0/m, " z ".s\n"                                            \
        "st1h {" z ".s}, p4, [x27]\n"                                              \
        "add x27, x27, x10\n"

KB_NOINLINE static void kb_sme2_mopa_core(const kb_sme_mopa_args *args) {
    __asm__ volatile(
        ".arch armv8.2-a+sme\n" /* streaming-legal only; SME2 as .inst words */
        "smstart\n"
        "ptrue p0.b\n"
        ".inst 0x25607810\n" /* ptrue pn8.h */
        "cntw x16\n"
        "rdsvl x17, #1\n"
        "lsl x13, x16, #1\n"                      /* mr = nr = 2 * VL32     */
        "ldr x1, [%x[args], %[o_lhs]]\n"
        "ldr x2, [%x[args], %[o_lbs]]\n"
        "ldr x3, [%x[args], %[o_rhs]]\n"
        "ldr x4, [%x[args], %[o_rbs]]\n"
        "ldr x5, [%x[args], %[o_rko]]\n"
        "ldr x6, [%x[args], %[o_m]]\n"
        "ldr x7, [%x[args], %[o_n]]\n"
        "ldr x8, [%x[args], %[o_kp]]\n"
        "ldr x9, [%x[args], %[o_dst]]\n"
        "ldr x10, [%x[args], %[o_ds]]\n"
        "ldr x11, [%x[args], %[o_acc]]\n"
        "ldr x14, [%x[args], %[o_as]]\n"
        "ldr x15, [%x[args], %[o_fl]]\n"
        "ld1rw {z14.s}, p0/z, [%x[args], %[o_lo]]\n"
        "ld1rw {z15.s}, p0/z, [%x[args], %[o_hi]]\n"
        "mov z30.d, z14.d\n"
        "mov z31.d, z15.d\n"
        "mov z28.s, #0\n"                         /* +0: -0 + +0 is +0      */

        "1:\n"                                    /* ---- block row ----    */
        "cmp x6, x13\n"
        "csel x26, x6, x13, lo\n"                 /* rows in this block     */
        "mov x19, x3\n"
        "mov x20, x7\n"
        "mov x21, x9\n"
        "mov x22, x11\n"

        "2:\n"                                    /* ---- block ----        */
        "tbnz x15, #0, 3f\n"
        "cmp x20, x16\n"                          /* more than VL32 columns */
        "ccmp x26, x16, #4, gt\n"                 /* and rows: all tiles    */
        "b.le 20f\n"
        KB_BIAS2 KB_ADDHA(0, "z12") KB_ADDHA(1, "z13") KB_ADDHA(2, "z12") KB_ADDHA(3, "z13")
        "29:\n"
        KB_KLOOP(KB_PAIR_22)
        "b 40f\n"
        "3:\n"                                    /* start from partial sums */
        "mov w12, #0\n"
        "mov x27, x22\n"
        "madd x28, x16, x14, x22\n"
        "4:\n"
        "ld1w {za0h.s[w12, 0]}, p0/z, [x27]\n"
        "ld1w {za1h.s[w12, 0]}, p0/z, [x27, x16, lsl #2]\n"
        "ld1w {za2h.s[w12, 0]}, p0/z, [x28]\n"
        "ld1w {za3h.s[w12, 0]}, p0/z, [x28, x16, lsl #2]\n"
        "add x27, x27, x14\n"
        "add x28, x28, x14\n"
        "add w12, w12, #1\n"
        "cmp w12, w16\n"
        "b.lt 4b\n"
        "b 29b\n"
        "20:\n"                                   /* ---- edge blocks ----  */
        "cmp x20, x16\n"
        "b.le 24f\n"
        KB_BIAS2 KB_ADDHA(0, "z12") KB_ADDHA(1, "z13")   /* <= VL32 rows */
        KB_KLOOP(KB_PAIR_12)
        "b 40f\n"
        "24:\n"
        "cmp x26, x16\n"
        "b.le 26f\n"
        KB_BIAS1 KB_ADDHA(0, "z12") KB_ADDHA(2, "z12")   /* <= VL32 columns */
        KB_KLOOP(KB_PAIR_21)
        "b 45f\n"
        "26:\n"
        KB_BIAS1 KB_ADDHA(0, "z12")                      /* <= VL32 of both */
        KB_KLOOP(KB_PAIR_11)
        "45:\n"                   /* ---- store, at most VL32 columns ----   */
        "tbnz x15, #1, 9f\n"
        "whilelt p4.s, xzr, x20\n"
        "whilelt p5.s, x16, x20\n"                 /* none (compare/select) */
        "mov x27, x21\n"
        "mov w12, #0\n"
        "cmp x26, x16\n"
        "csel x28, x26, x16, lo\n"                /* rows in za0            */
        "tbnz x15, #2, 8f\n"
        "lsr x25, x28, #2\n"                     /* groups of four rows    */
        "and x28, x28, #3\n"
        "cbz x25, 65f\n"
        "64:\n"
        ".inst 0xc0860400\n" /* mova {z0.s-z3.s}, za0h.s[w12, 0:3] */
        ".inst 0xc1aea900\n" /* fmax {z0.s-z3.s}, {z0.s-z3.s}, z14.s */
        ".inst 0xc1afa901\n" /* fmin {z0.s-z3.s}, {z0.s-z3.s}, z15.s */
        KB_CVT_STORE1("z0") KB_CVT_STORE1("z1") KB_CVT_STORE1("z2") KB_CVT_STORE1("z3")
        "add w12, w12, #4\n"
        "subs x25, x25, #1\n"
        "b.ne 64b\n"
        "65:\n"
        "cbz x28, 66f\n"
        "67:\n"                                   /* single rows            */
        "mova z0.s, p0/m, za0h.s[w12, 0]\n"
        KB_SME_CLAMP_MAXMIN("z0")
        KB_CVT_STORE1("z0")
        "add w12, w12, #1\n"
        "subs x28, x28, #1\n"
        "b.ne 67b\n"
        "66:\n"
        "subs x28, x26, x16\n"                    /* rows in za2            */
        "b.le 10f\n"
        "mov w12, #0\n"
        "lsr x25, x28, #2\n"
        "and x28, x28, #3\n"
        "cbz x25, 75f\n"
        "74:\n"
        ".inst 0xc0860440\n" /* mova {z0.s-z3.s}, za2h.s[w12, 0:3] */
        ".inst 0xc1aea900\n" /* fmax {z0.s-z3.s}, {z0.s-z3.s}, z14.s */
        ".inst 0xc1afa901\n" /* fmin {z0.s-z3.s}, {z0.s-z3.s}, z15.s */
        KB_CVT_STORE1("z0") KB_CVT_STORE1("z1") KB_CVT_STORE1("z2") KB_CVT_STORE1("z3")
        "add w12, w12, #4\n"
        "subs x25, x25, #1\n"
        "b.ne 74b\n"
        "75:\n"
        "cbz x28, 10f\n"
        "77:\n"                                   /* single rows            */
        "mova z0.s, p0/m, za2h.s[w12, 0]\n"
        KB_SME_CLAMP_MAXMIN("z0")
        KB_CVT_STORE1("z0")
        "add w12, w12, #1\n"
        "subs x28, x28, #1\n"
        "b.ne 77b\n"
        "b 10f\n"

        "40:\n"                   /* ---- store, more than VL32 columns ---- */
        "tbnz x15, #1, 9f\n"
        "cmp x20, x13\n"
        "csel x25, x20, x13, lo\n"                /* columns in this block  */
        "whilelt p4.s, xzr, x25\n"
        "whilelt p5.s, x16, x25\n"
        "mov x27, x21\n"
        "mov w12, #0\n"
        "cmp x26, x16\n"
        "csel x28, x26, x16, lo\n"                /* rows in za0/za1        */
        "tbnz x15, #2, 8f\n"
        /* Row r of the 8-bit tile view's vectors 4r .. 4r+3 is row r of za0,
         * za1, za2, za3: C rows r and VL32 + r, whole. One MOVA reads both,
         * one multi-vector FCVT narrows each to a contiguous FP16 row of
         * 2 VL32 columns, one ST1H (p6) stores it. */
        "whilelt p6.h, xzr, x25\n"
        "mul x23, x16, x10\n"
        "lsr x23, x23, #1\n"                      /* row VL32, halfwords    */
        "subs x24, x26, x16\n"
        "csel x24, x24, xzr, gt\n"                /* rows in za2/za3        */
        "sub x28, x28, x24\n"                     /* rows in za0/za1 only   */
        "lsr x25, x24, #2\n"                      /* four row pairs a step  */
        "and x24, x24, #3\n"
        "cbz x25, 32f\n"
        "31:\n"
        ".inst 0xc0060400\n" /* mova {z0.b-z3.b}, za0h.b[w12, 0:3] */
        ".inst 0xc0060424\n" /* mova {z4.b-z7.b}, za0h.b[w12, 4:7] */
        ".inst 0xc0060448\n" /* mova {z8.b-z11.b}, za0h.b[w12, 8:11] */
        ".inst 0xc0060470\n" /* mova {z16.b-z19.b}, za0h.b[w12, 12:15] */
        ".inst 0xc1aea900\n" /* fmax {z0.s-z3.s}, {z0.s-z3.s}, z14.s */
        ".inst 0xc1aea904\n" /* fmax {z4.s-z7.s}, {z4.s-z7.s}, z14.s */
        ".inst 0xc1aea908\n" /* fmax {z8.s-z11.s}, {z8.s-z11.s}, z14.s */
        ".inst 0xc1aea910\n" /* fmax {z16.s-z19.s}, {z16.s-z19.s}, z14.s */
        ".inst 0xc1afa901\n" /* fmin {z0.s-z3.s}, {z0.s-z3.s}, z15.s */
        ".inst 0xc1afa905\n" /* fmin {z4.s-z7.s}, {z4.s-z7.s}, z15.s */
        ".inst 0xc1afa909\n" /* fmin {z8.s-z11.s}, {z8.s-z11.s}, z15.s */
        ".inst 0xc1afa911\n" /* fmin {z16.s-z19.s}, {z16.s-z19.s}, z15.s */
        ".inst 0xc120e000\n" /* fcvt z0.h, {z0.s-z1.s} */
        ".inst 0xc120e042\n" /* fcvt z2.h, {z2.s-z3.s} */
        "st1h {z0.h}, p6, [x27]\n"
        "st1h {z2.h}, p6, [x27, x23, lsl #1]\n"
        "add x27, x27, x10\n"
        ".inst 0xc120e084\n" /* fcvt z4.h, {z4.s-z5.s} */
        ".inst 0xc120e0c6\n" /* fcvt z6.h, {z6.s-z7.s} */
        "st1h {z4.h}, p6, [x27]\n"
        "st1h {z6.h}, p6, [x27, x23, lsl #1]\n"
        "add x27, x27, x10\n"
        ".inst 0xc120e108\n" /* fcvt z8.h, {z8.s-z9.s} */
        ".inst 0xc120e14a\n" /* fcvt z10.h, {z10.s-z11.s} */
        "st1h {z8.h}, p6, [x27]\n"
        "st1h {z10.h}, p6, [x27, x23, lsl #1]\n"
        "add x27, x27, x10\n"
        ".inst 0xc120e210\n" /* fcvt z16.h, {z16.s-z17.s} */
        ".inst 0xc120e252\n" /* fcvt z18.h, {z18.s-z19.s} */
        "st1h {z16.h}, p6, [x27]\n"
        "st1h {z18.h}, p6, [x27, x23, lsl #1]\n"
        "add x27, x27, x10\n"
        "add w12, w12, #16\n"
        "subs x25, x25, #1\n"
        "b.ne 31b\n"
        "32:\n"
        "cbz x24, 34f\n"
        "33:\n"                                   /* single row pairs       */
        ".inst 0xc0060400\n" /* mova {z0.b-z3.b}, za0h.b[w12, 0:3] */
        ".inst 0xc1aea900\n" /* fmax {z0.s-z3.s}, {z0.s-z3.s}, z14.s */
        ".inst 0xc1afa901\n" /* fmin {z0.s-z3.s}, {z0.s-z3.s}, z15.s */
        ".inst 0xc120e000\n" /* fcvt z0.h, {z0.s-z1.s} */
        ".inst 0xc120e042\n" /* fcvt z2.h, {z2.s-z3.s} */
        "st1h {z0.h}, p6, [x27]\n"
        "st1h {z2.h}, p6, [x27, x23, lsl #1]\n"
        "add x27, x27, x10\n"
        "add w12, w12, #4\n"
        "subs x24, x24, #1\n"
        "b.ne 33b\n"
        "34:\n"
        "cbz x28, 10f\n"                          /* rows of za0/za1 only:  */
        "lsr x25, x28, #1\n"                      /* two a step             */
        "and x28, x28, #1\n"
        "cbz x25, 36f\n"
        "35:\n"
        ".inst 0xc0060000\n" /* mova {z0.b-z1.b}, za0h.b[w12, 0:1] */
        ".inst 0xc0060042\n" /* mova {z2.b-z3.b}, za0h.b[w12, 4:5] */
        ".inst 0xc1aea900\n" /* fmax {z0.s-z3.s}, {z0.s-z3.s}, z14.s */
        ".inst 0xc1afa901\n" /* fmin {z0.s-z3.s}, {z0.s-z3.s}, z15.s */
        ".inst 0xc120e000\n" /* fcvt z0.h, {z0.s-z1.s} */
        ".inst 0xc120e042\n" /* fcvt z2.h, {z2.s-z3.s} */
        "st1h {z0.h}, p6, [x27]\n"
        "add x27, x27, x10\n"
        "st1h {z2.h}, p6, [x27]\n"
        "add x27, x27, x10\n"
        "add w12, w12, #8\n"
        "subs x25, x25, #1\n"
        "b.ne 35b\n"
        "36:\n"
        "cbz x28, 10f\n"
        ".inst 0xc0060000\n" /* mova {z0.b-z1.b}, za0h.b[w12, 0:1] */
        ".inst 0xc1aea900\n" /* fmax {z0.s-z3.s}, {z0.s-z3.s}, z14.s */
        ".inst 0xc1afa901\n" /* fmin {z0.s-z3.s}, {z0.s-z3.s}, z15.s */
        ".inst 0xc120e000\n" /* fcvt z0.h, {z0.s-z1.s} */
        "st1h {z0.h}, p6, [x27]\n"
        "b 10f\n"

        "8:\n"                                    /* clamp_max is -0: row by */
        "81:\n"                                   /* row, compare/select     */
        "mova z0.s, p0/m, za0h.s[w12, 0]\n"
        "mova z4.s, p0/m, za1h.s[w12, 0]\n"
        KB_SME_STORE_ROW("z0", "z4", "x27")
        "add x27, x27, x10\n"
        "add w12, w12, #1\n"
        "subs x28, x28, #1\n"
        "b.ne 81b\n"
        "subs x28, x26, x16\n"
        "b.le 10f\n"
        "mov w12, #0\n"
        "82:\n"
        "mova z0.s, p0/m, za2h.s[w12, 0]\n"
        "mova z4.s, p0/m, za3h.s[w12, 0]\n"
        KB_SME_STORE_ROW("z0", "z4", "x27")
        "add x27, x27, x10\n"
        "add w12, w12, #1\n"
        "subs x28, x28, #1\n"
        "b.ne 82b\n"
        "b 10f\n"

        "9:\n"                                    /* FP32 partial sums out  */
        "mov w12, #0\n"
        "mov x27, x22\n"
        "madd x28, x16, x14, x22\n"
        "91:\n"
        "st1w {za0h.s[w12, 0]}, p0, [x27]\n"
        "st1w {za1h.s[w12, 0]}, p0, [x27, x16, lsl #2]\n"
        "st1w {za2h.s[w12, 0]}, p0, [x28]\n"
        "st1w {za3h.s[w12, 0]}, p0, [x28, x16, lsl #2]\n"
        "add x27, x27, x14\n"
        "add x28, x28, x14\n"
        "add w12, w12, #1\n"
        "cmp w12, w16\n"
        "b.lt 91b\n"

        "10:\n"                                   /* next block             */
        "add x19, x19, x4\n"
        "add x21, x21, x17\n"
        "add x22, x22, x17, lsl #1\n"
        "subs x20, x20, x13\n"
        "b.gt 2b\n"
        "add x1, x1, x2\n"                        /* next block row         */
        "madd x9, x13, x10, x9\n"
        "madd x11, x13, x14, x11\n"
        "subs x6, x6, x13\n"
        "b.gt 1b\n"
        "smstop\n"
        :
        : [args] "r"(args),
          [o_lhs] "I"(offsetof(kb_sme_mopa_args, lhs)),
          [o_lbs] "I"(offsetof(kb_sme_mopa_args, lhs_block_stride)),
          [o_rhs] "I"(offsetof(kb_sme_mopa_args, rhs)),
          [o_rbs] "I"(offsetof(kb_sme_mopa_args, rhs_block_stride)),
          [o_rko] "I"(offsetof(kb_sme_mopa_args, rhs_k_offset)),
          [o_m] "I"(offsetof(kb_sme_mopa_args, m)),
          [o_n] "I"(offsetof(kb_sme_mopa_args, n)),
          [o_kp] "I"(offsetof(kb_sme_mopa_args, kpairs)),
          [o_dst] "I"(offsetof(kb_sme_mopa_args, dst)),
          [o_ds] "I"(offsetof(kb_sme_mopa_args, dst_stride)),
          [o_acc] "I"(offsetof(kb_sme_mopa_args, acc)),
          [o_as] "I"(offsetof(kb_sme_mopa_args, acc_stride)),
          [o_fl] "I"(offsetof(kb_sme_mopa_args, flags)),
          [o_lo] "I"(offsetof(kb_sme_mopa_args, clamp_min)),
          [o_hi] "I"(offsetof(kb_sme_mopa_args, clamp_max))
        : "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13",
          "x14", "x15", "x16", "x17", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26",
          "x27", "x28", KB_SME_CLOBBER_VEC);
}

/* ---- micro-kernel interface -------------------------------------------- */

size_t kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_m_step(void) { return kb_sme_block(); }
size_t kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_n_step(void) { return kb_sme_block(); }
size_t kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_mr(void) { return kb_sme_block(); }
size_t kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_nr(void) { return kb_sme_block(); }
size_t kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_kr(void) { return KB_SME_KR; }
size_t kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_sr(void) { return KB_SME_SR; }

size_t kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_lhs_packed_offset(size_t m_idx, size_t k) {
    return kb_sme_lhs_offset(m_idx, k);
}

size_t kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_rhs_packed_offset(size_t n_idx, size_t k) {
    return kb_sme_rhs_offset(n_idx, kb_sme_block(), k);
}

size_t kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_dst_offset(size_t m_idx, size_t n_idx,
                                                                               size_t dst_stride) {
    return m_idx * dst_stride + n_idx * sizeof(kb_f16);
}

size_t kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_dst_size(size_t m, size_t n) {
    return m * n * sizeof(kb_f16);
}

/* dst_stride_col must be sizeof(kb_f16). */
void kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_run_matmul(
    size_t m, size_t n, size_t k, const void *lhs_packed, const void *rhs_packed, void *dst,
    size_t dst_stride_row, size_t dst_stride_col, float clamp_min, float clamp_max) {
    (void)dst_stride_col;
    if (m == 0 || n == 0 || k == 0) return;
    size_t mr = kb_sme_block(), kp = kb_sme_roundup(k, KB_SME_KR) / KB_SME_KR;
    kb_sme_mopa_args a = {
        .lhs = lhs_packed, .lhs_block_stride = kb_sme_lhs_offset(mr, k),
        .rhs = rhs_packed, .rhs_block_stride = kb_sme_rhs_block_bytes(mr, k),
        .rhs_k_offset = mr * sizeof(kb_f16),
        .m = m, .n = n, .kpairs = kp,
        .dst = dst, .dst_stride = dst_stride_row,
        .acc = NULL, .acc_stride = 0, .flags = kb_sme_clamp_flags(clamp_max),
        .clamp_min = clamp_min, .clamp_max = clamp_max,
    };
    kb_sme2_mopa_core(&a);
}

const kb_sme_matmul_ukernel kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa = {
    .name = "matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa",
    .get_m_step = kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_m_step,
    .get_n_step = kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_n_step,
    .get_mr = kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_mr,
    .get_nr = kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_nr,
    .get_kr = kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_kr,
    .get_sr = kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_sr,
    .get_lhs_packed_offset = kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_lhs_packed_offset,
    .get_rhs_packed_offset = kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_rhs_packed_offset,
    .get_dst_offset = kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_dst_offset,
    .get_dst_size = kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_dst_size,
    .run_matmul = kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_run_matmul,
    .core = kb_sme2_mopa_core,
};


/* Functions kbench's own drivers never call (kbench run --coverage lists them
 * apart, with the reason). */
#define KB_WHY "the public micro-kernel interface: kbench's SME driver runs each block through run_matmul (the core directly when K takes several chunks) with its own blocking; examples/plugins/sme_ukernel runs it through the plugin ABI"
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_mr, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_nr, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_sr, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_lhs_packed_offset, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_rhs_packed_offset, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_dst_offset, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_dst_size, KB_WHY);
#undef KB_WHY

#endif /* __aarch64__ */
