/* kb_rhs_pack_kxn_f16p16x1b_f16_f16_neon.c — the NEON backend's native RHS
 * packer: K x N FP16 B and its bias into blocks of 16 columns (f16p16x1b),
 * the block's 16 bias values first, then K rows of 16 values; columns past
 * N (and a NULL bias) are zero.
 *
 * A block row is two 128-bit vectors: a load pair per row, a four-register
 * store per two rows, eight rows per step. The last block of an N that is
 * not a multiple of 16 goes through kb_neon_pack_narrow's rows (so do the
 * NEON drivers' tail panels). Without the bias row this is the portable
 * layout (kb_pack_b on Arm64).
 *
 * The seal: every row joins the payload checksum (kb_checksum.c) while it is
 * in registers: its two vectors are added to the lane sums s, and at every
 * 256-byte chunk (eight rows: every row is 32 bytes, so a chunk starts at a
 * row) s is added to t first. In a block's eight-row steps the chunk starts
 * at the same row of every step (the block's phase): one of eight loops, each
 * with the t += s at its row, runs the block's steps. */
#include "../kb_neon.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#include <string.h>

#define NR 16

/* The payload checksum's running sums in NEON registers (lanes of s and t)
 * and the rows written so far. */
typedef struct neon_seal {
    uint64x2_t s, t;
    size_t rows;
} neon_seal;

static inline __attribute__((always_inline)) void seal_row(neon_seal *z, uint16x8x2_t v) {
    if ((z->rows & 7u) == 0) z->t = vaddq_u64(z->t, z->s); /* a chunk starts */
    z->s = vaddq_u64(z->s, vreinterpretq_u64_u16(v.val[0]));
    z->s = vaddq_u64(z->s, vreinterpretq_u64_u16(v.val[1]));
    z->rows++;
}

/* A run of rows sealed a chunk at a time (the sums in registers, no test per
 * row): ROW(i) is the i-th row's two vectors, in order, i < n. */
#define KB_SEAL_RUN(z, n, ROW)                                                      \
    do {                                                                          \
        uint64x2_t s_ = (z)->s, t_ = (z)->t;                                      \
        size_t rows_ = (z)->rows, i_ = 0;                                         \
        while (i_ < (n)) {                                                        \
            if ((rows_ & 7u) == 0) t_ = vaddq_u64(t_, s_); /* a chunk starts */  \
            size_t seg_ = 8u - (rows_ & 7u);                                      \
            if (seg_ > (n) - i_) seg_ = (n) - i_;                                 \
            rows_ += seg_;                                                        \
            for (; seg_; seg_--, i_++) {                                          \
                uint16x8x2_t v_ = ROW(i_);                                        \
                s_ = vaddq_u64(s_, vreinterpretq_u64_u16(v_.val[0]));             \
                s_ = vaddq_u64(s_, vreinterpretq_u64_u16(v_.val[1]));             \
            }                                                                     \
        }                                                                         \
        (z)->s = s_;                                                              \
        (z)->t = t_;                                                              \
        (z)->rows = rows_;                                                        \
    } while (0)

/* One eight-row step: eight load pairs, four four-register stores, the
 * sixteen vectors added to s, and t += s before the row the chunk starts at
 * (SEAL: the adds in order, KB_T at that row). The block's loop is chosen by
 * the bits of its phase (direct branches only). */
#define KB_T "add %[t].2d, %[t].2d, %[s].2d\n"
#define KB_R(a, b) "add %[s].2d, %[s].2d, v" #a ".2d\n" "add %[s].2d, %[s].2d, v" #b ".2d\n"
#define KB_R0 KB_R(16, 17)
#define KB_R1 KB_R(18, 19)
#define KB_R2 KB_R(20, 21)
#define KB_R3 KB_R(22, 23)
#define KB_R4 KB_R(24, 25)
#define KB_R5 KB_R(26, 27)
#define KB_R6 KB_R(28, 29)
#define KB_R7 KB_R(30, 31)
#define KB_STEP(L, SEAL)                                                          \
    L ":\n"                                                                       \
    "ld1 {v16.8h, v17.8h}, [%x[src]], %x[stride]\n"                               \
    "ld1 {v18.8h, v19.8h}, [%x[src]], %x[stride]\n"                               \
    "ld1 {v20.8h, v21.8h}, [%x[src]], %x[stride]\n"                               \
    "ld1 {v22.8h, v23.8h}, [%x[src]], %x[stride]\n"                               \
    "ld1 {v24.8h, v25.8h}, [%x[src]], %x[stride]\n"                               \
    "ld1 {v26.8h, v27.8h}, [%x[src]], %x[stride]\n"                               \
    "ld1 {v28.8h, v29.8h}, [%x[src]], %x[stride]\n"                               \
    "ld1 {v30.8h, v31.8h}, [%x[src]], %x[stride]\n"                               \
    "st1 {v16.8h, v17.8h, v18.8h, v19.8h}, [%x[out]], #64\n"                      \
    "st1 {v20.8h, v21.8h, v22.8h, v23.8h}, [%x[out]], #64\n"                      \
    "st1 {v24.8h, v25.8h, v26.8h, v27.8h}, [%x[out]], #64\n"                      \
    "st1 {v28.8h, v29.8h, v30.8h, v31.8h}, [%x[out]], #64\n"                      \
    SEAL                                                                          \
    "subs %x[g], %x[g], #1\n"                                                     \
    "b.ne " L "b\n"                                                               \
    "b 9f\n"

static inline __attribute__((always_inline)) uint16x8x2_t copy_row(const uint16_t *src, uint16_t *out) {
    uint16x8x2_t v = vld1q_u16_x2(src);
    vst1q_u16_x2(out, v);
    return v;
}

/* The K rows of a whole block: eight rows per step, then one row at a time. */
static void pack_rows_full(size_t k, const uint16_t *src, size_t ldb, uint16_t *out, neon_seal *z) {
    size_t groups = k / 8, rest = k % 8, stride = ldb * sizeof *src;
    size_t phase = (0u - z->rows) & 7u; /* the row of each step a chunk starts at */
    uint64x2_t s = z->s, t = z->t;
    __asm__ volatile(
        "cbz %x[g], 9f\n"
        "tbnz %x[phase], #2, 34f\n"
        "tbnz %x[phase], #1, 32f\n"
        "tbz %x[phase], #0, 20f\n"
        "b 21f\n"
        "32:\n"
        "tbz %x[phase], #0, 22f\n"
        "b 23f\n"
        "34:\n"
        "tbnz %x[phase], #1, 36f\n"
        "tbz %x[phase], #0, 24f\n"
        "b 25f\n"
        "36:\n"
        "tbz %x[phase], #0, 26f\n"
        "b 27f\n"
        KB_STEP("20", KB_T KB_R0 KB_R1 KB_R2 KB_R3 KB_R4 KB_R5 KB_R6 KB_R7)
        KB_STEP("21", KB_R0 KB_T KB_R1 KB_R2 KB_R3 KB_R4 KB_R5 KB_R6 KB_R7)
        KB_STEP("22", KB_R0 KB_R1 KB_T KB_R2 KB_R3 KB_R4 KB_R5 KB_R6 KB_R7)
        KB_STEP("23", KB_R0 KB_R1 KB_R2 KB_T KB_R3 KB_R4 KB_R5 KB_R6 KB_R7)
        KB_STEP("24", KB_R0 KB_R1 KB_R2 KB_R3 KB_T KB_R4 KB_R5 KB_R6 KB_R7)
        KB_STEP("25", KB_R0 KB_R1 KB_R2 KB_R3 KB_R4 KB_T KB_R5 KB_R6 KB_R7)
        KB_STEP("26", KB_R0 KB_R1 KB_R2 KB_R3 KB_R4 KB_R5 KB_T KB_R6 KB_R7)
        KB_STEP("27", KB_R0 KB_R1 KB_R2 KB_R3 KB_R4 KB_R5 KB_R6 KB_T KB_R7)
        "9:\n"
        : [src] "+r"(src), [out] "+r"(out), [g] "+r"(groups), [s] "+w"(s), [t] "+w"(t)
        : [stride] "r"(stride), [phase] "r"(phase)
        : "cc", "memory", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24",
          "v25", "v26", "v27", "v28", "v29", "v30", "v31");
    z->s = s;
    z->t = t;
    z->rows += k - rest;
#define KB_REST_ROW(i) copy_row(src + (i) * ldb, out + (i) * NR)
    KB_SEAL_RUN(z, rest, KB_REST_ROW);
#undef KB_REST_ROW
}

/* One row of a narrow panel: the 16 values ending at its last column, shifted
 * down by two table lookups (the rest zero), stored. */
static inline __attribute__((always_inline)) uint16x8x2_t shift_row(const uint16_t *from, uint16_t *out,
                                                                   uint8x16_t lo, uint8x16_t hi) {
    uint8x16x2_t v;
    v.val[0] = vld1q_u8((const uint8_t *)from);
    v.val[1] = vld1q_u8((const uint8_t *)(from + 8));
    uint16x8x2_t o;
    o.val[0] = vreinterpretq_u16_u8(vqtbl2q_u8(v, lo));
    o.val[1] = vreinterpretq_u16_u8(vqtbl2q_u8(v, hi));
    vst1q_u16_x2(out, o);
    return o;
}

/* Rows of fewer than 16 columns (w of them) padded to 16 with zeros. A row
 * whose 16 values ending at its last column lie inside B (`before` values
 * of B precede src on row 0) is one load pair of those 16 values and two
 * table lookups shifting the row's w values down and zeroing the rest; a
 * row too near the start of B is copied value by value. With z, every row
 * joins the seal (the packer of a sealed buffer); the NEON drivers' tail
 * panels call it without. */
static inline __attribute__((always_inline)) void narrow_rows(size_t w, size_t k, const kb_f16 *b,
        size_t ldb, size_t before, kb_f16 *dst, neon_seal *z) {
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
        uint16x8x2_t v = vld1q_u16_x2(row);
        vst1q_u16_x2(out, v);
        if (z) seal_row(z, v);
    }
    const uint16_t *from = src + w - NR;
    if (z) {
#define KB_NARROW_ROW(i) shift_row(from + (i) * ldb, out + (i) * NR, lo, hi)
        KB_SEAL_RUN(z, k - r, KB_NARROW_ROW);
#undef KB_NARROW_ROW
        return;
    }
    for (; r < k; r++, out += NR, from += ldb) shift_row(from, out, lo, hi);
}

KB_NOINLINE void kb_neon_pack_narrow(size_t w, size_t k, const kb_f16 *b, size_t ldb, size_t before,
                         kb_f16 *dst) {
    narrow_rows(w, k, b, ldb, before, dst, NULL);
}

static KB_NOINLINE void pack_narrow_sealed(size_t w, size_t k, const kb_f16 *b, size_t ldb, size_t before,
                                           kb_f16 *dst, neon_seal *z) {
    narrow_rows(w, k, b, ldb, before, dst, z);
}

/* One block: its bias row when the layout has one (zeros for a NULL bias),
 * then its K rows. Inlined into the two layouts' loops below with
 * with_bias a constant, so each holds only the code its layout runs. */
static inline __attribute__((always_inline)) void pack_block(size_t k, size_t w,
        const uint16_t *src, size_t ldb, size_t before, int with_bias, const uint16_t *bias,
        uint16_t *out, neon_seal *z) {
    if (with_bias) {
        uint16_t row[NR];
        memset(row, 0, sizeof row);
        if (bias) memcpy(row, bias, w * sizeof *row);
        uint16x8x2_t v = vld1q_u16_x2(row);
        vst1q_u16_x2(out, v);
        seal_row(z, v);
        out += NR;
    }
    if (w == NR)
        pack_rows_full(k, src, ldb, out, z);
    else
        pack_narrow_sealed(w, k, (const kb_f16 *)src, ldb, before, (kb_f16 *)out, z);
}

static inline __attribute__((always_inline)) uint64_t pack_panels(size_t n, size_t k,
        const kb_f16 *b, size_t ldb, const kb_f16 *bias, int with_bias, void *dst) {
    const uint16_t *src = (const uint16_t *)b, *bs = (const uint16_t *)bias;
    uint16_t *out = (uint16_t *)dst;
    size_t per_block = (k + (with_bias ? 1 : 0)) * NR;
    neon_seal z = {vdupq_n_u64(0), vdupq_n_u64(0), 0};
    for (size_t j0 = 0; j0 < n; j0 += NR, out += per_block) {
        size_t w = n - j0 < NR ? n - j0 : NR;
        pack_block(k, w, src + j0, ldb, j0, with_bias, bs ? bs + j0 : NULL, out, &z);
    }
    return kb_seal_checksum(vaddvq_u64(z.s), vaddvq_u64(z.t), z.rows * NR * sizeof *out);
}

uint64_t kb_neon_pack_panels16(size_t n, size_t k, const kb_f16 *b, size_t ldb, void *dst) {
    return pack_panels(n, k, b, ldb, NULL, 0, dst);
}

uint64_t kb_neon_pack_native(size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                             void *dst, int sme2) {
    (void)sme2;
    return pack_panels(n, k, b, ldb, bias, 1, dst);
}
#endif
