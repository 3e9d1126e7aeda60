/* kb_scalar_registry.c — the scalar backend's rows of the dispatch table. */
#include "../core/kb_internal.h"

extern const kb_gemm_impl kb_matmul_clamp_f16_f16_f16_scalar_f32acc;
extern const kb_conv_impl kb_conv2d_direct_f16_scalar_f32acc;
extern const kb_conv_impl kb_conv2d_winograd_f2x2_3x3_f16_scalar_f32acc;

static const kb_conv_impl im2col_gemm = {
    .name = "conv2d_im2col_gemm_scalar_f32acc",
    .backend = KB_BACKEND_SCALAR,
    .kernel = "im2col_f16+matmul_clamp_f16_f16_f16_scalar_f32acc",
    .isa = KB_ISA_SCALAR,
    .accum = KB_ACCUM_FP32,
    .threaded = 0,
    .run = kb_conv_im2col_gemm_run,
    .gemm = &kb_matmul_clamp_f16_f16_f16_scalar_f32acc,
};

static const kb_gemm_impl *const gemm_impls[] = {&kb_matmul_clamp_f16_f16_f16_scalar_f32acc};
/* Winograd last: it is chosen when forced or by a tuned dispatch table. */
static const kb_conv_impl *const conv_impls[] = {&im2col_gemm, &kb_conv2d_direct_f16_scalar_f32acc,
                                                 &kb_conv2d_winograd_f2x2_3x3_f16_scalar_f32acc};

const kb_gemm_impl *const *kb_scalar_gemm_impls(size_t *count) {
    *count = sizeof gemm_impls / sizeof gemm_impls[0];
    return gemm_impls;
}

const kb_conv_impl *const *kb_scalar_conv_impls(size_t *count) {
    *count = sizeof conv_impls / sizeof conv_impls[0];
    return conv_impls;
}
