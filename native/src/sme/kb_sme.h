/* kb_sme.h — the SME/SME2 backend's internal interface: packed layouts,
 * micro-kernel interfaces and drivers.
 *
 * Packed layouts (nr = mr = 2 * VL32, VL32 = SVL in bits / 32; k interleaved
 * by kr = 2):
 *
 *   RHS "x16p2vlx2b": for each block of nr columns: nr FP16 bias values, then
 *   ceil(K / 2) k pairs, each nr x 2 FP16 in the order n0k0 n0k1 n1k0 n1k1 ...
 *   The N tail and an odd K are zero. Block stride nr * (2 + roundup(K, 2) * 2)
 *   bytes.
 *
 *   LHS "x16p2vlx2": for each block of mr rows, per k pair an mr x 2 tile in
 *   the order m0k0 m0k1 m1k0 m1k1 ...; roundup(M, mr) * roundup(K, 2) * 2
 *   bytes.
 *
 * One k pair of either operand is therefore two streaming vectors: rows (or
 * columns) 0 .. VL32-1, then VL32 .. 2*VL32-1, each 32-bit container holding
 * the pair (k0, k1) that the widening FMOPA / FDOT consume.
 *
 * Micro-kernels enter and leave streaming mode themselves (SMSTART/SMSTOP in
 * their own assembly), so ZA and streaming mode are off whenever C code
 * runs (no lazy ZA save is ever pending, and no ACLE support routine is
 * needed). Every file of the backend is compiled without SVE/SME code
 * generation; only the assembly blocks use SME instructions. Each block is
 * assembled for armv8.2-a+sme without SVE, so the assembler refuses any
 * instruction that is illegal in streaming mode and the SME kernels cannot
 * hold an SME2 instruction; the SME2 kernels emit their SME2 instructions as
 * encoded words (commented with the mnemonic), so that assemblers without
 * SME2 support (binutils 2.40) still build the backend. */
#ifndef KB_SME_H
#define KB_SME_H

#include "../core/kb_internal.h"

#if defined(__aarch64__)

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Streaming vector length in bytes (RDSVL works outside streaming mode; the
 * word is emitted directly so no SME-aware assembler flags are needed). */
static inline size_t kb_sme_svl_bytes(void) {
    register uint64_t x0 __asm__("x0");
    __asm__ volatile(".inst 0x04bf5820" /* rdsvl x0, #1 */ : "=r"(x0));
    return (size_t)x0;
}

/* mr = nr = 2 * VL32 = SVL bytes / 2 FP16 elements. */
static inline size_t kb_sme_block(void) { return kb_sme_svl_bytes() / 2; }

static inline size_t kb_sme_roundup(size_t v, size_t m) { return (v + m - 1) / m * m; }

#define KB_SME_KR 2
#define KB_SME_SR 1

/* Bytes of one packed RHS block (nr columns: bias, then the k pairs). */
static inline size_t kb_sme_rhs_block_bytes(size_t nr, size_t k) {
    return nr * (2 + kb_sme_roundup(k, KB_SME_KR) * 2);
}
/* Offset of the packed RHS block holding column n_idx (a multiple of nr). */
static inline size_t kb_sme_rhs_offset(size_t n_idx, size_t nr, size_t k) {
    return n_idx / nr * kb_sme_rhs_block_bytes(nr, k);
}
/* Offset of the packed LHS block holding row m_idx (a multiple of mr). */
static inline size_t kb_sme_lhs_offset(size_t m_idx, size_t k) {
    return m_idx * kb_sme_roundup(k, KB_SME_KR) * sizeof(kb_f16);
}

/* ---- MOPA micro-kernel core ---------------------------------------------
 * Computes m x n outputs from packed LHS blocks and packed RHS blocks over a
 * range of k pairs. The accumulators start from the RHS bias (or from FP32
 * partial sums) and end as clamped FP16 (or as FP32 partial sums), so a long
 * K can be processed in chunks with results identical to one pass. */

#define KB_SME_ACC_LOAD 1u  /* start from acc, not from the bias            */
#define KB_SME_ACC_STORE 2u /* write FP32 partial sums to acc, not FP16 dst  */
#define KB_SME_CLAMP_SELECT 4u /* clamp by compare/select (see kb_sme_asm.h) */

/* The clamp flag for a call: FMAX/FMIN clamp exactly as kb_store_f16 does
 * for every FP32 accumulator these kernels produce (never -0), except
 * when clamp_max is -0 (FMIN(+0, -0) is -0, kb_store_f16 keeps +0); then
 * the kernels take the compare/select path. */
static inline uint64_t kb_sme_clamp_flags(float clamp_max) {
    union { float f; uint32_t u; } v = {clamp_max};
    return v.u == 0x80000000u ? KB_SME_CLAMP_SELECT : 0u;
}

typedef struct kb_sme_mopa_args {
    const void *lhs;          /* packed LHS: first pair of the chunk, block 0  */
    size_t lhs_block_stride;  /* bytes between consecutive mr-row blocks       */
    const void *rhs;          /* packed RHS: start (bias) of the first block   */
    size_t rhs_block_stride;  /* bytes between consecutive nr-column blocks    */
    size_t rhs_k_offset;      /* bytes from a block's start to the chunk's pair */
    size_t m;                 /* rows to compute (> 0)                         */
    size_t n;                 /* columns to compute (> 0)                      */
    size_t kpairs;            /* k pairs in the chunk (> 0)                    */
    void *dst;                /* FP16 output, row 0 column 0                   */
    size_t dst_stride;        /* bytes between output rows                     */
    float *acc;               /* FP32 partial sums, roundup(m, mr) rows, each  */
    size_t acc_stride;        /*   of roundup(n, nr) values; bytes per row     */
    uint64_t flags;           /* KB_SME_ACC_*                                  */
    float clamp_min;
    float clamp_max;
} kb_sme_mopa_args;

typedef void (*kb_sme_mopa_core_fn)(const kb_sme_mopa_args *args);

/* ---- GEMV micro-kernel core ----------------------------------------------
 * One row: dst[0, n) = clamp(a[0, k) . B + bias) over packed RHS blocks. */
typedef struct kb_sme_gemv_args {
    const void *a;            /* k FP16 values                                 */
    size_t k;                 /* > 0                                           */
    const void *rhs;          /* packed RHS: start (bias) of the first block   */
    size_t rhs_block_stride;
    size_t n;                 /* columns (> 0)                                 */
    void *dst;                /* FP16 output                                   */
    uint64_t flags;           /* KB_SME_CLAMP_SELECT or 0                      */
    float clamp_min;
    float clamp_max;
} kb_sme_gemv_args;

typedef void (*kb_sme_gemv_core_fn)(const kb_sme_gemv_args *args);

/* The MOPA core a plan calls: the kernel itself, or in a checking run
 * (kb_cc_checking) a stand-in calling it through the calling-convention
 * trampoline (kb_sme_gemm.c). */
kb_sme_mopa_core_fn kb_sme_checked_mopa(kb_sme_mopa_core_fn core);

/* ---- micro-kernel interfaces ---------------------------------------------
 * Offsets and sizes are in bytes; strides of dst are in bytes (the column
 * stride must be sizeof(kb_f16)). */

typedef struct kb_sme_matmul_ukernel {
    const char *name;
    size_t (*get_m_step)(void);
    size_t (*get_n_step)(void);
    size_t (*get_mr)(void);
    size_t (*get_nr)(void);
    size_t (*get_kr)(void);
    size_t (*get_sr)(void);
    size_t (*get_lhs_packed_offset)(size_t m_idx, size_t k);
    size_t (*get_rhs_packed_offset)(size_t n_idx, size_t k);
    size_t (*get_dst_offset)(size_t m_idx, size_t n_idx, size_t dst_stride);
    size_t (*get_dst_size)(size_t m, size_t n);
    void (*run_matmul)(size_t m, size_t n, size_t k, const void *lhs_packed,
                       const void *rhs_packed, void *dst, size_t dst_stride_row,
                       size_t dst_stride_col, float clamp_min, float clamp_max);
    kb_sme_mopa_core_fn core;
} kb_sme_matmul_ukernel;

typedef struct kb_sme_gemv_ukernel {
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
    kb_sme_gemv_core_fn core;
} kb_sme_gemv_ukernel;

typedef struct kb_sme_imatmul_ukernel {
    const char *name;
    size_t (*get_m_step)(void);
    size_t (*get_n_step)(void);
    size_t (*get_lhs_packed_offset)(size_t m_idx, size_t k_chunk_count, size_t k_chunk_length);
    size_t (*get_rhs_packed_offset)(size_t n_idx, size_t k_chunk_count, size_t k_chunk_length);
    size_t (*get_dst_offset)(size_t m_idx, size_t n_idx, size_t dst_stride_row);
    size_t (*get_dst_size)(size_t m, size_t n);
    void (*run_imatmul)(size_t m, size_t n, size_t k_chunk_count, size_t k_chunk_length,
                        const void *lhs_packed, const void *rhs_packed, void *dst,
                        size_t dst_stride_row, float clamp_min, float clamp_max);
    kb_sme_mopa_core_fn core;
} kb_sme_imatmul_ukernel;

extern const kb_sme_matmul_ukernel kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa;
extern const kb_sme_matmul_ukernel kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa;
extern const kb_sme_gemv_ukernel kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot;
extern const kb_sme_gemv_ukernel kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla;
extern const kb_sme_imatmul_ukernel kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa;
extern const kb_sme_imatmul_ukernel kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa;

/* ---- packers: C functions, called outside streaming mode; those that use
 * SME (the LHS transposes, the RHS interleave) enter and leave it inside. */

/* RHS x16p2vlx2b. */
size_t kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_get_n_step(void);
size_t kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_get_rhs_packed_stride(size_t k);
size_t kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_get_rhs_packed_offset(size_t n_idx, size_t k);
size_t kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_get_rhs_packed_size(size_t n, size_t k);
/* B is K x N FP16 with rhs_stride bytes between rows; bias N values or NULL;
 * nr = get_n_step() (the running SVL's: any other nr packs nothing). */
void kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_run(size_t n, size_t k, size_t nr,
                                               const void *rhs, size_t rhs_stride,
                                               const void *bias, void *rhs_packed);
/* A plain B packed for a sealed buffer on a CPU with SME2: returns the
 * payload checksum, computed while packing (kb_seal_checksum). */
uint64_t kb_sme2_rhs_pack_sealed(size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                                 void *rhs_packed);

/* The general RHS packer behind both public ones: B seen through a view, K
 * made of chunk_count (>= 1) chunks of chunk_length rows, each chunk padded
 * to kr (chunk_count = 1 gives the plain layout); nr the running SVL's, and
 * the view plain B or panels of a multiple or divisor of nr columns (any
 * other call packs nothing). */
void kb_sme_rhs_pack_view(const kb_bview *b, size_t n, size_t chunk_count, size_t chunk_length,
                          size_t nr, void *rhs_packed);

/* LHS x16p2vlx2. */
size_t kb_lhs_pack_x16p2vlx2_x16_sme_get_m_step(size_t mr);
size_t kb_lhs_pack_x16p2vlx2_x16_sme_get_lhs_packed_offset(size_t m_idx, size_t k, size_t mr);
size_t kb_lhs_pack_x16p2vlx2_x16_sme_get_lhs_packed_size(size_t m, size_t k, size_t mr);
void kb_lhs_pack_x16p2vlx2_x16_sme_run(size_t m, size_t k, size_t mr, const void *lhs,
                                       size_t lhs_stride, void *lhs_packed);
/* One block of mr rows (rows >= `rows` are zero), k pairs [p0, p0 + pc). */
void kb_sme_lhs_pack_block(const kb_f16 *a, size_t lda, size_t rows, size_t k, size_t mr,
                           size_t p0, size_t pc, kb_f16 *dst);

/* Indirect LHS: ptrs holds, for each block of mr rows and each of the
 * chunk_count chunks, mr row pointers (blocked by m_step); a pointer equal
 * to pad_ptr is used as is, any other is advanced by ptr_offset bytes. */
size_t kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_get_m_step(size_t mr);
size_t kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_get_lhs_packed_offset(size_t m_idx, size_t k_chunk_count,
                                                                   size_t k_chunk_length, size_t mr);
size_t kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_get_lhs_packed_size(size_t m, size_t k_chunk_count,
                                                                 size_t k_chunk_length, size_t mr);
void kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_run(size_t m, size_t k_chunk_count,
                                                size_t k_chunk_length, size_t mr,
                                                const void *const *ptrs, size_t ptr_offset,
                                                const void *pad_ptr, void *lhs_packed);
/* One block: ptrs = that block's chunk_count x mr pointers; k pairs [p0, p0 + pc)
 * of the chunk-padded K. */
void kb_sme_lhs_imatmul_pack_block(const void *const *ptrs, size_t ptr_offset,
                                   const void *pad_ptr, size_t chunk_count,
                                   size_t chunk_length, size_t mr, size_t p0, size_t pc,
                                   kb_f16 *dst);

/* RHS for indirect GEMM: K = k_chunk_count chunks of k_chunk_length rows,
 * each padded to kr; filters and bias packed together. */
size_t kb_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme_get_rhs_packed_size(size_t n, size_t k_chunk_count,
                                                                         size_t k_chunk_length);
void kb_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme_run(size_t n, size_t k_chunk_count,
                                                       size_t k_chunk_length, size_t nr,
                                                       const void *rhs, size_t rhs_stride,
                                                       const void *bias, void *rhs_packed);

/* ---- drivers ------------------------------------------------------------- */

/* Bytes of the per-thread LHS chunk the drivers pack before a kernel call,
 * and of the FP32 partial sums kept between chunks. */
#define KB_SME_LHS_CHUNK_BYTES ((size_t)64 << 10)
#define KB_SME_ACC_BYTES ((size_t)256 << 10)
/* The packed LHS a single-threaded GEMM packs at once (whole mr-row blocks,
 * at least one), to run its micro-kernel once over all of them. */
#define KB_SME_LHS_GROUP_BYTES ((size_t)256 << 10)

/* The block loop shared by the MOPA GEMM and the indirect-GEMM convolution:
 * output blocks of mr rows (or, blocked, of block_m rows: a group of mr-row
 * blocks) x a range of nr-column blocks are the units of work, split across
 * threads (each unit is computed the same way whichever thread runs it, so
 * results do not depend on the thread count). For each unit and each chunk
 * of k pairs the LHS source packs the unit's rows into the thread's own
 * buffer (one mr-row block after the other: the packed A block), then the
 * kernel core runs on each mr-row block; between chunks the sums stay in
 * FP32 (exactly), so chunking changes no bit.
 *
 * Block sizes: by default the chunk of k pairs fits KB_SME_LHS_CHUNK_BYTES
 * and, when K takes more than one chunk, a column range fits
 * KB_SME_ACC_BYTES of partial sums (ranges also shrink so that every
 * thread gets work). A caller may set block_m, block_n, block_k instead
 * (elements; rounded down to multiples of mr, nr and kr, at least one of
 * each; 0 keeps the default for that dimension). */
typedef void (*kb_sme_lhs_pack_fn)(const void *ctx, void *task_extra, size_t m0, size_t rows,
                                   size_t p0, size_t pc, kb_f16 *dst);

typedef void (*kb_sme_run_matmul_fn)(size_t m, size_t n, size_t k, const void *lhs_packed,
                                     const void *rhs_packed, void *dst, size_t dst_stride_row,
                                     size_t dst_stride_col, float clamp_min, float clamp_max);

typedef struct kb_sme_mopa_plan {
    /* filled by the caller */
    kb_sme_mopa_core_fn core;
    /* the micro-kernel's public run_matmul, or NULL: when K fits one chunk each
     * block is run through it (what a KleidiAI-style caller, and kbench's plugin
     * loop, calls: the same instructions), else through the core with the
     * chunk's partial sums; K is the GEMM's K for it */
    kb_sme_run_matmul_fn run;
    size_t K;
    size_t M, N, kpairs;        /* kpairs of the packed K                   */
    const unsigned char *rhs;   /* packed RHS, kpairs pairs per block       */
    kb_f16 *C;
    size_t ldc;
    float clamp_min, clamp_max;
    kb_sme_lhs_pack_fn pack;
    const void *pack_ctx;
    size_t extra_bytes;         /* per-thread bytes the LHS source needs    */
    int threads;
    size_t block_m, block_n, block_k; /* cache blocking; 0 = default budgets */
    /* with `run`, single threaded and default blocking: the LHS bytes a unit
     * may pack (its mr-row blocks then go to run_matmul in one call; SIZE_MAX:
     * all of M, selector.one_call); 0: one mr-row block per unit */
    size_t group_bytes;
    /* filled by kb_sme_mopa_prepare */
    size_t svlb, mr, rhs_stride, nblocks, kc, nchunks, range_blocks, nranges, units, tasks;
    size_t mgroup;              /* mr-row blocks per unit                   */
    size_t lhs_block_bytes, lhs_bytes, acc_bytes, task_bytes;
    unsigned char *task_mem;
    atomic_int failed;
} kb_sme_mopa_plan;

/* Tiling and the bytes of per-thread scratch (in *bytes); false on overflow. */
bool kb_sme_mopa_prepare(kb_sme_mopa_plan *p, size_t *bytes);
/* Runs the plan with its per-thread scratch at task_mem (64-byte aligned).
 * Returns false if a thread found a different streaming vector length. */
bool kb_sme_mopa_execute(kb_sme_mopa_plan *p, unsigned char *task_mem);

#define KB_SME_ALIGN(x) (((x) + 63u) & ~(size_t)63u)

/* The MOPA GEMM; blk NULL: default block sizes (see kb_sme_mopa_plan). */
typedef struct kb_sme_blocking {
    size_t mb, nb, kb;
} kb_sme_blocking;
kb_status kb_sme_gemm_mopa_run(const kb_sme_matmul_ukernel *uk, const kb_sme_blocking *blk,
                               const kb_gemm_call *c, kb_error *err);
/* Reports the block sizes the default MOPA loop uses at the running SVL
 * (block_k: the LHS chunk; block_n: the column range used when K takes
 * more than one chunk, before any split for threads). */
void kb_sme_describe_default_blocks(kb_realization *r);
kb_status kb_sme_gemm_gemv_run(const kb_sme_gemv_ukernel *uk, const kb_gemm_call *c,
                               kb_error *err);
kb_status kb_sme_conv_igemm_run(const kb_sme_imatmul_ukernel *uk, const kb_conv_desc *d,
                                size_t oh, size_t ow, const kb_f16 *input,
                                const kb_f16 *filter, const kb_f16 *bias, kb_f16 *output,
                                const kb_selector *sel, kb_error *err);

#endif /* __aarch64__ */
#endif /* KB_SME_H */
