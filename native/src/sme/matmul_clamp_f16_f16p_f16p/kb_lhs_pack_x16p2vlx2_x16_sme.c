/* kb_lhs_pack_x16p2vlx2_x16_sme.c — packs an M x K FP16 LHS into the
 * x16p2vlx2 layout the SME GEMM kernels read (see kb_sme.h). Plain C: it
 * runs outside streaming mode.
 *
 * For each block of mr rows and each k pair: a[m][k], a[m][k+1] for every
 * row m of the block, row by row. Rows past M, and the k past an odd K, are
 * zero. The drivers pack one block and a range of k pairs at a time, so the
 * buffer stays small whatever M and K are. */
#include "../kb_sme.h"

#if defined(__aarch64__)

void kb_sme_lhs_pack_block(const kb_f16 *a, size_t lda, size_t rows, size_t k, size_t mr,
                           size_t p0, size_t pc, kb_f16 *dst) {
    for (size_t p = p0; p < p0 + pc; p++) {
        size_t k0 = p * KB_SME_KR;
        if (k0 + 1 < k) {
            for (size_t r = 0; r < rows; r++) {
                const kb_f16 *row = a + r * lda + k0;
                dst[2 * r] = row[0];
                dst[2 * r + 1] = row[1];
            }
        } else {
            for (size_t r = 0; r < rows; r++) {
                dst[2 * r] = a[r * lda + k0];
                dst[2 * r + 1] = 0;
            }
        }
        for (size_t r = rows; r < mr; r++) dst[2 * r] = dst[2 * r + 1] = 0;
        dst += 2 * mr;
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

#endif /* __aarch64__ */
