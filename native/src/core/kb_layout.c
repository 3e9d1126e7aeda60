/* kb_layout.c — facts about packed layouts (block widths, payload sizes, bias
 * inside or not), the header seal (FNV-1a over the header; the payload
 * checksum is kb_checksum.c's), and the panel packer
 * the panel layouts share. Pure functions: everything above (packing entry
 * points, backends, validation) builds on them; they call nothing above. */
#include "kb_internal.h"

#include <stdio.h>
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

static bool digits(const char **p, uint32_t *value, uint32_t max) {
    const char *s = *p;
    uint32_t v = 0;
    if (*s < '0' || *s > '9' || *s == '0') return false;
    while (*s >= '0' && *s <= '9') {
        v = v * 10u + (uint32_t)(*s++ - '0');
        if (v > max) return false;
    }
    *p = s;
    *value = v;
    return true;
}

bool kb_layout_parse(const char *name, bool rhs, kb_layout_spec *out) {
    kb_layout_spec spec = {0, 0, 0};
    if (!name || strncmp(name, "x16p", 4) != 0) return false;
    const char *p = name + 4;
    uint32_t v;
    if (!digits(&p, &v, 512)) return false;
    if (p[0] == 'v' && p[1] == 'l') {
        if (v > 16) return false;
        spec.block_vl = v;
        p += 2;
    } else {
        spec.block = v;
    }
    if (*p++ != 'x' || !digits(&p, &spec.kr, 8)) return false;
    if (spec.kr != 1 && spec.kr != 2 && spec.kr != 4 && spec.kr != 8) return false;
    if (rhs && *p++ != 'b') return false; /* RHS layouts carry the bias */
    if (*p) return false;
    if (out) *out = spec;
    return true;
}

bool kb_layout_name_ok(const char *name, bool rhs) {
    return name && strlen(name) < KB_LAYOUT_NAME_LEN && kb_layout_parse(name, rhs, NULL);
}

uint32_t kb_layout_block_n(int layout, uint32_t vector_bits) {
    switch (layout) {
    case KB_LAYOUT_PORTABLE: return KB_PORTABLE_BLOCK_N;
    case KB_LAYOUT_SCALAR_F16P16X1B: return KB_SCALAR_NATIVE_BLOCK_N;
    case KB_LAYOUT_NEON: return KB_NEON_NATIVE_BLOCK_N;
    case KB_LAYOUT_SME_X16P2VLX2B: return vector_bits / 16u; /* 2 * VL32 */
    case KB_LAYOUT_SVE_X16P4VLX2B: return vector_bits / 8u;  /* 4 * VL32 */
    default: return 0;
    }
}

int kb_layout_has_bias(int layout) {
    return layout == KB_LAYOUT_SCALAR_F16P16X1B || layout == KB_LAYOUT_NEON ||
           layout == KB_LAYOUT_SME_X16P2VLX2B || layout == KB_LAYOUT_SVE_X16P4VLX2B;
}

bool kb_layout_payload_size(int layout, size_t n, size_t k,
                            uint32_t vector_bits, size_t *bytes) {
    size_t bn = kb_layout_block_n(layout, vector_bits);
    if (bn == 0) return false;
    size_t blocks = kb_ceil_div(n, bn);
    size_t rows = k; /* k rows of bn values per block */
    if (layout == KB_LAYOUT_SME_X16P2VLX2B || layout == KB_LAYOUT_SVE_X16P4VLX2B)
        rows = k + (k & 1u); /* k padded to pairs */
    size_t per_block;
    if (!kb_mul_ok(rows, bn, &per_block)) return false;
    if (kb_layout_has_bias(layout) && !kb_add_ok(per_block, bn, &per_block)) return false;
    size_t elems;
    if (!kb_mul_ok(per_block, blocks, &elems)) return false;
    return kb_mul_ok(elems, sizeof(kb_f16), bytes);
}

void kb_header_seal(kb_packed_header *h, int layout, int backend,
                    uint32_t vector_bits, size_t n, size_t k, uint32_t flags,
                    size_t payload_size, uint64_t payload_checksum) {
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
    h->payload_checksum = payload_checksum;
    h->header_checksum = 0;
    h->header_checksum = kb_fnv1a64(h, sizeof *h);
}

/* Writes panels of bn columns (shared by the panel layouts): for block j, k rows of bn values; optional
 * bias row first; columns past N are zero. Each value joins the payload
 * checksum as it is written. */
uint64_t kb_pack_panels(size_t N, size_t K, const kb_f16 *B, size_t ldb, const kb_f16 *bias,
                        int with_bias, size_t bn, kb_f16 *out) {
    kb_seal z = {0, 0, 0};
    for (size_t j0 = 0; j0 < N; j0 += bn) {
        size_t w = N - j0 < bn ? N - j0 : bn;
        if (with_bias) {
            for (size_t j = 0; j < bn; j++) {
                out[j] = (bias && j < w) ? bias[j0 + j] : 0;
                kb_seal_put(&z, out[j]);
            }
            out += bn;
        }
        for (size_t k = 0; k < K; k++) {
            const kb_f16 *row = B + k * ldb + j0;
            for (size_t j = 0; j < bn; j++) {
                out[j] = j < w ? row[j] : 0;
                kb_seal_put(&z, out[j]);
            }
            out += bn;
        }
    }
    return kb_seal_checksum(z.s, z.t, z.pos * sizeof(kb_f16));
}

kb_status kb_header_check(const void *buf, size_t size, const char *who, int check_nk,
                          size_t N, size_t K, kb_packed_header *out, kb_error *err) {
    const kb_packed_header *h = (const kb_packed_header *)buf;
    if (size < sizeof *h)
        return kb_fail(err, KB_ERR_CONTRACT, "B.size", "%s: %zu bytes cannot hold the %zu-byte header (truncated buffer)",
                       who, size, sizeof *h);
    kb_packed_header hc;
    memcpy(&hc, h, sizeof hc);
    if (hc.magic != KB_PACK_MAGIC)
        return kb_fail(err, KB_ERR_CONTRACT, "B.magic", "%s: 0x%08x is not a kbench packed buffer", who, hc.magic);
    if (hc.version == 1)
        return kb_fail(err, KB_ERR_CONTRACT, "B.version",
                       "%s: version 1, sealed with the FNV-1a payload checksum this library no longer reads: "
                       "repack B with this library (kb_pack_b / kb_pack_b_native)", who);
    if (hc.version != KB_PACK_VERSION)
        return kb_fail(err, KB_ERR_CONTRACT, "B.version", "%s: version %u, this library reads %u", who, hc.version, KB_PACK_VERSION);
    if (hc.header_size != sizeof hc)
        return kb_fail(err, KB_ERR_CONTRACT, "B.header_size", "%s: %u, expected %zu", who, hc.header_size, sizeof hc);
    uint64_t want = hc.header_checksum;
    hc.header_checksum = 0;
    if (kb_fnv1a64(&hc, sizeof hc) != want)
        return kb_fail(err, KB_ERR_CONTRACT, "B.header_checksum", "%s: header checksum mismatch (corrupted header)", who);
    hc.header_checksum = want;
    if (hc.layout < KB_LAYOUT_PORTABLE || hc.layout > KB_LAYOUT_SVE_X16P4VLX2B)
        return kb_fail(err, KB_ERR_CONTRACT, "B.layout", "%s: unknown layout %u", who, hc.layout);
    if (hc.backend >= KB_BACKEND_COUNT)
        return kb_fail(err, KB_ERR_CONTRACT, "B.backend", "%s: unknown backend %u", who, hc.backend);
    if (hc.flags & ~KB_PACK_FLAG_BIAS)
        return kb_fail(err, KB_ERR_CONTRACT, "B.flags", "%s: unknown flag bits 0x%x", who, hc.flags);
    if (check_nk && hc.n != N)
        return kb_fail(err, KB_ERR_CONTRACT, "B.n", "%s: buffer packed for N = %llu, call has N = %zu", who,
                       (unsigned long long)hc.n, N);
    if (check_nk && hc.k != K)
        return kb_fail(err, KB_ERR_CONTRACT, "B.k", "%s: buffer packed for K = %llu, call has K = %zu", who,
                       (unsigned long long)hc.k, K);
    uint32_t bn = kb_layout_block_n(hc.layout, hc.vector_bits);
    if (hc.block_n != bn || bn == 0)
        return kb_fail(err, KB_ERR_CONTRACT, "B.block_n", "%s: %u does not match the layout (%u)", who, hc.block_n, bn);
    if (hc.n == 0 || hc.k == 0)
        return kb_fail(err, KB_ERR_CONTRACT, hc.n == 0 ? "B.n" : "B.k", "%s: an empty matrix (N = %llu, K = %llu)", who,
                       (unsigned long long)hc.n, (unsigned long long)hc.k);
    size_t payload = 0;
    if (hc.n > SIZE_MAX || hc.k > SIZE_MAX ||
        !kb_layout_payload_size(hc.layout, (size_t)hc.n, (size_t)hc.k, hc.vector_bits, &payload))
        return kb_fail(err, KB_ERR_CONTRACT, "B.payload_size", "%s: N = %llu, K = %llu overflow the layout's size", who,
                       (unsigned long long)hc.n, (unsigned long long)hc.k);
    if (hc.payload_size != payload)
        return kb_fail(err, KB_ERR_CONTRACT, "B.payload_size", "%s: %llu bytes, the layout needs %zu", who,
                       (unsigned long long)hc.payload_size, payload);
    if (size - sizeof hc < payload)
        return kb_fail(err, KB_ERR_CONTRACT, "B.size", "%s: %zu bytes, header and payload need %zu (truncated buffer)", who,
                       size, payload + sizeof hc);
    int bias_inside = (hc.flags & KB_PACK_FLAG_BIAS) != 0;
    if (bias_inside != kb_layout_has_bias(hc.layout))
        return kb_fail(err, KB_ERR_CONTRACT, "B.flags", "%s: bias flag %d contradicts layout %u", who, bias_inside, hc.layout);
    if (hc.layout == KB_LAYOUT_PORTABLE && hc.vector_bits != 0)
        return kb_fail(err, KB_ERR_CONTRACT, "B.vector_bits", "%s: the portable layout has no vector length, got %u", who,
                       hc.vector_bits);
    if (out) *out = hc;
    return KB_OK;
}

kb_status kb_payload_check(const void *buf, const kb_packed_header *h, const char *who,
                           kb_error *err) {
    const unsigned char *payload = (const unsigned char *)buf + sizeof *h;
    int path = kb_checksum_path_for(h->backend);
    if (kb_payload_checksum_on(path, payload, (size_t)h->payload_size) != h->payload_checksum)
        return kb_fail(err, KB_ERR_CONTRACT, "B.payload_checksum", "%s: payload checksum mismatch (corrupted payload)", who);
    return KB_OK;
}
