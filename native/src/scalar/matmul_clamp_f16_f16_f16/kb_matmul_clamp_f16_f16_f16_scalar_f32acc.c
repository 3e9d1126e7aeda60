/* kb_matmul_clamp_f16_f16_f16_scalar_f32acc.c — the scalar reference GEMM.
 *
 * Accumulation order (documented, bit-deterministic):
 *   acc = +0.0f
 *   for k = 0 .. K-1:  acc = acc + (float)A[m][k] * (float)B[k][n]
 *   acc = acc + (float)bias[n]            (when a bias is given)
 *   C[m][n] = fp16(clamp(acc, clamp_min, clamp_max))   round to nearest even
 * Each product of two FP16 values is exact in binary32 (22 significant
 * bits), so each step rounds once: K (+1 with bias) binary32 roundings on
 * one sequential chain, the "fp32, k_per_rounding = 1" model. Whether the
 * compiler fuses the multiply-add does not change a bit, because the
 * product is exact either way. */
#include "../../core/kb_internal.h"

#include <string.h>

static kb_status run(const kb_gemm_call *c, kb_error *err) {
    (void)err;
    size_t M = c->M, N = c->N, K = c->K; /* read once: the stores to C cannot change them */
    KB_ASSUME(M > 0 && N > 0 && K > 0);  /* the API refuses empty dimensions */
    kb_bview v;
    kb_bview_from_call(c, &v);
    for (size_t m = 0; m < M; m++) {
        const kb_f16 *a = c->A + m * c->lda;
        kb_f16 *out = c->C + m * c->ldc;
        for (size_t n = 0; n < N; n++) {
            size_t panel = n / v.panel_cols, col = n % v.panel_cols;
            const kb_f16 *b = v.data + panel * v.panel_stride + col;
            float acc = 0.0f;
            for (size_t k = 0; k < K; k++)
                acc = acc + kb_h2f(a[k]) * kb_h2f(b[k * v.row_stride]);
            if (v.bias) acc = acc + kb_h2f(v.bias[panel * v.bias_panel_stride + col]);
            out[n] = kb_store_f16(acc, c->clamp_min, c->clamp_max);
        }
    }
    return KB_OK;
}

const kb_gemm_impl kb_matmul_clamp_f16_f16_f16_scalar_f32acc = {
    .name = "gemm_scalar_f32acc",
    .backend = KB_BACKEND_SCALAR,
    .kernel = "matmul_clamp_f16_f16_f16_scalar_f32acc",
    .isa = KB_ISA_SCALAR,
    .accum = KB_ACCUM_FP32,
    .bforms = KB_BFORM_PLAIN | KB_BFORM_PORTABLE | KB_BFORM_NATIVE,
    .native_layout = KB_LAYOUT_SCALAR_F16P16X1B,
    .threaded = 0,
    .run = run,
};
