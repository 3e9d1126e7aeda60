/* kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa.c
 *
 * FP16 indirect-GEMM (convolution) micro-kernel for SME without SME2: a
 * packed indirect LHS (kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme) times filters
 * packed with their bias (kb_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme),
 * output blocks of 2VL x 2VL. K is k_chunk_count chunks (filter taps) of
 * k_chunk_length values (input channels), each padded to a whole k pair.
 *
 * Once packed, the indirect LHS has the x16p2vlx2 layout, so the block
 * computation is the MOPA core of the GEMM micro-kernel
 * matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa, and so is the
 * accumulation model: bias first in ZA, one fused 2-way FMOPA per k pair
 * into FP32 tiles, clamp and one rounding to FP16 at the store. */
#include "../kb_sme.h"

#if defined(__aarch64__)

/* out of line: the driver and the public run entry point share one copy */
KB_NOINLINE static void kb_imatmul_core(const kb_sme_mopa_args *args) {
    kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa.core(args);
}

static size_t padded_k(size_t k_chunk_count, size_t k_chunk_length) {
    return k_chunk_count * kb_sme_roundup(k_chunk_length, KB_SME_KR);
}

size_t kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_m_step(void) {
    return kb_sme_block();
}

size_t kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_n_step(void) {
    return kb_sme_block();
}

size_t kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_lhs_packed_offset(
    size_t m_idx, size_t k_chunk_count, size_t k_chunk_length) {
    return kb_sme_lhs_offset(m_idx, padded_k(k_chunk_count, k_chunk_length));
}

size_t kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_rhs_packed_offset(
    size_t n_idx, size_t k_chunk_count, size_t k_chunk_length) {
    return kb_sme_rhs_offset(n_idx, kb_sme_block(), padded_k(k_chunk_count, k_chunk_length));
}

size_t kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_dst_offset(
    size_t m_idx, size_t n_idx, size_t dst_stride_row) {
    return m_idx * dst_stride_row + n_idx * sizeof(kb_f16);
}

size_t kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_dst_size(size_t m, size_t n) {
    return m * n * sizeof(kb_f16);
}

void kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_run_imatmul(
    size_t m, size_t n, size_t k_chunk_count, size_t k_chunk_length, const void *lhs_packed,
    const void *rhs_packed, void *dst, size_t dst_stride_row, float clamp_min, float clamp_max) {
    if (m == 0 || n == 0 || k_chunk_count == 0 || k_chunk_length == 0) return;
    size_t k = padded_k(k_chunk_count, k_chunk_length), mr = kb_sme_block();
    kb_sme_mopa_args a = {
        .lhs = lhs_packed, .lhs_block_stride = kb_sme_lhs_offset(mr, k),
        .rhs = rhs_packed, .rhs_block_stride = kb_sme_rhs_block_bytes(mr, k),
        .rhs_k_offset = mr * sizeof(kb_f16),
        .m = m, .n = n, .kpairs = k / KB_SME_KR,
        .dst = dst, .dst_stride = dst_stride_row,
        .acc = NULL, .acc_stride = 0, .flags = kb_sme_clamp_flags(clamp_max),
        .clamp_min = clamp_min, .clamp_max = clamp_max,
    };
    kb_imatmul_core(&a);
}

const kb_sme_imatmul_ukernel kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa = {
    .name = "imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa",
    .get_m_step = kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_m_step,
    .get_n_step = kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_n_step,
    .get_lhs_packed_offset = kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_lhs_packed_offset,
    .get_rhs_packed_offset = kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_rhs_packed_offset,
    .get_dst_offset = kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_dst_offset,
    .get_dst_size = kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_dst_size,
    .run_imatmul = kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_run_imatmul,
    .core = kb_imatmul_core,
};


/* Functions kbench's own drivers never call (kbench run --coverage lists them
 * apart, with the reason). */
#define KB_WHY "the public micro-kernel interface: kbench's SME driver calls the core with its own blocking and K chunks"
KB_NOT_DRIVEN(kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_lhs_packed_offset, KB_WHY);
KB_NOT_DRIVEN(kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_rhs_packed_offset, KB_WHY);
KB_NOT_DRIVEN(kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_dst_offset, KB_WHY);
KB_NOT_DRIVEN(kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_get_dst_size, KB_WHY);
KB_NOT_DRIVEN(kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa_run_imatmul, KB_WHY);
#undef KB_WHY

#endif /* __aarch64__ */
