/* kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot.c
 *
 * FP16 GEMM micro-kernel for SVE2.1 (non-streaming): A (FP16, rows lda bytes
 * apart) read as it is, times B packed with its bias in x16p4vlx2b (blocks of
 * nr = 4 VL32 columns, see kb_sve.h), into FP16 C. One call computes the
 * whole of C: rows five at a time (the "5x" of its name; the last one to four
 * rows with the same code for fewer rows), each band block by block (4 VL32
 * columns, the "4vl"), the last block with only the vectors that hold columns
 * (1, 2, 3 or 4 of them).
 *
 * A tile of R rows x C vectors (R <= 5, C <= 4) keeps its R x C FP32
 * accumulators in z12-z31 (row r, vector c: z(12 + 4r + c)). A row's k
 * values come eight at a time (four k pairs), replicated into every 128-bit
 * segment (LD1RQH into z0-z4); a k pair of the block is one four-vector load
 * (LD1H {z8-z11}); each FDOT is the 2-way dot product of the pair of A
 * selected by its index with the pairs of VL32 columns, added to the
 * accumulator: C FDOTs per row and k pair, the floor (R * C * ceil(K / 2)
 * FDOTs per tile), and per four k pairs R + 4 loads. K goes 32 k pairs per
 * step (whole blocks only), then 16 if K has them (whole blocks only), then
 * four a step, then the last one to four pairs
 * (their A read under a predicate up to K, so nothing past a row is read and
 * an odd K's missing value is +0, as the packed B's).
 *
 * Accumulation, as KleidiAI's SVE2.1 kernel: each accumulator starts from its
 * column's bias (FCVT FP16 -> FP32, exact), then one FDOT per k pair in
 * increasing k (the pair's two products summed and rounded to FP32, then
 * added and rounded: ceil(K / 2) + 1 roundings on the longest chain, which
 * K bounds); the result is rounded to FP16 (FCVT), compacted (UZP1), clamped
 * by FCLAMP against the bounds rounded to FP16 (a NaN becomes clamp_min) and
 * stored under a predicate that ends at N. Whatever the rows' banding, every
 * output is computed by the same chain of instructions, so the result does
 * not depend on how the rows are split (across threads, or by a caller). */
#include "../kb_sve.h"

#if defined(__aarch64__)
#include "../kb_sve_asm.h"

#include <stddef.h>

/* Registers:
 *   x1 rows left      x2 K               x3 N             x4 lda (bytes)
 *   x5 ldc (bytes)    x6 A, the band's row 0
 *   x8 packed B       x9 B, the current block              x10 the block's first column
 *   x11-x15 A, the tile's rows          x16 a count        x17 the last k pairs (bytes)
 *   x19-x23 C, the band's rows          x24 columns left   x25 A's offset (values)
 *   x28 K mod 8
 *   x0 3 VL32  x26 128 vectors (bytes)  x27 nr
 *   z0-z4 A   z5, z6 clamp_min, clamp_max (FP16)   z8-z11 B   z12-z31 accumulators
 *   p0 all (.h)  p1 all (.s)  p2 A's last k (K mod 8 values)  p3 / pn9 the last block's
 *   columns  pn8 all */
#define KB_GEMM_MACROS                                                                           \
    /* A: the next eight k of each row, base + 16 g bytes, or base + x25 values */               \
    ".macro kb_g_ald R, g\n"                                                                     \
    "ld1rqh {z0.h}, p0/z, [x11, #(16 * \\g)]\n"                                                  \
    ".if \\R > 1\nld1rqh {z1.h}, p0/z, [x12, #(16 * \\g)]\n.endif\n"                             \
    ".if \\R > 2\nld1rqh {z2.h}, p0/z, [x13, #(16 * \\g)]\n.endif\n"                             \
    ".if \\R > 3\nld1rqh {z3.h}, p0/z, [x14, #(16 * \\g)]\n.endif\n"                             \
    ".if \\R > 4\nld1rqh {z4.h}, p0/z, [x15, #(16 * \\g)]\n.endif\n"                             \
    ".endm\n"                                                                                    \
    ".macro kb_g_aldx R, pg\n"                                                                   \
    "ld1rqh {z0.h}, \\pg/z, [x11, x25, lsl #1]\n"                                                \
    ".if \\R > 1\nld1rqh {z1.h}, \\pg/z, [x12, x25, lsl #1]\n.endif\n"                           \
    ".if \\R > 2\nld1rqh {z2.h}, \\pg/z, [x13, x25, lsl #1]\n.endif\n"                           \
    ".if \\R > 3\nld1rqh {z3.h}, \\pg/z, [x14, x25, lsl #1]\n.endif\n"                           \
    ".if \\R > 4\nld1rqh {z4.h}, \\pg/z, [x15, x25, lsl #1]\n.endif\n"                           \
    ".endm\n"                                                                                    \
    ".macro kb_g_aadd R, bytes\n"                                                                \
    "add x11, x11, #\\bytes\n"                                                                   \
    ".if \\R > 1\nadd x12, x12, #\\bytes\n.endif\n"                                              \
    ".if \\R > 2\nadd x13, x13, #\\bytes\n.endif\n"                                              \
    ".if \\R > 3\nadd x14, x14, #\\bytes\n.endif\n"                                              \
    ".if \\R > 4\nadd x15, x15, #\\bytes\n.endif\n"                                              \
    ".endm\n"                                                                                    \
    /* B: one k pair (C vectors of it) at x<xb> + imm vectors */                                 \
    ".macro kb_g_bld C, imm, xb=9\n"                                                             \
    ".if \\C > 2\nkb_ld1h_x4 8, 8, \\xb, \\imm\n.else\nkb_ld1h_x2 8, 8, \\xb, \\imm\n.endif\n"   \
    ".endm\n"                                                                                    \
    /* one k pair: the FDOTs of every row and vector with A's pair i */                          \
    ".macro kb_g_kp R, C, i\n"                                                                   \
    ".irp r, 0, 1, 2, 3, 4\n.if \\r < \\R\n"                                                     \
    ".irp c, 0, 1, 2, 3\n.if \\c < \\C\n"                                                        \
    "kb_fdot (12 + 4 * \\r + \\c), (8 + \\c), \\r, \\i\n"                                        \
    ".endif\n.endr\n.endif\n.endr\n"                                                             \
    ".endm\n"                                                                                    \
    /* four k pairs of the main step: A group g, B from x<xb> + imm vectors */                   \
    ".macro kb_g_main R, g, xb, b0\n"                                                            \
    "kb_g_ald \\R, \\g\n"                                                                        \
    "kb_g_bld 4, (\\b0), \\xb\nkb_g_kp \\R, 4, 0\n"                                             \
    "kb_g_bld 4, (\\b0 + 4), \\xb\nkb_g_kp \\R, 4, 1\n"                                         \
    "kb_g_bld 4, (\\b0 + 8), \\xb\nkb_g_kp \\R, 4, 2\n"                                         \
    "kb_g_bld 4, (\\b0 + 12), \\xb\nkb_g_kp \\R, 4, 3\n"                                        \
    ".endm\n"                                                                                    \
    /* the bias of C vectors, FP16 -> FP32, in row 0's accumulators and copied */                \
    ".macro kb_g_bias_row C, a, b, c, d\n"                                                       \
    "mov z\\a\\().d, z12.d\n"                                                                    \
    ".if \\C > 1\nmov z\\b\\().d, z13.d\n.endif\n"                                               \
    ".if \\C > 2\nmov z\\c\\().d, z14.d\n.endif\n"                                               \
    ".if \\C > 3\nmov z\\d\\().d, z15.d\n.endif\n"                                               \
    ".endm\n"                                                                                    \
    ".macro kb_g_bias R, C\n"                                                                    \
    "ld1h {z12.s}, p1/z, [x9]\n"                                                                 \
    ".if \\C > 1\nld1h {z13.s}, p1/z, [x9, #1, mul vl]\n.endif\n"                                \
    ".if \\C > 2\nld1h {z14.s}, p1/z, [x9, #2, mul vl]\n.endif\n"                                \
    ".if \\C > 3\nld1h {z15.s}, p1/z, [x9, #3, mul vl]\n.endif\n"                                \
    "fcvt z12.s, p1/m, z12.h\n"                                                                  \
    ".if \\C > 1\nfcvt z13.s, p1/m, z13.h\n.endif\n"                                             \
    ".if \\C > 2\nfcvt z14.s, p1/m, z14.h\n.endif\n"                                             \
    ".if \\C > 3\nfcvt z15.s, p1/m, z15.h\n.endif\n"                                             \
    ".if \\R > 1\nkb_g_bias_row \\C, 16, 17, 18, 19\n.endif\n"                                   \
    ".if \\R > 2\nkb_g_bias_row \\C, 20, 21, 22, 23\n.endif\n"                                   \
    ".if \\R > 3\nkb_g_bias_row \\C, 24, 25, 26, 27\n.endif\n"                                   \
    ".if \\R > 4\nkb_g_bias_row \\C, 28, 29, 30, 31\n.endif\n"                                   \
    ".endm\n"                                                                                    \
    /* one row of C: FP16, compacted, clamped, stored at row pointer x<xc> */                    \
    ".macro kb_g_outrow C, a, b, c, d, xc\n"                                                     \
    "fcvt z\\a\\().h, p1/m, z\\a\\().s\n"                                                        \
    ".if \\C > 1\nfcvt z\\b\\().h, p1/m, z\\b\\().s\n.endif\n"                                   \
    ".if \\C > 2\nfcvt z\\c\\().h, p1/m, z\\c\\().s\n.endif\n"                                   \
    ".if \\C > 3\nfcvt z\\d\\().h, p1/m, z\\d\\().s\n.endif\n"                                   \
    ".if \\C == 4\n"                                                                             \
    "uzp1 z\\a\\().h, z\\a\\().h, z\\b\\().h\n"                                                  \
    "uzp1 z\\b\\().h, z\\c\\().h, z\\d\\().h\n"                                                  \
    "kb_fclamp \\a, 5, 6\nkb_fclamp \\b, 5, 6\n"                                                 \
    "kb_st1h_x2_ss \\a, 9, \\xc, 10\n"                                                           \
    ".elseif \\C == 3\n"                                                                         \
    "uzp1 z\\a\\().h, z\\a\\().h, z\\b\\().h\n"                                                  \
    "uzp1 z\\b\\().h, z\\c\\().h, z\\c\\().h\n"                                                  \
    "kb_fclamp \\a, 5, 6\nkb_fclamp \\b, 5, 6\n"                                                 \
    "kb_st1h_x2_ss \\a, 9, \\xc, 10\n"                                                           \
    ".elseif \\C == 2\n"                                                                         \
    "uzp1 z\\a\\().h, z\\a\\().h, z\\b\\().h\n"                                                  \
    "kb_fclamp \\a, 5, 6\n"                                                                      \
    "st1h {z\\a\\().h}, p3, [x\\xc, x10, lsl #1]\n"                                              \
    ".else\n"                                                                                    \
    "kb_fclamp \\a, 5, 6\n"                                                                      \
    "st1h {z\\a\\().s}, p3, [x\\xc, x10, lsl #1]\n"                                              \
    ".endif\n"                                                                                   \
    ".endm\n"                                                                                    \
    ".macro kb_g_out R, C\n"                                                                     \
    ".if \\C > 2\nkb_whilelt_pn_h_vlx2 9, 10, 3\n"                                               \
    ".elseif \\C == 2\nwhilelt p3.h, x10, x3\n"                                                  \
    ".elseif \\C == 1\nwhilelt p3.s, x10, x3\n.endif\n"                                          \
    "kb_g_outrow \\C, 12, 13, 14, 15, 19\n"                                                      \
    ".if \\R > 1\nkb_g_outrow \\C, 16, 17, 18, 19, 20\n.endif\n"                                 \
    ".if \\R > 2\nkb_g_outrow \\C, 20, 21, 22, 23, 21\n.endif\n"                                 \
    ".if \\R > 3\nkb_g_outrow \\C, 24, 25, 26, 27, 22\n.endif\n"                                 \
    ".if \\R > 4\nkb_g_outrow \\C, 28, 29, 30, 31, 23\n.endif\n"                                 \
    ".endm\n"                                                                                    \
    /* a tile: R rows x C vectors of the block at x9 (x9 moves to the next block) */ \
    ".macro kb_g_tile R, C\n"                                                                     \
    "mov x11, x6\n"                                                                               \
    ".if \\R > 1\n"                                                                               \
    "add x12, x11, x4\n"                                                                          \
    ".endif\n"                                                                                    \
    ".if \\R > 2\n"                                                                               \
    "add x13, x12, x4\n"                                                                          \
    ".endif\n"                                                                                    \
    ".if \\R > 3\n"                                                                               \
    "add x14, x13, x4\n"                                                                          \
    ".endif\n"                                                                                    \
    ".if \\R > 4\n"                                                                               \
    "add x15, x14, x4\n"                                                                          \
    ".endif\n"                                                                                    \
    "kb_g_bias \\R, \\C\n"                                                                        \
    "addvl x9, x9, #2\n"                                                                          \
    ".if \\C == 4\n"                                                                              \
    "lsr x16, x2, #6\n"                                                                           \
    "cbz x16, 2f\n"                                                                               \
    "add x9, x9, x26, lsr #2\n"                              /* x9, x25: loads at -32 ... 28 */   \
    "add x25, x9, x26, lsr #1\n"                                                                  \
    "1:\n"                                                   /* 32 k pairs a step */              \
    "kb_g_main \\R, 0, 9, -32\n"                                                                  \
    "kb_g_main \\R, 1, 9, -16\n"                                                                  \
    "kb_g_main \\R, 2, 9, 0\n"                                                                    \
    "kb_g_main \\R, 3, 9, 16\n"                                                                   \
    "kb_g_main \\R, 4, 25, -32\n"                                                                 \
    "kb_g_main \\R, 5, 25, -16\n"                                                                 \
    "kb_g_main \\R, 6, 25, 0\n"                                                                   \
    "kb_g_main \\R, 7, 25, 16\n"                                                                  \
    "kb_g_aadd \\R, 128\n"                                                                        \
    "add x9, x9, x26\n"                                                                           \
    "add x25, x25, x26\n"                                                                         \
    "subs x16, x16, #1\n"                                                                         \
    "b.ne 1b\n"                                                                                   \
    "sub x9, x9, x26, lsr #2\n"                                                                   \
    "2:\n"                                                                                        \
    "and x25, x2, #32\n"                                     /* A's offset past the next block of K: 32 values, or none */ \
    "tbz x2, #5, 7f\n"                                                                            \
    "add x9, x9, x26, lsr #2\n"                              /* 16 k pairs */                     \
    "kb_g_main \\R, 0, 9, -32\n"                                                                  \
    "kb_g_main \\R, 1, 9, -16\n"                                                                  \
    "kb_g_main \\R, 2, 9, 0\n"                                                                    \
    "kb_g_main \\R, 3, 9, 16\n"                                                                   \
    "add x9, x9, x26, lsr #2\n"                                                                   \
    "7:\n"                                                                                        \
    "ubfx x16, x2, #3, #2\n"                                                                      \
    ".else\n"                                                                                     \
    "lsr x16, x2, #3\n"                                                                           \
    "mov x25, #0\n"                                                                               \
    ".endif\n"                                                                                    \
    "cbz x16, 4f\n"                                                                               \
    "3:\n"                                                   /* four k pairs a step */            \
    "kb_g_aldx \\R, p0\n"                                                                         \
    "kb_g_bld \\C, 0\n"                                                                           \
    "kb_g_kp \\R, \\C, 0\n"                                                                       \
    "kb_g_bld \\C, 4\n"                                                                           \
    "kb_g_kp \\R, \\C, 1\n"                                                                       \
    "kb_g_bld \\C, 8\n"                                                                           \
    "kb_g_kp \\R, \\C, 2\n"                                                                       \
    "kb_g_bld \\C, 12\n"                                                                          \
    "kb_g_kp \\R, \\C, 3\n"                                                                       \
    "addvl x9, x9, #16\n"                                                                         \
    "add x25, x25, #8\n"                                                                          \
    "subs x16, x16, #1\n"                                                                         \
    "b.ne 3b\n"                                                                                   \
    "4:\n"                                                   /* the last 1-7 k */                 \
    "cbz x17, 5f\n"                                                                               \
    "kb_g_aldx \\R, p2\n"                                                                         \
    "kb_g_bld \\C, 0\n"                                                                           \
    "kb_g_kp \\R, \\C, 0\n"                                                                       \
    "cmp x28, #2\n"                                                                               \
    "b.le 6f\n"                                                                                   \
    "kb_g_bld \\C, 4\n"                                                                           \
    "kb_g_kp \\R, \\C, 1\n"                                                                       \
    "cmp x28, #4\n"                                                                               \
    "b.le 6f\n"                                                                                   \
    "kb_g_bld \\C, 8\n"                                                                           \
    "kb_g_kp \\R, \\C, 2\n"                                                                       \
    "cmp x28, #6\n"                                                                               \
    "b.le 6f\n"                                                                                   \
    "kb_g_bld \\C, 12\n"                                                                          \
    "kb_g_kp \\R, \\C, 3\n"                                                                       \
    "6:\n"                                                                                        \
    "add x9, x9, x17\n"                                      /* past the last k pairs: the next block */ \
    "5:\n"                                                                                        \
    "kb_g_out \\R, \\C\n"                                                                         \
    ".endm\n"                                                                                     \
    /* a band of R rows: every whole block, then the last one's vectors */                       \
    ".macro kb_g_band R\n"                                                                       \
    ".if \\R > 1\nadd x20, x19, x5\n.endif\n"                                                    \
    ".if \\R > 2\nadd x21, x20, x5\n.endif\n"                                                    \
    ".if \\R > 3\nadd x22, x21, x5\n.endif\n"                                                    \
    ".if \\R > 4\nadd x23, x22, x5\n.endif\n"                                                    \
    "mov x9, x8\n"                                                                               \
    "mov x10, #0\n"                                                                              \
    "mov x24, x3\n"                                                                              \
    "10:\n"                                                  /* more than 3 VL32 columns */      \
    "cmp x24, x0\n"                                                                              \
    "b.le 11f\n"                                                                                 \
    "kb_g_tile \\R, 4\n"                                                                         \
    "add x10, x10, x27\n"                                                                        \
    "subs x24, x24, x27\n"                                                                       \
    "b.gt 10b\n"                                                                                 \
    "b 14f\n"                                                                                    \
    "11:\n"                                                  /* 1-3 vectors of columns */        \
    "cntw x16\n"                                                                                 \
    "cmp x24, x16, lsl #1\n"                                                                     \
    "b.gt 13f\n"                                                                                 \
    "cmp x24, x16\n"                                                                             \
    "b.gt 12f\n"                                                                                 \
    "kb_g_tile \\R, 1\n"                                                                         \
    "b 14f\n"                                                                                    \
    "12:\n"                                                                                      \
    "kb_g_tile \\R, 2\n"                                                                         \
    "b 14f\n"                                                                                    \
    "13:\n"                                                                                      \
    "kb_g_tile \\R, 3\n"                                                                         \
    "14:\n"                                                                                      \
    ".endm\n"

#define KB_GEMM_PURGE                                                                            \
    ".purgem kb_g_ald\n.purgem kb_g_aldx\n.purgem kb_g_aadd\n.purgem kb_g_bld\n"                 \
    ".purgem kb_g_kp\n.purgem kb_g_main\n.purgem kb_g_bias_row\n.purgem kb_g_bias\n"             \
    ".purgem kb_g_outrow\n.purgem kb_g_out\n.purgem kb_g_tile\n.purgem kb_g_band\n"

/* out of line: the driver and the public run entry point share one copy */
KB_NOINLINE static void kb_sve_gemm_core(const kb_sve_matmul_args *args) {
    register const kb_sve_matmul_args *x0 __asm__("x0") = args;
    __asm__ volatile(
        KB_SVE_ASM_BEGIN
        KB_GEMM_MACROS
        "ldp x6, x4, [%x[args], %[o_a]]\n"        /* A, lda (adjacent fields)  */
        "ldp x8, x1, [%x[args], %[o_rhs]]\n"      /* B, M                      */
        "ldp x3, x2, [%x[args], %[o_n]]\n"        /* N, K                      */
        "ldp x19, x5, [%x[args], %[o_dst]]\n"     /* C, ldc                    */
        "ldp s7, s8, [%x[args], %[o_lo]]\n"       /* the bounds rounded to FP16 */
        "fcvt h7, s7\n"
        "mov z5.h, h7\n"
        "fcvt h8, s8\n"
        "mov z6.h, h8\n"
        "ptrue p0.h\n"
        "ptrue p1.s\n"
        "kb_ptrue_pn_h 8\n"
        "cntw x27\n"
        "lsl x27, x27, #2\n"                      /* nr = 4 VL32               */
        "rdvl x26, #1\n"
        "lsl x26, x26, #7\n"                      /* 32 k pairs of a block     */
        "sub x0, x27, x27, lsr #2\n"              /* 3 VL32 (x0 held args)     */
        "and x28, x2, #7\n"
        "whilelt p2.h, xzr, x28\n"                /* A's last k                */
        "add x17, x28, #1\n"
        "lsr x17, x17, #1\n"                      /* the last 1-4 k pairs ...  */
        "rdvl x16, #1\n"
        "mul x17, x17, x16\n"
        "lsl x17, x17, #2\n"                      /* ... 4 vectors each, bytes */
        "20:\n"                                   /* bands of five rows, then the rest */
        "cmp x1, #5\n"
        "b.ge 25f\n"
        "cmp x1, #3\n"
        "b.gt 24f\n"
        "b.eq 23f\n"
        "cmp x1, #2\n"
        "b.eq 22f\n"
        "kb_g_band 1\n"
        "b 29f\n"
        "22:\n"
        "kb_g_band 2\n"
        "b 29f\n"
        "23:\n"
        "kb_g_band 3\n"
        "b 29f\n"
        "24:\n"
        "kb_g_band 4\n"
        "b 29f\n"
        "25:\n"
        "kb_g_band 5\n"
        "add x16, x4, x4, lsl #2\n"
        "add x6, x6, x16\n"
        "add x16, x5, x5, lsl #2\n"
        "add x19, x19, x16\n"
        "subs x1, x1, #5\n"
        "b.ne 20b\n"
        "29:\n"
        KB_GEMM_PURGE
        KB_SVE_ASM_END
        : [args] "+r"(x0)
        : [o_a] "I"(offsetof(kb_sve_matmul_args, a)),
          [o_rhs] "I"(offsetof(kb_sve_matmul_args, rhs)),
          [o_n] "I"(offsetof(kb_sve_matmul_args, n)),
          [o_dst] "I"(offsetof(kb_sve_matmul_args, dst)),
          [o_lo] "I"(offsetof(kb_sve_matmul_args, clamp_min))
        : "x1", "x2", "x3", "x4", "x5", "x6", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
          "x15", "x16", "x17", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27",
          "x28",
          KB_SVE_CLOBBER_VEC);
}

/* ---- micro-kernel interface -------------------------------------------- */

size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_m_step(void) { return KB_SVE_GEMM_ROWS; }
size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_n_step(void) { return kb_sve_block(); }
size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_mr(void) { return KB_SVE_GEMM_ROWS; }
size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_nr(void) { return kb_sve_block(); }
size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_kr(void) { return KB_SVE_KR; }
size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_sr(void) { return KB_SVE_SR; }

size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_lhs_offset(size_t m_idx, size_t lhs_stride) {
    return m_idx * lhs_stride;
}

size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_rhs_packed_offset(size_t n_idx, size_t k) {
    return kb_sve_rhs_offset(n_idx, kb_sve_block(), k);
}

size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_dst_offset(size_t m_idx, size_t n_idx,
                                                                         size_t dst_stride) {
    return m_idx * dst_stride + n_idx * sizeof(kb_f16);
}

size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_dst_size(size_t m, size_t n) {
    return m * n * sizeof(kb_f16);
}

/* The whole m x n of C in one call (any m >= 1, n >= 1, k >= 1); lhs_stride
 * and dst_stride_row in bytes, dst_stride_col must be sizeof(kb_f16). */
void kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_run_matmul(
    size_t m, size_t n, size_t k, const void *lhs, size_t lhs_stride, const void *rhs_packed,
    void *dst, size_t dst_stride_row, size_t dst_stride_col, float clamp_min, float clamp_max) {
    (void)dst_stride_col;
    kb_sve_matmul_args a = {
        .a = lhs, .lda = lhs_stride, .rhs = rhs_packed, .m = m, .n = n, .k = k,
        .dst = dst, .ldc = dst_stride_row, .clamp_min = clamp_min, .clamp_max = clamp_max,
    };
    kb_sve_gemm_core(&a);
}

const kb_sve_matmul_ukernel kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot = {
    .name = "matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot",
    .get_m_step = kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_m_step,
    .get_n_step = kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_n_step,
    .get_mr = kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_mr,
    .get_nr = kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_nr,
    .get_kr = kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_kr,
    .get_sr = kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_sr,
    .get_lhs_offset = kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_lhs_offset,
    .get_rhs_packed_offset = kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_rhs_packed_offset,
    .get_dst_offset = kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_dst_offset,
    .get_dst_size = kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_dst_size,
    .run_matmul = kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_run_matmul,
    .core = kb_sve_gemm_core,
};

/* Functions kbench's own drivers never call (kbench run --coverage lists them
 * apart, with the reason). */
#define KB_WHY "the public micro-kernel interface: kbench's SVE driver calls the core with its own row split"
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_mr, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_nr, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_sr, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_lhs_offset, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_rhs_packed_offset, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_dst_offset, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_get_dst_size, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_run_matmul, KB_WHY);
#undef KB_WHY

#endif /* __aarch64__ */
