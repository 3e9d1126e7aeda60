/* kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot.c
 *
 * FP16 GEMV micro-kernel for SME2 (M = 1): a plain FP16 LHS row times the
 * packed RHS with bias (x16p2vlx2b), 2VL output columns per block.
 *
 * Four whole blocks at a time (8 VL32 columns) while there are four: their
 * eight FP32 accumulator vectors are two ZA vector groups of four, the
 * blocks' columns [0, VL32) in za.s[w8, 0, vgx4] and [VL32, 2VL32) in
 * za.s[w8, 1, vgx4]; one strided four-register load (LD1H {z16, z20, z24,
 * z28} and the three like it) takes two k pairs of a block, so that each
 * k pair is two SME2 FDOTs of four vectors each (the lows, then the highs of
 * the four blocks) with the indexed LHS pair: one FDOT per 4 VL32 columns
 * and k pair, the floor. The rest, block by block: the two accumulator
 * vectors of a block are one group of two (za.s[w8, 0, vgx2]), one FDOT of
 * two vectors per k pair.
 *
 * The LHS is read eight values (four k pairs) at a time, replicated into
 * every 128-bit segment (LD1RQH); an FDOT is a fused 2-way dot product
 * b[k][j]*a[k] + b[k+1][j]*a[k+1] added to the FP32 accumulator. The main
 * loops take 32 k (16 pairs) per step, then steps of 8 k, then single pairs
 * (LD1RW broadcasts the pair), then an odd last k as the pair (a[K-1], 0)
 * (LD1RH into 32-bit containers); no step tests for the end of K.
 *
 * Accumulation: the group starts from the bias (converted to FP32, -0 made
 * +0), then one FDOT per k pair in increasing k; the store clamps in FP32
 * (FMAX/FMIN on both vectors at once, or compare/select when clamp_max is
 * -0: see kb_sme_asm.h), narrows a block's two vectors into one FP16 vector
 * (FCVT of a two-vector group; four blocks read back by MOVA of the 8-bit
 * tile view, rows j * SVL/4 .. + 3) and stores it once. At most K + 1 FP32 roundings on
 * a chain ("fp32, k_per_rounding = 1").
 *
 * The kernel enters streaming mode and enables ZA itself (SMSTART) and
 * leaves both off (SMSTOP) before it returns. */
#include "../kb_sme.h"

#if defined(__aarch64__)
#include "../kb_sme_asm.h"

#include <stddef.h>

/* out of line: the driver and the public run entry point share one copy */
KB_NOINLINE static void kb_sme2_gemv_core(const kb_sme_gemv_args *args) {
    __asm__ volatile(
        ".arch armv8.2-a+sme\n" /* streaming-legal only; SME2 as .inst words */
        "smstart\n"
        "ptrue p0.b\n"
        ".inst 0x25607810\n" /* ptrue pn8.h */
        "cntw x16\n"
        "rdsvl x17, #1\n"
        "lsl x13, x16, #1\n"                      /* nr = 2 * VL32          */
        "ldr x1, [%x[args], %[o_a]]\n"
        "ldr x2, [%x[args], %[o_k]]\n"
        "ldr x3, [%x[args], %[o_rhs]]\n"
        "ldr x4, [%x[args], %[o_rbs]]\n"
        "ldr x5, [%x[args], %[o_n]]\n"
        "ldr x6, [%x[args], %[o_dst]]\n"
        "ldr x7, [%x[args], %[o_fl]]\n"
        "ld1rw {z14.s}, p0/z, [%x[args], %[o_lo]]\n" /* z0-z15: SME2 operand */
        "ld1rw {z15.s}, p0/z, [%x[args], %[o_hi]]\n"
        "mov z30.d, z14.d\n"                      /* KB_SME_CLAMP's bounds  */
        "mov z31.d, z15.d\n"
        "mov w8, #0\n"
        "lsr x9, x2, #5\n"                        /* steps of 32 k          */
        "ubfx x10, x2, #3, #2\n"                  /* then steps of 8 k      */
        "ubfx x11, x2, #1, #2\n"                  /* then single pairs      */
        "lsl x21, x17, #5\n"                      /* 32 vectors             */
        "lsl x14, x13, #2\n"                      /* four blocks' columns   */
        "lsl x15, x4, #2\n"                       /* and their bytes        */
        "lsr x19, x17, #2\n"                      /* ZA vectors / 4         */
        "dup z12.s, #0\n"

        "cmp x5, x14\n"                          /* four whole blocks?     */
        "b.lt 1f\n"
        "20:\n"                                   /* ---- four blocks ----  */
        "mov x24, x3\n"
        "add x25, x3, x4\n"
        "add x26, x25, x4\n"
        "add x27, x26, x4\n"
        "ld1h {z0.s}, p0/z, [x24]\n"               /* bias, FP16 -> FP32     */
        "ld1h {z4.s}, p0/z, [x24, #1, mul vl]\n"
        "ld1h {z1.s}, p0/z, [x25]\n"
        "ld1h {z5.s}, p0/z, [x25, #1, mul vl]\n"
        "ld1h {z2.s}, p0/z, [x26]\n"
        "ld1h {z6.s}, p0/z, [x26, #1, mul vl]\n"
        "ld1h {z3.s}, p0/z, [x27]\n"
        "ld1h {z7.s}, p0/z, [x27, #1, mul vl]\n"
        "fcvt z0.s, p0/m, z0.h\n"
        "fcvt z1.s, p0/m, z1.h\n"
        "fcvt z2.s, p0/m, z2.h\n"
        "fcvt z3.s, p0/m, z3.h\n"
        "fcvt z4.s, p0/m, z4.h\n"
        "fcvt z5.s, p0/m, z5.h\n"
        "fcvt z6.s, p0/m, z6.h\n"
        "fcvt z7.s, p0/m, z7.h\n"
        "fadd z0.s, z0.s, z12.s\n"                /* -0 -> +0               */
        "fadd z1.s, z1.s, z12.s\n"
        "fadd z2.s, z2.s, z12.s\n"
        "fadd z3.s, z3.s, z12.s\n"
        "fadd z4.s, z4.s, z12.s\n"
        "fadd z5.s, z5.s, z12.s\n"
        "fadd z6.s, z6.s, z12.s\n"
        "fadd z7.s, z7.s, z12.s\n"
        ".inst 0xc0040c00\n" /* mova za.d[w8, 0, vgx4], {z0.d-z3.d}: columns [0, VL32) */
        ".inst 0xc0040c81\n" /* mova za.d[w8, 1, vgx4], {z4.d-z7.d}: [VL32, 2VL32) */
        "add x24, x24, x17\n"                  /* first k pair           */
        "add x25, x25, x17\n"
        "add x26, x26, x17\n"
        "add x27, x27, x17\n"
        "mov x23, x1\n"
        "cbz x9, 23f\n"
        "mov x20, x9\n"
        "21:\n"                                   /* 16 k pairs per step    */
        "ld1rqh {z8.h}, p0/z, [x23]\n"
        "ld1rqh {z9.h}, p0/z, [x23, #16]\n"
        "ld1rqh {z10.h}, p0/z, [x23, #32]\n"
        "ld1rqh {z11.h}, p0/z, [x23, #48]\n"
        ".inst 0xa140a310\n" /* ld1h {z16.h, z20.h, z24.h, z28.h}, pn8/z, [x24] */
        ".inst 0xa140a331\n" /* ld1h {z17.h, z21.h, z25.h, z29.h}, pn8/z, [x25] */
        ".inst 0xa140a352\n" /* ld1h {z18.h, z22.h, z26.h, z30.h}, pn8/z, [x26] */
        ".inst 0xa140a373\n" /* ld1h {z19.h, z23.h, z27.h, z31.h}, pn8/z, [x27] */
        ".inst 0xc1589208\n" /* fdot za.s[w8, 0, vgx4], {z16.h-z19.h}, z8.h[0] */
        ".inst 0xc1589289\n" /* fdot za.s[w8, 1, vgx4], {z20.h-z23.h}, z8.h[0] */
        ".inst 0xc1589708\n" /* fdot za.s[w8, 0, vgx4], {z24.h-z27.h}, z8.h[1] */
        ".inst 0xc1589789\n" /* fdot za.s[w8, 1, vgx4], {z28.h-z31.h}, z8.h[1] */
        ".inst 0xa141a310\n" /* ld1h {z16.h, z20.h, z24.h, z28.h}, pn8/z, [x24, #4, mul vl] */
        ".inst 0xa141a331\n" /* ld1h {z17.h, z21.h, z25.h, z29.h}, pn8/z, [x25, #4, mul vl] */
        ".inst 0xa141a352\n" /* ld1h {z18.h, z22.h, z26.h, z30.h}, pn8/z, [x26, #4, mul vl] */
        ".inst 0xa141a373\n" /* ld1h {z19.h, z23.h, z27.h, z31.h}, pn8/z, [x27, #4, mul vl] */
        ".inst 0xc1589a08\n" /* fdot za.s[w8, 0, vgx4], {z16.h-z19.h}, z8.h[2] */
        ".inst 0xc1589a89\n" /* fdot za.s[w8, 1, vgx4], {z20.h-z23.h}, z8.h[2] */
        ".inst 0xc1589f08\n" /* fdot za.s[w8, 0, vgx4], {z24.h-z27.h}, z8.h[3] */
        ".inst 0xc1589f89\n" /* fdot za.s[w8, 1, vgx4], {z28.h-z31.h}, z8.h[3] */
        ".inst 0xa142a310\n" /* ld1h {z16.h, z20.h, z24.h, z28.h}, pn8/z, [x24, #8, mul vl] */
        ".inst 0xa142a331\n" /* ld1h {z17.h, z21.h, z25.h, z29.h}, pn8/z, [x25, #8, mul vl] */
        ".inst 0xa142a352\n" /* ld1h {z18.h, z22.h, z26.h, z30.h}, pn8/z, [x26, #8, mul vl] */
        ".inst 0xa142a373\n" /* ld1h {z19.h, z23.h, z27.h, z31.h}, pn8/z, [x27, #8, mul vl] */
        ".inst 0xc1599208\n" /* fdot za.s[w8, 0, vgx4], {z16.h-z19.h}, z9.h[0] */
        ".inst 0xc1599289\n" /* fdot za.s[w8, 1, vgx4], {z20.h-z23.h}, z9.h[0] */
        ".inst 0xc1599708\n" /* fdot za.s[w8, 0, vgx4], {z24.h-z27.h}, z9.h[1] */
        ".inst 0xc1599789\n" /* fdot za.s[w8, 1, vgx4], {z28.h-z31.h}, z9.h[1] */
        ".inst 0xa143a310\n" /* ld1h {z16.h, z20.h, z24.h, z28.h}, pn8/z, [x24, #12, mul vl] */
        ".inst 0xa143a331\n" /* ld1h {z17.h, z21.h, z25.h, z29.h}, pn8/z, [x25, #12, mul vl] */
        ".inst 0xa143a352\n" /* ld1h {z18.h, z22.h, z26.h, z30.h}, pn8/z, [x26, #12, mul vl] */
        ".inst 0xa143a373\n" /* ld1h {z19.h, z23.h, z27.h, z31.h}, pn8/z, [x27, #12, mul vl] */
        ".inst 0xc1599a08\n" /* fdot za.s[w8, 0, vgx4], {z16.h-z19.h}, z9.h[2] */
        ".inst 0xc1599a89\n" /* fdot za.s[w8, 1, vgx4], {z20.h-z23.h}, z9.h[2] */
        ".inst 0xc1599f08\n" /* fdot za.s[w8, 0, vgx4], {z24.h-z27.h}, z9.h[3] */
        ".inst 0xc1599f89\n" /* fdot za.s[w8, 1, vgx4], {z28.h-z31.h}, z9.h[3] */
        ".inst 0xa144a310\n" /* ld1h {z16.h, z20.h, z24.h, z28.h}, pn8/z, [x24, #16, mul vl] */
        ".inst 0xa144a331\n" /* ld1h {z17.h, z21.h, z25.h, z29.h}, pn8/z, [x25, #16, mul vl] */
        ".inst 0xa144a352\n" /* ld1h {z18.h, z22.h, z26.h, z30.h}, pn8/z, [x26, #16, mul vl] */
        ".inst 0xa144a373\n" /* ld1h {z19.h, z23.h, z27.h, z31.h}, pn8/z, [x27, #16, mul vl] */
        ".inst 0xc15a9208\n" /* fdot za.s[w8, 0, vgx4], {z16.h-z19.h}, z10.h[0] */
        ".inst 0xc15a9289\n" /* fdot za.s[w8, 1, vgx4], {z20.h-z23.h}, z10.h[0] */
        ".inst 0xc15a9708\n" /* fdot za.s[w8, 0, vgx4], {z24.h-z27.h}, z10.h[1] */
        ".inst 0xc15a9789\n" /* fdot za.s[w8, 1, vgx4], {z28.h-z31.h}, z10.h[1] */
        ".inst 0xa145a310\n" /* ld1h {z16.h, z20.h, z24.h, z28.h}, pn8/z, [x24, #20, mul vl] */
        ".inst 0xa145a331\n" /* ld1h {z17.h, z21.h, z25.h, z29.h}, pn8/z, [x25, #20, mul vl] */
        ".inst 0xa145a352\n" /* ld1h {z18.h, z22.h, z26.h, z30.h}, pn8/z, [x26, #20, mul vl] */
        ".inst 0xa145a373\n" /* ld1h {z19.h, z23.h, z27.h, z31.h}, pn8/z, [x27, #20, mul vl] */
        ".inst 0xc15a9a08\n" /* fdot za.s[w8, 0, vgx4], {z16.h-z19.h}, z10.h[2] */
        ".inst 0xc15a9a89\n" /* fdot za.s[w8, 1, vgx4], {z20.h-z23.h}, z10.h[2] */
        ".inst 0xc15a9f08\n" /* fdot za.s[w8, 0, vgx4], {z24.h-z27.h}, z10.h[3] */
        ".inst 0xc15a9f89\n" /* fdot za.s[w8, 1, vgx4], {z28.h-z31.h}, z10.h[3] */
        ".inst 0xa146a310\n" /* ld1h {z16.h, z20.h, z24.h, z28.h}, pn8/z, [x24, #24, mul vl] */
        ".inst 0xa146a331\n" /* ld1h {z17.h, z21.h, z25.h, z29.h}, pn8/z, [x25, #24, mul vl] */
        ".inst 0xa146a352\n" /* ld1h {z18.h, z22.h, z26.h, z30.h}, pn8/z, [x26, #24, mul vl] */
        ".inst 0xa146a373\n" /* ld1h {z19.h, z23.h, z27.h, z31.h}, pn8/z, [x27, #24, mul vl] */
        ".inst 0xc15b9208\n" /* fdot za.s[w8, 0, vgx4], {z16.h-z19.h}, z11.h[0] */
        ".inst 0xc15b9289\n" /* fdot za.s[w8, 1, vgx4], {z20.h-z23.h}, z11.h[0] */
        ".inst 0xc15b9708\n" /* fdot za.s[w8, 0, vgx4], {z24.h-z27.h}, z11.h[1] */
        ".inst 0xc15b9789\n" /* fdot za.s[w8, 1, vgx4], {z28.h-z31.h}, z11.h[1] */
        ".inst 0xa147a310\n" /* ld1h {z16.h, z20.h, z24.h, z28.h}, pn8/z, [x24, #28, mul vl] */
        ".inst 0xa147a331\n" /* ld1h {z17.h, z21.h, z25.h, z29.h}, pn8/z, [x25, #28, mul vl] */
        ".inst 0xa147a352\n" /* ld1h {z18.h, z22.h, z26.h, z30.h}, pn8/z, [x26, #28, mul vl] */
        ".inst 0xa147a373\n" /* ld1h {z19.h, z23.h, z27.h, z31.h}, pn8/z, [x27, #28, mul vl] */
        ".inst 0xc15b9a08\n" /* fdot za.s[w8, 0, vgx4], {z16.h-z19.h}, z11.h[2] */
        ".inst 0xc15b9a89\n" /* fdot za.s[w8, 1, vgx4], {z20.h-z23.h}, z11.h[2] */
        ".inst 0xc15b9f08\n" /* fdot za.s[w8, 0, vgx4], {z24.h-z27.h}, z11.h[3] */
        ".inst 0xc15b9f89\n" /* fdot za.s[w8, 1, vgx4], {z28.h-z31.h}, z11.h[3] */
        "add x23, x23, #64\n"
        "add x24, x24, x21\n"
        "add x25, x25, x21\n"
        "add x26, x26, x21\n"
        "add x27, x27, x21\n"
        "subs x20, x20, #1\n"
        "b.ne 21b\n"
        "23:\n"
        "cbz x10, 25f\n"
        "mov x20, x10\n"
        "24:\n"                                   /* 4 k pairs per step     */
        "ld1rqh {z8.h}, p0/z, [x23]\n"
        ".inst 0xa140a310\n" /* ld1h {z16.h, z20.h, z24.h, z28.h}, pn8/z, [x24] */
        ".inst 0xa140a331\n" /* ld1h {z17.h, z21.h, z25.h, z29.h}, pn8/z, [x25] */
        ".inst 0xa140a352\n" /* ld1h {z18.h, z22.h, z26.h, z30.h}, pn8/z, [x26] */
        ".inst 0xa140a373\n" /* ld1h {z19.h, z23.h, z27.h, z31.h}, pn8/z, [x27] */
        ".inst 0xc1589208\n" /* fdot za.s[w8, 0, vgx4], {z16.h-z19.h}, z8.h[0] */
        ".inst 0xc1589289\n" /* fdot za.s[w8, 1, vgx4], {z20.h-z23.h}, z8.h[0] */
        ".inst 0xc1589708\n" /* fdot za.s[w8, 0, vgx4], {z24.h-z27.h}, z8.h[1] */
        ".inst 0xc1589789\n" /* fdot za.s[w8, 1, vgx4], {z28.h-z31.h}, z8.h[1] */
        ".inst 0xa141a310\n" /* ld1h {z16.h, z20.h, z24.h, z28.h}, pn8/z, [x24, #4, mul vl] */
        ".inst 0xa141a331\n" /* ld1h {z17.h, z21.h, z25.h, z29.h}, pn8/z, [x25, #4, mul vl] */
        ".inst 0xa141a352\n" /* ld1h {z18.h, z22.h, z26.h, z30.h}, pn8/z, [x26, #4, mul vl] */
        ".inst 0xa141a373\n" /* ld1h {z19.h, z23.h, z27.h, z31.h}, pn8/z, [x27, #4, mul vl] */
        ".inst 0xc1589a08\n" /* fdot za.s[w8, 0, vgx4], {z16.h-z19.h}, z8.h[2] */
        ".inst 0xc1589a89\n" /* fdot za.s[w8, 1, vgx4], {z20.h-z23.h}, z8.h[2] */
        ".inst 0xc1589f08\n" /* fdot za.s[w8, 0, vgx4], {z24.h-z27.h}, z8.h[3] */
        ".inst 0xc1589f89\n" /* fdot za.s[w8, 1, vgx4], {z28.h-z31.h}, z8.h[3] */
        "add x23, x23, #16\n"
        "addvl x24, x24, #8\n"
        "addvl x25, x25, #8\n"
        "addvl x26, x26, #8\n"
        "addvl x27, x27, #8\n"
        "subs x20, x20, #1\n"
        "b.ne 24b\n"
        "25:\n"
        "cbz x11, 27f\n"
        "mov x20, x11\n"
        "26:\n"                                   /* one k pair             */
        "ld1rw {z8.s}, p0/z, [x23]\n"
        ".inst 0xa1402310\n" /* ld1h {z16.h, z24.h}, pn8/z, [x24] */
        ".inst 0xa1402331\n" /* ld1h {z17.h, z25.h}, pn8/z, [x25] */
        ".inst 0xa1402352\n" /* ld1h {z18.h, z26.h}, pn8/z, [x26] */
        ".inst 0xa1402373\n" /* ld1h {z19.h, z27.h}, pn8/z, [x27] */
        ".inst 0xc1589208\n" /* fdot za.s[w8, 0, vgx4], {z16.h-z19.h}, z8.h[0] */
        ".inst 0xc1589309\n" /* fdot za.s[w8, 1, vgx4], {z24.h-z27.h}, z8.h[0] */
        "add x23, x23, #4\n"
        "addvl x24, x24, #2\n"
        "addvl x25, x25, #2\n"
        "addvl x26, x26, #2\n"
        "addvl x27, x27, #2\n"
        "subs x20, x20, #1\n"
        "b.ne 26b\n"
        "27:\n"
        "tbz x2, #0, 28f\n"                      /* odd K: (a[K-1], 0)     */
        "ld1rh {z8.s}, p0/z, [x23]\n"
        ".inst 0xa1402310\n" /* ld1h {z16.h, z24.h}, pn8/z, [x24] */
        ".inst 0xa1402331\n" /* ld1h {z17.h, z25.h}, pn8/z, [x25] */
        ".inst 0xa1402352\n" /* ld1h {z18.h, z26.h}, pn8/z, [x26] */
        ".inst 0xa1402373\n" /* ld1h {z19.h, z27.h}, pn8/z, [x27] */
        ".inst 0xc1589208\n" /* fdot za.s[w8, 0, vgx4], {z16.h-z19.h}, z8.h[0] */
        ".inst 0xc1589309\n" /* fdot za.s[w8, 1, vgx4], {z24.h-z27.h}, z8.h[0] */
        "28:\n"                                   /* clamp, FP16, store     */
        "mov w12, #0\n"
        "mov x20, #2\n"
        "29:\n"                                   /* two blocks per step    */
        ".inst 0xc0060400\n" /* mova {z0.b-z3.b}, za0h.b[w12, 0:3]: block j low, high */
        "add w12, w12, w19\n"
        ".inst 0xc0060404\n" /* mova {z4.b-z7.b}, za0h.b[w12, 0:3]: block j + 1 */
        "add w12, w12, w19\n"
        "tbnz x7, #2, 31f\n"
        ".inst 0xc1aea900\n" /* fmax {z0.s-z3.s}, {z0.s-z3.s}, z14.s */
        ".inst 0xc1aea904\n" /* fmax {z4.s-z7.s}, {z4.s-z7.s}, z14.s */
        ".inst 0xc1afa901\n" /* fmin {z0.s-z3.s}, {z0.s-z3.s}, z15.s */
        ".inst 0xc1afa905\n" /* fmin {z4.s-z7.s}, {z4.s-z7.s}, z15.s */
        "30:\n"
        ".inst 0xc120e000\n" /* fcvt z0.h, {z0.s-z1.s} */
        ".inst 0xc120e084\n" /* fcvt z4.h, {z4.s-z5.s} */
        "st1h {z0.h}, p0, [x6]\n"
        "st1h {z4.h}, p0, [x6, #1, mul vl]\n"
        "addvl x6, x6, #2\n"
        "subs x20, x20, #1\n"
        "b.ne 29b\n"
        "add x3, x3, x15\n"
        "sub x5, x5, x14\n"
        "cmp x5, x14\n"
        "b.ge 20b\n"
        "ld1rw {z30.s}, p0/z, [%x[args], %[o_lo]]\n" /* the loads took z28-z31 */
        "ld1rw {z31.s}, p0/z, [%x[args], %[o_hi]]\n"
        "cbz x5, 11f\n"
        "b 1f\n"
        "31:\n"                                   /* clamp_max is -0        */
        "ld1rw {z30.s}, p0/z, [%x[args], %[o_lo]]\n"
        "ld1rw {z31.s}, p0/z, [%x[args], %[o_hi]]\n"
        KB_SME_CLAMP("z0")
        KB_SME_CLAMP("z1")
        KB_SME_CLAMP("z4")
        KB_SME_CLAMP("z5")
        "b 30b\n"

        "1:\n"                                    /* ---- block ----        */
        "ld1h {z2.s}, p0/z, [x3]\n"               /* bias, FP16 -> FP32     */
        "ld1h {z3.s}, p0/z, [x3, #1, mul vl]\n"
        "fcvt z2.s, p0/m, z2.h\n"
        "fcvt z3.s, p0/m, z3.h\n"
        "fadd z2.s, z2.s, z12.s\n"                /* -0 -> +0               */
        "fadd z3.s, z3.s, z12.s\n"
        ".inst 0xc0040840\n" /* mova za.d[w8, 0, vgx2], {z2.d-z3.d} */
        "add x24, x3, x17\n"                      /* first k pair           */
        "mov x23, x1\n"
        "cbz x9, 3f\n"
        "addvl x24, x24, #16\n"                   /* loads at -16 .. 12 VL  */
        "mov x25, x9\n"
        "2:\n"                                    /* 16 k pairs per step    */
        "ld1rqh {z8.h}, p0/z, [x23]\n"
        "ld1rqh {z9.h}, p0/z, [x23, #16]\n"
        "ld1rqh {z10.h}, p0/z, [x23, #32]\n"
        "ld1rqh {z11.h}, p0/z, [x23, #48]\n"
        ".inst 0xa04ca300\n" /* ld1h {z0.h-z3.h}, pn8/z, [x24, #-16, mul vl] */
        ".inst 0xc1581008\n" /* fdot za.s[w8, 0, vgx2], {z0.h-z1.h}, z8.h[0] */
        ".inst 0xc1581448\n" /* fdot za.s[w8, 0, vgx2], {z2.h-z3.h}, z8.h[1] */
        ".inst 0xa04da304\n" /* ld1h {z4.h-z7.h}, pn8/z, [x24, #-12, mul vl] */
        ".inst 0xc1581888\n" /* fdot za.s[w8, 0, vgx2], {z4.h-z5.h}, z8.h[2] */
        ".inst 0xc1581cc8\n" /* fdot za.s[w8, 0, vgx2], {z6.h-z7.h}, z8.h[3] */
        ".inst 0xa04ea310\n" /* ld1h {z16.h-z19.h}, pn8/z, [x24, #-8, mul vl] */
        ".inst 0xc1591208\n" /* fdot za.s[w8, 0, vgx2], {z16.h-z17.h}, z9.h[0] */
        ".inst 0xc1591648\n" /* fdot za.s[w8, 0, vgx2], {z18.h-z19.h}, z9.h[1] */
        ".inst 0xa04fa314\n" /* ld1h {z20.h-z23.h}, pn8/z, [x24, #-4, mul vl] */
        ".inst 0xc1591a88\n" /* fdot za.s[w8, 0, vgx2], {z20.h-z21.h}, z9.h[2] */
        ".inst 0xc1591ec8\n" /* fdot za.s[w8, 0, vgx2], {z22.h-z23.h}, z9.h[3] */
        ".inst 0xa040a300\n" /* ld1h {z0.h-z3.h}, pn8/z, [x24] */
        ".inst 0xc15a1008\n" /* fdot za.s[w8, 0, vgx2], {z0.h-z1.h}, z10.h[0] */
        ".inst 0xc15a1448\n" /* fdot za.s[w8, 0, vgx2], {z2.h-z3.h}, z10.h[1] */
        ".inst 0xa041a304\n" /* ld1h {z4.h-z7.h}, pn8/z, [x24, #4, mul vl] */
        ".inst 0xc15a1888\n" /* fdot za.s[w8, 0, vgx2], {z4.h-z5.h}, z10.h[2] */
        ".inst 0xc15a1cc8\n" /* fdot za.s[w8, 0, vgx2], {z6.h-z7.h}, z10.h[3] */
        ".inst 0xa042a310\n" /* ld1h {z16.h-z19.h}, pn8/z, [x24, #8, mul vl] */
        ".inst 0xc15b1208\n" /* fdot za.s[w8, 0, vgx2], {z16.h-z17.h}, z11.h[0] */
        ".inst 0xc15b1648\n" /* fdot za.s[w8, 0, vgx2], {z18.h-z19.h}, z11.h[1] */
        ".inst 0xa043a314\n" /* ld1h {z20.h-z23.h}, pn8/z, [x24, #12, mul vl] */
        ".inst 0xc15b1a88\n" /* fdot za.s[w8, 0, vgx2], {z20.h-z21.h}, z11.h[2] */
        ".inst 0xc15b1ec8\n" /* fdot za.s[w8, 0, vgx2], {z22.h-z23.h}, z11.h[3] */
        "add x23, x23, #64\n"
        "add x24, x24, x21\n"
        "subs x25, x25, #1\n"
        "b.ne 2b\n"
        "addvl x24, x24, #-16\n"
        "3:\n"
        "cbz x10, 5f\n"
        "mov x25, x10\n"
        "4:\n"                                    /* 4 k pairs per step     */
        "ld1rqh {z8.h}, p0/z, [x23]\n"
        ".inst 0xa040a300\n" /* ld1h {z0.h-z3.h}, pn8/z, [x24] */
        ".inst 0xc1581008\n" /* fdot za.s[w8, 0, vgx2], {z0.h-z1.h}, z8.h[0] */
        ".inst 0xc1581448\n" /* fdot za.s[w8, 0, vgx2], {z2.h-z3.h}, z8.h[1] */
        ".inst 0xa041a304\n" /* ld1h {z4.h-z7.h}, pn8/z, [x24, #4, mul vl] */
        ".inst 0xc1581888\n" /* fdot za.s[w8, 0, vgx2], {z4.h-z5.h}, z8.h[2] */
        ".inst 0xc1581cc8\n" /* fdot za.s[w8, 0, vgx2], {z6.h-z7.h}, z8.h[3] */
        "add x23, x23, #16\n"
        "addvl x24, x24, #8\n"
        "subs x25, x25, #1\n"
        "b.ne 4b\n"
        "5:\n"
        "cbz x11, 7f\n"
        "mov x25, x11\n"
        "6:\n"                                    /* one k pair             */
        "ld1rw {z8.s}, p0/z, [x23]\n"             /* (a[k], a[k+1])         */
        ".inst 0xa0402300\n" /* ld1h {z0.h-z1.h}, pn8/z, [x24] */
        ".inst 0xc1581008\n" /* fdot za.s[w8, 0, vgx2], {z0.h-z1.h}, z8.h[0] */
        "add x23, x23, #4\n"
        "addvl x24, x24, #2\n"
        "subs x25, x25, #1\n"
        "b.ne 6b\n"
        "7:\n"
        "tbz x2, #0, 8f\n"                        /* odd K: (a[K-1], 0)     */
        "ld1rh {z8.s}, p0/z, [x23]\n"
        ".inst 0xa0402300\n" /* ld1h {z0.h-z1.h}, pn8/z, [x24] */
        ".inst 0xc1581008\n" /* fdot za.s[w8, 0, vgx2], {z0.h-z1.h}, z8.h[0] */
        "8:\n"                                    /* clamp, FP16, store     */
        ".inst 0xc0060818\n" /* mova {z24.d-z25.d}, za.d[w8, 0, vgx2] */
        "tbnz x7, #2, 10f\n"
        ".inst 0xc1aea118\n" /* fmax {z24.s-z25.s}, {z24.s-z25.s}, z14.s */
        ".inst 0xc1afa119\n" /* fmin {z24.s-z25.s}, {z24.s-z25.s}, z15.s */
        "9:\n"
        "cmp x5, x13\n"
        "csel x26, x5, x13, lo\n"
        "whilelt p4.h, xzr, x26\n"
        ".inst 0xc120e318\n" /* fcvt z24.h, {z24.s-z25.s} packed: z24 low half, z25 high */
        "st1h {z24.h}, p4, [x6]\n"
        "add x3, x3, x4\n"
        "add x6, x6, x17\n"
        "subs x5, x5, x13\n"
        "b.gt 1b\n"
        "b 11f\n"
        "10:\n"                                   /* clamp_max is -0        */
        KB_SME_CLAMP("z24")
        KB_SME_CLAMP("z25")
        "b 9b\n"
        "11:\n"
        "smstop\n"
        :
        : [args] "r"(args),
          [o_a] "I"(offsetof(kb_sme_gemv_args, a)),
          [o_k] "I"(offsetof(kb_sme_gemv_args, k)),
          [o_rhs] "I"(offsetof(kb_sme_gemv_args, rhs)),
          [o_rbs] "I"(offsetof(kb_sme_gemv_args, rhs_block_stride)),
          [o_n] "I"(offsetof(kb_sme_gemv_args, n)),
          [o_dst] "I"(offsetof(kb_sme_gemv_args, dst)),
          [o_fl] "I"(offsetof(kb_sme_gemv_args, flags)),
          [o_lo] "I"(offsetof(kb_sme_gemv_args, clamp_min)),
          [o_hi] "I"(offsetof(kb_sme_gemv_args, clamp_max))
        : "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x16", "x21",
          "x14", "x15", "x17", "x19", "x20", "x23", "x24", "x25", "x26", "x27", KB_SME_CLOBBER_VEC);
}

/* ---- micro-kernel interface -------------------------------------------- */

size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_m_step(void) { return 1; }
size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_n_step(void) { return kb_sme_block(); }
size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_mr(void) { return 1; }
size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_nr(void) { return kb_sme_block(); }
size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_kr(void) { return KB_SME_KR; }
size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_sr(void) { return KB_SME_SR; }

size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_lhs_offset(size_t m_idx, size_t lhs_stride) {
    return m_idx * lhs_stride;
}

size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_rhs_packed_offset(size_t n_idx, size_t k) {
    return kb_sme_rhs_offset(n_idx, kb_sme_block(), k);
}

size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_dst_offset(size_t m_idx, size_t n_idx,
                                                                       size_t dst_stride) {
    return m_idx * dst_stride + n_idx * sizeof(kb_f16);
}

size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_dst_size(size_t m, size_t n) {
    return m * n * sizeof(kb_f16);
}

/* Each of the m rows is one GEMV; dst_stride_col must be sizeof(kb_f16). */
void kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_run_matmul(
    size_t m, size_t n, size_t k, const void *lhs, size_t lhs_stride, const void *rhs_packed,
    void *dst, size_t dst_stride_row, size_t dst_stride_col, float clamp_min, float clamp_max) {
    (void)dst_stride_col;
    if (n == 0 || k == 0) return;
    for (size_t i = 0; i < m; i++) {
        kb_sme_gemv_args a = {
            .a = (const unsigned char *)lhs + i * lhs_stride, .k = k,
            .rhs = rhs_packed, .rhs_block_stride = kb_sme_rhs_block_bytes(kb_sme_block(), k),
            .n = n, .dst = (unsigned char *)dst + i * dst_stride_row,
            .flags = kb_sme_clamp_flags(clamp_max),
            .clamp_min = clamp_min, .clamp_max = clamp_max,
        };
        kb_sme2_gemv_core(&a);
    }
}

const kb_sme_gemv_ukernel kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot = {
    .name = "matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot",
    .get_m_step = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_m_step,
    .get_n_step = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_n_step,
    .get_mr = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_mr,
    .get_nr = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_nr,
    .get_kr = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_kr,
    .get_sr = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_sr,
    .get_lhs_offset = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_lhs_offset,
    .get_rhs_packed_offset = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_rhs_packed_offset,
    .get_dst_offset = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_dst_offset,
    .get_dst_size = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_dst_size,
    .run_matmul = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_run_matmul,
    .core = kb_sme2_gemv_core,
};


/* Functions kbench's own drivers never call (kbench run --coverage lists them
 * apart, with the reason). */
#define KB_WHY "the public micro-kernel interface: kbench's SME driver calls the core with its own blocking and K chunks; examples/plugins/sme_ukernel runs it through the plugin ABI"
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_mr, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_sr, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_lhs_offset, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_rhs_packed_offset, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_dst_offset, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_dst_size, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_run_matmul, KB_WHY);
#undef KB_WHY

#endif /* __aarch64__ */
