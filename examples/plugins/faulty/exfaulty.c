/* exfaulty.c — example plugin (c): a deliberately faulty plugin, the negative
 * control that kbench must catch. Do not copy it.
 *
 * gemm_tailbug (every architecture): an FP32 GEMM with a tail bug. When N is
 * not a multiple of 4, the last N % 4 columns leave out the last product of
 * every dot product (the loop bound of the "remainder" columns is off by one).
 * Correct on every shape with N % 4 == 0, wrong elsewhere: the correctness
 * suite fails it on tail shapes. It also packs B in a format of its own with
 * no header at all (the bias row, then B), and a call trusts whatever it is
 * given: B packed for another N or K, a packed B without bias called with a
 * separate bias (ignored), a truncated buffer. The contract probes find it
 * computing silently wrong results.
 *
 * gemm_svl_trusting (aarch64 with SME): packs B in blocks of nr = SVL / 16
 * columns (as the SME layouts do: nr bias values, then K rows of nr), reading
 * the streaming vector length when it packs and again when it computes, and
 * trusts that both agree. A B packed at another vector length is read with
 * the wrong block width: silently wrong (the "other SVL" probe). Its
 * arithmetic is plain C and correct; only the trust is faulty. */
#include "kbench_plugin.h"

#include "../common/exfp16.h"

#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* ---- gemm_tailbug ------------------------------------------------------------------ */

static size_t tail_size(void *ctx, size_t n, size_t k) {
    (void)ctx;
    return (k + 1) * n * sizeof(uint16_t);
}

static kb_status tail_pack(void *ctx, size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                           void *dst, size_t dst_size) {
    if (dst_size < tail_size(ctx, n, k)) return KB_ERR_INVALID_ARGUMENT;
    uint16_t *out = dst;
    for (size_t j = 0; j < n; j++) out[j] = bias ? bias[j] : 0;
    for (size_t kk = 0; kk < k; kk++) memcpy(out + (kk + 1) * n, b + kk * ldb, n * sizeof(uint16_t));
    return KB_OK;
}

static kb_status tail_gemm(void *ctx, const kb_plugin_gemm_args *a) {
    (void)ctx;
    const uint16_t *b = a->b, *bias = a->bias;
    size_t ldb = a->ldb;
    if (a->b_packed) { /* trusted as is: no header, nothing checked */
        bias = a->b_packed;
        b = bias + a->n;
        ldb = a->n;
    }
    size_t full = a->n - a->n % 4;
    for (size_t i = 0; i < a->m; i++)
        for (size_t j = 0; j < a->n; j++) {
            size_t kend = j < full ? a->k : a->k - 1; /* the bug */
            float acc = 0.0f;
            for (size_t kk = 0; kk < kend; kk++) acc += ex_h2f(a->a[i * a->lda + kk]) * ex_h2f(b[kk * ldb + j]);
            if (bias) acc += ex_h2f(bias[j]);
            a->c[i * a->ldc + j] = ex_store(acc, a->clamp_min, a->clamp_max);
        }
    return KB_OK;
}

/* ---- gemm_svl_trusting (aarch64 only) ------------------------------------------------- */

#if defined(__aarch64__)
static size_t svl_nr(void) {
    register uint64_t x0 __asm__("x0");
    __asm__ volatile(".inst 0x04bf5820" : "=r"(x0)); /* rdsvl x0, #1: SVL in bytes */
    return (size_t)x0 / 2;                           /* FP16 columns of two vectors */
}

static size_t svl_size(void *ctx, size_t n, size_t k) {
    (void)ctx;
    size_t nr = svl_nr();
    return (n + nr - 1) / nr * nr * (k + 1) * sizeof(uint16_t);
}

static kb_status svl_pack(void *ctx, size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                          void *dst, size_t dst_size) {
    size_t nr = svl_nr();
    if (dst_size < svl_size(ctx, n, k)) return KB_ERR_INVALID_ARGUMENT;
    uint16_t *out = dst;
    for (size_t n0 = 0; n0 < n; n0 += nr) {
        for (size_t j = 0; j < nr; j++) out[j] = (bias && n0 + j < n) ? bias[n0 + j] : 0;
        out += nr;
        for (size_t kk = 0; kk < k; kk++, out += nr)
            for (size_t j = 0; j < nr; j++) out[j] = n0 + j < n ? b[kk * ldb + n0 + j] : 0;
    }
    return KB_OK;
}

static kb_status svl_gemm(void *ctx, const kb_plugin_gemm_args *a) {
    (void)ctx;
    size_t nr = svl_nr(); /* trusted to be the vector length B was packed at */
    const uint16_t *p = a->b_packed;
    for (size_t i = 0; i < a->m; i++)
        for (size_t j = 0; j < a->n; j++) {
            const uint16_t *blk = p + j / nr * nr * (a->k + 1);
            size_t c = j % nr;
            float acc = 0.0f;
            for (size_t kk = 0; kk < a->k; kk++) {
                uint16_t bv = a->b ? a->b[kk * a->ldb + j] : blk[(kk + 1) * nr + c];
                acc += ex_h2f(a->a[i * a->lda + kk]) * ex_h2f(bv);
            }
            if (a->b) {
                if (a->bias) acc += ex_h2f(a->bias[j]);
            } else {
                acc += ex_h2f(blk[c]);
            }
            a->c[i * a->ldc + j] = ex_store(acc, a->clamp_min, a->clamp_max);
        }
    return KB_OK;
}
#endif

/* ---- the table ---------------------------------------------------------------------- */

static const kb_plugin_realization realizations[] = {
    {
        .name = "gemm_tailbug",
        .kernel = "exfaulty: FP32 chain with an off-by-one in the N tail",
        .op = KB_OP_GEMM,
        .form = KB_PLUGIN_WHOLE_CALL,
        .isa = KB_ISA_SCALAR,
        .accum = KB_ACCUM_FP32,
        .k_per_rounding = 1,
        .bias = KB_PLUGIN_BIAS_LAST,
        .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE,
        .thread_safe = 1,
        .gemm = tail_gemm,
        .packed_b_size = tail_size,
        .pack_b = tail_pack,
    },
#if defined(__aarch64__)
    {
        .name = "gemm_svl_trusting",
        .kernel = "exfaulty: B in SVL-wide blocks, vector length never checked",
        .op = KB_OP_GEMM,
        .form = KB_PLUGIN_WHOLE_CALL,
        .isa = KB_ISA_SME,
        .accum = KB_ACCUM_FP32,
        .k_per_rounding = 1,
        .bias = KB_PLUGIN_BIAS_LAST,
        .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE,
        .thread_safe = 1,
        .gemm = svl_gemm,
        .packed_b_size = svl_size,
        .pack_b = svl_pack,
    },
#endif
};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
    .name = "exfaulty",
    .version = "0.0.1-broken",
    .description = "example (c): a tail bug and a kernel that trusts B packed at another SVL",
    .count = sizeof realizations / sizeof realizations[0],
    .realizations = realizations,
};

EXPORT const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &table;
}
