/* exnan.c — example plugin: declaring what a clamp makes of a NaN (ABI 2).
 *
 * Three portable C GEMMs with the same FP32 arithmetic (products in
 * increasing k, bias last, one rounding to FP16) and two clamps:
 *
 *   gemm_fclamp          clamps as SVE2/SME2 FCLAMP does (FMAXNM, then FMINNM):
 *                        a NaN becomes clamp_min (-inf when the call does not
 *                        clamp), and declares it: KB_PLUGIN_NAN_TO_MIN. Passes
 *                        every check, the specials included.
 *   gemm_fclamp_silent   the same clamp, declaring nothing (NaN propagation):
 *                        fails the specials, and the message says its clamp
 *                        turns NaN into clamp_min.
 *   gemm_claims_fclamp   a clamp that propagates NaN, declaring
 *                        KB_PLUGIN_NAN_TO_MIN: fails, the message says its NaN
 *                        outputs are NaN. */
#include "kbench_plugin.h"

#include "../common/exfp16.h"

#include <math.h>

#define EXPORT __attribute__((visibility("default")))

static float fclamp(float v, float lo, float hi) { return fminf(fmaxf(v, lo), hi); } /* NaN -> lo */

static kb_status gemm(void *ctx, const kb_plugin_gemm_args *a) {
    int like_fclamp = ctx != NULL;
    for (size_t i = 0; i < a->m; i++)
        for (size_t j = 0; j < a->n; j++) {
            float acc = 0.0f;
            for (size_t kk = 0; kk < a->k; kk++) acc += ex_h2f(a->a[i * a->lda + kk]) * ex_h2f(a->b[kk * a->ldb + j]);
            if (a->bias) acc += ex_h2f(a->bias[j]);
            a->c[i * a->ldc + j] = like_fclamp ? ex_f2h(fclamp(acc, a->clamp_min, a->clamp_max))
                                               : ex_store(acc, a->clamp_min, a->clamp_max);
        }
    return KB_OK;
}

#define GEMM(NAME, WHAT, FCLAMP, RULE)                                                                  \
    {                                                                                                  \
        .name = NAME, .kernel = "exnan: portable C GEMM, " WHAT, .op = KB_OP_GEMM,                     \
        .form = KB_PLUGIN_WHOLE_CALL, .isa = KB_ISA_SCALAR, .accum = KB_ACCUM_FP32, .k_per_rounding = 1, \
        .bias = KB_PLUGIN_BIAS_LAST, .bforms = KB_BFORM_PLAIN, .thread_safe = 1, .ctx = (FCLAMP),       \
        .gemm = gemm, .nan_clamp = (RULE),                                                             \
    }

static int marker;

static const kb_plugin_realization realizations[] = {
    GEMM("gemm_fclamp", "FCLAMP-style clamp, declared", &marker, KB_PLUGIN_NAN_TO_MIN),
    GEMM("gemm_fclamp_silent", "FCLAMP-style clamp, not declared", &marker, KB_PLUGIN_NAN_PROPAGATE),
    GEMM("gemm_claims_fclamp", "NaN-propagating clamp declared as FCLAMP", NULL, KB_PLUGIN_NAN_TO_MIN),
};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
    .name = "exnan",
    .version = "1.0.0",
    .description = "declared NaN rules of a clamp: FCLAMP declared, FCLAMP undeclared, a false claim",
    .count = sizeof realizations / sizeof realizations[0],
    .realizations = realizations,
};

EXPORT const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= 2 ? &table : NULL;
}
