/* exreadpast.c — a negative control for kbench's input guard pages: do not
 * copy it. Two portable C GEMMs (FP32 chain over k, bias last) that read one
 * element outside an input and fold it into C[0][0] times zero, so that the
 * result is right whenever that element is a finite number:
 *
 *   gemm_reads_past_b     reads B[K-1][N], one element past the last of B
 *   gemm_reads_before_a   reads the element before A[0][0]
 *
 * In a worker's checking run the inputs lie against guard pages: the read
 * faults and kbench reports it naming the buffer. Where an input is merely
 * surrounded by NaN poison, 0 * NaN makes C[0][0] NaN and the result fails. */
#include "kbench_plugin.h"

#include "../common/exfp16.h"

#define EXPORT __attribute__((visibility("default")))

static kb_status gemm(void *ctx, const kb_plugin_gemm_args *a) {
    int past_b = ctx != NULL;
    volatile const uint16_t *out_of_bounds =
        past_b ? a->b + (a->k - 1) * a->ldb + a->n : (const uint16_t *)a->a - 1; /* the bug */
    float stray = ex_h2f(*out_of_bounds);
    for (size_t i = 0; i < a->m; i++)
        for (size_t j = 0; j < a->n; j++) {
            float acc = 0.0f;
            for (size_t kk = 0; kk < a->k; kk++) acc += ex_h2f(a->a[i * a->lda + kk]) * ex_h2f(a->b[kk * a->ldb + j]);
            if (i == 0 && j == 0) acc += 0.0f * stray;
            if (a->bias) acc += ex_h2f(a->bias[j]);
            a->c[i * a->ldc + j] = ex_store(acc, a->clamp_min, a->clamp_max);
        }
    return KB_OK;
}

static int marker;

#define GEMM(NAME, WHAT, CTX)                                                                          \
    {                                                                                                 \
        .name = NAME, .kernel = "exreadpast: portable C GEMM that " WHAT, .op = KB_OP_GEMM,          \
        .form = KB_PLUGIN_WHOLE_CALL, .isa = KB_ISA_SCALAR, .accum = KB_ACCUM_FP32, .k_per_rounding = 1, \
        .bias = KB_PLUGIN_BIAS_LAST, .bforms = KB_BFORM_PLAIN, .thread_safe = 0, .ctx = (CTX), .gemm = gemm, \
    }

static const kb_plugin_realization realizations[] = {
    GEMM("gemm_reads_past_b", "reads one element past the end of B", &marker),
    GEMM("gemm_reads_before_a", "reads the element before A", NULL),
};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
    .name = "exreadpast",
    .version = "1.0.0",
    .description = "negative control: GEMMs that read one element outside B or A",
    .count = sizeof realizations / sizeof realizations[0],
    .realizations = realizations,
};

EXPORT const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &table;
}
