/* kb_sme_registry.c — the SME/SME2 backend's rows of the dispatch table.
 *
 * Priority order (the first row the CPU and the selector allow wins):
 *   GEMM: the GEMVs first (max_m = 1, so they take M = 1 only), SME2 before
 *         SME, then the MOPA GEMMs, SME2 before SME, then the cache-blocked
 *         MOPA variant (chosen by forcing it or by a tuned dispatch table).
 *   conv: indirect GEMM, SME2 before SME; groups 1 only (max_groups = 1).
 * Rows needing SME2 run only where HWCAP2_SME2 is present (and the ISA cap
 * allows it); the SME rows run on any SME CPU.
 *
 * Every row accumulates in FP32 with at most one rounding per product on a
 * chain (plus the bias): k_per_rounding = 1. The SME GEMV loads the bias
 * into its accumulators first (error model gemm_bias_first: K roundings). Every row splits its output
 * blocks across selector.threads threads without changing a bit. */
#include "kb_sme.h"

#if defined(__aarch64__)

static kb_status gemv_sme2(const kb_gemm_call *c, kb_error *err) {
    return kb_sme_gemm_gemv_run(&kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot, c, err);
}

static kb_status gemv_sme(const kb_gemm_call *c, kb_error *err) {
    return kb_sme_gemm_gemv_run(&kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla, c, err);
}

static kb_status gemm_sme2(const kb_gemm_call *c, kb_error *err) {
    return kb_sme_gemm_mopa_run(&kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa, NULL, c, err);
}

static kb_status gemm_sme(const kb_gemm_call *c, kb_error *err) {
    return kb_sme_gemm_mopa_run(&kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa, NULL, c, err);
}

/* The SME2 MOPA kernel in a cache-blocked loop: units of 128 rows x 256
 * columns, K in blocks of 256 (multiples of mr = nr and kr at every SVL
 * from 128 to 2048 bits); FP32 partial sums between K blocks, as in the
 * default loop, so it is bit-identical to gemm_sme2_mopa_f32acc. */
#define SME_MB 128
#define SME_NB 256
#define SME_KB 256
static kb_status gemm_sme2_blocked(const kb_gemm_call *c, kb_error *err) {
    static const kb_sme_blocking blk = {SME_MB, SME_NB, SME_KB};
    return kb_sme_gemm_mopa_run(&kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa, &blk, c, err);
}

static kb_status conv_sme2(const kb_conv_impl *self, const kb_conv_desc *d, size_t oh, size_t ow,
                           const kb_f16 *input, const kb_f16 *filter, const kb_f16 *bias,
                           kb_f16 *output, const kb_selector *sel, kb_error *err) {
    (void)self;
    return kb_sme_conv_igemm_run(&kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa, d, oh,
                                 ow, input, filter, bias, output, sel, err);
}

static kb_status conv_sme(const kb_conv_impl *self, const kb_conv_desc *d, size_t oh, size_t ow,
                          const kb_f16 *input, const kb_f16 *filter, const kb_f16 *bias,
                          kb_f16 *output, const kb_selector *sel, kb_error *err) {
    (void)self;
    return kb_sme_conv_igemm_run(&kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa, d, oh,
                                 ow, input, filter, bias, output, sel, err);
}

/* A micro-kernel's steps, from its own queries at the running SVL (kbench's
 * tails follow them); the indirect kernels' K interleave is the layout's. */
#define STEPS(fn, uk, kr_)                                                                        \
    static void fn(uint32_t s[3]) {                                                               \
        s[0] = (uint32_t)uk.get_m_step();                                                         \
        s[1] = (uint32_t)uk.get_n_step();                                                         \
        s[2] = (uint32_t)(kr_);                                                                   \
    }
STEPS(steps_gemv_sme2, kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot,
      kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot.get_kr())
STEPS(steps_gemv_sme, kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla,
      kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla.get_kr())
STEPS(steps_mopa_sme2, kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa,
      kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa.get_kr())
STEPS(steps_mopa_sme, kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa,
      kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa.get_kr())
STEPS(steps_imatmul_sme2, kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa, KB_SME_KR)
STEPS(steps_imatmul_sme, kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa, KB_SME_KR)

#define KB_SME_BFORMS (KB_BFORM_PLAIN | KB_BFORM_PORTABLE | KB_BFORM_NATIVE)

static const kb_gemm_impl gemv_sme2_row = {
    .name = "gemv_sme2_dot_f32acc",
    .backend = KB_BACKEND_SME,
    .kernel = "matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot",
    .isa = KB_ISA_SME2,
    .accum = KB_ACCUM_FP32,
    .k_per_rounding = 1,
    .bforms = KB_SME_BFORMS,
    .native_layout = KB_LAYOUT_SME_X16P2VLX2B,
    .max_m = 1,
    .threaded = 1,
    .run = gemv_sme2,
    .steps = steps_gemv_sme2,
};

static const kb_gemm_impl gemv_sme_row = {
    .name = "gemv_sme_f32acc",
    .backend = KB_BACKEND_SME,
    .kernel = "matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla",
    .isa = KB_ISA_SME,
    .accum = KB_ACCUM_FP32,
    .k_per_rounding = 1,
    .error_model = KB_ERROR_MODEL_GEMM_BIAS_FIRST, /* bias first: K roundings */
    .bforms = KB_SME_BFORMS,
    .native_layout = KB_LAYOUT_SME_X16P2VLX2B,
    .max_m = 1,
    .threaded = 1,
    .run = gemv_sme,
    .steps = steps_gemv_sme,
};

static const kb_gemm_impl gemm_sme2_row = {
    .name = "gemm_sme2_mopa_f32acc",
    .backend = KB_BACKEND_SME,
    .kernel = "matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa",
    .isa = KB_ISA_SME2,
    .accum = KB_ACCUM_FP32,
    .k_per_rounding = 1,
    .bforms = KB_SME_BFORMS,
    .native_layout = KB_LAYOUT_SME_X16P2VLX2B,
    .max_m = 0,
    .threaded = 1,
    .run = gemm_sme2,
    .describe = kb_sme_describe_default_blocks,
    .steps = steps_mopa_sme2,
};

static const kb_gemm_impl gemm_sme2_blocked_row = {
    .name = "gemm_sme2_mopa_f32acc_mb128_nb256_kb256",
    .backend = KB_BACKEND_SME,
    .kernel = "matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa",
    .isa = KB_ISA_SME2,
    .accum = KB_ACCUM_FP32,
    .k_per_rounding = 1,
    .bforms = KB_SME_BFORMS,
    .native_layout = KB_LAYOUT_SME_X16P2VLX2B,
    .max_m = 0,
    .threaded = 1,
    .run = gemm_sme2_blocked,
    .block_m = SME_MB,
    .block_n = SME_NB,
    .block_k = SME_KB,
    .steps = steps_mopa_sme2,
};

static const kb_gemm_impl gemm_sme_row = {
    .name = "gemm_sme_mopa_f32acc",
    .backend = KB_BACKEND_SME,
    .kernel = "matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa",
    .isa = KB_ISA_SME,
    .accum = KB_ACCUM_FP32,
    .k_per_rounding = 1,
    .bforms = KB_SME_BFORMS,
    .native_layout = KB_LAYOUT_SME_X16P2VLX2B,
    .max_m = 0,
    .threaded = 1,
    .run = gemm_sme,
    .describe = kb_sme_describe_default_blocks,
    .steps = steps_mopa_sme,
};

static const kb_conv_impl conv_sme2_row = {
    .name = "conv2d_igemm_sme2_mopa_f32acc",
    .backend = KB_BACKEND_SME,
    .kernel = "imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa",
    .isa = KB_ISA_SME2,
    .accum = KB_ACCUM_FP32,
    .k_per_rounding = 1,
    .threaded = 1,
    .run = conv_sme2,
    .gemm = NULL,
    .max_groups = 1,
    .describe = kb_sme_describe_default_blocks,
    .steps = steps_imatmul_sme2,
};

static const kb_conv_impl conv_sme_row = {
    .name = "conv2d_igemm_sme_mopa_f32acc",
    .backend = KB_BACKEND_SME,
    .kernel = "imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa",
    .isa = KB_ISA_SME,
    .accum = KB_ACCUM_FP32,
    .k_per_rounding = 1,
    .threaded = 1,
    .run = conv_sme,
    .gemm = NULL,
    .max_groups = 1,
    .describe = kb_sme_describe_default_blocks,
    .steps = steps_imatmul_sme,
};

static const kb_gemm_impl *const gemm_impls[] = {&gemv_sme2_row, &gemv_sme_row, &gemm_sme2_row,
                                                 &gemm_sme_row, &gemm_sme2_blocked_row};
static const kb_conv_impl *const conv_impls[] = {&conv_sme2_row, &conv_sme_row};

const kb_gemm_impl *const *kb_sme_gemm_impls(size_t *count) {
    *count = sizeof gemm_impls / sizeof gemm_impls[0];
    return gemm_impls;
}

const kb_conv_impl *const *kb_sme_conv_impls(size_t *count) {
    *count = sizeof conv_impls / sizeof conv_impls[0];
    return conv_impls;
}

/* The native layout is x16p2vlx2b at the running streaming vector length;
 * kb_pack.c seals the header with that length (block_n = nr). */
/* With SME2 the packer computes the seal as it packs; a CPU with SME but not
 * SME2 packs with the SME1 packer and seals in a pass of its own. */
uint64_t kb_sme_pack_native(size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                            void *dst, int sme2) {
    if (sme2) return kb_sme2_rhs_pack_sealed(n, k, b, ldb, bias, dst);
    kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_run(n, k, kb_sme_block(), b, ldb * sizeof(kb_f16), bias,
                                               dst);
    return kb_payload_checksum_on(KB_CHECKSUM_SME, dst,
                                  kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_get_rhs_packed_size(n, k));
}

#endif /* __aarch64__ */
