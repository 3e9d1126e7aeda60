/* kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme.c — packs a K x N FP16 RHS and
 * its FP16 bias into the x16p2vlx2b layout the SME GEMM and GEMV kernels
 * read (see kb_sme.h). Plain C: it runs outside streaming mode.
 *
 * For each block of nr columns: nr bias values, then for each k pair the
 * values b[k][j], b[k+1][j] of every column j of the block, column by
 * column. Columns past N, and the k past an odd K, are zero. */
#include "../kb_sme.h"

#if defined(__aarch64__)
#include <string.h>

#define KB_SME_MAX_NR 128 /* SVL 2048: 2 * 2048 / 32 */

void kb_sme_rhs_pack_view(const kb_bview *b, size_t n, size_t chunk_count, size_t chunk_length,
                          size_t nr, void *rhs_packed) {
    size_t clp = kb_sme_roundup(chunk_length, KB_SME_KR);
    size_t kpairs = chunk_count * clp / KB_SME_KR;
    size_t col_off[KB_SME_MAX_NR], bias_off[KB_SME_MAX_NR];
    kb_f16 *out = (kb_f16 *)rhs_packed;
    if (nr > KB_SME_MAX_NR) return; /* no such vector length */
    for (size_t n0 = 0; n0 < n; n0 += nr) {
        size_t w = n - n0 < nr ? n - n0 : nr;
        for (size_t j = 0; j < w; j++) {
            size_t col = n0 + j, panel = col / b->panel_cols, in = col % b->panel_cols;
            col_off[j] = panel * b->panel_stride + in;
            bias_off[j] = panel * b->bias_panel_stride + in;
        }
        for (size_t j = 0; j < nr; j++) out[j] = (b->bias && j < w) ? b->bias[bias_off[j]] : 0;
        out += nr;
        for (size_t p = 0; p < kpairs; p++) {
            size_t kk = p * KB_SME_KR, chunk = kk / clp, i = kk % clp;
            size_t row = chunk * chunk_length + i;
            const kb_f16 *r0 = b->data + row * b->row_stride;
            if (i + 1 < chunk_length) {
                const kb_f16 *r1 = r0 + b->row_stride;
                for (size_t j = 0; j < w; j++) {
                    out[2 * j] = r0[col_off[j]];
                    out[2 * j + 1] = r1[col_off[j]];
                }
            } else {
                for (size_t j = 0; j < w; j++) {
                    out[2 * j] = r0[col_off[j]];
                    out[2 * j + 1] = 0;
                }
            }
            if (w < nr) memset(out + 2 * w, 0, (nr - w) * 2 * sizeof(kb_f16));
            out += 2 * nr;
        }
    }
}

size_t kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_get_n_step(void) { return kb_sme_block(); }

size_t kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_get_rhs_packed_stride(size_t k) {
    return kb_sme_rhs_block_bytes(kb_sme_block(), k);
}

size_t kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_get_rhs_packed_offset(size_t n_idx, size_t k) {
    return kb_sme_rhs_offset(n_idx, kb_sme_block(), k);
}

size_t kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_get_rhs_packed_size(size_t n, size_t k) {
    size_t nr = kb_sme_block();
    return kb_sme_roundup(n, nr) / nr * kb_sme_rhs_block_bytes(nr, k);
}

void kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_run(size_t n, size_t k, size_t nr, const void *rhs,
                                               size_t rhs_stride, const void *bias,
                                               void *rhs_packed) {
    kb_bview v = {
        .data = (const kb_f16 *)rhs, .panel_cols = n, .panel_stride = 0,
        .row_stride = rhs_stride / sizeof(kb_f16), .bias = (const kb_f16 *)bias,
        .bias_panel_stride = 0,
    };
    kb_sme_rhs_pack_view(&v, n, 1, k, nr, rhs_packed);
}

#endif /* __aarch64__ */
