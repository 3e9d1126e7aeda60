/* kb_layout.c — facts about packed layouts (block widths, payload sizes, bias
 * inside or not), the header seal and its checksum, and the panel packer
 * the panel layouts share. Pure functions: everything above (packing entry
 * points, backends, validation) builds on them; they call nothing above. */
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
