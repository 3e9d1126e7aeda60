/* kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme.c — packs an indirect LHS (a table
 * of row pointers) into the x16p2vlx2 layout, for convolution by indirect
 * GEMM. Plain C: it runs outside streaming mode.
 *
 * K is made of k_chunk_count chunks of k_chunk_length values (for a
 * convolution: one chunk per filter tap, the input channels of that tap),
 * each chunk padded to a whole k pair. The pointer table is blocked by the
 * kernel's m_step: for each block of mr rows and each chunk, mr pointers, the
 * pointer of row r and chunk c at ptrs[(block * k_chunk_count + c) * mr + r].
 * Each points at k_chunk_length FP16 values. A pointer equal to pad_ptr (a
 * row of zeros, for padding taps and rows past M) is read as is; any other
 * is first advanced by ptr_offset bytes. */
#include "../kb_sme.h"

#if defined(__aarch64__)

static inline const kb_f16 *resolve(const void *p, size_t offset, const void *pad) {
    return (const kb_f16 *)(p == pad ? p : (const void *)((const unsigned char *)p + offset));
}

void kb_sme_lhs_imatmul_pack_block(const void *const *ptrs, size_t ptr_offset,
                                   const void *pad_ptr, size_t chunk_count,
                                   size_t chunk_length, size_t mr, size_t p0, size_t pc,
                                   kb_f16 *dst) {
    size_t clp = kb_sme_roundup(chunk_length, KB_SME_KR);
    (void)chunk_count;
    for (size_t p = p0; p < p0 + pc; p++) {
        size_t kk = p * KB_SME_KR, c = kk / clp, i = kk % clp;
        const void *const *rp = ptrs + c * mr;
        if (i + 1 < chunk_length) {
            for (size_t r = 0; r < mr; r++) {
                const kb_f16 *src = resolve(rp[r], ptr_offset, pad_ptr) + i;
                dst[2 * r] = src[0];
                dst[2 * r + 1] = src[1];
            }
        } else {
            for (size_t r = 0; r < mr; r++) {
                dst[2 * r] = resolve(rp[r], ptr_offset, pad_ptr)[i];
                dst[2 * r + 1] = 0;
            }
        }
        dst += 2 * mr;
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

#endif /* __aarch64__ */
