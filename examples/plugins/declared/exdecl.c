/* exdecl.c — what a library does on purpose, declared (plugin ABI 3), and the
 * same code with each declaration broken (-DEXDECL_BAD, libexdecl_bad.so: a
 * negative control, do not copy it). Portable C GEMMs in the whole-call form
 * (FP32 chain over k, bias last):
 *
 *   gemm_nobias        its packer takes no bias (KB_PLUGIN_PACK_NO_BIAS); a call
 *                      with its packed B and a bias is refused, so kbench lists
 *                      such cases as not applicable and probes it without bias
 *   gemm_bias_at_call  the same packer; a call with its packed B takes the bias
 *                      separately (KB_PLUGIN_PACK_BIAS_AT_CALL)
 *   gemm_overread      reads up to 32 bytes past the end of B and of the bias
 *                      on purpose (overread = 32, as a kernel whose tail loads
 *                      whole vectors); the bytes read there never reach C.
 *                      Broken: it reads 33 bytes past B
 *   gemm_pack_overread its packer reads up to 16 bytes past the end of B
 *                      (overread = 16). Broken: 17
 *   gemm_dispatch      declares the functions its calls must run in
 *                      (expect_symbols "exdecl_fast_*"); its entry picks a path
 *                      as a runtime's dispatcher does. Broken: it silently
 *                      falls back to its reference loop (exdecl_reference_gemm),
 *                      which computes the same result
 *   gemm_nobias_svl    (aarch64 with SME) a packer without bias whose packed B
 *                      is laid out in blocks of the streaming vector length and
 *                      records it in a header; a call at another length is
 *                      refused. Broken: the header is not checked, so a B packed
 *                      at another SVL is accepted and gives wrong results
 *
 * Packed B of the portable ones: a 16-byte header (N, K) then B's K rows. */
#include "kbench_plugin.h"

#include <stdio.h>
#include <string.h>

#include "../common/exfp16.h"

#define EXPORT __attribute__((visibility("default")))

#ifdef EXDECL_BAD
#define OVER_B 33    /* bytes past the end of B the kernel reads: one past its allowance */
#define OVER_PACK 17 /* ... and the packer */
#else
#define OVER_B 32
#define OVER_PACK 16
#endif

static volatile uint8_t sink; /* bytes read past an operand go here, never into C */

static void touch_past(const void *base, size_t bytes, size_t past) {
    if (base && past) sink = ((const volatile uint8_t *)base)[bytes + past - 1];
}

__attribute__((noinline)) static float dot(const kb_plugin_gemm_args *a, const uint16_t *b, size_t ldb, size_t i, size_t j) {
    float acc = 0.0f;
    for (size_t kk = 0; kk < a->k; kk++) acc += ex_h2f(a->a[i * a->lda + kk]) * ex_h2f(b[kk * ldb + j]);
    return acc;
}

static kb_status refuse(const kb_plugin_gemm_args *a, kb_status st, const char *why) {
    if (a->message && a->message_len) snprintf(a->message, a->message_len, "%s", why);
    return st;
}

/* ---- the portable packed B: header (N, K) and B's rows --------------------------------- */

static size_t rows_size(void *ctx, size_t n, size_t k) {
    (void)ctx;
    return 16 + n * k * sizeof(uint16_t);
}

static void put_rows(size_t n, size_t k, const kb_f16 *b, size_t ldb, void *dst) {
    uint64_t dims[2] = {n, k};
    memcpy(dst, dims, sizeof dims);
    uint16_t *out = (uint16_t *)dst + 8;
    for (size_t kk = 0; kk < k; kk++) memcpy(out + kk * n, b + kk * ldb, n * sizeof(uint16_t));
}

static kb_status pack_nobias(void *ctx, size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                             void *dst, size_t dst_size) {
    if (bias) return KB_ERR_INVALID_ARGUMENT; /* kbench never passes one: declared */
    if (dst_size < rows_size(ctx, n, k)) return KB_ERR_INVALID_ARGUMENT;
    put_rows(n, k, b, ldb, dst);
    return KB_OK;
}

static kb_status pack_overread(void *ctx, size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                               void *dst, size_t dst_size) {
    if (dst_size < rows_size(ctx, n, k) + n * sizeof(uint16_t)) return KB_ERR_INVALID_ARGUMENT;
    touch_past(b, ((k - 1) * ldb + n) * sizeof(uint16_t), OVER_PACK);
    put_rows(n, k, b, ldb, dst);
    uint16_t *tail = (uint16_t *)dst + 8 + n * k; /* the bias after the rows */
    for (size_t j = 0; j < n; j++) tail[j] = bias ? bias[j] : 0;
    return KB_OK;
}

static size_t overread_size(void *ctx, size_t n, size_t k) { return rows_size(ctx, n, k) + n * sizeof(uint16_t); }

static const uint16_t *rows_of(const kb_plugin_gemm_args *a, kb_status *st) {
    uint64_t dims[2];
    if (a->b_packed_size < 16) { *st = refuse(a, KB_ERR_CONTRACT, "packed B shorter than its header"); return NULL; }
    memcpy(dims, a->b_packed, sizeof dims);
    if (dims[0] != a->n || dims[1] != a->k) {
        *st = refuse(a, KB_ERR_CONTRACT, "packed B made for another N or K");
        return NULL;
    }
    if (a->b_packed_size < 16 + a->n * a->k * sizeof(uint16_t)) {
        *st = refuse(a, KB_ERR_CONTRACT, "packed B cut short");
        return NULL;
    }
    *st = KB_OK;
    return (const uint16_t *)a->b_packed + 8;
}

/* ctx: 1 = a bias may come with the packed B (gemm_bias_at_call), 0 = it may not */
static kb_status gemm_rows(void *ctx, const kb_plugin_gemm_args *a) {
    const uint16_t *b = a->b;
    size_t ldb = a->ldb;
    if (!b) {
        if (a->bias && !ctx) return refuse(a, KB_ERR_CONTRACT, "a packed B takes no bias (declared)");
        kb_status st;
        if (!(b = rows_of(a, &st))) return st;
        ldb = a->n;
    }
    for (size_t i = 0; i < a->m; i++)
        for (size_t j = 0; j < a->n; j++) {
            float acc = dot(a, b, ldb, i, j);
            if (a->bias) acc += ex_h2f(a->bias[j]);
            a->c[i * a->ldc + j] = ex_store(acc, a->clamp_min, a->clamp_max);
        }
    return KB_OK;
}

static kb_status gemm_overread(void *ctx, const kb_plugin_gemm_args *a) {
    (void)ctx;
    touch_past(a->b, ((a->k - 1) * a->ldb + a->n) * sizeof(uint16_t), OVER_B);
    touch_past(a->bias, a->n * sizeof(uint16_t), 32);
    for (size_t i = 0; i < a->m; i++)
        for (size_t j = 0; j < a->n; j++) {
            float acc = dot(a, a->b, a->ldb, i, j);
            if (a->bias) acc += ex_h2f(a->bias[j]);
            a->c[i * a->ldc + j] = ex_store(acc, a->clamp_min, a->clamp_max);
        }
    return KB_OK;
}

static kb_status gemm_pack_overread(void *ctx, const kb_plugin_gemm_args *a) {
    kb_status st = KB_OK;
    const uint16_t *b = a->b ? a->b : rows_of(a, &st);
    if (!b) return st;
    size_t ldb = a->b ? a->ldb : a->n;
    if (!a->b && a->bias) return refuse(a, KB_ERR_CONTRACT, "the packed B carries its bias");
    const uint16_t *bias = a->b ? a->bias : b + a->n * a->k;
    (void)ctx;
    for (size_t i = 0; i < a->m; i++)
        for (size_t j = 0; j < a->n; j++) {
            float acc = dot(a, b, ldb, i, j);
            if (bias) acc += ex_h2f(bias[j]);
            a->c[i * a->ldc + j] = ex_store(acc, a->clamp_min, a->clamp_max);
        }
    return KB_OK;
}

/* ---- gemm_dispatch: a path picked at run time ---------------------------------------------- */

/* the two paths compute the same: a blocked loop and the reference loop (noinline, so each
 * is a function of its own whose instructions can be attributed to it) */
__attribute__((noinline)) void exdecl_fast_gemm(const kb_plugin_gemm_args *a);
__attribute__((noinline)) void exdecl_reference_gemm(const kb_plugin_gemm_args *a);

void exdecl_fast_gemm(const kb_plugin_gemm_args *a) {
    for (size_t i = 0; i < a->m; i++)
        for (size_t j0 = 0; j0 < a->n; j0 += 4)
            for (size_t j = j0; j < j0 + 4 && j < a->n; j++) {
                float acc = dot(a, a->b, a->ldb, i, j);
                if (a->bias) acc += ex_h2f(a->bias[j]);
                a->c[i * a->ldc + j] = ex_store(acc, a->clamp_min, a->clamp_max);
            }
}

void exdecl_reference_gemm(const kb_plugin_gemm_args *a) {
    for (size_t i = 0; i < a->m; i++)
        for (size_t j = 0; j < a->n; j++) {
            float acc = dot(a, a->b, a->ldb, i, j);
            if (a->bias) acc += ex_h2f(a->bias[j]);
            a->c[i * a->ldc + j] = ex_store(acc, a->clamp_min, a->clamp_max);
        }
}

static kb_status gemm_dispatch(void *ctx, const kb_plugin_gemm_args *a) {
    (void)ctx;
#ifdef EXDECL_BAD
    exdecl_reference_gemm(a); /* the fallback nobody sees in the results */
#else
    exdecl_fast_gemm(a);
#endif
    return KB_OK;
}

static const char *const fast_paths[] = {"exdecl_fast_*", NULL};

/* ---- gemm_nobias_svl (aarch64 only) ------------------------------------------------------- */

#if defined(__aarch64__)
static size_t svl_bytes(void) {
    register uint64_t x0 __asm__("x0");
    __asm__ volatile(".inst 0x04bf5820" : "=r"(x0)); /* rdsvl x0, #1: SVL in bytes */
    return (size_t)x0;
}

/* header: u64 SVL in bytes at packing, N, K, the size; then blocks of nr = SVL / 2
 * columns, K rows each */
static size_t svl_size(void *ctx, size_t n, size_t k) {
    (void)ctx;
    size_t nr = svl_bytes() / 2;
    return 32 + (n + nr - 1) / nr * nr * k * sizeof(uint16_t);
}

static kb_status svl_pack(void *ctx, size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                          void *dst, size_t dst_size) {
    if (bias || dst_size < svl_size(ctx, n, k)) return KB_ERR_INVALID_ARGUMENT;
    uint64_t head[4] = {svl_bytes(), n, k, svl_size(ctx, n, k)};
    memcpy(dst, head, sizeof head);
    size_t nr = head[0] / 2;
    uint16_t *out = (uint16_t *)dst + 16;
    for (size_t n0 = 0; n0 < n; n0 += nr)
        for (size_t kk = 0; kk < k; kk++, out += nr)
            for (size_t j = 0; j < nr; j++) out[j] = n0 + j < n ? b[kk * ldb + n0 + j] : 0;
    return KB_OK;
}

static kb_status svl_gemm(void *ctx, const kb_plugin_gemm_args *a) {
    (void)ctx;
    if (a->b) return refuse(a, KB_ERR_UNSUPPORTED, "takes its packed B only");
    if (a->bias) return refuse(a, KB_ERR_CONTRACT, "a packed B takes no bias (declared)");
    uint64_t head[4];
    if (a->b_packed_size < sizeof head) return refuse(a, KB_ERR_CONTRACT, "packed B shorter than its header");
    memcpy(head, a->b_packed, sizeof head);
    size_t nr = svl_bytes() / 2;
#ifndef EXDECL_BAD
    if (head[0] != svl_bytes()) return refuse(a, KB_ERR_CONTRACT, "B was packed at another SVL");
#endif
    if (head[1] != a->n || head[2] != a->k) return refuse(a, KB_ERR_CONTRACT, "packed B made for another N or K");
    if (a->b_packed_size < head[3]) return refuse(a, KB_ERR_CONTRACT, "packed B cut short");
    const uint16_t *p = (const uint16_t *)a->b_packed + 16;
    for (size_t i = 0; i < a->m; i++)
        for (size_t j = 0; j < a->n; j++) {
            const uint16_t *blk = p + j / nr * nr * a->k;
            float acc = 0.0f;
            for (size_t kk = 0; kk < a->k; kk++) acc += ex_h2f(a->a[i * a->lda + kk]) * ex_h2f(blk[kk * nr + j % nr]);
            a->c[i * a->ldc + j] = ex_store(acc, a->clamp_min, a->clamp_max);
        }
    return KB_OK;
}
#endif

/* ---- the table ------------------------------------------------------------------------ */

#define BASE(NAME, WHAT)                                                                               \
    .name = NAME, .kernel = "exdecl: " WHAT, .op = KB_OP_GEMM, .form = KB_PLUGIN_WHOLE_CALL,          \
    .isa = KB_ISA_SCALAR, .accum = KB_ACCUM_FP32, .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_LAST,    \
    .thread_safe = 1

static int at_call = 1;

static const kb_plugin_realization realizations[] = {
    {BASE("gemm_nobias", "a packer without bias, its packed B taking none"),
     .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE, .gemm = gemm_rows, .packed_b_size = rows_size,
     .pack_b = pack_nobias, .flags = KB_PLUGIN_PACK_NO_BIAS},
    {BASE("gemm_bias_at_call", "a packer without bias, the bias passed with its packed B"),
     .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE, .ctx = &at_call, .gemm = gemm_rows,
     .packed_b_size = rows_size, .pack_b = pack_nobias,
     .flags = KB_PLUGIN_PACK_NO_BIAS | KB_PLUGIN_PACK_BIAS_AT_CALL},
    {BASE("gemm_overread", "reads up to 32 bytes past B and the bias on purpose"),
     .bforms = KB_BFORM_PLAIN, .gemm = gemm_overread,
     .overread = {[KB_PLUGIN_OPERAND_B] = 32, [KB_PLUGIN_OPERAND_BIAS] = 32}},
    {BASE("gemm_pack_overread", "a packer that reads up to 16 bytes past B on purpose"),
     .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE, .gemm = gemm_pack_overread,
     .packed_b_size = overread_size, .pack_b = pack_overread,
     .overread = {[KB_PLUGIN_OPERAND_B] = 16}},
    {BASE("gemm_dispatch", "a path picked at run time, declared"), .bforms = KB_BFORM_PLAIN,
     .gemm = gemm_dispatch, .expect_symbols = fast_paths},
#if defined(__aarch64__)
    {.name = "gemm_nobias_svl", .kernel = "exdecl: packed B in SVL-wide blocks, no bias", .op = KB_OP_GEMM,
     .form = KB_PLUGIN_WHOLE_CALL, .isa = KB_ISA_SME, .accum = KB_ACCUM_FP32, .k_per_rounding = 1,
     .bias = KB_PLUGIN_BIAS_LAST, .thread_safe = 1, .bforms = KB_BFORM_NATIVE, .gemm = svl_gemm,
     .packed_b_size = svl_size, .pack_b = svl_pack, .flags = KB_PLUGIN_PACK_NO_BIAS},
#endif
};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
#ifdef EXDECL_BAD
    .name = "exdecl_bad",
    .version = "0.0.1-broken",
    .description = "declarations broken: an overread past its allowance, a packer's too, B accepted at another SVL",
#else
    .name = "exdecl",
    .version = "1.0.0",
    .description = "declared on purpose: packers without bias, overreads within their allowance",
#endif
    .count = sizeof realizations / sizeof realizations[0],
    .realizations = realizations,
};

EXPORT const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= KB_PLUGIN_ABI_VERSION ? &table : NULL;
}
