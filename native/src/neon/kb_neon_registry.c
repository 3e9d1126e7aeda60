/* kb_neon_registry.c — the NEON FP16 backend's rows of the dispatch table,
 * in priority order (FP32 accumulation first; the FP16-accumulating kernel
 * is chosen by forcing it or by a tuned dispatch table), and its native
 * packer: blocks of 16 columns, bias first, then K rows of 16 values. */
#if defined(__aarch64__)
#include "kb_neon.h"

#define GEMM_RUN(fn, uk) \
    static kb_status fn(const kb_gemm_call *c, kb_error *err) { return kb_neon_gemm(&uk, c, err); }
#define CONV_RUN(fn, uk)                                                                          \
    static kb_status fn(const kb_conv_impl *self, const kb_conv_desc *d, size_t oh, size_t ow,    \
                        const kb_f16 *in, const kb_f16 *flt, const kb_f16 *bias, kb_f16 *out,     \
                        const kb_selector *sel, kb_error *err) {                                  \
        (void)self;                                                                               \
        return kb_neon_conv_indirect(&uk, d, oh, ow, in, flt, bias, out,                          \
                                     sel->threads > 0 ? sel->threads : 1, err);                  \
    }

GEMM_RUN(gemm_fhm, kb_matmul_clamp_f16_f16_f16p16x1b_4x16_neon_fhm_mlal)
GEMM_RUN(gemm_cvt, kb_matmul_clamp_f16_f16_f16p16x1b_4x16_neon_cvt_mla)
GEMM_RUN(gemm_f16, kb_matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla)
CONV_RUN(conv_fhm, kb_matmul_clamp_f16_f16_f16p16x1b_4x16_neon_fhm_mlal)
CONV_RUN(conv_cvt, kb_matmul_clamp_f16_f16_f16p16x1b_4x16_neon_cvt_mla)
CONV_RUN(conv_f16, kb_matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla)

#define BFORMS (KB_BFORM_PLAIN | KB_BFORM_PORTABLE | KB_BFORM_NATIVE)

static const kb_gemm_impl g_fhm = {
    .name = "gemm_neon_f32acc_fhm", .backend = KB_BACKEND_NEON,
    .kernel = "matmul_clamp_f16_f16_f16p16x1b_4x16_neon_fhm_mlal", .isa = KB_ISA_NEON_FHM,
    .accum = KB_ACCUM_FP32, .k_per_rounding = 1, .bforms = BFORMS,
    .native_layout = KB_LAYOUT_NEON, .threaded = 1, .run = gemm_fhm};
static const kb_gemm_impl g_cvt = {
    .name = "gemm_neon_f32acc_cvt", .backend = KB_BACKEND_NEON,
    .kernel = "matmul_clamp_f16_f16_f16p16x1b_4x16_neon_cvt_mla", .isa = KB_ISA_NEON_FP16,
    .accum = KB_ACCUM_FP32, .k_per_rounding = 1, .bforms = BFORMS,
    .native_layout = KB_LAYOUT_NEON, .threaded = 1, .run = gemm_cvt};
static const kb_gemm_impl g_f16 = {
    .name = "gemm_neon_f16acc", .backend = KB_BACKEND_NEON,
    .kernel = "matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla", .isa = KB_ISA_NEON_FP16,
    .accum = KB_ACCUM_FP16, .k_per_rounding = 1, .bforms = BFORMS,
    .native_layout = KB_LAYOUT_NEON, .threaded = 1, .run = gemm_f16};

#define IGEMM(var, nm, kern, isa_, acc, fn)                                                      \
    static const kb_conv_impl var = {.name = nm, .backend = KB_BACKEND_NEON, .kernel = kern,    \
                                     .isa = isa_, .accum = acc, .k_per_rounding = 1,            \
                                     .threaded = 1, .run = fn}
#define IM2COL(var, nm, kern, isa_, acc, g)                                                      \
    static const kb_conv_impl var = {.name = nm, .backend = KB_BACKEND_NEON, .kernel = kern,    \
                                     .isa = isa_, .accum = acc, .k_per_rounding = 1,            \
                                     .threaded = 1, .run = kb_conv_im2col_gemm_run, .gemm = &g}

IGEMM(c_ind_fhm, "conv2d_igemm_neon_f32acc_fhm",
      "imatmul_clamp_f16_f16_f16p16x1b_4x16_neon_fhm_mlal", KB_ISA_NEON_FHM, KB_ACCUM_FP32, conv_fhm);
IGEMM(c_ind_cvt, "conv2d_igemm_neon_f32acc_cvt",
      "imatmul_clamp_f16_f16_f16p16x1b_4x16_neon_cvt_mla", KB_ISA_NEON_FP16, KB_ACCUM_FP32, conv_cvt);
IGEMM(c_ind_f16, "conv2d_igemm_neon_f16acc",
      "imatmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla", KB_ISA_NEON_FP16, KB_ACCUM_FP16, conv_f16);
IM2COL(c_i2c_fhm, "conv2d_im2col_gemm_neon_f32acc_fhm",
       "im2col_f16+matmul_clamp_f16_f16_f16p16x1b_4x16_neon_fhm_mlal", KB_ISA_NEON_FHM, KB_ACCUM_FP32, g_fhm);
IM2COL(c_i2c_cvt, "conv2d_im2col_gemm_neon_f32acc_cvt",
       "im2col_f16+matmul_clamp_f16_f16_f16p16x1b_4x16_neon_cvt_mla", KB_ISA_NEON_FP16, KB_ACCUM_FP32, g_cvt);
IM2COL(c_i2c_f16, "conv2d_im2col_gemm_neon_f16acc",
       "im2col_f16+matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla", KB_ISA_NEON_FP16, KB_ACCUM_FP16, g_f16);

static const kb_gemm_impl *const gemm_rows[] = {&g_fhm, &g_cvt, &g_f16};
static const kb_conv_impl *const conv_rows[] = {&c_ind_fhm, &c_ind_cvt, &c_i2c_fhm,
                                                &c_i2c_cvt, &c_ind_f16, &c_i2c_f16};

const kb_gemm_impl *const *kb_neon_gemm_impls(size_t *count) {
    *count = sizeof gemm_rows / sizeof gemm_rows[0];
    return gemm_rows;
}

const kb_conv_impl *const *kb_neon_conv_impls(size_t *count) {
    *count = sizeof conv_rows / sizeof conv_rows[0];
    return conv_rows;
}

void kb_neon_pack_native(size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                         void *dst) {
    kb_pack_panels(n, k, b, ldb, bias, 1, KB_NEON_NATIVE_BLOCK_N, (kb_f16 *)dst);
}
#endif
