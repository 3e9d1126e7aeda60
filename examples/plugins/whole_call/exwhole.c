/* exwhole.c — example plugin (a): the whole-call form.
 *
 * A portable C GEMM and a direct convolution, each accumulating in FP32 in a
 * fixed order (products in increasing k, or taps in (ky, kx, ci) order, the
 * bias added last, clamp, one rounding to FP16). The GEMM also packs B in a
 * format of its own: a 48-byte header (magic, version, N, K, payload size,
 * FNV-1a checksum of the payload) followed by the bias row and the K rows of
 * B. A call with such a B checks the header against the call and refuses a
 * mismatch with KB_ERR_CONTRACT and the reason: this is what kbench's
 * contract probes expect of a plugin that packs B.
 *
 * Both realizations are thread safe (no state), so kbench may split a call
 * into row bands (GEMM) or images (convolution) on several threads.
 *
 * Build: see examples/plugins/Makefile (`make -C examples/plugins`). */
#include "kbench_plugin.h"

#include "../common/exfp16.h"

#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* ---- the packed-B format ------------------------------------------------------ */

#define EXW_MAGIC 0x42575845u /* "EXWB" */

typedef struct exw_header {
    uint32_t magic;
    uint32_t version;
    uint64_t n, k;
    uint64_t payload_bytes;
    uint64_t checksum;
    uint64_t reserved;
} exw_header;

static uint64_t fnv1a(const void *p, size_t len) {
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

static size_t payload_bytes(size_t n, size_t k) { return (k + 1) * n * sizeof(uint16_t); }

static size_t packed_b_size(void *ctx, size_t n, size_t k) {
    (void)ctx;
    return sizeof(exw_header) + payload_bytes(n, k);
}

static kb_status pack_b(void *ctx, size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                        void *dst, size_t dst_size) {
    if (dst_size < packed_b_size(ctx, n, k)) return KB_ERR_INVALID_ARGUMENT;
    exw_header h = {EXW_MAGIC, 1, n, k, payload_bytes(n, k), 0, 0};
    uint16_t *out = (uint16_t *)((unsigned char *)dst + sizeof h);
    for (size_t j = 0; j < n; j++) out[j] = bias ? bias[j] : 0;
    for (size_t kk = 0; kk < k; kk++) memcpy(out + (kk + 1) * n, b + kk * ldb, n * sizeof(uint16_t));
    h.checksum = fnv1a(out, h.payload_bytes);
    memcpy(dst, &h, sizeof h);
    return KB_OK;
}

static kb_status refuse(const kb_plugin_gemm_args *a, kb_status st, const char *why) {
    if (a->message && a->message_len) snprintf(a->message, a->message_len, "%s", why);
    return st;
}

/* ---- GEMM ------------------------------------------------------------------------ */

static kb_status gemm(void *ctx, const kb_plugin_gemm_args *a) {
    (void)ctx;
    const uint16_t *b = a->b, *bias = a->bias;
    size_t ldb = a->ldb;
    if (a->b_packed) {
        exw_header h;
        if (a->b_packed_size < sizeof h) return refuse(a, KB_ERR_CONTRACT, "B: shorter than its header");
        memcpy(&h, a->b_packed, sizeof h);
        if (h.magic != EXW_MAGIC || h.version != 1) return refuse(a, KB_ERR_CONTRACT, "B: not packed by exwhole");
        if (h.n != a->n) return refuse(a, KB_ERR_CONTRACT, "B.n: packed for another N");
        if (h.k != a->k) return refuse(a, KB_ERR_CONTRACT, "B.k: packed for another K");
        if (h.payload_bytes != payload_bytes(a->n, a->k) || a->b_packed_size - sizeof h < h.payload_bytes)
            return refuse(a, KB_ERR_CONTRACT, "B.size: truncated packed B");
        if (a->bias) return refuse(a, KB_ERR_CONTRACT, "bias: the packed B carries its own bias");
        const uint16_t *payload = (const uint16_t *)((const unsigned char *)a->b_packed + sizeof h);
        if (fnv1a(payload, h.payload_bytes) != h.checksum) return refuse(a, KB_ERR_CONTRACT, "B: checksum mismatch");
        bias = payload;
        b = payload + a->n;
        ldb = a->n;
    }
    if (!b) return refuse(a, KB_ERR_INVALID_ARGUMENT, "B is NULL");
    for (size_t i = 0; i < a->m; i++)
        for (size_t j = 0; j < a->n; j++) {
            float acc = 0.0f;
            for (size_t kk = 0; kk < a->k; kk++) acc += ex_h2f(a->a[i * a->lda + kk]) * ex_h2f(b[kk * ldb + j]);
            if (bias) acc += ex_h2f(bias[j]);
            a->c[i * a->ldc + j] = ex_store(acc, a->clamp_min, a->clamp_max);
        }
    return KB_OK;
}

/* ---- convolution ------------------------------------------------------------------- */

static kb_status conv2d(void *ctx, const kb_plugin_conv_args *a) {
    (void)ctx;
    const kb_conv_desc *d = a->desc;
    size_t cin_g = d->c_in / d->groups, cout_g = d->c_out / d->groups;
    for (size_t img = 0; img < d->n; img++)
        for (size_t oy = 0; oy < a->out_h; oy++)
            for (size_t ox = 0; ox < a->out_w; ox++)
                for (size_t co = 0; co < d->c_out; co++) {
                    size_t g = co / cout_g;
                    float acc = 0.0f;
                    for (size_t ky = 0; ky < d->kh; ky++)
                        for (size_t kx = 0; kx < d->kw; kx++) {
                            /* a padding tap is a term with the input value 0 (0 * inf is NaN) */
                            size_t iy = oy * d->stride_h + ky * d->dil_h, ix = ox * d->stride_w + kx * d->dil_w;
                            int inside = iy >= d->pad_top && ix >= d->pad_left && iy - d->pad_top < d->h &&
                                         ix - d->pad_left < d->w;
                            const uint16_t *x = inside ? a->input + ((img * d->h + (iy - d->pad_top)) * d->w +
                                                                     (ix - d->pad_left)) * d->c_in + g * cin_g
                                                       : NULL;
                            const uint16_t *w = a->filter + ((ky * d->kw + kx) * cin_g) * d->c_out + co;
                            for (size_t ci = 0; ci < cin_g; ci++)
                                acc += (x ? ex_h2f(x[ci]) : 0.0f) * ex_h2f(w[ci * d->c_out]);
                        }
                    if (a->bias) acc += ex_h2f(a->bias[co]);
                    a->output[((img * a->out_h + oy) * a->out_w + ox) * d->c_out + co] =
                        ex_store(acc, d->clamp_min, d->clamp_max);
                }
    return KB_OK;
}

/* ---- the table ------------------------------------------------------------------------ */

static const kb_plugin_realization realizations[] = {
    {
        .name = "gemm_f32acc",
        .kernel = "exwhole: portable C, FP32 chain over k, bias last",
        .op = KB_OP_GEMM,
        .form = KB_PLUGIN_WHOLE_CALL,
        .isa = KB_ISA_SCALAR,
        .accum = KB_ACCUM_FP32,
        .k_per_rounding = 1,
        .bias = KB_PLUGIN_BIAS_LAST,
        .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE,
        .thread_safe = 1,
        .gemm = gemm,
        .packed_b_size = packed_b_size,
        .pack_b = pack_b,
    },
    {
        .name = "conv2d_direct_f32acc",
        .kernel = "exwhole: portable C direct convolution, taps (ky, kx, ci), bias last",
        .op = KB_OP_CONV2D,
        .form = KB_PLUGIN_WHOLE_CALL,
        .isa = KB_ISA_SCALAR,
        .accum = KB_ACCUM_FP32,
        .k_per_rounding = 1,
        .bias = KB_PLUGIN_BIAS_LAST,
        .thread_safe = 1,
        .conv2d = conv2d,
    },
};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
    .name = "exwhole",
    .version = "1.0.0",
    .description = "example (a): whole-call GEMM with its own packed B, and a direct convolution",
    .count = sizeof realizations / sizeof realizations[0],
    .realizations = realizations,
};

EXPORT const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= 1 ? &table : NULL;
}
