/* exrt_sve2p1.c — the SVE2.1 path of the runtime-like example (a runtime runs
 * it on a CPU with SVE2.1 and no SME): a small FP16 GEMM of our own with
 * SVE2.1's FDOT (2-way, FP16 pairs into FP32 lanes), in ACLE intrinsics. This
 * file alone is compiled with +sve2p1 (examples/plugins/Makefile); nothing
 * here runs unless the dispatcher (exrt.c) found SVE2.1 in HWCAP2.
 *
 * Packed B (its payload): blocks of NR = 2 x VL32 columns (VL32 = the SVE
 * vector length in 32-bit lanes, so NR depends on the vector length the
 * packing ran at: 8 columns at 128 bits, 32 at 512); in a block, per k pair
 * (k, k+1), the NR columns as FP16 pairs (n0k0 n0k1 n1k0 n1k1 ...), so that
 * one 32-bit lane holds the pair FDOT takes; columns past N and an odd K's
 * last k are zero. No bias slots: the packer takes no bias.
 *
 * The kernel: 4 rows x NR columns of FP32 accumulators (8 vectors) starting
 * from the bias (exact in FP32) or +0; per k pair the row's (a[k], a[k+1])
 * broadcast to every 32-bit lane and one FDOT per accumulator (a[k+1] is 0
 * for an odd K's last pair, never read); then the clamp by compare and select
 * (v < lo gives lo, v > hi gives hi, NaN stays: the rule every path of this
 * plugin follows), one rounding to FP16 (FCVT) and a store of the columns
 * inside N. Rows past M in the last tile repeat the last row and are not
 * stored, so no byte outside A is read.
 *
 * A plain-B call packs B into the calling thread's scratch first, and widens
 * the bias to FP32 there (NR-padded with zeros). */
#include "exrt.h"

#include "../common/exfp16.h"

#if defined(__aarch64__)
#include <arm_sve.h>

static size_t exrt_sve2p1_vl_bytes(void) { return svcntb(); }

static size_t exrt_sve2p1_nr(void) { return svcntw() * 2; }

static size_t exrt_sve2p1_payload_bytes(size_t n, size_t k) {
    size_t nr = exrt_sve2p1_nr();
    return exrt_roundup(n, nr) * exrt_roundup(k, 2) * sizeof(kb_f16);
}

static void exrt_sve2p1_pack(size_t n, size_t k, const kb_f16 *b, size_t ldb, unsigned char *dst) {
    size_t nr = exrt_sve2p1_nr(), kp = exrt_roundup(k, 2) / 2;
    kb_f16 *out = (kb_f16 *)(void *)dst;
    for (size_t j0 = 0; j0 < n; j0 += nr)
        for (size_t p = 0; p < kp; p++)
            for (size_t c = 0; c < nr; c++)
                for (size_t h = 0; h < 2; h++) {
                    size_t j = j0 + c, kk = 2 * p + h;
                    *out++ = j < n && kk < k ? b[kk * ldb + j] : 0;
                }
}

static size_t exrt_sve2p1_bias_bytes(size_t n) { return exrt_roundup(n, exrt_sve2p1_nr()) * sizeof(float); }

static size_t exrt_sve2p1_scratch_bytes(const exrt_gemm *g) {
    size_t bias = g->bias ? (exrt_sve2p1_bias_bytes(g->n) + 63u) & ~(size_t)63u : 0;
    return g->packed ? bias : bias + exrt_sve2p1_payload_bytes(g->n, g->k);
}

/* (a[k], a[k+1]) as one 32-bit lane pattern; a[k+1] is 0 past K */
static inline uint32_t exrt_sve2p1_pair(const kb_f16 *row, size_t kk, size_t k) {
    uint32_t lo = row[kk], hi = kk + 1 < k ? row[kk + 1] : 0;
    return lo | hi << 16;
}

static inline svfloat32_t exrt_sve2p1_clamp(svfloat32_t v, svfloat32_t lo, svfloat32_t hi) {
    svbool_t all = svptrue_b32();
    v = svsel_f32(svcmplt_f32(all, v, lo), lo, v);
    return svsel_f32(svcmpgt_f32(all, v, hi), hi, v);
}

static inline void exrt_sve2p1_store(kb_f16 *row, size_t j, size_t n, svfloat32_t v, svfloat32_t lo,
                                     svfloat32_t hi) {
    svbool_t keep = svwhilelt_b32_u64(j, n);
    svfloat16_t h = svcvt_f16_f32_x(svptrue_b32(), exrt_sve2p1_clamp(v, lo, hi));
    svst1h_u32(keep, row + j, svreinterpret_u32_f16(h));
}

#define EXRT_DOT(r)                                                                  \
    do {                                                                             \
        svfloat16_t av = svreinterpret_f16_u32(svdup_n_u32(exrt_sve2p1_pair(a##r, 2 * p, g->k))); \
        acc##r##0 = svdot_f32_f16(acc##r##0, av, b0);                                \
        acc##r##1 = svdot_f32_f16(acc##r##1, av, b1);                                \
    } while (0)

static void exrt_sve2p1_gemm(const exrt_gemm *g) {
    size_t nr = exrt_sve2p1_nr(), vl32 = svcntw(), vl16 = svcnth(), kp = exrt_roundup(g->k, 2) / 2;
    const unsigned char *packed = g->packed;
    unsigned char *scratch = g->scratch;
    const float *bias = NULL;
    if (g->bias) {
        float *b32 = (float *)(void *)scratch;
        size_t padded = exrt_roundup(g->n, nr);
        for (size_t j = 0; j < padded; j++) b32[j] = j < g->n ? ex_h2f(g->bias[j]) : 0.0f;
        bias = b32;
        scratch += (exrt_sve2p1_bias_bytes(g->n) + 63u) & ~(size_t)63u;
    }
    if (!packed) {
        exrt_sve2p1_pack(g->n, g->k, g->b, g->ldb, scratch);
        packed = scratch;
    }
    svbool_t all = svptrue_b32();
    svfloat32_t lo = svdup_n_f32(g->clamp_min), hi = svdup_n_f32(g->clamp_max);
    size_t block_bytes = nr * kp * 2 * sizeof(kb_f16);
    for (size_t j0 = 0; j0 < g->n; j0 += nr) {
        const kb_f16 *blk = (const kb_f16 *)(const void *)(packed + j0 / nr * block_bytes);
        for (size_t i0 = 0; i0 < g->m; i0 += 4) {
            size_t last = g->m - 1;
            const kb_f16 *a0 = g->a + i0 * g->lda;
            const kb_f16 *a1 = g->a + (i0 + 1 <= last ? i0 + 1 : last) * g->lda;
            const kb_f16 *a2 = g->a + (i0 + 2 <= last ? i0 + 2 : last) * g->lda;
            const kb_f16 *a3 = g->a + (i0 + 3 <= last ? i0 + 3 : last) * g->lda;
            svfloat32_t s0 = bias ? svld1_f32(all, bias + j0) : svdup_n_f32(0.0f);
            svfloat32_t s1 = bias ? svld1_f32(all, bias + j0 + vl32) : svdup_n_f32(0.0f);
            svfloat32_t acc00 = s0, acc01 = s1, acc10 = s0, acc11 = s1;
            svfloat32_t acc20 = s0, acc21 = s1, acc30 = s0, acc31 = s1;
            for (size_t p = 0; p < kp; p++) {
                const kb_f16 *bp = blk + p * nr * 2;
                svfloat16_t b0 = svld1_f16(svptrue_b16(), (const float16_t *)(const void *)bp);
                svfloat16_t b1 = svld1_f16(svptrue_b16(), (const float16_t *)(const void *)(bp + vl16));
                EXRT_DOT(0);
                EXRT_DOT(1);
                EXRT_DOT(2);
                EXRT_DOT(3);
            }
            kb_f16 *c0 = g->c + i0 * g->ldc;
            exrt_sve2p1_store(c0, j0, g->n, acc00, lo, hi);
            exrt_sve2p1_store(c0, j0 + vl32, g->n, acc01, lo, hi);
            if (i0 + 1 > last) continue;
            exrt_sve2p1_store(c0 + g->ldc, j0, g->n, acc10, lo, hi);
            exrt_sve2p1_store(c0 + g->ldc, j0 + vl32, g->n, acc11, lo, hi);
            if (i0 + 2 > last) continue;
            exrt_sve2p1_store(c0 + 2 * g->ldc, j0, g->n, acc20, lo, hi);
            exrt_sve2p1_store(c0 + 2 * g->ldc, j0 + vl32, g->n, acc21, lo, hi);
            if (i0 + 3 > last) continue;
            exrt_sve2p1_store(c0 + 3 * g->ldc, j0, g->n, acc30, lo, hi);
            exrt_sve2p1_store(c0 + 3 * g->ldc, j0 + vl32, g->n, acc31, lo, hi);
        }
    }
}

const exrt_path_ops exrt_sve2p1_ops = {
    .path = EXRT_PATH_SVE2P1,
    .name = "sve2p1",
    .vl_bytes = exrt_sve2p1_vl_bytes,
    .payload_bytes = exrt_sve2p1_payload_bytes,
    .pack = exrt_sve2p1_pack,
    .scratch_bytes = exrt_sve2p1_scratch_bytes,
    .gemm = exrt_sve2p1_gemm,
};
#endif
