/* exv2.c — a plugin exactly as ABI version 2 laid its table out (before flags,
 * overread, scratch_cap and expect_symbols were appended to each realization):
 * a kbench that reads ABI 3 must still load it, read every realization at
 * version 2's stride and keep what version 2 declared (its NaN rule). The
 * structure below is ABI 2's kb_plugin_realization, field for field. */
#include "kbench_plugin.h"

#include "../common/exfp16.h"

#define EXPORT __attribute__((visibility("default")))

typedef struct realization_v2 {
    const char *name;
    const char *kernel;
    int op, form, isa, accum;
    uint32_t k_per_rounding;
    int bias;
    uint32_t bforms, max_m, max_groups, conv_class;
    int thread_safe;
    void *ctx;
    kb_status (*gemm)(void *ctx, const kb_plugin_gemm_args *args);
    kb_status (*conv2d)(void *ctx, const kb_plugin_conv_args *args);
    size_t (*packed_b_size)(void *ctx, size_t n, size_t k);
    kb_status (*pack_b)(void *ctx, size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                        void *dst, size_t dst_size);
    const kb_plugin_matmul_ukernel *matmul;
    const kb_plugin_imatmul_ukernel *imatmul;
    int nan_clamp;
    const char *rhs_layout;
    const char *lhs_layout;
} realization_v2;

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

#define GEMM(NAME)                                                                                   \
    {                                                                                                \
        .name = NAME, .kernel = "exv2: portable C GEMM (ABI 2 table)", .op = KB_OP_GEMM,             \
        .form = KB_PLUGIN_WHOLE_CALL, .isa = KB_ISA_SCALAR, .accum = KB_ACCUM_FP32, .k_per_rounding = 1, \
        .bias = KB_PLUGIN_BIAS_LAST, .bforms = KB_BFORM_PLAIN, .thread_safe = 1, .gemm = gemm,         \
        .nan_clamp = KB_PLUGIN_NAN_PROPAGATE,                                                         \
    }

/* three entries: read at ABI 3's stride, the second and third would be garbage */
static const realization_v2 realizations[] = {GEMM("gemm_a"), GEMM("gemm_b"), GEMM("gemm_c")};

static const kb_plugin table = {
    .abi_version = 2,
    .struct_size = sizeof(kb_plugin),
    .name = "exv2",
    .version = "1.0.0",
    .description = "an ABI version 2 table",
    .count = 3,
    .realizations = (const kb_plugin_realization *)(const void *)realizations,
};

EXPORT const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= 2 ? &table : NULL;
}
