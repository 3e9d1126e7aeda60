/* exclobber.c — a negative control for kbench's calling-convention checks:
 * do not copy it. Portable C GEMMs (FP32 chain over k, bias last, right
 * results) whose code also changes a callee-saved register behind the
 * compiler's back, as a hand-written assembly kernel that forgets to save
 * it would: the asm statements name no clobbers, so nothing restores the
 * register before the function returns.
 *
 *   aarch64: gemm_clobbers_d9 (the low half of v9), gemm_clobbers_x20
 *   x86_64:  gemm_clobbers_rbx, gemm_clobbers_r12
 *
 * In a checking run kbench calls every kernel through a trampoline that
 * fills the callee-saved registers with canaries: each is a finding naming
 * the register. Outside one, such a kernel corrupts its caller. */
#include "kbench_plugin.h"

#include "../common/exfp16.h"

#define EXPORT __attribute__((visibility("default")))

static void compute(const kb_plugin_gemm_args *a) {
    for (size_t i = 0; i < a->m; i++)
        for (size_t j = 0; j < a->n; j++) {
            float acc = 0.0f;
            for (size_t kk = 0; kk < a->k; kk++) acc += ex_h2f(a->a[i * a->lda + kk]) * ex_h2f(a->b[kk * a->ldb + j]);
            if (a->bias) acc += ex_h2f(a->bias[j]);
            a->c[i * a->ldc + j] = ex_store(acc, a->clamp_min, a->clamp_max);
        }
}

#if defined(__aarch64__)
static kb_status clobber_first(void *ctx, const kb_plugin_gemm_args *a) {
    (void)ctx;
    compute(a);
    __asm__ volatile("movi d9, #0"); /* the bug: d9 is callee-saved */
    return KB_OK;
}

static kb_status clobber_second(void *ctx, const kb_plugin_gemm_args *a) {
    (void)ctx;
    compute(a);
    __asm__ volatile("mov x20, #1"); /* the bug: x20 is callee-saved */
    return KB_OK;
}
#define FIRST "gemm_clobbers_d9"
#define SECOND "gemm_clobbers_x20"
#elif defined(__x86_64__)
static kb_status clobber_first(void *ctx, const kb_plugin_gemm_args *a) {
    (void)ctx;
    compute(a);
    __asm__ volatile("mov $1, %rbx"); /* the bug: rbx is callee-saved */
    return KB_OK;
}

static kb_status clobber_second(void *ctx, const kb_plugin_gemm_args *a) {
    (void)ctx;
    compute(a);
    __asm__ volatile("mov $1, %r12"); /* the bug: r12 is callee-saved */
    return KB_OK;
}
#define FIRST "gemm_clobbers_rbx"
#define SECOND "gemm_clobbers_r12"
#else
#error "exclobber: aarch64 or x86_64 only"
#endif

#define GEMM(NAME, FN)                                                                                  \
    {                                                                                                  \
        .name = NAME, .kernel = "exclobber: portable C GEMM that clobbers a callee-saved register",    \
        .op = KB_OP_GEMM, .form = KB_PLUGIN_WHOLE_CALL, .isa = KB_ISA_SCALAR, .accum = KB_ACCUM_FP32,  \
        .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_LAST, .bforms = KB_BFORM_PLAIN, .thread_safe = 0,  \
        .gemm = FN,                                                                                    \
    }

static const kb_plugin_realization realizations[] = {GEMM(FIRST, clobber_first), GEMM(SECOND, clobber_second)};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
    .name = "exclobber",
    .version = "1.0.0",
    .description = "negative control: GEMMs that do not restore a callee-saved register",
    .count = sizeof realizations / sizeof realizations[0],
    .realizations = realizations,
};

EXPORT const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &table;
}
