/* kb_sve_registry.c — the SVE2.1 backend's rows of the dispatch table.
 *
 * Priority order: the GEMV first (max_m = 1, so it takes M = 1 only), then
 * the GEMM. Both need SVE2.1 (FDOT of FP16 pairs into FP32, FCLAMP, the
 * multi-vector loads and stores) and run at the SVE vector length; dispatch
 * offers them after the SME rows (kb_dispatch.c), so on a CPU with SME2 they
 * run when forced or chosen by a tuned table, and on an SVE2.1 CPU without
 * SME they come before NEON.
 *
 * Both accumulate as KleidiAI's SVE2.1 kernel does, bit for bit: FP32 from the
 * bias (exactly), one FDOT per k pair (the pair's sum rounded, then its
 * addition: ceil(K/2) + 1 roundings on the longest chain, which the declared
 * k_per_rounding = 1 with the bias first bounds for every K), and FCLAMP of
 * the FP16 result, which turns a NaN into clamp_min (declared: nan_clamp =
 * clamp_min). Both split their work across selector.threads threads without
 * changing a bit. */
#include "kb_sve.h"

#if defined(__aarch64__)

static kb_status gemv_sve2p1(const kb_gemm_call *c, kb_error *err) {
    return kb_sve_gemm_run(&kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot, c, err);
}

static kb_status gemm_sve2p1(const kb_gemm_call *c, kb_error *err) {
    return kb_sve_gemm_run(&kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot, c, err);
}

/* A micro-kernel's steps, from its own queries at the running vector length
 * (kbench's tails follow them). */
#define STEPS(fn, uk)                                                                             \
    static void fn(uint32_t s[3]) {                                                               \
        s[0] = (uint32_t)uk.get_m_step();                                                         \
        s[1] = (uint32_t)uk.get_n_step();                                                         \
        s[2] = (uint32_t)uk.get_kr();                                                             \
    }
STEPS(steps_gemv, kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot)
STEPS(steps_gemm, kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot)

#define KB_SVE_BFORMS (KB_BFORM_PLAIN | KB_BFORM_PORTABLE | KB_BFORM_NATIVE)
#define KB_NAN_TO_MIN 1u /* kb_realization.nan_clamp: FCLAMP makes a NaN clamp_min */

static const kb_gemm_impl gemv_row = {
    .name = "gemv_sve2p1_dot_f32acc",
    .backend = KB_BACKEND_SVE,
    .kernel = "matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot",
    .isa = KB_ISA_SVE2P1,
    .accum = KB_ACCUM_FP32,
    .k_per_rounding = 1,
    .error_model = KB_ERROR_MODEL_GEMM_BIAS_FIRST,
    .nan_clamp = KB_NAN_TO_MIN,
    .bforms = KB_SVE_BFORMS,
    .native_layout = KB_LAYOUT_SVE_X16P4VLX2B,
    .max_m = 1,
    .threaded = 1,
    .run = gemv_sve2p1,
    .steps = steps_gemv,
};

static const kb_gemm_impl gemm_row = {
    .name = "gemm_sve2p1_dot_f32acc",
    .backend = KB_BACKEND_SVE,
    .kernel = "matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot",
    .isa = KB_ISA_SVE2P1,
    .accum = KB_ACCUM_FP32,
    .k_per_rounding = 1,
    .error_model = KB_ERROR_MODEL_GEMM_BIAS_FIRST,
    .nan_clamp = KB_NAN_TO_MIN,
    .bforms = KB_SVE_BFORMS,
    .native_layout = KB_LAYOUT_SVE_X16P4VLX2B,
    .max_m = 0,
    .threaded = 1,
    .run = gemm_sve2p1,
    .steps = steps_gemm,
};

static const kb_gemm_impl *const gemm_impls[] = {&gemv_row, &gemm_row};

const kb_gemm_impl *const *kb_sve_gemm_impls(size_t *count) {
    *count = sizeof gemm_impls / sizeof gemm_impls[0];
    return gemm_impls;
}

/* The native layout is x16p4vlx2b at the running SVE vector length; kb_pack.c
 * seals the header with that length (block_n = nr) and the checksum this
 * returns, taken over the payload once it is written. */
uint64_t kb_sve_pack_native(size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                            void *dst, int sme2) {
    (void)sme2;
    kb_bview v = {.data = b, .panel_cols = n, .panel_stride = 0, .row_stride = ldb, .bias = bias,
                  .bias_panel_stride = n};
    kb_sve_rhs_pack_view(&v, n, k, kb_sve_block(), dst);
    return kb_payload_checksum(dst, kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_get_rhs_packed_size(n, k));
}

#endif /* __aarch64__ */
