/* exrt_sme2.c — the SME2 path of the runtime-like example: kbench's own SME2
 * MOPA micro-kernel and its packers (native/src/sme, compiled into this
 * library with the flags kbench builds them with, as the exsme example does),
 * driven the way a runtime drives a KleidiAI micro-kernel: B packed into the
 * x16p2vlx2b layout (blocks of 2 x SVL/32 columns, the bias inside the
 * blocks), then per band of mr rows the band of A packed (x16p2vlx2) and one
 * run_matmul over all of N.
 *
 * Accumulation (the kernel's): FP32 tiles starting from the bias, one fused
 * 2-way FP16 dot product per k pair in increasing k, clamp in FP32 (FMAX then
 * FMIN: NaN propagates), one rounding to FP16.
 *
 * A plain-B call packs B with its bias into the calling thread's scratch. The
 * packed B of pack_b carries no bias (its blocks' bias slots are zero): a call
 * with it takes none. */
#include "exrt.h"

#if defined(__aarch64__)
#include "../../../native/src/sme/kb_sme.h"

#define MOPA(f) kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_##f
void MOPA(run_matmul)(size_t m, size_t n, size_t k, const void *lhs_packed, const void *rhs_packed, void *dst,
                      size_t dst_stride_row, size_t dst_stride_col, float clamp_min, float clamp_max);

static size_t exrt_sme2_vl_bytes(void) { return kb_sme_svl_bytes(); }

static size_t exrt_sme2_payload_bytes(size_t n, size_t k) {
    return kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_get_rhs_packed_size(n, k);
}

static void exrt_sme2_pack(size_t n, size_t k, const kb_f16 *b, size_t ldb, unsigned char *dst) {
    kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_run(n, k, kb_sme_block(), b, ldb * sizeof(kb_f16), NULL, dst);
}

/* the band of A (mr rows), then (plain B) B packed with its bias */
static size_t exrt_sme2_lhs_bytes(size_t k) {
    size_t mr = kb_sme_block();
    return KB_SME_ALIGN(kb_lhs_pack_x16p2vlx2_x16_sme_get_lhs_packed_size(mr, k, mr));
}

static size_t exrt_sme2_scratch_bytes(const exrt_gemm *g) {
    size_t lhs = exrt_sme2_lhs_bytes(g->k);
    return g->packed ? lhs : lhs + exrt_sme2_payload_bytes(g->n, g->k);
}

static void exrt_sme2_gemm(const exrt_gemm *g) {
    size_t mr = kb_sme_block();
    unsigned char *lhs = g->scratch;
    const unsigned char *rhs = g->packed;
    if (!rhs) {
        unsigned char *packed = g->scratch + exrt_sme2_lhs_bytes(g->k);
        kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_run(g->n, g->k, mr, g->b, g->ldb * sizeof(kb_f16), g->bias, packed);
        rhs = packed;
    }
    for (size_t m0 = 0; m0 < g->m; m0 += mr) {
        size_t rows = g->m - m0 < mr ? g->m - m0 : mr;
        kb_lhs_pack_x16p2vlx2_x16_sme_run(rows, g->k, mr, g->a + m0 * g->lda, g->lda * sizeof(kb_f16), lhs);
        MOPA(run_matmul)(rows, g->n, g->k, lhs, rhs, g->c + m0 * g->ldc, g->ldc * sizeof(kb_f16), sizeof(kb_f16),
                         g->clamp_min, g->clamp_max);
    }
}

const exrt_path_ops exrt_sme2_ops = {
    .path = EXRT_PATH_SME2,
    .name = "sme2",
    .vl_bytes = exrt_sme2_vl_bytes,
    .payload_bytes = exrt_sme2_payload_bytes,
    .pack = exrt_sme2_pack,
    .scratch_bytes = exrt_sme2_scratch_bytes,
    .gemm = exrt_sme2_gemm,
};
#endif
