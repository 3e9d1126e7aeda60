/* kb_lhs_pack_x16p2vlx2_x16_sme.c — packs an M x K FP16 LHS into the
 * x16p2vlx2 layout the SME GEMM kernels read (see kb_sme.h).
 *
 * For each block of mr rows and each k pair: a[m][k], a[m][k+1] for every
 * row m of the block, row by row. Rows past M, and the k past an odd K, are
 * zero. The drivers pack one block and a range of k pairs at a time, so the
 * buffer stays small whatever M and K are.
 *
 * Seen as 32-bit units (one k pair each), a block is a transpose: unit
 * (m, p) of the rows goes to position m of pair p's column. The whole k
 * pairs are transposed through ZA in streaming mode (SME1 instructions
 * only, so every SME CPU runs it): per step, 2 * VL32 pairs of the block's
 * mr = 2 * VL32 rows are loaded as horizontal tile slices (rows [0, VL32)
 * into za0 and za1, rows [VL32, mr) into za2 and za3; the first VL32 pairs
 * into za0/za2, the next into za1/za3; predicated loads zero the pairs past
 * the range) and stored as vertical slices: column p of za0, then of za2,
 * is pair p of the block. Full blocks load four rows of each half per loop
 * step; a block with fewer rows zeroes ZA first and loads its rows one by
 * one. A lone last k (odd K) is written by the C code around the assembly.
 * The packer enters and leaves streaming mode itself. */
#include "../kb_sme.h"

#if defined(__aarch64__)
#include "../kb_sme_asm.h"

#include <stddef.h>

typedef struct lhs_args {
    const kb_f16 *a;   /* row 0 at the first pair of the range */
    size_t lda_bytes;
    size_t rows;       /* 1 .. mr                              */
    size_t pairs;      /* whole k pairs to pack (> 0)          */
    kb_f16 *dst;
} lhs_args;

static void lhs_pack_core(const lhs_args *g) {
    __asm__ volatile(
        ".arch armv8.2-a+sme\n"
        "smstart\n"
        "ptrue p0.s\n"
        "cntw x16\n"
        "ldr x1, [%x[g], %[o_a]]\n"
        "ldr x2, [%x[g], %[o_lda]]\n"
        "ldr x3, [%x[g], %[o_rows]]\n"
        "ldr x4, [%x[g], %[o_pairs]]\n"
        "ldr x13, [%x[g], %[o_dst]]\n"
        "rdsvl x17, #1\n"
        "mul x6, x16, x2\n"                       /* VL32 rows, in bytes    */
        "lsl x10, x2, #2\n"                       /* four rows              */
        "lsl x15, x16, #1\n"                      /* 2, 4, 6 vectors, in    */
        "lsl x19, x16, #2\n"                      /* 32-bit units           */
        "add x28, x15, x19\n"
        "mov x7, #0\n"                            /* first pair of the step */

        "1:\n"                                    /* ---- 2 * VL32 pairs -- */
        "add x8, x7, x16\n"
        "whilelt p1.s, x7, x4\n"                  /* pairs [c, c + VL32)    */
        "whilelt p2.s, x8, x4\n"                  /* pairs [c + VL32, ...)  */
        "cmp x3, x16, lsl #1\n"
        "b.ne 20f\n"
        "mov x20, x1\n"                           /* rows 0..3 and VL32 + 0..3 */
        "add x21, x1, x2\n"
        "add x22, x21, x2\n"
        "add x23, x22, x2\n"
        "add x24, x1, x6\n"
        "add x25, x21, x6\n"
        "add x26, x22, x6\n"
        "add x27, x23, x6\n"
        "mov w12, #0\n"
        "lsr x11, x16, #2\n"
        "2:\n"
        "ld1w {za0h.s[w12, 0]}, p1/z, [x20, x7, lsl #2]\n"
        "ld1w {za1h.s[w12, 0]}, p2/z, [x20, x8, lsl #2]\n"
        "ld1w {za2h.s[w12, 0]}, p1/z, [x24, x7, lsl #2]\n"
        "ld1w {za3h.s[w12, 0]}, p2/z, [x24, x8, lsl #2]\n"
        "ld1w {za0h.s[w12, 1]}, p1/z, [x21, x7, lsl #2]\n"
        "ld1w {za1h.s[w12, 1]}, p2/z, [x21, x8, lsl #2]\n"
        "ld1w {za2h.s[w12, 1]}, p1/z, [x25, x7, lsl #2]\n"
        "ld1w {za3h.s[w12, 1]}, p2/z, [x25, x8, lsl #2]\n"
        "ld1w {za0h.s[w12, 2]}, p1/z, [x22, x7, lsl #2]\n"
        "ld1w {za1h.s[w12, 2]}, p2/z, [x22, x8, lsl #2]\n"
        "ld1w {za2h.s[w12, 2]}, p1/z, [x26, x7, lsl #2]\n"
        "ld1w {za3h.s[w12, 2]}, p2/z, [x26, x8, lsl #2]\n"
        "ld1w {za0h.s[w12, 3]}, p1/z, [x23, x7, lsl #2]\n"
        "ld1w {za1h.s[w12, 3]}, p2/z, [x23, x8, lsl #2]\n"
        "ld1w {za2h.s[w12, 3]}, p1/z, [x27, x7, lsl #2]\n"
        "ld1w {za3h.s[w12, 3]}, p2/z, [x27, x8, lsl #2]\n"
        "add x20, x20, x10\n"
        "add x21, x21, x10\n"
        "add x22, x22, x10\n"
        "add x23, x23, x10\n"
        "add x24, x24, x10\n"
        "add x25, x25, x10\n"
        "add x26, x26, x10\n"
        "add x27, x27, x10\n"
        "add w12, w12, #4\n"
        "subs x11, x11, #1\n"
        "b.ne 2b\n"
        "b 30f\n"
        "20:\n"                                   /* fewer rows than mr     */
        "zero {za}\n"
        "mov x20, x1\n"
        "mov w12, #0\n"
        "cmp x3, x16\n"
        "csel x11, x3, x16, lo\n"
        "21:\n"
        "ld1w {za0h.s[w12, 0]}, p1/z, [x20, x7, lsl #2]\n"
        "ld1w {za1h.s[w12, 0]}, p2/z, [x20, x8, lsl #2]\n"
        "add x20, x20, x2\n"
        "add w12, w12, #1\n"
        "subs x11, x11, #1\n"
        "b.ne 21b\n"
        "subs x11, x3, x16\n"
        "b.le 30f\n"
        "mov w12, #0\n"
        "22:\n"
        "ld1w {za2h.s[w12, 0]}, p1/z, [x20, x7, lsl #2]\n"
        "ld1w {za3h.s[w12, 0]}, p2/z, [x20, x8, lsl #2]\n"
        "add x20, x20, x2\n"
        "add w12, w12, #1\n"
        "subs x11, x11, #1\n"
        "b.ne 22b\n"

        "30:\n"                                   /* ---- store columns --- */
        "sub x11, x4, x7\n"                       /* pairs [c, c + VL32)    */
        "cmp x11, x16\n"
        "csel x11, x11, x16, lo\n"
        KB_SME_LHS_STORE("za0v", "za2v", "31", "32", "33", "34")
        "subs x11, x4, x8\n"                      /* pairs [c + VL32, ...)  */
        "b.le 40f\n"
        "cmp x11, x16\n"
        "csel x11, x11, x16, lo\n"
        KB_SME_LHS_STORE("za1v", "za3v", "35", "36", "37", "38")
        "40:\n"
        "add x7, x7, x16, lsl #1\n"
        "cmp x7, x4\n"
        "b.lo 1b\n"
        "smstop\n"
        :
        : [g] "r"(g), [o_a] "I"(offsetof(lhs_args, a)), [o_lda] "I"(offsetof(lhs_args, lda_bytes)),
          [o_rows] "I"(offsetof(lhs_args, rows)), [o_pairs] "I"(offsetof(lhs_args, pairs)),
          [o_dst] "I"(offsetof(lhs_args, dst))
        : "x1", "x2", "x3", "x4", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
          "x15", "x16", "x17", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27",
          "x28", KB_SME_CLOBBER_VEC);
}
void kb_sme_lhs_pack_block(const kb_f16 *a, size_t lda, size_t rows, size_t k, size_t mr,
                           size_t p0, size_t pc, kb_f16 *dst) {
    size_t whole = pc;
    bool lone = (p0 + pc) * KB_SME_KR > k; /* the range ends with the lone k of an odd K */
    if (lone) whole--;
    if (whole) {
        lhs_args g = {a + p0 * KB_SME_KR, lda * sizeof(kb_f16), rows, whole, dst};
        lhs_pack_core(&g);
    }
    if (lone) {
        kb_f16 *d = dst + whole * KB_SME_KR * mr;
        for (size_t r = 0; r < rows; r++) {
            d[2 * r] = a[r * lda + k - 1];
            d[2 * r + 1] = 0;
        }
        for (size_t r = rows; r < mr; r++) d[2 * r] = d[2 * r + 1] = 0;
    }
}

size_t kb_lhs_pack_x16p2vlx2_x16_sme_get_m_step(size_t mr) { return mr; }

size_t kb_lhs_pack_x16p2vlx2_x16_sme_get_lhs_packed_offset(size_t m_idx, size_t k, size_t mr) {
    (void)mr;
    return kb_sme_lhs_offset(m_idx, k);
}

size_t kb_lhs_pack_x16p2vlx2_x16_sme_get_lhs_packed_size(size_t m, size_t k, size_t mr) {
    return kb_sme_lhs_offset(kb_sme_roundup(m, mr), k);
}

void kb_lhs_pack_x16p2vlx2_x16_sme_run(size_t m, size_t k, size_t mr, const void *lhs,
                                       size_t lhs_stride, void *lhs_packed) {
    size_t lda = lhs_stride / sizeof(kb_f16), kp = kb_sme_roundup(k, KB_SME_KR) / KB_SME_KR;
    for (size_t m0 = 0; m0 < m; m0 += mr) {
        size_t rows = m - m0 < mr ? m - m0 : mr;
        kb_f16 *dst = (kb_f16 *)((unsigned char *)lhs_packed + kb_sme_lhs_offset(m0, k));
        kb_sme_lhs_pack_block((const kb_f16 *)lhs + m0 * lda, lda, rows, k, mr, 0, kp, dst);
    }
}


/* Functions kbench's own drivers never call (kbench run --coverage lists them
 * apart, with the reason). */
#define KB_WHY "the public packer interface: kbench's SME driver packs a block at a time (its *_pack_block and *_pack_view helpers); examples/plugins/sme_ukernel runs it through the plugin ABI"
KB_NOT_DRIVEN(kb_lhs_pack_x16p2vlx2_x16_sme_get_m_step, KB_WHY);
KB_NOT_DRIVEN(kb_lhs_pack_x16p2vlx2_x16_sme_get_lhs_packed_offset, KB_WHY);
KB_NOT_DRIVEN(kb_lhs_pack_x16p2vlx2_x16_sme_get_lhs_packed_size, KB_WHY);
KB_NOT_DRIVEN(kb_lhs_pack_x16p2vlx2_x16_sme_run, KB_WHY);
#undef KB_WHY

#endif /* __aarch64__ */
