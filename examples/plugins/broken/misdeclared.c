/* A plugin that declares FP16 accumulation but accumulates in FP32: it passes
 * the (looser) FP16 bound, and its accumulation fingerprint contradicts the
 * declared model, which kbench reports beside each verdict. */
#include "kbench_plugin.h"

#include "../common/exfp16.h"

static kb_status gemm(void *ctx, const kb_plugin_gemm_args *a) {
    (void)ctx;
    for (size_t i = 0; i < a->m; i++)
        for (size_t j = 0; j < a->n; j++) {
            float acc = 0.0f;
            for (size_t kk = 0; kk < a->k; kk++) acc += ex_h2f(a->a[i * a->lda + kk]) * ex_h2f(a->b[kk * a->ldb + j]);
            if (a->bias) acc += ex_h2f(a->bias[j]);
            a->c[i * a->ldc + j] = ex_store(acc, a->clamp_min, a->clamp_max);
        }
    return KB_OK;
}

static const kb_plugin_realization realizations[] = {
    {.name = "gemm_says_fp16", .kernel = "misdeclared: FP32 chain declared as FP16", .op = KB_OP_GEMM,
     .form = KB_PLUGIN_WHOLE_CALL, .isa = KB_ISA_SCALAR, .accum = KB_ACCUM_FP16, .k_per_rounding = 1,
     .bias = KB_PLUGIN_BIAS_LAST, .bforms = KB_BFORM_PLAIN, .gemm = gemm},
};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION, .struct_size = sizeof(kb_plugin), .name = "misdeclared",
    .version = "0.1", .count = 1, .realizations = realizations,
};

__attribute__((visibility("default"))) const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &table;
}
