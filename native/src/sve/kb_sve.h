/* kb_sve.h — the SVE2.1 backend's internal interface: its packed layout,
 * the micro-kernel interface and the driver.
 *
 * Non-streaming SVE2.1 code for CPUs with SVE2.1 (with or without SME): the
 * kernels multiply FP16 pairs into FP32 with the 2-way FDOT by element of A,
 * in Arm KleidiAI's x16p16vsx2b layout, so that every output is computed by
 * the same chain of roundings as KleidiAI's SVE2.1 kernel
 * (kai_matmul_clamp_f16_f16_f16p16vsx2bf16_6x16vs_sve2p1_dot), bit for bit.
 *
 * Packed layout "x16p4vlx2b" (KleidiAI's f16p16vsx2b: 16 vscale = 4 VL32
 * columns), nr = 4 * VL32, VL32 = SVE vector length in bits / 32, k
 * interleaved by kr = 2: for each block of nr columns, the nr FP16 bias
 * values, then ceil(K / 2) k pairs, each nr x 2 FP16 in the order n0k0 n0k1
 * n1k0 n1k1 ...; the N tail and an odd K are zero. A block is therefore
 * 2 + 4 * ceil(K / 2) vectors: its bias is two vectors, and each k pair four,
 * whose 32-bit containers hold the pairs (k0, k1) of VL32 columns each, as the
 * FDOT consumes them.
 *
 * Every file of the backend is compiled without SVE code generation (the C
 * code runs on any aarch64 CPU: the registry and the driver are reached
 * before the CPU is known to have SVE); only the assembly blocks use SVE
 * instructions, assembled for armv8.2-a+sve2 with the SVE2.1 instructions
 * (FDOT by element, FCLAMP, the multi-vector loads and stores,
 * predicate-as-counter) as encoded words from kb_sve_asm.h, so that
 * assemblers without SVE2.1 support still build the backend. */
#ifndef KB_SVE_H
#define KB_SVE_H

#include "../core/kb_internal.h"

#if defined(__aarch64__)

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The SVE vector length in bytes (RDVL X0, #1, as an encoded word: no SVE
 * assembler flags are needed in C code). */
static inline size_t kb_sve_vl_bytes(void) {
    register uint64_t x0 __asm__("x0");
    __asm__ volatile(".inst 0x04bf5020" /* rdvl x0, #1 */ : "=r"(x0));
    return (size_t)x0;
}

/* nr = 4 * VL32 = as many FP16 values as the vector length has bytes (a k
 * pair of a block is nr x 2 values: four vectors). */
static inline size_t kb_sve_block(void) { return kb_sve_vl_bytes(); }

static inline size_t kb_sve_roundup(size_t v, size_t m) { return (v + m - 1) / m * m; }

#define KB_SVE_KR 2
#define KB_SVE_SR 1
/* rows of C the GEMM kernel computes together (its m_step) */
#define KB_SVE_GEMM_ROWS 5

/* Bytes of one packed block (nr columns: bias, then the k pairs). */
static inline size_t kb_sve_rhs_block_bytes(size_t nr, size_t k) {
    return nr * (1 + kb_sve_roundup(k, KB_SVE_KR)) * sizeof(kb_f16);
}
/* Offset of the packed block holding column n_idx (a multiple of nr). */
static inline size_t kb_sve_rhs_offset(size_t n_idx, size_t nr, size_t k) {
    return n_idx / nr * kb_sve_rhs_block_bytes(nr, k);
}

/* ---- the micro-kernels' core ----------------------------------------------
 * dst[m, n) = clamp(a[m, k) . B + bias) over whole packed blocks: the GEMM
 * core takes every row (five at a time, then the rest), the GEMV core row 0
 * only (m is 1). */
typedef struct kb_sve_matmul_args {
    const void *a;            /* row 0 of A (FP16)                           */
    size_t lda;               /* bytes between rows of A                     */
    const void *rhs;          /* packed B: start (bias) of the first block   */
    size_t m;                 /* rows (> 0)                                  */
    size_t n;                 /* columns (> 0)                               */
    size_t k;                 /* > 0                                         */
    void *dst;                /* FP16 output, row 0 column 0                 */
    size_t ldc;               /* bytes between rows of dst                   */
    float clamp_min;          /* the bounds, converted to FP16 by FCVT        */
    float clamp_max;
} kb_sve_matmul_args;

/* the cores load adjacent fields in pairs (LDP) */
_Static_assert(offsetof(kb_sve_matmul_args, lda) == offsetof(kb_sve_matmul_args, a) + 8 &&
                   offsetof(kb_sve_matmul_args, m) == offsetof(kb_sve_matmul_args, rhs) + 8 &&
                   offsetof(kb_sve_matmul_args, k) == offsetof(kb_sve_matmul_args, n) + 8 &&
                   offsetof(kb_sve_matmul_args, ldc) == offsetof(kb_sve_matmul_args, dst) + 8 &&
                   offsetof(kb_sve_matmul_args, clamp_max) ==
                       offsetof(kb_sve_matmul_args, clamp_min) + 4,
               "kb_sve_matmul_args: the pairs the kernels load together");

typedef void (*kb_sve_core_fn)(const kb_sve_matmul_args *args);

/* ---- micro-kernel interface (KleidiAI-style; A read as it is) -----------
 * Offsets and sizes are in bytes; dst_stride_col must be sizeof(kb_f16). */
typedef struct kb_sve_matmul_ukernel {
    const char *name;
    size_t (*get_m_step)(void);
    size_t (*get_n_step)(void);
    size_t (*get_mr)(void);
    size_t (*get_nr)(void);
    size_t (*get_kr)(void);
    size_t (*get_sr)(void);
    size_t (*get_lhs_offset)(size_t m_idx, size_t lhs_stride);
    size_t (*get_rhs_packed_offset)(size_t n_idx, size_t k);
    size_t (*get_dst_offset)(size_t m_idx, size_t n_idx, size_t dst_stride);
    size_t (*get_dst_size)(size_t m, size_t n);
    void (*run_matmul)(size_t m, size_t n, size_t k, const void *lhs, size_t lhs_stride,
                       const void *rhs_packed, void *dst, size_t dst_stride_row,
                       size_t dst_stride_col, float clamp_min, float clamp_max);
    kb_sve_core_fn core;
} kb_sve_matmul_ukernel;

extern const kb_sve_matmul_ukernel kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot;
extern const kb_sve_matmul_ukernel kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot;

/* ---- the RHS packer (x16p4vlx2b) ----------------------------------------- */

size_t kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_get_n_step(void);
size_t kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_get_rhs_packed_stride(size_t k);
size_t kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_get_rhs_packed_offset(size_t n_idx, size_t k);
size_t kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_get_rhs_packed_size(size_t n, size_t k);
/* B is K x N FP16 with rhs_stride bytes between rows; bias N values or NULL
 * (zeros); nr = get_n_step() (the running vector length's: any other nr
 * packs nothing). */
void kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_run(size_t n, size_t k, size_t nr, const void *rhs,
                                               size_t rhs_stride, const void *bias,
                                               void *rhs_packed);
/* The packer behind it: B seen through a view (plain B, or panels of a
 * divisor of nr columns whose columns past N are zero, as the portable
 * layout's 16), nr the running vector length's (kb_sve_block(): the only
 * callers, the public run above and the driver, pass it). */
void kb_sve_rhs_pack_view(const kb_bview *b, size_t n, size_t k, size_t nr, void *rhs_packed);

/* ---- driver ---------------------------------------------------------------- */

/* Runs a GEMM call through a micro-kernel: B packed natively is read in
 * place, plain and portable B are packed into scratch first; the rows (GEMM)
 * or the blocks of columns (GEMV) are split over the call's threads, one
 * core call per thread (single-threaded: one core call over the whole
 * problem). */
kb_status kb_sve_gemm_run(const kb_sve_matmul_ukernel *uk, const kb_gemm_call *c, kb_error *err);

#endif /* __aarch64__ */
#endif /* KB_SVE_H */
