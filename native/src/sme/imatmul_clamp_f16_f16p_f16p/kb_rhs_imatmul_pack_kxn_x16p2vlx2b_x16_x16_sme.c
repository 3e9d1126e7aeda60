/* kb_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme.c — packs convolution
 * filters and bias together into the x16p2vlx2b layout for the indirect GEMM
 * kernels, through kb_sme_rhs_pack_view: the C loop for several chunks,
 * the streaming packer for one (1x1 filters).
 *
 * The RHS is K x N FP16 (for a convolution: HWIO filters, K = kh * kw * c_in
 * rows of c_out values) seen as k_chunk_count chunks of k_chunk_length rows;
 * each chunk is padded with zero rows to a whole k pair, as the indirect LHS
 * is, so every k pair lies inside one chunk (one filter tap). With one chunk
 * this is the plain x16p2vlx2b layout. */
#include "../kb_sme.h"

#if defined(__aarch64__)

size_t kb_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme_get_rhs_packed_size(size_t n, size_t k_chunk_count,
                                                                         size_t k_chunk_length) {
    size_t nr = kb_sme_block();
    size_t k = k_chunk_count * kb_sme_roundup(k_chunk_length, KB_SME_KR);
    return kb_sme_roundup(n, nr) / nr * kb_sme_rhs_block_bytes(nr, k);
}

void kb_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme_run(size_t n, size_t k_chunk_count,
                                                       size_t k_chunk_length, size_t nr,
                                                       const void *rhs, size_t rhs_stride,
                                                       const void *bias, void *rhs_packed) {
    kb_bview v = {
        .data = (const kb_f16 *)rhs, .panel_cols = n, .panel_stride = 0,
        .row_stride = rhs_stride / sizeof(kb_f16), .bias = (const kb_f16 *)bias,
        .bias_panel_stride = 0,
    };
    kb_sme_rhs_pack_view(&v, n, k_chunk_count, k_chunk_length, nr, rhs_packed);
}


/* Functions kbench's own drivers never call (kbench run --coverage lists them
 * apart, with the reason). */
#define KB_WHY "the public packer interface: kbench's SME driver packs a block at a time (its *_pack_block and *_pack_view helpers); examples/plugins/sme_ukernel runs it through the plugin ABI"
KB_NOT_DRIVEN(kb_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme_get_rhs_packed_size, KB_WHY);
#undef KB_WHY

#endif /* __aarch64__ */
