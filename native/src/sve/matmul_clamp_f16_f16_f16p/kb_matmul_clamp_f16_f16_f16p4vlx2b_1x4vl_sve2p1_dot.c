/* kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot.c
 *
 * FP16 GEMV micro-kernel for SVE2.1 (non-streaming, M = 1): a plain FP16 LHS
 * row times B packed with its bias in x16p4vlx2b (blocks of nr = 4 VL32
 * columns, see kb_sve.h), into one FP16 row of C.
 *
 * Four whole blocks at a time while there are four (their 16 FP32
 * accumulators in z16-z31: block b, vector c in z(16 + 4b + c)), then blocks
 * one at a time, the last one with only its vectors that hold columns (1, 2,
 * 3 or 4). The row's k values come eight at a time (four k pairs) replicated into
 * every 128-bit segment (LD1RQH), shared by every block of the step; a block's
 * k pair is one four-vector load (LD1H {z8-z11} or {z12-z15}) and four FDOTs
 * by element of A, each vector of B used once: the FDOT floor (one per VL32
 * columns and k pair). K goes sixteen k pairs per step (whole blocks only),
 * then four, then the last one to four pairs (A read under a predicate up to
 * K, so an odd K's missing value is +0, as the packed B's).
 *
 * Accumulation and store as the GEMM kernel of this family
 * (kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot) and KleidiAI's SVE2.1
 * kernel: from the bias, one FDOT per k pair in increasing k, FCVT to FP16,
 * FCLAMP against the bounds rounded to FP16 (NaN becomes clamp_min). */
#include "../kb_sve.h"

#if defined(__aarch64__)
#include "../kb_sve_asm.h"

#include <stddef.h>

/* Registers:
 *   x1 A's row       x2 K             x4 B, the current block   x5 C, its first column
 *   x6 columns left  x11-x14 B, the tile's blocks    x16 a count   x17 the next block
 *   x23 A            x25 A's offset (values)         x26 64 vectors (bytes)
 *   x27 nr           x28 a block (bytes)
 *   z0-z3 A   z6, z7 clamp_min, clamp_max (FP16)   z8-z15 B   z16-z31 accumulators
 *   p0 all (.h)  p1 all (.s)  p2 A's last k  p3 / pn9 the last block's columns  pn8 all */
#define KB_GEMV_MACROS                                                                           \
    ".macro kb_v_bias_blk C, xb, a, b, c, d\n"                                                   \
    "ld1h {z\\a\\().s}, p1/z, [x\\xb]\n"                                                         \
    ".if \\C > 1\nld1h {z\\b\\().s}, p1/z, [x\\xb, #1, mul vl]\n.endif\n"                        \
    ".if \\C > 2\nld1h {z\\c\\().s}, p1/z, [x\\xb, #2, mul vl]\n.endif\n"                        \
    ".if \\C > 3\nld1h {z\\d\\().s}, p1/z, [x\\xb, #3, mul vl]\n.endif\n"                        \
    "fcvt z\\a\\().s, p1/m, z\\a\\().h\n"                                                        \
    ".if \\C > 1\nfcvt z\\b\\().s, p1/m, z\\b\\().h\n.endif\n"                                   \
    ".if \\C > 2\nfcvt z\\c\\().s, p1/m, z\\c\\().h\n.endif\n"                                   \
    ".if \\C > 3\nfcvt z\\d\\().s, p1/m, z\\d\\().h\n.endif\n"                                   \
    "addvl x\\xb, x\\xb, #2\n"                                                                   \
    ".endm\n"                                                                                    \
    ".macro kb_v_bias NB, C\n"                                                                   \
    "kb_v_bias_blk \\C, 11, 16, 17, 18, 19\n"                                                    \
    ".if \\NB > 1\n"                                                                             \
    "kb_v_bias_blk \\C, 12, 20, 21, 22, 23\n"                                                    \
    "kb_v_bias_blk \\C, 13, 24, 25, 26, 27\n"                                                    \
    "kb_v_bias_blk \\C, 14, 28, 29, 30, 31\n"                                                    \
    ".endif\n"                                                                                   \
    ".endm\n"                                                                                    \
    /* the blocks' pointers: op x, x, x26, lsr #1 (half a step), or by n vectors, or a step */   \
    ".macro kb_v_bhalf NB, op\n"                                                                 \
    "\\op x11, x11, x26, lsr #1\n"                                                               \
    ".if \\NB > 1\n\\op x12, x12, x26, lsr #1\n\\op x13, x13, x26, lsr #1\n"                     \
    "\\op x14, x14, x26, lsr #1\n.endif\n"                                                       \
    ".endm\n"                                                                                    \
    ".macro kb_v_bvl NB, n\n"                                                                    \
    "addvl x11, x11, #\\n\n"                                                                     \
    ".if \\NB > 1\naddvl x12, x12, #\\n\naddvl x13, x13, #\\n\naddvl x14, x14, #\\n\n.endif\n"   \
    ".endm\n"                                                                                    \
    ".macro kb_v_bstep NB\n"                                                                     \
    "add x11, x11, x26\n"                                                                        \
    ".if \\NB > 1\nadd x12, x12, x26\nadd x13, x13, x26\nadd x14, x14, x26\n.endif\n"            \
    ".endm\n"                                                                                    \
    ".macro kb_v_bld C, zt, xn, imm\n"                                                           \
    ".if \\C > 2\nkb_ld1h_x4 \\zt, 8, \\xn, \\imm\n.else\nkb_ld1h_x2 \\zt, 8, \\xn, \\imm\n.endif\n" \
    ".endm\n"                                                                                    \
    /* one k pair of every block: its load at imm vectors, then the FDOTs with A's z<zm>[i] */   \
    ".macro kb_v_kp NB, C, zm, i, imm\n"                                                         \
    ".irp b, 0, 1, 2, 3\n.if \\b < \\NB\n"                                                       \
    "kb_v_bld \\C, (8 + 4 * (\\b %% 2)), (11 + \\b), \\imm\n"                                     \
    ".irp c, 0, 1, 2, 3\n.if \\c < \\C\n"                                                        \
    "kb_fdot (16 + 4 * \\b + \\c), (8 + 4 * (\\b %% 2) + \\c), \\zm, \\i\n"                       \
    ".endif\n.endr\n.endif\n.endr\n"                                                             \
    ".endm\n"                                                                                    \
    /* a block's row of C: FP16, compacted, clamped, stored at x5 + imm vectors */               \
    ".macro kb_v_outblk C, pn, a, b, c, d, imm\n"                                                    \
    "fcvt z\\a\\().h, p1/m, z\\a\\().s\n"                                                        \
    ".if \\C > 1\nfcvt z\\b\\().h, p1/m, z\\b\\().s\n.endif\n"                                   \
    ".if \\C > 2\nfcvt z\\c\\().h, p1/m, z\\c\\().s\n.endif\n"                                   \
    ".if \\C > 3\nfcvt z\\d\\().h, p1/m, z\\d\\().s\n.endif\n"                                   \
    ".if \\C == 4\n"                                                                             \
    "uzp1 z\\a\\().h, z\\a\\().h, z\\b\\().h\n"                                                  \
    "uzp1 z\\b\\().h, z\\c\\().h, z\\d\\().h\n"                                                  \
    "kb_fclamp \\a, 6, 7\nkb_fclamp \\b, 6, 7\n"                                                 \
    "kb_st1h_x2 \\a, \\pn, 5, \\imm\n"                                                              \
    ".elseif \\C == 3\n"                                                                         \
    "uzp1 z\\a\\().h, z\\a\\().h, z\\b\\().h\n"                                                  \
    "uzp1 z\\b\\().h, z\\c\\().h, z\\c\\().h\n"                                                  \
    "kb_fclamp \\a, 6, 7\nkb_fclamp \\b, 6, 7\n"                                                 \
    "kb_st1h_x2 \\a, 9, 5, 0\n"                                                                  \
    ".elseif \\C == 2\n"                                                                         \
    "uzp1 z\\a\\().h, z\\a\\().h, z\\b\\().h\n"                                                  \
    "kb_fclamp \\a, 6, 7\n"                                                                      \
    "st1h {z\\a\\().h}, p3, [x5]\n"                                                              \
    ".else\n"                                                                                    \
    "kb_fclamp \\a, 6, 7\n"                                                                      \
    "st1h {z\\a\\().s}, p3, [x5]\n"                                                              \
    ".endif\n"                                                                                   \
    ".endm\n"                                                                                    \
    ".macro kb_v_out NB, C\n"                                                                    \
    ".if \\NB == 1 && \\C > 2\nkb_whilelt_pn_h_vlx2 9, 31, 6\n"                                              \
    ".elseif \\C == 2\nwhilelt p3.h, xzr, x6\n"                                                  \
    ".elseif \\C == 1\nwhilelt p3.s, xzr, x6\n.endif\n"                                          \
    ".if \\NB > 1\n"                                          /* whole blocks */                 \
    "kb_v_outblk \\C, 8, 16, 17, 18, 19, 0\n"                                                    \
    "kb_v_outblk \\C, 8, 20, 21, 22, 23, 2\n"                                                    \
    "kb_v_outblk \\C, 8, 24, 25, 26, 27, 4\n"                                                    \
    "kb_v_outblk \\C, 8, 28, 29, 30, 31, 6\n"                                                    \
    ".else\n"                                                  /* up to the columns left */      \
    "kb_v_outblk \\C, 9, 16, 17, 18, 19, 0\n"                                                    \
    ".endif\n"                                                                                   \
    ".endm\n"                                                                                    \
    /* a tile: NB blocks (4, or 1) x C vectors from x4; x4 moves past them */                    \
    ".macro kb_v_tile NB, C\n"                                                                   \
    "mov x11, x4\n"                                                                              \
    ".if \\NB > 1\n"                                                                             \
    "add x12, x11, x28\nadd x13, x12, x28\nadd x14, x13, x28\nadd x17, x14, x28\n"               \
    ".else\n"                                                                                    \
    "add x17, x11, x28\n"                                                                        \
    ".endif\n"                                                                                   \
    "kb_v_bias \\NB, \\C\n"                                                                      \
    "mov x23, x1\n"                                                                              \
    ".if \\C == 4\n"                                                                             \
    "lsr x16, x2, #5\n"                                                                          \
    "cbz x16, 2f\n"                                                                              \
    "kb_v_bhalf \\NB, add\n"                                 /* loads at -32 ... 28 */           \
    "1:\n"                                                   /* 16 k pairs a step */             \
    "ld1rqh {z0.h}, p0/z, [x23]\n"                                                               \
    "ld1rqh {z1.h}, p0/z, [x23, #16]\n"                                                          \
    "ld1rqh {z2.h}, p0/z, [x23, #32]\n"                                                          \
    "ld1rqh {z3.h}, p0/z, [x23, #48]\n"                                                          \
    "kb_v_kp \\NB, 4, 0, 0, -32\nkb_v_kp \\NB, 4, 0, 1, -28\n"                                   \
    "kb_v_kp \\NB, 4, 0, 2, -24\nkb_v_kp \\NB, 4, 0, 3, -20\n"                                   \
    "kb_v_kp \\NB, 4, 1, 0, -16\nkb_v_kp \\NB, 4, 1, 1, -12\n"                                   \
    "kb_v_kp \\NB, 4, 1, 2, -8\nkb_v_kp \\NB, 4, 1, 3, -4\n"                                     \
    "kb_v_kp \\NB, 4, 2, 0, 0\nkb_v_kp \\NB, 4, 2, 1, 4\n"                                       \
    "kb_v_kp \\NB, 4, 2, 2, 8\nkb_v_kp \\NB, 4, 2, 3, 12\n"                                      \
    "kb_v_kp \\NB, 4, 3, 0, 16\nkb_v_kp \\NB, 4, 3, 1, 20\n"                                     \
    "kb_v_kp \\NB, 4, 3, 2, 24\nkb_v_kp \\NB, 4, 3, 3, 28\n"                                     \
    "add x23, x23, #64\n"                                                                        \
    "kb_v_bstep \\NB\n"                                                                          \
    "subs x16, x16, #1\n"                                                                        \
    "b.ne 1b\n"                                                                                  \
    "kb_v_bhalf \\NB, sub\n"                                                                     \
    "2:\n"                                                                                       \
    "ubfx x16, x2, #3, #2\n"                                                                     \
    ".else\n"                                                                                    \
    "lsr x16, x2, #3\n"                                                                          \
    ".endif\n"                                                                                   \
    "mov x25, #0\n"                                                                              \
    "cbz x16, 4f\n"                                                                              \
    "3:\n"                                                   /* four k pairs a step */           \
    "ld1rqh {z0.h}, p0/z, [x23, x25, lsl #1]\n"                                                  \
    "kb_v_kp \\NB, \\C, 0, 0, 0\nkb_v_kp \\NB, \\C, 0, 1, 4\n"                                   \
    "kb_v_kp \\NB, \\C, 0, 2, 8\nkb_v_kp \\NB, \\C, 0, 3, 12\n"                                  \
    "kb_v_bvl \\NB, 16\n"                                                                        \
    "add x25, x25, #8\n"                                                                         \
    "subs x16, x16, #1\n"                                                                        \
    "b.ne 3b\n"                                                                                  \
    "4:\n"                                                   /* the last 1-7 k */                \
    "ands x16, x2, #7\n"                                                                         \
    "b.eq 5f\n"                                                                                  \
    "whilelt p2.h, xzr, x16\n"                                                                   \
    "ld1rqh {z0.h}, p2/z, [x23, x25, lsl #1]\n"                                                  \
    "kb_v_kp \\NB, \\C, 0, 0, 0\n"                                                               \
    "cmp x16, #2\nb.le 5f\n"                                                                     \
    "kb_v_kp \\NB, \\C, 0, 1, 4\n"                                                               \
    "cmp x16, #4\nb.le 5f\n"                                                                     \
    "kb_v_kp \\NB, \\C, 0, 2, 8\n"                                                               \
    "cmp x16, #6\nb.le 5f\n"                                                                     \
    "kb_v_kp \\NB, \\C, 0, 3, 12\n"                                                              \
    "5:\n"                                                                                       \
    "kb_v_out \\NB, \\C\n"                                                                       \
    "mov x4, x17\n"                                                                              \
    ".endm\n"

#define KB_GEMV_PURGE                                                                            \
    ".purgem kb_v_bias_blk\n.purgem kb_v_bias\n.purgem kb_v_bhalf\n.purgem kb_v_bvl\n"           \
    ".purgem kb_v_bstep\n.purgem kb_v_bld\n.purgem kb_v_kp\n.purgem kb_v_outblk\n"               \
    ".purgem kb_v_out\n.purgem kb_v_tile\n"

/* out of line: the driver and the public run entry point share one copy */
KB_NOINLINE static void kb_sve_gemv_core(const kb_sve_matmul_args *args) {
    __asm__ volatile(
        KB_SVE_ASM_BEGIN
        KB_GEMV_MACROS
        "ldr x1, [%x[args], %[o_a]]\n"
        "ldr x4, [%x[args], %[o_rhs]]\n"
        "ldp x6, x2, [%x[args], %[o_n]]\n"        /* N, K (adjacent fields)    */
        "ldr x5, [%x[args], %[o_dst]]\n"
        "ldp s6, s7, [%x[args], %[o_lo]]\n"       /* the bounds rounded to FP16 */
        "fcvt h6, s6\n"
        "mov z6.h, h6\n"
        "fcvt h7, s7\n"
        "mov z7.h, h7\n"
        "ptrue p0.h\n"
        "ptrue p1.s\n"
        "kb_ptrue_pn_h 8\n"
        "cntw x27\n"
        "lsl x27, x27, #2\n"                      /* nr = 4 VL32               */
        "rdvl x26, #1\n"
        "lsl x26, x26, #6\n"                      /* 16 k pairs of a block     */
        "add x28, x2, #1\n"
        "lsr x28, x28, #1\n"
        "lsl x28, x28, #2\n"
        "add x28, x28, #2\n"                      /* a block: 2 + 4 ceil(K/2)  */
        "rdvl x16, #1\n"
        "mul x28, x28, x16\n"                     /* ... vectors, in bytes     */
        "40:\n"                                   /* four whole blocks         */
        "cmp x6, x27, lsl #2\n"
        "b.lt 45f\n"
        "kb_v_tile 4, 4\n"
        "add x5, x5, x27, lsl #3\n"
        "sub x6, x6, x27, lsl #2\n"
        "b 40b\n"
        "45:\n"                                   /* a block of > 3 VL32 columns */
        "sub x16, x27, x27, lsr #2\n"
        "cmp x6, x16\n"
        "b.le 46f\n"
        "kb_v_tile 1, 4\n"
        "add x5, x5, x27, lsl #1\n"
        "subs x6, x6, x27\n"
        "b.gt 45b\n"
        "b 49f\n"
        "46:\n"                                   /* 1-3 vectors of columns    */
        "cbz x6, 49f\n"
        "cntw x16\n"
        "cmp x6, x16, lsl #1\n"
        "b.gt 48f\n"
        "cmp x6, x16\n"
        "b.gt 47f\n"
        "kb_v_tile 1, 1\n"
        "b 49f\n"
        "47:\n"
        "kb_v_tile 1, 2\n"
        "b 49f\n"
        "48:\n"
        "kb_v_tile 1, 3\n"
        "49:\n"
        KB_GEMV_PURGE
        KB_SVE_ASM_END
        :
        : [args] "r"(args),
          [o_a] "I"(offsetof(kb_sve_matmul_args, a)),
          [o_rhs] "I"(offsetof(kb_sve_matmul_args, rhs)),
          [o_n] "I"(offsetof(kb_sve_matmul_args, n)),
          [o_dst] "I"(offsetof(kb_sve_matmul_args, dst)),
          [o_lo] "I"(offsetof(kb_sve_matmul_args, clamp_min))
        : "x1", "x2", "x4", "x5", "x6", "x11", "x12", "x13", "x14", "x16", "x17", "x23", "x25",
          "x26", "x27", "x28", KB_SVE_CLOBBER_VEC);
}

/* ---- micro-kernel interface -------------------------------------------- */

size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_m_step(void) { return 1; }
size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_n_step(void) { return kb_sve_block(); }
size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_mr(void) { return 1; }
size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_nr(void) { return kb_sve_block(); }
size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_kr(void) { return KB_SVE_KR; }
size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_sr(void) { return KB_SVE_SR; }

size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_lhs_offset(size_t m_idx, size_t lhs_stride) {
    return m_idx * lhs_stride;
}

size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_rhs_packed_offset(size_t n_idx, size_t k) {
    return kb_sve_rhs_offset(n_idx, kb_sve_block(), k);
}

size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_dst_offset(size_t m_idx, size_t n_idx,
                                                                         size_t dst_stride) {
    return m_idx * dst_stride + n_idx * sizeof(kb_f16);
}

size_t kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_dst_size(size_t m, size_t n) {
    return m * n * sizeof(kb_f16);
}

/* Each of the m rows is one GEMV (any n >= 1, k >= 1); lhs_stride and
 * dst_stride_row in bytes, dst_stride_col must be sizeof(kb_f16). */
void kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_run_matmul(
    size_t m, size_t n, size_t k, const void *lhs, size_t lhs_stride, const void *rhs_packed,
    void *dst, size_t dst_stride_row, size_t dst_stride_col, float clamp_min, float clamp_max) {
    (void)dst_stride_col;
    for (size_t i = 0; i < m; i++) {
        kb_sve_matmul_args a = {
            .a = (const unsigned char *)lhs + i * lhs_stride, .lda = lhs_stride,
            .rhs = rhs_packed, .m = 1, .n = n, .k = k,
            .dst = (unsigned char *)dst + i * dst_stride_row, .ldc = dst_stride_row,
            .clamp_min = clamp_min, .clamp_max = clamp_max,
        };
        kb_sve_gemv_core(&a);
    }
}

const kb_sve_matmul_ukernel kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot = {
    .name = "matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot",
    .get_m_step = kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_m_step,
    .get_n_step = kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_n_step,
    .get_mr = kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_mr,
    .get_nr = kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_nr,
    .get_kr = kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_kr,
    .get_sr = kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_sr,
    .get_lhs_offset = kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_lhs_offset,
    .get_rhs_packed_offset = kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_rhs_packed_offset,
    .get_dst_offset = kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_dst_offset,
    .get_dst_size = kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_dst_size,
    .run_matmul = kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_run_matmul,
    .core = kb_sve_gemv_core,
};

/* Functions kbench's own drivers never call (kbench run --coverage lists them
 * apart, with the reason). */
#define KB_WHY "the public micro-kernel interface: kbench's SVE driver calls the core with its own split of the columns"
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_mr, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_nr, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_sr, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_lhs_offset, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_rhs_packed_offset, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_dst_offset, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_get_dst_size, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_run_matmul, KB_WHY);
#undef KB_WHY

#endif /* __aarch64__ */
