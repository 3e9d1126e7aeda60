/* kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa.c
 *
 * FP16 GEMM micro-kernel for SME2: packed LHS (x16p2vlx2) x packed RHS with
 * bias (x16p2vlx2b), output blocks of 2VL x 2VL FP16 values (mr = nr =
 * 2 * VL32), computed in the four 32-bit ZA tiles:
 *     za0 = rows [0, VL32)     x columns [0, VL32)
 *     za1 = rows [0, VL32)     x columns [VL32, 2*VL32)
 *     za2 = rows [VL32, 2VL32) x columns [0, VL32)
 *     za3 = rows [VL32, 2VL32) x columns [VL32, 2*VL32)
 * with widening FMOPA (FP16 pairs into FP32). Two cores:
 *   - run_matmul's one pass (the calls that start from the bias and end in
 *     FP16: see "the one-pass kernel" below): a column block at a time, its
 *     bias widened once; whole blocks through a path of their own: 32 k pairs
 *     per step from four-register contiguous loads (LD1H {z.h-z.h} under a
 *     predicate-as-counter, two pairs per load), then 16, 8, 4, 2 and 1 pair
 *     as the pair count's bits say; the store reads rows r of all four tiles
 *     in one MOVA (the 8-bit tile view), clamps four vectors per FMAX/FMIN
 *     (not at all for bounds -inf and +inf) and narrows the two halves of a C
 *     row into one FP16 vector per FCVT (multi-vector). Its operands come in
 *     the registers the calling convention brings them in: no argument block.
 *   - kb_sme2_mopa_acc_core, for the driver's chunks of K (FP32 partial sums
 *     in or out), sixteen k pairs per step, a block row at a time.
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
 * Registers of the chunked core: z16-z27 and z8-z11 k-loop operands, z0-z11
 * and z16-z19 store rows, z12/z13 bias, z14/z15 the clamp bounds (the
 * single-vector operand of an SME2 multi-vector FMAX/FMIN must be in
 * z0-z15), z28 +0, z30/z31 the bounds for KB_SME_CLAMP (the one pass: below).
 *
 * The kernel enters streaming mode and enables ZA itself (SMSTART) and
 * leaves both off (SMSTOP) before it returns. */
#include "../kb_sme.h"

#if defined(__aarch64__)
#include "../kb_sme_asm.h"

#include <stddef.h>

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

KB_NOINLINE static void kb_sme2_mopa_acc_core(const kb_sme_mopa_args *args) {
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
        "45:\n"                   /* at most VL32 columns: partial sums only */
        "b 9f\n"

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

/* Narrow one clamped FP32 row of at most VL32 columns and store it (p4). */
#define KB_OP_CVT_STORE1(z)                                                        \
        "fcvt " z ".h, p0/m, " z ".s\n"                                            \
        "st1h {" z ".s}, p4, [x27]\n"                                              \
        "add x27, x27, x6\n"

/* ---- the one-pass kernel ------------------------------------------------
 * Every call that starts from the bias and ends in FP16 (run_matmul: the
 * driver's calls when K is one chunk, the indirect GEMM's blocks through the
 * table's core) runs this one pass; kb_sme2_mopa_acc_core takes the chunks
 * of K whose partial sums stay in FP32 between calls (flags KB_SME_ACC_LOAD
 * and/or KB_SME_ACC_STORE: a block that starts from the bias writes partial
 * sums). The
 * pass walks C a column block at a time (the block's bias widened once and
 * kept in z2/z3 for all of its rows), and in a column of whole blocks runs
 * its whole 2VL x 2VL row blocks through one tight path: the four tiles from
 * the bias, 32 k pairs per step, and the store of four C row pairs per step
 * (FCVT of a whole C row, no predicate to compute; with clamp bounds -inf and
 * +inf no clamp, which is exact: FMAX(v, -inf) and FMIN(v, +inf) are v, a
 * NaN included). The last row block of a column and every block of the
 * last, partial column go through the edge path: the variants that use only
 * the tiles holding the block's rows and columns, and predicated stores.
 *
 * Registers: x0 M, x1 the columns left, x2 the k pairs, x3 the LHS, x4 the
 * RHS column block, x5 C's column, x6 C's row stride in bytes, x7 the k
 * pairs past whole steps of 32, x8 the LHS row block, x9 and x10 the LHS and
 * RHS block strides, x11 the pairs' offset in an RHS block, x14 the whole
 * row blocks, x15 bit 0: no clamp, bit 1: clamp_max -0, x19 the rows after
 * the whole blocks, x20 rows left, x21 the block's C, x22 VL32 rows of C in
 * FP16 elements, x26 the block's rows; z2/z3 the bias, z4/z5 the clamp
 * bounds, z6 +0; the k loop reads into z16-z31 (A at x23, B at x24), the
 * stores read ZA into z16-z31; p6 all FP16 lanes. */

/* LD1H {Zt.h-Zt+3.h}, pn8/z, [Xn, #imm, mul vl] (imm a multiple of 4 in
 * [-32, 28]) and its two-register form at [Xn]: SME2 words by their fields */
#define KB_LD4(zt, xn, imm) \
    ".inst 0xa040a000 | (((" #imm ") >> 2) & 15) << 16 | (" #xn ") << 5 | ((" #zt ") >> 2) << 2\n"
#define KB_LD2(zt, xn) ".inst 0xa0402000 | (" #xn ") << 5 | ((" #zt ") >> 1) << 1\n"

/* Two k pairs of one variant: A pairs in z[a..a+3], B pairs in z[b..b+3]. */
#define KB_TWO(PAIR, a, b, imm)                                                       \
    KB_LD4(a, 23, imm) KB_LD4(b, 24, imm)                                             \
    PAIR("z" #a, "z" KB_PLUS1(a), "z" #b, "z" KB_PLUS1(b))                            \
    PAIR("z" KB_PLUS2(a), "z" KB_PLUS3(a), "z" KB_PLUS2(b), "z" KB_PLUS3(b))
#define KB_PLUS1(r) KB_P1_##r
#define KB_PLUS2(r) KB_P2_##r
#define KB_PLUS3(r) KB_P3_##r
#define KB_P1_16 "17"
#define KB_P2_16 "18"
#define KB_P3_16 "19"
#define KB_P1_20 "21"
#define KB_P2_20 "22"
#define KB_P3_20 "23"
#define KB_P1_24 "25"
#define KB_P2_24 "26"
#define KB_P3_24 "27"
#define KB_P1_28 "29"
#define KB_P2_28 "30"
#define KB_P3_28 "31"

/* The k loop of one variant over the block at x8 (A) and x4 + x11 (B): whole
 * steps of 32 k pairs (the pointers 32 VL ahead, so that the 16 loads of
 * each operand reach it with immediates -32 .. 28), then 16, 8, 4, 2 and 1
 * pair as the bits of the rest (x7, bits of x2) say. */
#define KB_KLOOP32(PAIR)                                                              \
        "mov x23, x8\n"                                                               \
        "add x24, x4, x11\n"                                                           \
        "lsr x25, x2, #5\n"                                                           \
        "cbz x25, 53f\n"                                                              \
        "add x23, x23, x17, lsl #5\n"                                                 \
        "add x24, x24, x17, lsl #5\n"                                                 \
        "51:\n"                                   /* 32 pairs per step     */         \
        KB_TWO(PAIR, 16, 24, -32) KB_TWO(PAIR, 20, 28, -28)                           \
        KB_TWO(PAIR, 16, 24, -24) KB_TWO(PAIR, 20, 28, -20)                           \
        KB_TWO(PAIR, 16, 24, -16) KB_TWO(PAIR, 20, 28, -12)                           \
        KB_TWO(PAIR, 16, 24, -8) KB_TWO(PAIR, 20, 28, -4)                             \
        KB_TWO(PAIR, 16, 24, 0) KB_TWO(PAIR, 20, 28, 4)                               \
        KB_TWO(PAIR, 16, 24, 8) KB_TWO(PAIR, 20, 28, 12)                              \
        KB_TWO(PAIR, 16, 24, 16) KB_TWO(PAIR, 20, 28, 20)                             \
        KB_TWO(PAIR, 16, 24, 24) KB_TWO(PAIR, 20, 28, 28)                             \
        "add x23, x23, x17, lsl #6\n"                                                 \
        "add x24, x24, x17, lsl #6\n"                                                 \
        "subs x25, x25, #1\n"                                                         \
        "b.ne 51b\n"                                                                  \
        "cbz x7, 59f\n"                                                               \
        "sub x23, x23, x17, lsl #5\n"                                                 \
        "sub x24, x24, x17, lsl #5\n"                                                 \
        "53:\n"                                                                       \
        "tbz x2, #4, 54f\n"                       /* sixteen pairs         */         \
        KB_TWO(PAIR, 16, 24, 0) KB_TWO(PAIR, 20, 28, 4)                               \
        KB_TWO(PAIR, 16, 24, 8) KB_TWO(PAIR, 20, 28, 12)                              \
        KB_TWO(PAIR, 16, 24, 16) KB_TWO(PAIR, 20, 28, 20)                             \
        KB_TWO(PAIR, 16, 24, 24) KB_TWO(PAIR, 20, 28, 28)                             \
        "add x23, x23, x17, lsl #5\n"                                                 \
        "add x24, x24, x17, lsl #5\n"                                                 \
        "54:\n"                                                                       \
        "tbz x2, #3, 55f\n"                       /* eight pairs           */         \
        KB_TWO(PAIR, 16, 24, 0) KB_TWO(PAIR, 20, 28, 4)                               \
        KB_TWO(PAIR, 16, 24, 8) KB_TWO(PAIR, 20, 28, 12)                              \
        "addvl x23, x23, #16\n"                                                       \
        "addvl x24, x24, #16\n"                                                       \
        "55:\n"                                                                       \
        "tbz x2, #2, 56f\n"                       /* four pairs            */         \
        KB_TWO(PAIR, 16, 24, 0) KB_TWO(PAIR, 20, 28, 4)                               \
        "addvl x23, x23, #8\n"                                                        \
        "addvl x24, x24, #8\n"                                                        \
        "56:\n"                                                                       \
        "tbz x2, #1, 57f\n"                       /* two pairs             */         \
        KB_TWO(PAIR, 16, 24, 0)                                                       \
        "addvl x23, x23, #4\n"                                                        \
        "addvl x24, x24, #4\n"                                                        \
        "57:\n"                                                                       \
        "tbz x2, #0, 59f\n"                       /* one pair              */         \
        KB_LD2(16, 23) KB_LD2(24, 24)                                                 \
        PAIR("z16", "z17", "z24", "z25")                                              \
        "59:\n"

/* The tiles of a variant from the bias (z2: columns [0, VL32), z3: [VL32, 2 VL32)). */
#define KB_START22                                                                    \
        "zero {za}\n" KB_ADDHA(0, "z2") KB_ADDHA(1, "z3") KB_ADDHA(2, "z2") KB_ADDHA(3, "z3")
#define KB_START12 "zero {za}\n" KB_ADDHA(0, "z2") KB_ADDHA(1, "z3")
#define KB_START21 "zero {za}\n" KB_ADDHA(0, "z2") KB_ADDHA(2, "z2")
#define KB_START11 "zero {za}\n" KB_ADDHA(0, "z2")

/* The block's bias, widened, -0 made +0 (z6 = +0): both halves, or the first. */
#define KB_BIAS_WIDE                                                                  \
        "ld1h {z2.s}, p0/z, [x4]\n"                                                   \
        "ld1h {z3.s}, p0/z, [x4, #1, mul vl]\n"                                       \
        "fcvt z2.s, p0/m, z2.h\n"                                                     \
        "fcvt z3.s, p0/m, z3.h\n"                                                     \
        "fadd z2.s, z2.s, z6.s\n"                                                     \
        "fadd z3.s, z3.s, z6.s\n"
#define KB_BIAS_NARROW                                                                \
        "ld1h {z2.s}, p0/z, [x4]\n"                                                   \
        "fcvt z2.s, p0/m, z2.h\n"                                                     \
        "fadd z2.s, z2.s, z6.s\n"

/* MOVA {Zd.b-Zd+3.b}, za0h.b[w12, off:off+3]: rows of the 8-bit view, i.e. row
 * r of za0..za3 (C rows r and VL32 + r, whole); FMAX/FMIN of four vectors by
 * z4/z5; FCVT Zd.h, {Zn.s-Zn+1.s}; and the same MOVA of two rows. */
#define KB_MOVA4(zd, off) ".inst 0xc0060400 | ((" #off ") >> 2) << 5 | ((" #zd ") >> 2) << 2\n"
#define KB_MOVA2(zd, off) ".inst 0xc0060000 | ((" #off ") >> 1) << 5 | ((" #zd ") >> 1) << 1\n"
#define KB_FMAX4(z) ".inst 0xc1a4a900 | ((" #z ") >> 2) << 2\n"
#define KB_FMIN4(z) ".inst 0xc1a5a901 | ((" #z ") >> 2) << 2\n"
#define KB_FCVT2(zd, zn) ".inst 0xc120e000 | ((" #zn ") >> 1) << 6 | (" #zd ")\n"

/* One C row pair out of z[g..g+3] (row r: z[g], z[g+1]; row VL32 + r:
 * z[g+2], z[g+3]) to x27 and x27 + VL32 rows, predicate P. */
#define KB_ROWPAIR(g, g2, P)                                                          \
        KB_FCVT2(g, g) KB_FCVT2(g2, g2)                                               \
        "st1h {z" #g ".h}, " P ", [x27]\n"                                            \
        "st1h {z" #g2 ".h}, " P ", [x27, x22, lsl #1]\n"                              \
        "add x27, x27, x6\n"

/* The store of a whole block: four row pairs per step. */
#define KB_STORE_WHOLE(CLAMP)                                                         \
        KB_MOVA4(16, 0) KB_MOVA4(20, 4) KB_MOVA4(24, 8) KB_MOVA4(28, 12)               \
        CLAMP                                                                         \
        KB_ROWPAIR(16, 18, "p6") KB_ROWPAIR(20, 22, "p6")                              \
        KB_ROWPAIR(24, 26, "p6") KB_ROWPAIR(28, 30, "p6")                              \
        "add w12, w12, #16\n"                                                         \
        "subs x25, x25, #1\n"
#define KB_CLAMP16                                                                    \
        KB_FMAX4(16) KB_FMAX4(20) KB_FMAX4(24) KB_FMAX4(28)                           \
        KB_FMIN4(16) KB_FMIN4(20) KB_FMIN4(24) KB_FMIN4(28)

/* Compare/select clamp of one FP32 vector by z4/z5 (clamp_max -0, see
 * kb_sme_asm.h), narrowed, stored at the row x27: columns [0, VL32) under
 * p4, [VL32, 2 VL32) under p5. */
#define KB_SELECT(z)                                                                  \
        "fcmgt p3.s, p0/z, z4.s, " z ".s\n"                                           \
        "mov " z ".s, p3/m, z4.s\n"                                                   \
        "fcmgt p3.s, p0/z, " z ".s, z5.s\n"                                           \
        "mov " z ".s, p3/m, z5.s\n"                                                   \
        "fcvt " z ".h, p0/m, " z ".s\n"
#define KB_SELECT_ROW(t0, t1)                                                         \
        "mova z16.s, p0/m, za" #t0 "h.s[w12, 0]\n"                                    \
        "mova z17.s, p0/m, za" #t1 "h.s[w12, 0]\n"                                    \
        KB_SELECT("z16") KB_SELECT("z17")                                             \
        "st1h {z16.s}, p4, [x27]\n"                                                   \
        "st1h {z17.s}, p5, [x27, #1, mul vl]\n"                                       \
        "add x27, x27, x6\n"                                                         \
        "add w12, w12, #1\n"

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

/* dst_stride_col must be sizeof(kb_f16). The one pass over a call that starts
 * from the bias and ends in FP16 (see "the one-pass kernel" above). */
void kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_run_matmul(
    size_t m, size_t n, size_t k, const void *lhs_packed, const void *rhs_packed, void *dst,
    size_t dst_stride_row, size_t dst_stride_col, float clamp_min, float clamp_max) {
    (void)dst_stride_col;
    if (m == 0 || n == 0 || k == 0) return;
    union { float f; uint32_t u; } lo = {clamp_min}, hi = {clamp_max};
    /* the operands where the calling convention brings them (and the clamp
     * bounds' bits in x7 and x15): no moves, no argument block */
    register size_t x0 __asm__("x0") = m;
    register size_t x1 __asm__("x1") = n;
    register size_t x2 __asm__("x2") = k;
    register const void *x3 __asm__("x3") = lhs_packed;
    register const void *x4 __asm__("x4") = rhs_packed;
    register void *x5 __asm__("x5") = dst;
    register size_t x6 __asm__("x6") = dst_stride_row;
    register uint64_t x7 __asm__("x7") = lo.u;
    register uint64_t x15 __asm__("x15") = hi.u;
    __asm__ volatile(
        ".arch armv8.2-a+sme\n" /* streaming-legal only; SME2 as .inst words */
        "smstart\n"
        "ptrue p0.b\n"
        ".inst 0x25607810\n" /* ptrue pn8.h */
        "ptrue p6.h\n"
        "cntw x16\n"
        "rdsvl x17, #1\n"
        "lsl x13, x16, #1\n"                      /* mr = nr = 2 * VL32     */
        "add x2, x2, #1\n"
        "lsr x2, x2, #1\n"                        /* k pairs                */
        "mul x9, x13, x2\n"
        "lsl x9, x9, #2\n"                        /* LHS block: mr x kp x 2 */
        "lsl x11, x13, #1\n"                       /* B block: the bias, then */
        "add x10, x9, x11\n"                        /* nr columns x kp x 2    */
        "dup z4.s, w7\n"                          /* the clamp bounds       */
        "dup z5.s, w15\n"
        "mov z6.s, #0\n"                          /* +0: -0 + +0 is +0      */
        "mov w14, #0x80000000\n"                  /* clamp_max -0: x15 bit 1 */
        "cmp w15, w14\n"
        "mov x14, #2\n"
        "csel x15, x14, x15, eq\n"               /* (x15 held its bits)    */
        "b.eq 90f\n"
        "mov w14, #0x7f800000\n"                  /* bounds -inf and +inf:  */
        "cmp w15, w14\n"                          /* no clamp, x15 bit 0    */
        "mov w14, #0xff800000\n"
        "ccmp w7, w14, #0, eq\n"
        "cset x15, eq\n"
        "90:\n"
        "and x7, x2, #31\n"                       /* pairs past whole steps */
        "udiv x14, x0, x13\n"                     /* whole row blocks       */
        "msub x19, x14, x13, x0\n"                /* rows after them        */
        "mul x22, x16, x6\n"
        "lsr x22, x22, #1\n"                      /* VL32 rows, in FP16     */
        "tbz x15, #1, 100f\n"                     /* clamp_max -0: every    */
        "mov x14, #0\n"                           /* block by the edge path */
        "mov x19, x0\n"

        "100:\n"                                  /* ---- column block ---- */
        "mov x8, x3\n"
        "mov x21, x5\n"
        "cmp x1, x16\n"
        "b.le 300f\n"
        KB_BIAS_WIDE
        "cmp x1, x13\n"
        "b.lt 200f\n"
        "subs x20, x14, #0\n"
        "b.eq 150f\n"
        "110:\n"                                  /* ---- whole block ----  */
        KB_START22
        KB_KLOOP32(KB_PAIR_22)
        "mov x27, x21\n"
        "mov w12, #0\n"
        "lsr x25, x16, #2\n"                      /* four row pairs a step  */
        "tbnz x15, #0, 120f\n"
        "111:\n"
        KB_STORE_WHOLE(KB_CLAMP16)
        "b.ne 111b\n"
        "b 130f\n"
        "120:\n"                                  /* bounds -inf, +inf      */
        KB_STORE_WHOLE("")
        "b.ne 120b\n"
        "130:\n"
        "add x8, x8, x9\n"
        "madd x21, x13, x6, x21\n"
        "subs x20, x20, #1\n"
        "b.ne 110b\n"
        "150:\n"
        "subs x20, x19, #0\n"                     /* the rows after them    */
        "b.eq 900f\n"
        "b 400f\n"
        "200:\n"                                  /* last column, > VL32    */
        "mov x20, x0\n"
        "b 400f\n"
        "300:\n"                                  /* last column, <= VL32   */
        KB_BIAS_NARROW
        "mov x20, x0\n"

        "400:\n"                                  /* ---- edge block ----   */
        "cmp x20, x13\n"
        "csel x26, x20, x13, lo\n"                /* rows in this block     */
        "cmp x1, x16\n"
        "b.le 450f\n"
        "cmp x26, x16\n"
        "b.le 420f\n"
        KB_START22
        KB_KLOOP32(KB_PAIR_22)
        "b 500f\n"
        "420:\n"                                  /* <= VL32 rows           */
        KB_START12
        KB_KLOOP32(KB_PAIR_12)
        "b 500f\n"
        "450:\n"                                  /* <= VL32 columns        */
        "cmp x26, x16\n"
        "b.le 470f\n"
        KB_START21
        KB_KLOOP32(KB_PAIR_21)
        "b 600f\n"
        "470:\n"                                  /* <= VL32 of both        */
        KB_START11
        KB_KLOOP32(KB_PAIR_11)

        "600:\n"                  /* ---- store, at most VL32 columns ----   */
        "whilelt p4.s, xzr, x1\n"
        "whilelt p5.s, x16, x1\n"                 /* none (compare/select) */
        "mov x27, x21\n"
        "mov w12, #0\n"
        "cmp x26, x16\n"
        "csel x28, x26, x16, lo\n"                /* rows in za0            */
        "tbnz x15, #1, 800f\n"
        "lsr x25, x28, #2\n"                      /* groups of four rows    */
        "and x28, x28, #3\n"
        "cbz x25, 612f\n"
        "611:\n"
        ".inst 0xc0860410\n" /* mova {z16.s-z19.s}, za0h.s[w12, 0:3] */
        KB_FMAX4(16) KB_FMIN4(16)
        KB_OP_CVT_STORE1("z16") KB_OP_CVT_STORE1("z17") KB_OP_CVT_STORE1("z18") KB_OP_CVT_STORE1("z19")
        "add w12, w12, #4\n"
        "subs x25, x25, #1\n"
        "b.ne 611b\n"
        "612:\n"
        "cbz x28, 620f\n"
        "613:\n"                                  /* single rows            */
        "mova z16.s, p0/m, za0h.s[w12, 0]\n"
        "fmax z16.s, p0/m, z16.s, z4.s\n"
        "fmin z16.s, p0/m, z16.s, z5.s\n"
        KB_OP_CVT_STORE1("z16")
        "add w12, w12, #1\n"
        "subs x28, x28, #1\n"
        "b.ne 613b\n"
        "620:\n"
        "subs x28, x26, x16\n"                    /* rows in za2            */
        "b.le 700f\n"
        "mov w12, #0\n"
        "lsr x25, x28, #2\n"
        "and x28, x28, #3\n"
        "cbz x25, 622f\n"
        "621:\n"
        ".inst 0xc0860450\n" /* mova {z16.s-z19.s}, za2h.s[w12, 0:3] */
        KB_FMAX4(16) KB_FMIN4(16)
        KB_OP_CVT_STORE1("z16") KB_OP_CVT_STORE1("z17") KB_OP_CVT_STORE1("z18") KB_OP_CVT_STORE1("z19")
        "add w12, w12, #4\n"
        "subs x25, x25, #1\n"
        "b.ne 621b\n"
        "622:\n"
        "cbz x28, 700f\n"
        "623:\n"                                  /* single rows            */
        "mova z16.s, p0/m, za2h.s[w12, 0]\n"
        "fmax z16.s, p0/m, z16.s, z4.s\n"
        "fmin z16.s, p0/m, z16.s, z5.s\n"
        KB_OP_CVT_STORE1("z16")
        "add w12, w12, #1\n"
        "subs x28, x28, #1\n"
        "b.ne 623b\n"
        "b 700f\n"

        "500:\n"                  /* ---- store, more than VL32 columns ---- */
        "cmp x1, x13\n"
        "csel x25, x1, x13, lo\n"                 /* columns in this block  */
        "whilelt p4.s, xzr, x25\n"
        "whilelt p5.s, x16, x25\n"
        "mov x27, x21\n"
        "mov w12, #0\n"
        "cmp x26, x16\n"
        "csel x28, x26, x16, lo\n"                /* rows in za0/za1        */
        "tbnz x15, #1, 800f\n"
        "whilelt p7.h, xzr, x25\n"
        "subs x24, x26, x16\n"
        "csel x24, x24, xzr, gt\n"                /* rows in za2/za3        */
        "sub x28, x28, x24\n"                     /* rows in za0/za1 only   */
        "lsr x25, x24, #2\n"                      /* four row pairs a step  */
        "and x24, x24, #3\n"
        "cbz x25, 512f\n"
        "511:\n"
        KB_MOVA4(16, 0) KB_MOVA4(20, 4) KB_MOVA4(24, 8) KB_MOVA4(28, 12)
        KB_CLAMP16
        KB_ROWPAIR(16, 18, "p7") KB_ROWPAIR(20, 22, "p7")
        KB_ROWPAIR(24, 26, "p7") KB_ROWPAIR(28, 30, "p7")
        "add w12, w12, #16\n"
        "subs x25, x25, #1\n"
        "b.ne 511b\n"
        "512:\n"
        "cbz x24, 514f\n"
        "513:\n"                                  /* single row pairs       */
        KB_MOVA4(16, 0)
        KB_FMAX4(16) KB_FMIN4(16)
        KB_ROWPAIR(16, 18, "p7")
        "add w12, w12, #4\n"
        "subs x24, x24, #1\n"
        "b.ne 513b\n"
        "514:\n"
        "cbz x28, 700f\n"                         /* rows of za0/za1 only:  */
        "lsr x25, x28, #1\n"                      /* two a step             */
        "and x28, x28, #1\n"
        "cbz x25, 516f\n"
        "515:\n"
        KB_MOVA2(16, 0) KB_MOVA2(18, 4)
        KB_FMAX4(16) KB_FMIN4(16)
        KB_FCVT2(16, 16) KB_FCVT2(18, 18)
        "st1h {z16.h}, p7, [x27]\n"
        "add x27, x27, x6\n"
        "st1h {z18.h}, p7, [x27]\n"
        "add x27, x27, x6\n"
        "add w12, w12, #8\n"
        "subs x25, x25, #1\n"
        "b.ne 515b\n"
        "516:\n"
        "cbz x28, 700f\n"
        KB_MOVA2(16, 0)
        KB_FMAX4(16) KB_FMIN4(16)
        KB_FCVT2(16, 16)
        "st1h {z16.h}, p7, [x27]\n"
        "b 700f\n"

        "800:\n"                                  /* clamp_max is -0: row by */
        "801:\n"                                  /* row, compare/select     */
        KB_SELECT_ROW(0, 1)
        "subs x28, x28, #1\n"
        "b.ne 801b\n"
        "subs x28, x26, x16\n"
        "b.le 700f\n"
        "mov w12, #0\n"
        "802:\n"
        KB_SELECT_ROW(2, 3)
        "subs x28, x28, #1\n"
        "b.ne 802b\n"

        "700:\n"                                  /* next edge block        */
        "add x8, x8, x9\n"
        "madd x21, x13, x6, x21\n"
        "subs x20, x20, x26\n"
        "b.gt 400b\n"

        "900:\n"                                  /* next column block      */
        "add x4, x4, x10\n"
        "add x5, x5, x17\n"
        "subs x1, x1, x13\n"
        "b.gt 100b\n"
        "smstop\n"
        : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3), "+r"(x4), "+r"(x5), "+r"(x6), "+r"(x7),
          "+r"(x15)
        :
        : "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x16", "x17", "x19", "x20", "x21", "x22",
          "x23", "x24", "x25", "x26", "x27", "x28", "p3", "p4", "p5", "p6", "p7", KB_SME_CLOBBER_VEC);
}

/* The table's core (the driver's chunks of K, and the indirect GEMM's blocks):
 * partial sums in or out go to the chunked core; a block of one chunk (the
 * LHS and RHS strides those run_matmul derives from k, the pairs right after
 * the bias) to run_matmul's one pass. */
KB_NOINLINE static void kb_sme2_mopa_core(const kb_sme_mopa_args *args) {
    if (args->flags & (KB_SME_ACC_LOAD | KB_SME_ACC_STORE))
        kb_sme2_mopa_acc_core(args);
    else
        kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_run_matmul(
            args->m, args->n, args->kpairs * KB_SME_KR, args->lhs, args->rhs, args->dst, args->dst_stride,
            sizeof(kb_f16), args->clamp_min, args->clamp_max);
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
