/* kb_rhs_pack_kxn_f16p16x1b_f16_f16_neon.c — the NEON backend's native RHS
 * packer: K x N FP16 B and its bias into blocks of 16 columns (f16p16x1b),
 * the block's 16 bias values first, then K rows of 16 values; columns past
 * N (and a NULL bias) are zero.
 *
 * A block row is two 128-bit vectors: a load pair per row, a four-register
 * store per two rows, eight rows per step. The last block of an N that is
 * not a multiple of 16 goes through kb_neon_pack_narrow (so do the NEON
 * drivers' tail panels). Without the bias row this is the portable layout
 * (kb_pack_b on Arm64). */
#include "../kb_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#include <string.h>

#define NR 16

/* The K rows of a whole block: eight rows per step (eight load pairs, four
 * four-register stores), then one row at a time. */
static void pack_rows_full(size_t k, const uint16_t *src, size_t ldb, uint16_t *out) {
    size_t groups = k / 8, rest = k % 8, stride = ldb * sizeof *src;
    __asm__ volatile(
        "cbz %x[g], 2f\n"
        "1:\n"
        "ld1 {v16.8h, v17.8h}, [%x[src]], %x[stride]\n"
        "ld1 {v18.8h, v19.8h}, [%x[src]], %x[stride]\n"
        "ld1 {v20.8h, v21.8h}, [%x[src]], %x[stride]\n"
        "ld1 {v22.8h, v23.8h}, [%x[src]], %x[stride]\n"
        "ld1 {v24.8h, v25.8h}, [%x[src]], %x[stride]\n"
        "ld1 {v26.8h, v27.8h}, [%x[src]], %x[stride]\n"
        "ld1 {v28.8h, v29.8h}, [%x[src]], %x[stride]\n"
        "ld1 {v30.8h, v31.8h}, [%x[src]], %x[stride]\n"
        "st1 {v16.8h, v17.8h, v18.8h, v19.8h}, [%x[out]], #64\n"
        "st1 {v20.8h, v21.8h, v22.8h, v23.8h}, [%x[out]], #64\n"
        "st1 {v24.8h, v25.8h, v26.8h, v27.8h}, [%x[out]], #64\n"
        "st1 {v28.8h, v29.8h, v30.8h, v31.8h}, [%x[out]], #64\n"
        "subs %x[g], %x[g], #1\n"
        "b.ne 1b\n"
        "2:\n"
        "cbz %x[r], 4f\n"
        "3:\n"
        "ld1 {v16.8h, v17.8h}, [%x[src]], %x[stride]\n"
        "st1 {v16.8h, v17.8h}, [%x[out]], #32\n"
        "subs %x[r], %x[r], #1\n"
        "b.ne 3b\n"
        "4:\n"
        : [src] "+r"(src), [out] "+r"(out), [g] "+r"(groups), [r] "+r"(rest)
        : [stride] "r"(stride)
        : "cc", "memory", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25",
          "v26", "v27", "v28", "v29", "v30", "v31");
}

/* Rows of fewer than 16 columns (w of them) padded to 16 with zeros. A row
 * whose 16 values ending at its last column lie inside B (`before` values
 * of B precede src on row 0) is one load pair of those 16 values and two
 * table lookups shifting the row's w values down and zeroing the rest; a
 * row too near the start of B is copied value by value. */
KB_NOINLINE void kb_neon_pack_narrow(size_t w, size_t k, const kb_f16 *b, size_t ldb, size_t before,
                         kb_f16 *dst) {
    const uint16_t *src = (const uint16_t *)b;
    uint16_t *out = (uint16_t *)dst;
    uint8_t idx[32];
    for (unsigned i = 0; i < 32; i++) idx[i] = i < 2 * w ? (uint8_t)(i + 2 * (NR - w)) : 0xff;
    uint8x16_t lo = vld1q_u8(idx), hi = vld1q_u8(idx + 16);
    /* the rows too near the start of B: r * ldb + before < NR - w */
    size_t near = before < NR - w ? (NR - w - before + ldb - 1) / ldb : 0;
    if (near > k) near = k;
    size_t r = 0;
    for (; r < near; r++, out += NR, src += ldb) {
        uint16_t row[NR];
        memset(row, 0, sizeof row);
        memcpy(row, src, w * sizeof *row);
        vst1q_u16_x2(out, vld1q_u16_x2(row));
    }
    const uint16_t *from = src + w - NR;
    for (; r < k; r++, out += NR, from += ldb) {
        uint8x16x2_t v;
        v.val[0] = vld1q_u8((const uint8_t *)from);
        v.val[1] = vld1q_u8((const uint8_t *)(from + 8));
        uint16x8x2_t o;
        o.val[0] = vreinterpretq_u16_u8(vqtbl2q_u8(v, lo));
        o.val[1] = vreinterpretq_u16_u8(vqtbl2q_u8(v, hi));
        vst1q_u16_x2(out, o);
    }
}

/* One block: its bias row when the layout has one (zeros for a NULL bias),
 * then its K rows. Inlined into the two layouts' loops below with
 * with_bias a constant, so each holds only the code its layout runs. */
static inline __attribute__((always_inline)) void pack_block(size_t k, size_t w,
        const uint16_t *src, size_t ldb, size_t before, int with_bias, const uint16_t *bias,
        uint16_t *out) {
    if (with_bias) {
        uint16_t row[NR];
        memset(row, 0, sizeof row);
        if (bias) memcpy(row, bias, w * sizeof *row);
        vst1q_u16_x2(out, vld1q_u16_x2(row));
        out += NR;
    }
    if (w == NR)
        pack_rows_full(k, src, ldb, out);
    else
        kb_neon_pack_narrow(w, k, (const kb_f16 *)src, ldb, before, (kb_f16 *)out);
}

static inline __attribute__((always_inline)) void pack_panels(size_t n, size_t k,
        const kb_f16 *b, size_t ldb, const kb_f16 *bias, int with_bias, void *dst) {
    const uint16_t *src = (const uint16_t *)b, *bs = (const uint16_t *)bias;
    uint16_t *out = (uint16_t *)dst;
    size_t per_block = (k + (with_bias ? 1 : 0)) * NR;
    for (size_t j0 = 0; j0 < n; j0 += NR, out += per_block) {
        size_t w = n - j0 < NR ? n - j0 : NR;
        pack_block(k, w, src + j0, ldb, j0, with_bias, bs ? bs + j0 : NULL, out);
    }
}

void kb_neon_pack_panels16(size_t n, size_t k, const kb_f16 *b, size_t ldb, void *dst) {
    pack_panels(n, k, b, ldb, NULL, 0, dst);
}

void kb_neon_pack_native(size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                         void *dst) {
    pack_panels(n, k, b, ldb, bias, 1, dst);
}
#endif
