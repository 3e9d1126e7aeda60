/* kb_pack.c — self-describing packed-B buffers: sizes, sealing, packing.
 * Validation against a call lives in kb_gemm.c. */
#include "kb_internal.h"

#include <string.h>

uint64_t kb_fnv1a64(const void *data, size_t len) {
    const unsigned char *p = (const unsigned char *)data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint32_t kb_layout_block_n(int layout, uint32_t vector_bits) {
    switch (layout) {
    case KB_LAYOUT_PORTABLE: return KB_PORTABLE_BLOCK_N;
    case KB_LAYOUT_SCALAR_F16P16X1B: return KB_SCALAR_NATIVE_BLOCK_N;
    case KB_LAYOUT_NEON: return KB_NEON_NATIVE_BLOCK_N;
    case KB_LAYOUT_SME_X16P2VLX2B: return vector_bits / 16u; /* 2 * VL32 */
    default: return 0;
    }
}

int kb_layout_has_bias(int layout) {
    return layout == KB_LAYOUT_SCALAR_F16P16X1B || layout == KB_LAYOUT_NEON ||
           layout == KB_LAYOUT_SME_X16P2VLX2B;
}

bool kb_layout_payload_size(int layout, size_t n, size_t k,
                            uint32_t vector_bits, size_t *bytes) {
    size_t bn = kb_layout_block_n(layout, vector_bits);
    if (bn == 0) return false;
    size_t blocks = kb_ceil_div(n, bn);
    size_t rows = k; /* k rows of bn values per block */
    if (layout == KB_LAYOUT_SME_X16P2VLX2B) rows = k + (k & 1u); /* k padded to pairs */
    size_t per_block;
    if (!kb_mul_ok(rows, bn, &per_block)) return false;
    if (kb_layout_has_bias(layout) && !kb_add_ok(per_block, bn, &per_block)) return false;
    size_t elems;
    if (!kb_mul_ok(per_block, blocks, &elems)) return false;
    return kb_mul_ok(elems, sizeof(kb_f16), bytes);
}

void kb_header_seal(kb_packed_header *h, int layout, int backend,
                    uint32_t vector_bits, size_t n, size_t k, uint32_t flags,
                    size_t payload_size) {
    memset(h, 0, sizeof *h);
    h->magic = KB_PACK_MAGIC;
    h->version = KB_PACK_VERSION;
    h->header_size = (uint16_t)sizeof(kb_packed_header);
    h->layout = (uint16_t)layout;
    h->backend = (uint16_t)backend;
    h->vector_bits = vector_bits;
    h->n = n;
    h->k = k;
    h->flags = flags;
    h->block_n = kb_layout_block_n(layout, vector_bits);
    h->payload_size = payload_size;
    h->payload_checksum = kb_fnv1a64((const unsigned char *)h + sizeof *h, payload_size);
    h->header_checksum = 0;
    h->header_checksum = kb_fnv1a64(h, sizeof *h);
}

static kb_status check_pack_args(size_t N, size_t K, const kb_f16 *B, size_t ldb,
                                 void *dst, kb_error *err) {
    if (N == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "N", "must be positive, got 0");
    if (K == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "K", "must be positive, got 0");
    if (!B) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "B", "is NULL");
    if (!dst) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "dst", "is NULL");
    if (ldb < N)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "ldb", "%zu is smaller than N = %zu", ldb, N);
    size_t span;
    if (!kb_mul_ok(K - 1, ldb, &span) || !kb_add_ok(span, N, &span) ||
        !kb_mul_ok(span, sizeof(kb_f16), &span))
        return kb_fail(err, KB_ERR_OVERFLOW, "ldb", "K * ldb bytes overflow size_t");
    return KB_OK;
}

static kb_status total_size(int layout, size_t N, size_t K, uint32_t vbits,
                            size_t *size, kb_error *err) {
    size_t payload;
    if (!kb_layout_payload_size(layout, N, K, vbits, &payload) ||
        !kb_add_ok(payload, sizeof(kb_packed_header), size))
        return kb_fail(err, KB_ERR_OVERFLOW, "N", "packed size of N = %zu, K = %zu overflows size_t", N, K);
    return KB_OK;
}

kb_status kb_pack_b_size(size_t N, size_t K, size_t *size, kb_error *err) {
    kb_clear_error(err);
    if (N == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "N", "must be positive, got 0");
    if (K == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "K", "must be positive, got 0");
    if (!size) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "size", "is NULL");
    return total_size(KB_LAYOUT_PORTABLE, N, K, 0, size, err);
}

/* Writes panels of bn columns (shared by the panel layouts): for block j, k rows of bn values; optional
 * bias row first; columns past N are zero. */
void kb_pack_panels(size_t N, size_t K, const kb_f16 *B, size_t ldb, const kb_f16 *bias,
                    int with_bias, size_t bn, kb_f16 *out) {
    for (size_t j0 = 0; j0 < N; j0 += bn) {
        size_t w = N - j0 < bn ? N - j0 : bn;
        if (with_bias) {
            for (size_t j = 0; j < bn; j++) out[j] = (bias && j < w) ? bias[j0 + j] : 0;
            out += bn;
        }
        for (size_t k = 0; k < K; k++) {
            const kb_f16 *row = B + k * ldb + j0;
            for (size_t j = 0; j < bn; j++) out[j] = j < w ? row[j] : 0;
            out += bn;
        }
    }
}

kb_status kb_pack_b(size_t N, size_t K, const kb_f16 *B, size_t ldb, void *dst,
                    size_t dst_size, kb_error *err) {
    kb_clear_error(err);
    kb_status st = check_pack_args(N, K, B, ldb, dst, err);
    if (st != KB_OK) return st;
    size_t need = 0;
    if ((st = total_size(KB_LAYOUT_PORTABLE, N, K, 0, &need, err)) != KB_OK) return st;
    if (dst_size < need)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "dst_size", "%zu bytes is less than the %zu needed", dst_size, need);
    kb_packed_header *h = (kb_packed_header *)dst;
    kb_f16 *payload = (kb_f16 *)((unsigned char *)dst + sizeof *h);
    kb_pack_panels(N, K, B, ldb, NULL, 0, KB_PORTABLE_BLOCK_N, payload);
    kb_header_seal(h, KB_LAYOUT_PORTABLE, KB_BACKEND_SCALAR, 0, N, K, 0, need - sizeof *h);
    return KB_OK;
}

/* ---- native layouts ---------------------------------------------------- */

static void pack_scalar_native(size_t n, size_t k, const kb_f16 *b, size_t ldb,
                               const kb_f16 *bias, void *dst) {
    kb_pack_panels(n, k, b, ldb, bias, 1, KB_SCALAR_NATIVE_BLOCK_N, (kb_f16 *)dst);
}

static kb_native_pack_fn native_packer(int backend) {
    switch (backend) {
    case KB_BACKEND_SCALAR: return pack_scalar_native;
#if defined(KB_HAVE_NEON)
    case KB_BACKEND_NEON: return kb_neon_pack_native;
#endif
#if defined(KB_HAVE_SME)
    case KB_BACKEND_SME: return kb_sme_pack_native;
#endif
    default: return NULL;
    }
}

static kb_status native_check(int backend, const kb_selector *sel, int *layout,
                              uint32_t *vbits, kb_error *err) {
    if (backend < 0 || backend >= KB_BACKEND_COUNT)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "backend", "%d is not a backend", backend);
    kb_selector def;
    if (!sel) { kb_selector_default(&def); sel = &def; }
    kb_cpu_info cpu;
    kb_cpu_detect(&cpu);
    if (!kb_backend_usable(backend, sel, &cpu))
        return kb_fail(err, KB_ERR_UNSUPPORTED, "backend", "%s is not available on this CPU under the selector",
                       kb_backend_name(backend));
    *layout = kb_backend_native_layout(backend);
    if (*layout == 0 || !native_packer(backend))
        return kb_fail(err, KB_ERR_UNSUPPORTED, "backend", "%s has no native packed layout", kb_backend_name(backend));
    *vbits = kb_backend_vector_bits(backend);
    return KB_OK;
}

kb_status kb_pack_b_native_size(int backend, size_t N, size_t K,
                                const kb_selector *sel, size_t *size, kb_error *err) {
    kb_clear_error(err);
    if (N == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "N", "must be positive, got 0");
    if (K == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "K", "must be positive, got 0");
    if (!size) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "size", "is NULL");
    int layout = 0; uint32_t vbits = 0;
    kb_status st = native_check(backend, sel, &layout, &vbits, err);
    if (st != KB_OK) return st;
    return total_size(layout, N, K, vbits, size, err);
}

kb_status kb_pack_b_native(int backend, size_t N, size_t K, const kb_f16 *B,
                           size_t ldb, const kb_f16 *bias, void *dst, size_t dst_size,
                           const kb_selector *sel, kb_error *err) {
    kb_clear_error(err);
    kb_status st = check_pack_args(N, K, B, ldb, dst, err);
    if (st != KB_OK) return st;
    int layout = 0; uint32_t vbits = 0;
    if ((st = native_check(backend, sel, &layout, &vbits, err)) != KB_OK) return st;
    size_t need = 0;
    if ((st = total_size(layout, N, K, vbits, &need, err)) != KB_OK) return st;
    if (dst_size < need)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "dst_size", "%zu bytes is less than the %zu needed", dst_size, need);
    kb_packed_header *h = (kb_packed_header *)dst;
    native_packer(backend)(N, K, B, ldb, bias, (unsigned char *)dst + sizeof *h);
    kb_header_seal(h, layout, backend, vbits, N, K, KB_PACK_FLAG_BIAS, need - sizeof *h);
    return KB_OK;
}
