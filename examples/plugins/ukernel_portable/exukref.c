/* exukref.c — the micro-kernel form in portable C: a KleidiAI-style GEMM
 * micro-kernel with its LHS and RHS packers, the same kernel reading the LHS
 * in place, and an indirect-GEMM (imatmul) micro-kernel for convolution. It
 * runs on any CPU, so it shows (and tests, on the host) how kbench drives the
 * micro-kernel form; examples/plugins/sme_ukernel hands over real SME2
 * kernels the same way.
 *
 * Layouts (kr = 2: K in pairs, an odd K padded with a zero):
 *   LHS "x16p4x2"   blocks of mr = 4 rows; per k pair a 4 x 2 tile, row by row
 *                   (m0k0 m0k1 m1k0 m1k1 ...); rows past M are zero.
 *   RHS "x16p8x2b"  blocks of nr = 8 columns: 8 bias values, then per k pair an
 *                   8 x 2 tile, column by column (n0k0 n0k1 n1k0 ...); columns
 *                   past N are zero.
 * For imatmul, K is k_chunk_count chunks of k_chunk_length values, each chunk
 * padded to a whole number of pairs.
 *
 * Arithmetic: each output starts from its bias in FP32 and adds the products
 * in increasing k, one FP32 rounding per product (bias first), then clamps and
 * rounds once to FP16.
 *
 * The GEMMs declare their layouts (plugin ABI 2), so kbench compares their
 * packers' bytes with its own packing of x16p4x2 / x16p8x2b.
 *
 * Built with -DEX_FAULTY_PACKERS (libexpackers.so, a negative control: do not
 * copy it), the plugin is "expackers" and adds two GEMMs whose kernel is
 * right but whose RHS packer is not: gemm_rhs_unwritten leaves the padding
 * columns of the last block (and their bias) unwritten, gemm_rhs_one_byte
 * declares x16p8x2b and writes 0x0001 into one padding element of the last
 * block (column 7 when N is not a multiple of 8). Neither changes a result;
 * kbench's packer checks must catch both. A third, gemm_kernel_reads_past_rhs,
 * has right packers and a kernel that reads the element after the RHS blocks
 * of its call (past the end of the packed RHS for the last band's columns),
 * folded in times zero:
 * kbench's guard page after the packed RHS must catch it.
 *
 * Built with -DEX_SVE2P1 (libexsve.so) the plugin is "exsve", the same code
 * declared as SVE2.1 code (KB_ISA_SVE2P1): it loads only where the CPU has
 * SVE2.1, a cap on SME's branch hides it, and the packed B kbench makes with
 * its packer records the SVE vector length (suites/test_sve_plugins.py). */
#include "kbench_plugin.h"

#include "../common/exfp16.h"

#include <stdint.h>
#include <string.h>

#ifdef EX_SVE2P1
#define EX_ISA KB_ISA_SVE2P1
#else
#define EX_ISA KB_ISA_SCALAR
#endif

#define EXPORT __attribute__((visibility("default")))
#define MR 4
#define NR 8
#define KR 2

static size_t roundup(size_t v, size_t m) { return (v + m - 1) / m * m; }

/* Built with -DEX_TAIL_BUG=1 or 2 (negative controls for kbench's tail
 * shapes, suites/test_tails.py; do not copy them): 1 stores one column too
 * many when N % 8 = 7, 2 computes column 4 from lane 5 of the RHS block
 * when N % 8 = 5. */
#if defined(EX_TAIL_BUG) && EX_TAIL_BUG == 1
#define EX_TAIL_OVER(n) ((n) % NR == NR - 1)
#else
#define EX_TAIL_OVER(n) 0
#endif
#if defined(EX_TAIL_BUG) && EX_TAIL_BUG == 2
#define EX_TAIL_LANE(n, j) ((n) % NR == 5 && (j) == 4 ? (size_t)5 : (j))
#else
#define EX_TAIL_LANE(n, j) (j)
#endif

/* Built with -DEX_COVERAGE_PLANT (for kbench run --coverage, suites/test_coverage.py):
 * a path of the kernel that only K = 4099 takes, which no smoke shape has; its
 * function must be listed as never executed. It changes no result. */
#if defined(EX_COVERAGE_PLANT)
static volatile size_t ex_rare_calls;
__attribute__((noinline)) static void ex_rare_path(size_t k) { ex_rare_calls = ex_rare_calls + k; }
#define EX_RARE(k) do { if ((k) == 4099) ex_rare_path(k); } while (0)
#else
#define EX_RARE(k) do { } while (0)
#endif

/* ---- the micro-kernel's queries ------------------------------------------------ */

static size_t get_m_step(void) { return MR; }
static size_t get_n_step(void) { return NR; }
static size_t get_mr(void) { return MR; }
static size_t get_nr(void) { return NR; }
static size_t get_kr(void) { return KR; }
static size_t get_sr(void) { return 1; }
static size_t get_lhs_packed_offset(size_t m_idx, size_t k) { return m_idx * roundup(k, KR) * 2; }
static size_t get_lhs_offset(size_t m_idx, size_t lhs_stride) { return m_idx * lhs_stride; }
static size_t rhs_block_bytes(size_t k) { return NR * (1 + roundup(k, KR)) * 2; }
static size_t get_rhs_packed_offset(size_t n_idx, size_t k) { return n_idx / NR * rhs_block_bytes(k); }
static size_t get_dst_offset(size_t m_idx, size_t n_idx, size_t dst_stride) { return m_idx * dst_stride + n_idx * 2; }
static size_t get_dst_size(size_t m, size_t n) { return m * n * 2; }

/* ---- packers -------------------------------------------------------------------------- */

static size_t lhs_get_m_step(size_t mr) { return mr; }
static size_t lhs_get_packed_offset(size_t m_idx, size_t k, size_t mr, size_t kr, size_t sr) {
    (void)mr, (void)kr, (void)sr;
    return get_lhs_packed_offset(m_idx, k);
}
static size_t lhs_get_packed_size(size_t m, size_t k, size_t mr, size_t kr, size_t sr) {
    (void)kr, (void)sr;
    return roundup(m, mr) * roundup(k, KR) * 2;
}

static void lhs_pack(size_t m, size_t k, size_t mr, size_t kr, size_t sr, size_t m_idx_start, const void *lhs,
                     size_t lhs_stride, void *lhs_packed) {
    (void)mr, (void)kr, (void)sr, (void)m_idx_start;
    uint16_t *out = lhs_packed;
    for (size_t m0 = 0; m0 < m; m0 += MR)
        for (size_t p = 0; p < roundup(k, KR); p += KR)
            for (size_t r = 0; r < MR; r++)
                for (size_t q = 0; q < KR; q++) {
                    const uint16_t *row = (const uint16_t *)((const unsigned char *)lhs + (m0 + r) * lhs_stride);
                    *out++ = (m0 + r < m && p + q < k) ? row[p + q] : 0;
                }
}

static size_t rhs_get_n_step(void) { return NR; }
static size_t rhs_get_packed_size(size_t n, size_t k) { return roundup(n, NR) / NR * rhs_block_bytes(k); }

/* Chunked RHS: rows of chunk c start at row c * kcl; each chunk padded to pairs. */
static void rhs_pack_chunks(size_t n, size_t kcc, size_t kcl, size_t rhs_stride, const void *rhs,
                            const void *bias, void *rhs_packed, int skip_padding) {
    const uint16_t *bi = bias;
    uint16_t *out = rhs_packed;
    for (size_t n0 = 0; n0 < n; n0 += NR) {
        for (size_t j = 0; j < NR; j++, out++)
            if (n0 + j < n || !skip_padding) *out = n0 + j < n ? bi[n0 + j] : 0;
        for (size_t c = 0; c < kcc; c++)
            for (size_t p = 0; p < roundup(kcl, KR); p += KR)
                for (size_t j = 0; j < NR; j++)
                    for (size_t q = 0; q < KR; q++, out++) {
                        const uint16_t *row =
                            (const uint16_t *)((const unsigned char *)rhs + (c * kcl + p + q) * rhs_stride);
                        if (n0 + j < n || !skip_padding) *out = (n0 + j < n && p + q < kcl) ? row[n0 + j] : 0;
                    }
    }
}

static void rhs_pack(size_t num_groups, size_t n, size_t k, size_t nr, size_t kr, size_t sr, size_t rhs_stride,
                     const void *rhs, const void *bias, const void *scale, void *rhs_packed, size_t extra_bytes,
                     const void *params) {
    (void)num_groups, (void)nr, (void)kr, (void)sr, (void)scale, (void)extra_bytes, (void)params;
    rhs_pack_chunks(n, 1, k, rhs_stride, rhs, bias, rhs_packed, 0);
}

#ifdef EX_FAULTY_PACKERS
static void rhs_pack_unwritten(size_t num_groups, size_t n, size_t k, size_t nr, size_t kr, size_t sr,
                               size_t rhs_stride, const void *rhs, const void *bias, const void *scale,
                               void *rhs_packed, size_t extra_bytes, const void *params) {
    (void)num_groups, (void)nr, (void)kr, (void)sr, (void)scale, (void)extra_bytes, (void)params;
    rhs_pack_chunks(n, 1, k, rhs_stride, rhs, bias, rhs_packed, 1); /* the bug: padding left as it was */
}

static void rhs_pack_one_byte(size_t num_groups, size_t n, size_t k, size_t nr, size_t kr, size_t sr,
                              size_t rhs_stride, const void *rhs, const void *bias, const void *scale,
                              void *rhs_packed, size_t extra_bytes, const void *params) {
    rhs_pack(num_groups, n, k, nr, kr, sr, rhs_stride, rhs, bias, scale, rhs_packed, extra_bytes, params);
    if (n % NR) { /* the bug: column NR - 1 of the last block, k = 0, is padding and must be 0 */
        unsigned char *last = (unsigned char *)rhs_packed + (n - 1) / NR * rhs_block_bytes(k);
        uint16_t one = 1;
        memcpy(last + (NR + (NR - 1) * KR) * 2, &one, 2);
    }
}
#endif

/* ---- kernels ---------------------------------------------------------------------------- */

/* m x n outputs from packed LHS blocks and RHS blocks over kp pairs. */
static void tile(size_t m, size_t n, size_t kp, const uint16_t *lhs, const uint16_t *rhs, size_t rhs_block,
                 unsigned char *dst, size_t dst_stride, float lo, float hi) {
    for (size_t m0 = 0; m0 < m; m0 += MR) {
        const uint16_t *lb = lhs + m0 / MR * kp * KR * MR;
        for (size_t n0 = 0; n0 < n; n0 += NR) {
            const uint16_t *rb = rhs + n0 / NR * rhs_block;
            for (size_t r = 0; r < MR && m0 + r < m; r++)
                for (size_t j = 0; j < NR && n0 + j < n + EX_TAIL_OVER(n); j++) {
                    size_t lane = EX_TAIL_LANE(n, j);
                    float acc = ex_h2f(rb[lane]);
                    for (size_t p = 0; p < kp; p++)
                        for (size_t q = 0; q < KR; q++)
                            acc += ex_h2f(lb[(p * MR + r) * KR + q]) * ex_h2f(rb[NR + (p * NR + lane) * KR + q]);
                    uint16_t *out = (uint16_t *)(dst + (m0 + r) * dst_stride) + n0 + j;
                    *out = ex_store(acc, lo, hi);
                }
        }
    }
}

static void run_matmul(size_t m, size_t n, size_t k, const void *lhs_packed, const void *rhs_packed, void *dst,
                       size_t dst_stride_row, size_t dst_stride_col, float clamp_min, float clamp_max) {
    (void)dst_stride_col;
    EX_RARE(k);
    tile(m, n, roundup(k, KR) / KR, lhs_packed, rhs_packed, rhs_block_bytes(k) / 2, dst, dst_stride_row, clamp_min,
         clamp_max);
}

#ifdef EX_FAULTY_PACKERS
static void run_matmul_past_rhs(size_t m, size_t n, size_t k, const void *lhs_packed, const void *rhs_packed,
                                void *dst, size_t dst_stride_row, size_t dst_stride_col, float clamp_min,
                                float clamp_max) {
    /* the bug: the element after the last RHS block of this call's columns */
    volatile const uint16_t *after = (const uint16_t *)rhs_packed + (n + NR - 1) / NR * (rhs_block_bytes(k) / 2);
    float stray = ex_h2f(*after);
    run_matmul(m, n, k, lhs_packed, rhs_packed, dst, dst_stride_row, dst_stride_col, clamp_min, clamp_max);
    uint16_t *c00 = dst;
    *c00 = ex_f2h(ex_h2f(*c00) + 0.0f * stray);
}
#endif

static void run_matmul_lhs(size_t m, size_t n, size_t k, const void *lhs, size_t lhs_stride, const void *rhs_packed,
                           void *dst, size_t dst_stride_row, size_t dst_stride_col, float clamp_min, float clamp_max) {
    (void)dst_stride_col;
    const uint16_t *rhs = rhs_packed;
    size_t block = rhs_block_bytes(k) / 2;
    for (size_t i = 0; i < m; i++) {
        const uint16_t *a = (const uint16_t *)((const unsigned char *)lhs + i * lhs_stride);
        for (size_t j = 0; j < n; j++) {
            const uint16_t *rb = rhs + j / NR * block;
            size_t c = j % NR;
            float acc = ex_h2f(rb[c]);
            for (size_t kk = 0; kk < k; kk++) acc += ex_h2f(a[kk]) * ex_h2f(rb[NR + (kk / KR * NR + c) * KR + kk % KR]);
            ((uint16_t *)((unsigned char *)dst + i * dst_stride_row))[j] = ex_store(acc, clamp_min, clamp_max);
        }
    }
}

/* ---- imatmul -------------------------------------------------------------------------- */

static size_t ik(size_t kcc, size_t kcl) { return kcc * roundup(kcl, KR); }
static size_t i_lhs_offset(size_t m_idx, size_t kcc, size_t kcl) { return m_idx * ik(kcc, kcl) * 2; }
static size_t i_rhs_offset(size_t n_idx, size_t kcc, size_t kcl) { return n_idx / NR * NR * (1 + ik(kcc, kcl)) * 2; }
static size_t i_lhs_m_step(void) { return MR; }
static size_t i_lhs_size(size_t m, size_t kcc, size_t kcl) { return roundup(m, MR) * ik(kcc, kcl) * 2; }
static size_t i_rhs_size(size_t n, size_t kcc, size_t kcl) { return roundup(n, NR) * (1 + ik(kcc, kcl)) * 2; }

/* Pointer table: per block of MR rows, per chunk, MR pointers (pad_ptr as is). */
static void i_lhs_pack(size_t m, size_t kcc, size_t kcl, const void *const *ptrs, size_t ptr_offset,
                       const void *pad_ptr, void *lhs_packed) {
    uint16_t *out = lhs_packed;
    for (size_t m0 = 0; m0 < m; m0 += MR)
        for (size_t c = 0; c < kcc; c++)
            for (size_t p = 0; p < roundup(kcl, KR); p += KR)
                for (size_t r = 0; r < MR; r++)
                    for (size_t q = 0; q < KR; q++) {
                        const void *ptr = ptrs[(m0 / MR * kcc + c) * MR + r];
                        const uint16_t *row = ptr == pad_ptr ? ptr : (const void *)((const unsigned char *)ptr + ptr_offset);
                        *out++ = (m0 + r < m && p + q < kcl) ? row[p + q] : 0;
                    }
}

static void i_rhs_pack(size_t n, size_t kcc, size_t kcl, size_t rhs_row_stride, const void *rhs, const void *bias,
                       void *rhs_packed) {
    rhs_pack_chunks(n, kcc, kcl, rhs_row_stride, rhs, bias, rhs_packed, 0);
}

static void run_imatmul(size_t m, size_t n, size_t kcc, size_t kcl, const void *lhs_packed, const void *rhs_packed,
                        void *dst, size_t dst_stride_row, float clamp_min, float clamp_max) {
    tile(m, n, ik(kcc, kcl) / KR, lhs_packed, rhs_packed, NR * (1 + ik(kcc, kcl)), dst, dst_stride_row, clamp_min,
         clamp_max);
}

/* ---- the tables ----------------------------------------------------------------------- */

static const kb_plugin_matmul_ukernel packed_lhs = {
    .get_m_step = get_m_step, .get_n_step = get_n_step, .get_mr = get_mr, .get_nr = get_nr, .get_kr = get_kr,
    .get_sr = get_sr, .get_lhs_packed_offset = get_lhs_packed_offset, .get_rhs_packed_offset = get_rhs_packed_offset,
    .get_dst_offset = get_dst_offset, .get_dst_size = get_dst_size, .run_matmul = run_matmul,
    .lhs_get_m_step = lhs_get_m_step, .lhs_get_packed_offset = lhs_get_packed_offset,
    .lhs_get_packed_size = lhs_get_packed_size, .lhs_pack = lhs_pack,
    .rhs_get_n_step = rhs_get_n_step, .rhs_get_packed_offset = get_rhs_packed_offset,
    .rhs_get_packed_size = rhs_get_packed_size, .rhs_pack = rhs_pack,
};

static const kb_plugin_matmul_ukernel plain_lhs = {
    .get_m_step = get_m_step, .get_n_step = get_n_step, .get_nr = get_nr, .get_kr = get_kr, .get_sr = get_sr,
    .get_lhs_offset = get_lhs_offset, .get_rhs_packed_offset = get_rhs_packed_offset,
    .get_dst_offset = get_dst_offset, .get_dst_size = get_dst_size, .run_matmul_lhs = run_matmul_lhs,
    .rhs_get_n_step = rhs_get_n_step, .rhs_get_packed_offset = get_rhs_packed_offset,
    .rhs_get_packed_size = rhs_get_packed_size, .rhs_pack = rhs_pack,
};

#ifdef EX_FAULTY_PACKERS
#define WITH_RHS_PACKER(PACK)                                                                                   \
    {                                                                                                           \
        .get_m_step = get_m_step, .get_n_step = get_n_step, .get_mr = get_mr, .get_nr = get_nr, .get_kr = get_kr, \
        .get_sr = get_sr, .get_lhs_packed_offset = get_lhs_packed_offset,                                       \
        .get_rhs_packed_offset = get_rhs_packed_offset, .get_dst_offset = get_dst_offset,                       \
        .get_dst_size = get_dst_size, .run_matmul = run_matmul, .lhs_get_m_step = lhs_get_m_step,              \
        .lhs_get_packed_offset = lhs_get_packed_offset, .lhs_get_packed_size = lhs_get_packed_size,             \
        .lhs_pack = lhs_pack, .rhs_get_n_step = rhs_get_n_step, .rhs_get_packed_offset = get_rhs_packed_offset, \
        .rhs_get_packed_size = rhs_get_packed_size, .rhs_pack = PACK,                                           \
    }
static const kb_plugin_matmul_ukernel unwritten = WITH_RHS_PACKER(rhs_pack_unwritten);
/* declared (KB_PLUGIN_PACK_PADDING_UNSPECIFIED): the same packer, and a kernel that lets
 * the bias slot of its block's last column, padding where N ends inside the block, into
 * every output times zero: a NaN left there makes C wrong */
static void run_matmul_uses_padding(size_t m, size_t n, size_t k, const void *lhs_packed, const void *rhs_packed,
                                    void *dst, size_t dst_stride_row, size_t dst_stride_col, float clamp_min,
                                    float clamp_max) {
    run_matmul(m, n, k, lhs_packed, rhs_packed, dst, dst_stride_row, dst_stride_col, clamp_min, clamp_max);
    const uint16_t *rhs = rhs_packed;
    for (size_t r = 0; r < m; r++)
        for (size_t j = 0; j < n; j++) {
            uint16_t *out = (uint16_t *)((unsigned char *)dst + r * dst_stride_row) + j;
            float pad = ex_h2f(rhs[j / NR * (rhs_block_bytes(k) / 2) + NR - 1]);
            *out = ex_store(ex_h2f(*out) + 0.0f * pad, clamp_min, clamp_max); /* the bug */
        }
}
static const kb_plugin_matmul_ukernel uses_padding = {
    .get_m_step = get_m_step, .get_n_step = get_n_step, .get_mr = get_mr, .get_nr = get_nr, .get_kr = get_kr,
    .get_sr = get_sr, .get_lhs_packed_offset = get_lhs_packed_offset, .get_rhs_packed_offset = get_rhs_packed_offset,
    .get_dst_offset = get_dst_offset, .get_dst_size = get_dst_size, .run_matmul = run_matmul_uses_padding,
    .lhs_get_m_step = lhs_get_m_step, .lhs_get_packed_offset = lhs_get_packed_offset,
    .lhs_get_packed_size = lhs_get_packed_size, .lhs_pack = lhs_pack,
    .rhs_get_n_step = rhs_get_n_step, .rhs_get_packed_offset = get_rhs_packed_offset,
    .rhs_get_packed_size = rhs_get_packed_size, .rhs_pack = rhs_pack_unwritten,
};
static const kb_plugin_matmul_ukernel one_byte = WITH_RHS_PACKER(rhs_pack_one_byte);
static const kb_plugin_matmul_ukernel past_rhs = {
    .get_m_step = get_m_step, .get_n_step = get_n_step, .get_mr = get_mr, .get_nr = get_nr, .get_kr = get_kr,
    .get_sr = get_sr, .get_lhs_packed_offset = get_lhs_packed_offset, .get_rhs_packed_offset = get_rhs_packed_offset,
    .get_dst_offset = get_dst_offset, .get_dst_size = get_dst_size, .run_matmul = run_matmul_past_rhs,
    .lhs_get_m_step = lhs_get_m_step, .lhs_get_packed_offset = lhs_get_packed_offset,
    .lhs_get_packed_size = lhs_get_packed_size, .lhs_pack = lhs_pack,
    .rhs_get_n_step = rhs_get_n_step, .rhs_get_packed_offset = get_rhs_packed_offset,
    .rhs_get_packed_size = rhs_get_packed_size, .rhs_pack = rhs_pack,
};
#endif

static const kb_plugin_imatmul_ukernel indirect = {
    .get_m_step = get_m_step, .get_n_step = get_n_step, .get_lhs_packed_offset = i_lhs_offset,
    .get_rhs_packed_offset = i_rhs_offset, .get_dst_offset = get_dst_offset, .get_dst_size = get_dst_size,
    .run_imatmul = run_imatmul, .lhs_get_m_step = i_lhs_m_step, .lhs_get_packed_offset = i_lhs_offset,
    .lhs_get_packed_size = i_lhs_size, .lhs_pack = i_lhs_pack, .rhs_get_packed_size = i_rhs_size,
    .rhs_pack = i_rhs_pack,
};

static const kb_plugin_realization realizations[] = {
    {.name = "gemm_4x8", .kernel = "exukref: scalar 4x8 micro-kernel, packed LHS x16p4x2, RHS x16p8x2b",
     .op = KB_OP_GEMM, .form = KB_PLUGIN_MICRO_KERNEL, .isa = EX_ISA, .accum = KB_ACCUM_FP32,
     .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE,
     .thread_safe = 1, .matmul = &packed_lhs, .rhs_layout = "x16p8x2b", .lhs_layout = "x16p4x2"},
    {.name = "gemm_4x8_plain_lhs", .kernel = "exukref: the same kernel reading A in place",
     .op = KB_OP_GEMM, .form = KB_PLUGIN_MICRO_KERNEL, .isa = EX_ISA, .accum = KB_ACCUM_FP32,
     .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE,
     .thread_safe = 1, .matmul = &plain_lhs, .rhs_layout = "x16p8x2b"},
#ifdef EX_FAULTY_PACKERS
    {.name = "gemm_rhs_unwritten", .kernel = "expackers: 4x8 kernel, RHS packer leaving its padding unwritten",
     .op = KB_OP_GEMM, .form = KB_PLUGIN_MICRO_KERNEL, .isa = KB_ISA_SCALAR, .accum = KB_ACCUM_FP32,
     .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE,
     .thread_safe = 1, .matmul = &unwritten},
    {.name = "gemm_rhs_unwritten_declared",
     .kernel = "expackers: 4x8 kernel, RHS packer leaving its padding unwritten, declared",
     .op = KB_OP_GEMM, .form = KB_PLUGIN_MICRO_KERNEL, .isa = KB_ISA_SCALAR, .accum = KB_ACCUM_FP32,
     .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE,
     .thread_safe = 1, .matmul = &unwritten, .rhs_layout = "x16p8x2b", .lhs_layout = "x16p4x2",
     .flags = KB_PLUGIN_PACK_PADDING_UNSPECIFIED},
    {.name = "gemm_rhs_padding_used",
     .kernel = "expackers: padding declared unspecified, and a kernel whose result depends on it",
     .op = KB_OP_GEMM, .form = KB_PLUGIN_MICRO_KERNEL, .isa = KB_ISA_SCALAR, .accum = KB_ACCUM_FP32,
     .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE,
     .thread_safe = 1, .matmul = &uses_padding, .rhs_layout = "x16p8x2b", .lhs_layout = "x16p4x2",
     .flags = KB_PLUGIN_PACK_PADDING_UNSPECIFIED},
    {.name = "gemm_rhs_one_byte", .kernel = "expackers: 4x8 kernel, RHS packer off x16p8x2b in one padding byte",
     .op = KB_OP_GEMM, .form = KB_PLUGIN_MICRO_KERNEL, .isa = KB_ISA_SCALAR, .accum = KB_ACCUM_FP32,
     .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE,
     .thread_safe = 1, .matmul = &one_byte, .rhs_layout = "x16p8x2b", .lhs_layout = "x16p4x2"},
    {.name = "gemm_kernel_reads_past_rhs", .kernel = "expackers: 4x8 kernel reading the element after its RHS blocks",
     .op = KB_OP_GEMM, .form = KB_PLUGIN_MICRO_KERNEL, .isa = KB_ISA_SCALAR, .accum = KB_ACCUM_FP32,
     .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, .bforms = KB_BFORM_PLAIN, .thread_safe = 0,
     .matmul = &past_rhs},
#endif
    {.name = "conv2d_igemm_4x8", .kernel = "exukref: indirect GEMM, chunks of c_in padded to pairs",
     .op = KB_OP_CONV2D, .form = KB_PLUGIN_MICRO_KERNEL, .isa = EX_ISA, .accum = KB_ACCUM_FP32,
     .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, .max_groups = 1, .thread_safe = 1, .imatmul = &indirect},
};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
#ifdef EX_FAULTY_PACKERS
    .name = "expackers",
    .version = "1.0.0",
    .description = "negative control: exukref plus two GEMMs whose RHS packers are wrong in their padding",
#elif defined(EX_SVE2P1)
    .name = "exsve",
    .version = "1.0.0",
    .description = "exukref declared as SVE2.1 code (KB_ISA_SVE2P1): the ISA class, its cap, the SVE vector length",
#elif defined(EX_TAIL_BUG)
    .name = "extail",
    .version = "1.0.0",
    .description = "negative control: exukref with a bug in its GEMM's N tail (EX_TAIL_BUG)",
#else
    .name = "exukref",
    .version = "1.0.0",
    .description = "the micro-kernel form in portable C: matmul (packed and plain LHS) and imatmul",
#endif
    .count = sizeof realizations / sizeof realizations[0],
    .realizations = realizations,
};

EXPORT const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &table;
}
