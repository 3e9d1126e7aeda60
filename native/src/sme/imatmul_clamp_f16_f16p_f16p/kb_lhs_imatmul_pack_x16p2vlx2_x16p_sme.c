/* kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme.c — packs an indirect LHS (a table
 * of row pointers) into the x16p2vlx2 layout, for convolution by indirect
 * GEMM.
 *
 * K is made of k_chunk_count chunks of k_chunk_length values (for a
 * convolution: one chunk per filter tap, the input channels of that tap),
 * each chunk padded to a whole k pair. The pointer table is blocked by the
 * kernel's m_step: for each block of mr rows and each chunk, mr pointers, the
 * pointer of row r and chunk c at ptrs[(block * k_chunk_count + c) * mr + r].
 * Each points at k_chunk_length FP16 values. A pointer equal to pad_ptr (a
 * row of zeros, for padding taps and rows past M) is read as is; any other
 * is first advanced by ptr_offset bytes.
 *
 * Within one chunk a row's values are contiguous, so each chunk's whole k
 * pairs are the GEMM LHS packer's transpose through ZA (see
 * kb_lhs_pack_x16p2vlx2_x16_sme.c) with the block's mr row pointers,
 * resolved in C, in place of a row stride: per step, four rows of each
 * half come from two pointer-pair loads. A chunk's lone last k (odd
 * k_chunk_length) is written in C. */
#include "../kb_sme.h"

#if defined(__aarch64__)
#include "../kb_sme_asm.h"

#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define KB_SME_MAX_MR 128 /* SVL 2048 */
_Static_assert(sizeof(void *) == sizeof(uint64_t), "row pointers are read two to a vector");

typedef struct ptr_args {
    const kb_f16 *const *rows; /* mr row pointers, at the first pair of the range */
    size_t pairs;              /* whole k pairs (> 0)                             */
    kb_f16 *dst;
} ptr_args;

static void lhs_ptr_pack_core(const ptr_args *g) {
    __asm__ volatile(
        ".arch armv8.2-a+sme\n"
        "smstart\n"
        "ptrue p0.s\n"
        "cntw x16\n"
        "rdsvl x17, #1\n"
        "ldr x1, [%x[g], %[o_rows]]\n"
        "ldr x4, [%x[g], %[o_pairs]]\n"
        "ldr x13, [%x[g], %[o_dst]]\n"
        "lsl x15, x16, #1\n"                      /* 2, 4, 6 vectors, in    */
        "lsl x19, x16, #2\n"                      /* 32-bit units           */
        "add x28, x15, x19\n"
        "mov x7, #0\n"                            /* first pair of the step */
        "1:\n"
        "add x8, x7, x16\n"
        "whilelt p1.s, x7, x4\n"
        "whilelt p2.s, x8, x4\n"
        "mov x5, x1\n"                            /* rows 0 ..              */
        "add x6, x1, x16, lsl #3\n"               /* rows VL32 ..           */
        "mov w12, #0\n"
        "lsr x11, x16, #2\n"
        "2:\n"
        "ldp x20, x21, [x5], #16\n"
        "ldp x22, x23, [x5], #16\n"
        "ldp x24, x25, [x6], #16\n"
        "ldp x26, x27, [x6], #16\n"
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
        "add w12, w12, #4\n"
        "subs x11, x11, #1\n"
        "b.ne 2b\n"
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
        : [g] "r"(g), [o_rows] "I"(offsetof(ptr_args, rows)),
          [o_pairs] "I"(offsetof(ptr_args, pairs)), [o_dst] "I"(offsetof(ptr_args, dst))
        : "x1", "x4", "x5", "x6", "x7", "x8", "x9", "x11", "x12", "x13", "x14", "x15", "x16",
          "x17", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28",
          KB_SME_CLOBBER_VEC);
}

static inline const kb_f16 *resolve(const void *p, size_t offset, const void *pad) {
    return (const kb_f16 *)(p == pad ? p : (const void *)((const unsigned char *)p + offset));
}

void kb_sme_lhs_imatmul_pack_block(const void *const *ptrs, size_t ptr_offset,
                                   const void *pad_ptr, size_t chunk_count,
                                   size_t chunk_length, size_t mr, size_t p0, size_t pc,
                                   kb_f16 *dst) {
    size_t cpairs = kb_sme_roundup(chunk_length, KB_SME_KR) / KB_SME_KR, end = p0 + pc;
    const kb_f16 *rows[KB_SME_MAX_MR];
    (void)chunk_count;
    if (mr > KB_SME_MAX_MR) return; /* no such vector length */
    for (size_t p = p0; p < end;) {
        size_t c = p / cpairs, i = p % cpairs;        /* chunk, its first pair here */
        size_t n = cpairs - i < end - p ? cpairs - i : end - p;
        bool lone = (chunk_length % KB_SME_KR) && i + n == cpairs;
        size_t whole = n - lone;
        const void *const *rp = ptrs + c * mr;
        if (whole) {
            /* four pointers per step (mr is a multiple of 8): p + ptr_offset,
             * or p where it is pad_ptr, then + the pair's bytes */
            uint64x2_t pad = vdupq_n_u64((uint64_t)(uintptr_t)pad_ptr);
            uint64x2_t off = vdupq_n_u64((uint64_t)ptr_offset);
            uint64x2_t at = vdupq_n_u64((uint64_t)(i * KB_SME_KR * sizeof(kb_f16)));
            for (size_t r = 0; r < mr; r += 4) {
                uint64x2_t q[2];
                memcpy(q, rp + r, sizeof q); /* four pointers, as integers */
                for (int j = 0; j < 2; j++)
                    q[j] = vaddq_u64(vaddq_u64(q[j], vbicq_u64(off, vceqq_u64(q[j], pad))), at);
                memcpy(rows + r, q, sizeof q);
            }
            ptr_args g = {rows, whole, dst};
            lhs_ptr_pack_core(&g);
        }
        if (lone) {
            kb_f16 *d = dst + whole * KB_SME_KR * mr;
            for (size_t r = 0; r < mr; r++) {
                d[2 * r] = resolve(rp[r], ptr_offset, pad_ptr)[chunk_length - 1];
                d[2 * r + 1] = 0;
            }
        }
        dst += n * KB_SME_KR * mr;
        p += n;
    }
}

size_t kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_get_m_step(size_t mr) { return mr; }

size_t kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_get_lhs_packed_offset(size_t m_idx, size_t k_chunk_count,
                                                                   size_t k_chunk_length, size_t mr) {
    (void)mr;
    return kb_sme_lhs_offset(m_idx, k_chunk_count * kb_sme_roundup(k_chunk_length, KB_SME_KR));
}

size_t kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_get_lhs_packed_size(size_t m, size_t k_chunk_count,
                                                                 size_t k_chunk_length, size_t mr) {
    return kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_get_lhs_packed_offset(
        kb_sme_roundup(m, mr), k_chunk_count, k_chunk_length, mr);
}

void kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_run(size_t m, size_t k_chunk_count,
                                                size_t k_chunk_length, size_t mr,
                                                const void *const *ptrs, size_t ptr_offset,
                                                const void *pad_ptr, void *lhs_packed) {
    size_t kp = k_chunk_count * kb_sme_roundup(k_chunk_length, KB_SME_KR) / KB_SME_KR;
    for (size_t m0 = 0; m0 < m; m0 += mr) {
        size_t off = kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_get_lhs_packed_offset(m0, k_chunk_count,
                                                                                 k_chunk_length, mr);
        kb_sme_lhs_imatmul_pack_block(ptrs + m0 * k_chunk_count, ptr_offset, pad_ptr, k_chunk_count,
                                      k_chunk_length, mr, 0, kp,
                                      (kb_f16 *)((unsigned char *)lhs_packed + off));
    }
}


/* Functions kbench's own drivers never call (kbench run --coverage lists them
 * apart, with the reason). */
#define KB_WHY "the public packer interface: kbench's SME driver packs a block at a time (its *_pack_block and *_pack_view helpers); examples/plugins/sme_ukernel runs it through the plugin ABI"
KB_NOT_DRIVEN(kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_get_m_step, KB_WHY);
KB_NOT_DRIVEN(kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_get_lhs_packed_offset, KB_WHY);
KB_NOT_DRIVEN(kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_get_lhs_packed_size, KB_WHY);
KB_NOT_DRIVEN(kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_run, KB_WHY);
#undef KB_WHY

#endif /* __aarch64__ */
