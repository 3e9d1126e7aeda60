/* exfaults.c — purpose-built misbehaving plugin for the fault-injection suite
 * (suites/test_faults.py). Do not copy it.
 *
 * Every realization is a correct portable GEMM (FP32 chain over k, bias
 * last) that misbehaves in one way on every call whose K is odd (a catalog
 * case with an even K runs correctly, so a run sees both):
 *
 *   gemm_segv     dereferences a null pointer           -> SIGSEGV
 *   gemm_abort    calls abort()                          -> SIGABRT
 *   gemm_exit     calls exit(0)                          -> the process ends "successfully"
 *   gemm_hang     loops forever                          -> no reply
 *   gemm_overrun  also writes the row after C (inside kbench's guard bytes)
 *   gemm_smash    also writes 4,096 elements after C (far past the guards:
 *                 the heap of the process behind them)
 *
 * kbench must turn each into a verdict naming the realization (crashed,
 * exited, timeout; a failed guard check for the overrun, after which the
 * worker is discarded, not shut down), restart the worker and go on; none
 * may end the run or lose another verdict. */
#include "kbench_plugin.h"

#include "../common/exfp16.h"

#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

enum { SEGV, ABORT, EXIT, HANG, OVERRUN, SMASH };

static void compute(const kb_plugin_gemm_args *a) {
    for (size_t i = 0; i < a->m; i++)
        for (size_t j = 0; j < a->n; j++) {
            float acc = 0.0f;
            for (size_t kk = 0; kk < a->k; kk++) acc += ex_h2f(a->a[i * a->lda + kk]) * ex_h2f(a->b[kk * a->ldb + j]);
            if (a->bias) acc += ex_h2f(a->bias[j]);
            a->c[i * a->ldc + j] = ex_store(acc, a->clamp_min, a->clamp_max);
        }
}

static kb_status misbehave(void *ctx, const kb_plugin_gemm_args *a) {
    int how = (int)(size_t)ctx;
    if (a->k % 2 == 0) {
        compute(a);
        return KB_OK;
    }
    switch (how) {
    case SEGV: {
        volatile int *nowhere = NULL;
        *nowhere = 1;
        break;
    }
    case ABORT: abort();
    case EXIT: exit(0);
    case HANG:
        for (volatile unsigned long spin = 0;; spin++) {
        }
    case OVERRUN:
        compute(a);
        for (size_t j = 0; j < a->n && j < 64; j++) a->c[a->m * a->ldc + j] = 0x3c00; /* 1.0 */
        break;
    case SMASH:
        compute(a);
        for (size_t j = 0; j < 4096; j++) a->c[a->m * a->ldc + j] = 0x3c00;
        break;
    }
    return KB_OK;
}

#define FAULT(NAME, HOW, WHAT)                                                                     \
    {                                                                                              \
        .name = NAME, .kernel = "exfaults: portable C GEMM that " WHAT " when K is odd",           \
        .op = KB_OP_GEMM, .form = KB_PLUGIN_WHOLE_CALL, .isa = KB_ISA_SCALAR, .accum = KB_ACCUM_FP32, \
        .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_LAST, .bforms = KB_BFORM_PLAIN, .thread_safe = 0, \
        .ctx = (void *)(size_t)(HOW), .gemm = misbehave,                                           \
    }

static const kb_plugin_realization realizations[] = {
    FAULT("gemm_segv", SEGV, "dereferences a null pointer"),
    FAULT("gemm_abort", ABORT, "calls abort()"),
    FAULT("gemm_exit", EXIT, "calls exit(0)"),
    FAULT("gemm_hang", HANG, "loops forever"),
    FAULT("gemm_overrun", OVERRUN, "writes the row after C"),
    FAULT("gemm_smash", SMASH, "writes far past C"),
};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
    .name = "exfaults",
    .version = "0.1.0",
    .description = "fault injection: GEMMs that crash, abort, exit, hang or write past C when K is odd",
    .count = sizeof realizations / sizeof realizations[0],
    .realizations = realizations,
};

EXPORT const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= 1 ? &table : NULL;
}
