/* kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve.c — packs a K x N FP16 RHS and its
 * FP16 bias into the x16p4vlx2b layout the SVE2.1 GEMM and GEMV kernels read
 * (KleidiAI's x16p16vsx2b; see kb_sve.h).
 *
 * For each block of nr = 4 VL32 columns: nr bias values, then for each k pair
 * the values b[k][j], b[k+1][j] of every column j of the block, column by
 * column. Columns past N, and the k past an odd K, are zero.
 *
 * A block's columns are one or more segments of consecutive columns of a row
 * of B: the whole block for plain B, a panel's 16 columns for the portable
 * layout at vector lengths above 128 bits (its panels are narrower than a
 * block there). Per segment and k pair: two two-vector loads (rows k and
 * k + 1, predicated to the segment's columns up to N), ZIP1 and ZIP2 (the
 * pairs, in column order) and one four-vector store of the segment's 2 x
 * columns values. SVE code (non-streaming), like the kernels. */
#include "../kb_sve.h"

#if defined(__aarch64__)
#include "../kb_sve_asm.h"

#include <stddef.h>

typedef struct rhs_args {
    const kb_f16 *data;     /* B through the view (kb_bview)                      */
    size_t panel_cols;      /* columns per panel (N for plain B)                  */
    size_t panel_bytes;     /* bytes between panels                               */
    size_t row_bytes;       /* bytes between rows                                 */
    const kb_f16 *bias;     /* N values, or NULL: zeros                           */
    size_t n;
    size_t k;
    size_t seg;             /* columns per segment: nr, or the panels' (divides nr) */
    kb_f16 *out;
} rhs_args;

/* Registers: x1 B  x2 panel columns  x3 panel bytes  x4 row bytes  x5 bias
 * x6 N  x7 K  x8 segment columns  x9 the block's output  x10 the block's
 * first column  x11 nr  x12 the segment's first column  x13 B, the segment
 * x14 the segment's output  x15 a count  x16, x17 scratch  x19 two rows
 * x20 a row (values)  x21 the output of a k pair  x22 a block's k pairs (bytes)
 * p0 all  pn8 all  pn10 the block's columns  pn11 the segment's columns
 * pn12 the segment's 2 x columns output values  z31 zero */
KB_NOINLINE static void rhs_pack_core(const rhs_args *g) {
    __asm__ volatile(
        KB_SVE_ASM_BEGIN
        "ldr x1, [%x[g], %[o_data]]\n"
        "ldr x2, [%x[g], %[o_pc]]\n"
        "ldr x3, [%x[g], %[o_pb]]\n"
        "ldr x4, [%x[g], %[o_rb]]\n"
        "ldr x5, [%x[g], %[o_bias]]\n"
        "ldr x6, [%x[g], %[o_n]]\n"
        "ldr x7, [%x[g], %[o_k]]\n"
        "ldr x8, [%x[g], %[o_seg]]\n"
        "ldr x9, [%x[g], %[o_out]]\n"
        "kb_ptrue_pn_h 8\n"
        "cntw x11\n"
        "lsl x11, x11, #2\n"                      /* nr                        */
        "lsl x19, x4, #1\n"
        "lsr x20, x4, #1\n"
        "lsl x16, x8, #1\n"
        "kb_whilelt_pn_h_vlx4 12, 31, 16\n"
        "add x22, x7, #1\n"
        "lsr x22, x22, #1\n"
        "rdvl x16, #1\n"
        "mul x22, x22, x16\n"
        "lsl x22, x22, #2\n"                      /* 4 vectors a k pair        */
        "dup z31.h, #0\n"
        "mov x10, #0\n"
        "1:\n"                                    /* each block                */
        "kb_whilelt_pn_h_vlx2 10, 10, 6\n"
        "cbz x5, 2f\n"
        "kb_ld1h_x2_ss 0, 10, 5, 10\n"            /* the bias (zeros past N)   */
        "b 3f\n"
        "2:\n"
        "dup z0.h, #0\n"
        "dup z1.h, #0\n"
        "3:\n"
        "kb_st1h_x2 0, 8, 9, 0\n"
        "addvl x9, x9, #2\n"
        "mov x12, x10\n"
        "mov x14, x9\n"
        "4:\n"                                    /* each segment              */
        "udiv x16, x12, x2\n"                     /* panel, column in it       */
        "msub x17, x16, x2, x12\n"
        "madd x13, x16, x3, x1\n"
        "add x13, x13, x17, lsl #1\n"
        "add x17, x12, x8\n"
        "cmp x17, x6\n"
        "csel x17, x17, x6, lo\n"
        "kb_whilelt_pn_h_vlx2 11, 12, 17\n"       /* its columns up to N       */
        "mov x21, x14\n"
        "lsr x15, x7, #1\n"
        "cbz x15, 6f\n"
        "5:\n"                                    /* each k pair               */
        "kb_ld1h_x2 0, 11, 13, 0\n"
        "kb_ld1h_x2_ss 2, 11, 13, 20\n"
        "zip1 z4.h, z0.h, z2.h\n"
        "zip2 z5.h, z0.h, z2.h\n"
        "zip1 z6.h, z1.h, z3.h\n"
        "zip2 z7.h, z1.h, z3.h\n"
        "kb_st1h_x4 4, 12, 21, 0\n"
        "add x13, x13, x19\n"
        "addvl x21, x21, #4\n"
        "subs x15, x15, #1\n"
        "b.ne 5b\n"
        "6:\n"
        "tbz x7, #0, 7f\n"                        /* an odd K: its last k alone */
        "kb_ld1h_x2 0, 11, 13, 0\n"
        "zip1 z4.h, z0.h, z31.h\n"
        "zip2 z5.h, z0.h, z31.h\n"
        "zip1 z6.h, z1.h, z31.h\n"
        "zip2 z7.h, z1.h, z31.h\n"
        "kb_st1h_x4 4, 12, 21, 0\n"
        "7:\n"
        "add x12, x12, x8\n"
        "add x14, x14, x8, lsl #2\n"
        "sub x16, x12, x10\n"
        "cmp x16, x11\n"
        "b.lo 4b\n"
        "add x9, x9, x22\n"
        "add x10, x10, x11\n"
        "cmp x10, x6\n"
        "b.lo 1b\n"
        KB_SVE_ASM_END
        :
        : [g] "r"(g), [o_data] "I"(offsetof(rhs_args, data)),
          [o_pc] "I"(offsetof(rhs_args, panel_cols)), [o_pb] "I"(offsetof(rhs_args, panel_bytes)),
          [o_rb] "I"(offsetof(rhs_args, row_bytes)), [o_bias] "I"(offsetof(rhs_args, bias)),
          [o_n] "I"(offsetof(rhs_args, n)), [o_k] "I"(offsetof(rhs_args, k)),
          [o_seg] "I"(offsetof(rhs_args, seg)), [o_out] "I"(offsetof(rhs_args, out))
        : "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
          "x15", "x16", "x17", "x19", "x20", "x21", "x22", KB_SVE_CLOBBER_VEC);
}

/* nr is the running vector length's (the kernels' blocks: the assembly takes it from
 * CNTW); plain B is one segment per block, and panels narrower than a block (the
 * portable layout's 16 columns, which divide every nr) are its segments. */
void kb_sve_rhs_pack_view(const kb_bview *b, size_t n, size_t k, size_t nr, void *rhs_packed) {
    size_t seg = b->panel_cols >= n ? nr : b->panel_cols;
    rhs_args g = {
        .data = b->data, .panel_cols = b->panel_cols, .panel_bytes = b->panel_stride * sizeof(kb_f16),
        .row_bytes = b->row_stride * sizeof(kb_f16), .bias = b->bias, .n = n, .k = k, .seg = seg,
        .out = (kb_f16 *)rhs_packed,
    };
    rhs_pack_core(&g);
}

/* ---- the packer's public interface (KleidiAI-style) --------------------- */

size_t kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_get_n_step(void) { return kb_sve_block(); }

size_t kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_get_rhs_packed_stride(size_t k) {
    return kb_sve_rhs_block_bytes(kb_sve_block(), k);
}

size_t kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_get_rhs_packed_offset(size_t n_idx, size_t k) {
    return kb_sve_rhs_offset(n_idx, kb_sve_block(), k);
}

size_t kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_get_rhs_packed_size(size_t n, size_t k) {
    size_t nr = kb_sve_block();
    return kb_ceil_div(n, nr) * kb_sve_rhs_block_bytes(nr, k);
}

void kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_run(size_t n, size_t k, size_t nr, const void *rhs,
                                               size_t rhs_stride, const void *bias,
                                               void *rhs_packed) {
    if (nr != kb_sve_block()) return; /* packed for another vector length: nothing */
    kb_bview v = {
        .data = (const kb_f16 *)rhs, .panel_cols = n, .panel_stride = 0,
        .row_stride = rhs_stride / sizeof(kb_f16), .bias = (const kb_f16 *)bias,
        .bias_panel_stride = n,
    };
    kb_sve_rhs_pack_view(&v, n, k, nr, rhs_packed);
}

#define KB_WHY "the packer's public interface: kbench packs through kb_pack_b_native and its driver, with kb_sve_rhs_pack_view"
KB_NOT_DRIVEN(kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_get_n_step, KB_WHY);
KB_NOT_DRIVEN(kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_get_rhs_packed_stride, KB_WHY);
KB_NOT_DRIVEN(kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_get_rhs_packed_offset, KB_WHY);
KB_NOT_DRIVEN(kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_get_rhs_packed_size, KB_WHY);
KB_NOT_DRIVEN(kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_run, KB_WHY);
#undef KB_WHY

#endif /* __aarch64__ */
