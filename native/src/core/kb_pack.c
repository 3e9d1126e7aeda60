/* kb_pack.c — the packing entry points: self-describing packed-B buffers in
 * the portable layout or a backend's native layout (the backends' packers
 * write the payload, kb_layout.c seals the header). Validation against a
 * call lives in kb_gemm.c. */
#include "kb_internal.h"

#include <string.h>

static kb_status check_pack_args(size_t N, size_t K, const kb_f16 *B, size_t ldb,
                                 void *dst, kb_error *err) {
    if (N == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "N", "must be positive, got 0");
    if (K == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "K", "must be positive, got 0");
    if (!B) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "B", "is NULL");
    if (!dst) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "dst", "is NULL");
    if (!kb_aligned(B, sizeof(kb_f16))) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "B", "is not aligned to 2 bytes");
    if (!kb_aligned(dst, KB_PACKED_ALIGN))
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "dst", "is not aligned to %zu bytes", (size_t)KB_PACKED_ALIGN);
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
#if defined(KB_HAVE_NEON)
    _Static_assert(KB_PORTABLE_BLOCK_N == 16, "the NEON panel packer writes 16 columns");
    uint64_t sum = kb_neon_pack_panels16(N, K, B, ldb, payload); /* the same panels, vector code */
#else
    uint64_t sum = kb_pack_panels(N, K, B, ldb, NULL, 0, KB_PORTABLE_BLOCK_N, payload);
#endif
    kb_header_seal(h, KB_LAYOUT_PORTABLE, KB_BACKEND_SCALAR, 0, N, K, 0, need - sizeof *h, sum);
    return KB_OK;
}

/* ---- native layouts ---------------------------------------------------- */

static kb_native_pack_fn native_packer(int backend) {
    switch (backend) {
    case KB_BACKEND_SCALAR: return kb_scalar_pack_native;
#if defined(KB_HAVE_NEON)
    case KB_BACKEND_NEON: return kb_neon_pack_native;
#endif
#if defined(KB_HAVE_SME)
    case KB_BACKEND_SME: return kb_sme_pack_native;
#endif
#if defined(KB_HAVE_SVE)
    case KB_BACKEND_SVE: return kb_sve_pack_native;
#endif
    default: return NULL;
    }
}

static kb_status native_check(int backend, const kb_selector *sel, int *layout,
                              uint32_t *vbits, int *sme2, kb_error *err) {
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
    *sme2 = kb_isa_within(KB_ISA_SME2, sel->isa_cap) && kb_cpu_has_isa(&cpu, KB_ISA_SME2);
    return KB_OK;
}

kb_status kb_pack_b_native_size(int backend, size_t N, size_t K,
                                const kb_selector *sel, size_t *size, kb_error *err) {
    kb_clear_error(err);
    if (N == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "N", "must be positive, got 0");
    if (K == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "K", "must be positive, got 0");
    if (!size) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "size", "is NULL");
    int layout = 0, sme2 = 0; uint32_t vbits = 0;
    kb_status st = native_check(backend, sel, &layout, &vbits, &sme2, err);
    if (st != KB_OK) return st;
    return total_size(layout, N, K, vbits, size, err);
}

kb_status kb_pack_b_native(int backend, size_t N, size_t K, const kb_f16 *B,
                           size_t ldb, const kb_f16 *bias, void *dst, size_t dst_size,
                           const kb_selector *sel, kb_error *err) {
    kb_clear_error(err);
    kb_status st = check_pack_args(N, K, B, ldb, dst, err);
    if (st != KB_OK) return st;
    if (!kb_aligned(bias, sizeof(kb_f16))) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "bias", "is not aligned to 2 bytes");
    int layout = 0, sme2 = 0; uint32_t vbits = 0;
    if ((st = native_check(backend, sel, &layout, &vbits, &sme2, err)) != KB_OK) return st;
    size_t need = 0;
    if ((st = total_size(layout, N, K, vbits, &need, err)) != KB_OK) return st;
    if (dst_size < need)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "dst_size", "%zu bytes is less than the %zu needed", dst_size, need);
    kb_packed_header *h = (kb_packed_header *)dst;
    uint64_t sum = native_packer(backend)(N, K, B, ldb, bias, (unsigned char *)dst + sizeof *h, sme2);
    kb_header_seal(h, layout, backend, vbits, N, K, KB_PACK_FLAG_BIAS, need - sizeof *h, sum);
    return KB_OK;
}

kb_status kb_verify_packed_b(const void *buf, size_t size, kb_error *err) {
    kb_packed_header h;
    return kb_describe_packed(buf, size, &h, err);
}

/* ---- describing a packed buffer -------------------------------------- */

kb_status kb_describe_packed(const void *buf, size_t size, kb_packed_header *out, kb_error *err) {
    kb_clear_error(err);
    if (!buf) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "B", "is NULL");
    if (!out) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "out", "is NULL");
    kb_packed_header h;
    kb_status st = kb_header_check(buf, size, "buffer", 0, 0, 0, &h, err);
    if (st != KB_OK) return st;
    if ((st = kb_payload_check(buf, &h, "buffer", err)) != KB_OK) return st;
    *out = h;
    return KB_OK;
}
