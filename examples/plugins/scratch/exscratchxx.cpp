// exscratchxx.cpp — example plugin in C++ for kbench's scratch-memory check:
// a portable GEMM (plain B, FP32 chain over k, bias last) that keeps an FP32
// copy of B made with new[] until the next call, which delete[]s it. C++'s
// operator new goes through malloc, so kbench counts it as any heap block:
// the realization holds exactly K x N x 4 bytes after each call
// (suites/test_scratch.py). Built without the C++ standard library headers:
// new[] and delete[] need none.
#include "kbench_plugin.h"

#include "../common/exfp16.h"

#define EXPORT __attribute__((visibility("default")))

namespace {

float *kept = nullptr;  // B as FP32 (K x N), kept to the next call

kb_status gemm(void *, const kb_plugin_gemm_args *a) {
    delete[] kept;
    kept = new float[a->k * a->n];
    for (size_t kk = 0; kk < a->k; kk++)
        for (size_t j = 0; j < a->n; j++) kept[kk * a->n + j] = ex_h2f(a->b[kk * a->ldb + j]);
    for (size_t i = 0; i < a->m; i++)
        for (size_t j = 0; j < a->n; j++) {
            float acc = 0.0f;
            for (size_t kk = 0; kk < a->k; kk++) acc += ex_h2f(a->a[i * a->lda + kk]) * kept[kk * a->n + j];
            if (a->bias) acc += ex_h2f(a->bias[j]);
            a->c[i * a->ldc + j] = ex_store(acc, a->clamp_min, a->clamp_max);
        }
    return KB_OK;
}

const kb_plugin_realization realizations[] = {{
    .name = "gemm_new",
    .kernel = "exscratchxx: portable C++ GEMM that keeps a new[] copy of B to the next call",
    .op = KB_OP_GEMM,
    .form = KB_PLUGIN_WHOLE_CALL,
    .isa = KB_ISA_SCALAR,
    .accum = KB_ACCUM_FP32,
    .k_per_rounding = 1,
    .bias = KB_PLUGIN_BIAS_LAST,
    .bforms = KB_BFORM_PLAIN,
    .thread_safe = 0,
    .gemm = gemm,
}};

const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
    .name = "exscratchxx",
    .version = "1.0.0",
    .description = "C++: a copy of B made with new[] kept to the next call",
    .count = 1,
    .realizations = realizations,
};

}  // namespace

extern "C" EXPORT const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &table;
}
