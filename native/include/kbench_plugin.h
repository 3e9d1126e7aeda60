/*
 * kbench_plugin.h — the kbench plugin ABI (version 3): how a shared library
 * hands its own FP16 GEMM and convolution kernels to kbench.
 *
 * A plugin exports one C function, named KB_PLUGIN_ENTRY_SYMBOL:
 *
 *     const kb_plugin *kb_plugin_entry(uint32_t host_abi_version);
 *
 * kbench calls it once, right after loading the library, with the newest ABI
 * version it reads; it returns a table that lives as long as the library
 * (usually a static const object). The entry function must not execute
 * instructions the CPU may lack: kbench checks the ISA every realization
 * declares against the running CPU before it calls anything else.
 *
 * Each realization in the table declares what kbench needs to judge and drive
 * it (operator, required ISA, accumulation model and where the bias enters the
 * chain, the forms of B it takes, its shape class, thread safety) and provides
 * function pointers in one of two forms:
 *
 *   KB_PLUGIN_WHOLE_CALL    kbench calls gemm() / conv2d() with the whole
 *                           problem; the plugin returns a kb_status (KB_OK,
 *                           or a refusal: KB_ERR_UNSUPPORTED for a call it does
 *                           not take, KB_ERR_CONTRACT for a packed B that does
 *                           not fit the call, ...). A realization that takes
 *                           its own packed B (bforms & KB_BFORM_NATIVE) also
 *                           provides packed_b_size() and pack_b(); the packed
 *                           bytes are its own (kbench adds no header) and it
 *                           answers for checking them against each call.
 *
 *   KB_PLUGIN_MICRO_KERNEL  a KleidiAI-style micro-kernel and its packers:
 *                           `matmul` (GEMM) or `imatmul` (convolution as an
 *                           indirect GEMM). kbench supplies the loops (a GEMM
 *                           calls run_matmul, a convolution run_imatmul, once
 *                           per m_step band of rows over all of N, or over
 *                           ranges of whole n_step blocks when threads
 *                           outnumber the bands), the packing calls, scratch
 *                           and threads. Every field has the signature of the
 *                           corresponding KleidiAI function, so a KleidiAI
 *                           micro-kernel and its packers are assigned as they
 *                           are, with no wrapper. A packed B that kbench makes
 *                           with rhs_pack for a call of this form carries a
 *                           kbench header (vector length, N, K, owner,
 *                           checksums) that kbench checks (O(1)) before
 *                           the kernel sees the bytes.
 *
 * Conventions: FP16 values are raw binary16 bit patterns (kb_f16); matrices
 * are row-major. In the whole-call form leading dimensions (lda, ldb, ldc) are
 * in elements; in the micro-kernel form strides are in bytes, as in KleidiAI.
 * C is written only on success. A realization that is not thread safe is
 * never called from two threads at once; one that is may be called
 * concurrently with disjoint outputs (kbench splits a call into row bands, or
 * micro-kernel blocks, over `threads` threads).
 *
 * Compatibility: KB_PLUGIN_ABI_VERSION grows when a structure below changes.
 * kbench refuses a plugin whose abi_version is newer than its own and reads
 * an older plugin's table with the structures of that plugin's version.
 * Version 2 appended to kb_plugin_realization: how its clamp treats a NaN
 * (nan_clamp) and the published packed layouts its packers produce
 * (rhs_layout, lhs_layout); a version-1 table loads with NaN propagation
 * and no declared layout. Version 3 appended the declarations of what a
 * realization does on purpose (flags, overread, scratch_cap,
 * expect_symbols, below); an older table loads declaring none of it.
 */
#ifndef KBENCH_PLUGIN_H
#define KBENCH_PLUGIN_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KB_PLUGIN_ABI_VERSION 3u
#define KB_PLUGIN_ENTRY_SYMBOL "kb_plugin_entry"

/* Forms of a realization. */
#define KB_PLUGIN_WHOLE_CALL 1
#define KB_PLUGIN_MICRO_KERNEL 2

/* Where the bias enters the accumulation chain. */
#define KB_PLUGIN_BIAS_LAST 0   /* the products are summed, then the bias is added */
#define KB_PLUGIN_BIAS_FIRST 1  /* the accumulator starts from the bias           */

/* What the clamp makes of a NaN result (ABI 2). kbench passes clamp_min =
 * -inf and clamp_max = +inf to a call that does not clamp, so a clamp that
 * turns NaN into a bound does so there too (FCLAMP: NaN -> -inf). The judge
 * applies the declared rule only where the exact result is NaN (or an
 * overflowing accumulator may make one) and keeps every other check of
 * special values; a realization whose NaN outputs do not follow its
 * declaration fails, with a message saying which rule they follow. */
#define KB_PLUGIN_NAN_PROPAGATE 0  /* NaN stays NaN (fmax/fmin that propagate, or no clamp) */
#define KB_PLUGIN_NAN_TO_MIN 1     /* NaN becomes clamp_min: FCLAMP, FMAXNM then FMINNM      */
#define KB_PLUGIN_NAN_TO_MAX 2     /* NaN becomes clamp_max: FMINNM then FMAXNM              */

/* Published packed layouts kbench implements (ABI 2 rhs_layout / lhs_layout),
 * named as KleidiAI names them: a realization that declares one has its
 * packers' bytes compared with kbench's own packer of that layout, byte for
 * byte and padding included, at the vector length it runs at.
 *   RHS "x16p<NR>x<KR>b": blocks of NR columns; each block holds NR bias
 *        values, then per group of KR k values an NR x KR tile, column by
 *        column (n0k0 n0k1 .. n1k0 ..); columns past N and k past K are zero.
 *        NR is a number or "<c>vl" (c times the vector length the code runs at
 *        in 32-bit lanes: the streaming one for SME classes, the SVE one for
 *        sve2/sve2p1): "x16p2vlx2b" (KleidiAI's SME f16p2vlx2b), "x16p4vlx2b"
 *        (its SVE2.1 f16p16vsx2b), "x16p16x1b"
 *        (the NEON FP16 layout of 16 columns with the bias first).
 *   LHS "x16p<MR>x<KR>": blocks of MR rows; per group of KR k values an
 *        MR x KR tile, row by row (m0k0 m0k1 .. m1k0 ..); rows past M and k
 *        past K are zero: "x16p2vlx2" (KleidiAI's SME f16p2vlx2). */

/* ---- declarations: what a realization does on purpose (ABI 3) ------------
 * Real libraries do things on purpose that would be findings elsewhere. A
 * realization declares them; kbench then checks the declaration exactly and
 * never fails what was declared. Whatever is not declared stays a finding.
 *
 * overread[operand]: bytes the realization (any of its functions: a packer or
 * the kernel) may read past the end of that operand, as MLAS declares
 * BufOverRead or XNNPACK XNN_EXTRA_BYTES. In a checking run kbench places
 * the operand so that its end plus the allowance ends flush against an
 * inaccessible page (the allowance holds FP16 NaN poison, so bytes read
 * there must not reach C): a read inside the allowance passes, one byte
 * beyond is a finding naming the operand, the function that read it and how
 * far past the end it read. */
#define KB_PLUGIN_OPERAND_A 0           /* GEMM A (rows lda apart); convolution input  */
#define KB_PLUGIN_OPERAND_B 1           /* GEMM plain B (rows ldb apart); conv filter  */
#define KB_PLUGIN_OPERAND_B_PACKED 2    /* its packed B: pack_b's bytes (whole call), or
                                           the RHS kbench packs with rhs_pack           */
#define KB_PLUGIN_OPERAND_BIAS 3        /* the bias (N or c_out values)                */
#define KB_PLUGIN_OPERAND_LHS_PACKED 4  /* micro-kernel: the LHS kbench packs          */
#define KB_PLUGIN_OPERAND_INDIRECTION 5 /* imatmul: the pointer table and padding row  */
#define KB_PLUGIN_OPERANDS 8            /* entries of overread[] (the rest: 0)         */
#define KB_PLUGIN_OVERREAD_MAX 32768u   /* the largest allowance kbench takes          */

/* flags: */
/* Its packer takes no bias (the whole-call form): pack_b is called with bias = NULL,
 * and a packed B it makes carries none. A call with a packed B and a bias is
 * then one it does not take (a contract violation it may refuse) unless it
 * also declares KB_PLUGIN_PACK_BIAS_AT_CALL; kbench lists such cases as not
 * applicable with the reason, and packs every B of its checks without one. */
#define KB_PLUGIN_PACK_NO_BIAS 0x1u
/* With KB_PLUGIN_PACK_NO_BIAS: a call with its packed B takes the bias
 * separately (args->bias with b_packed): kbench passes the case's bias at
 * call time. */
#define KB_PLUGIN_PACK_BIAS_AT_CALL 0x2u
/* Its packer leaves the padding bytes of its packed B as they are (columns
 * past N, k past K and their bias slots, as its declared rhs_layout places
 * them): kbench compares every other byte with its own packing of the
 * layout, checks that the written bytes do not depend on what the
 * destination held, and that the results do not depend on the padding
 * (destinations filled with zeros, 0xA5 and FP16 NaN give the same C). */
#define KB_PLUGIN_PACK_PADDING_UNSPECIFIED 0x4u
/* scratch_cap is declared: heap memory the realization may still hold after
 * a call returns (thread-local scratch it keeps for the next call), per
 * thread that called it. Without it kbench shows what a realization keeps
 * and fails only growth over identical calls (a leak). */
#define KB_PLUGIN_SCRATCH_CAPPED 0x8u
#define KB_PLUGIN_FLAGS_KNOWN 0xFu

/* expect_symbols: NULL, or an array of glob patterns (fnmatch, e.g.
 * "kai_matmul_*sme2*") ended by NULL, at most KB_PLUGIN_EXPECT_MAX of them:
 * the functions a call of this realization must do its work in. On emulated
 * targets kbench sees the code every call executed, by symbol; a call in
 * which no function of the plugin's code matching the patterns ran (a
 * fallback to another path, a reference loop) is a failure naming what ran. A pattern may start with an ISA class and a colon ("sme2:exrt_sme2_*",
 * "sve2p1:...", "neon:..."; the names of kbench's ISA classes): a runtime
 * that picks its path at run time lists its paths in its own order of
 * preference, and on a CPU the patterns of the first class listed that the
 * CPU has apply (patterns without a class apply where no listed class does,
 * and always when none has one). */
#define KB_PLUGIN_EXPECT_MAX 8

/* ---- whole-call form ---------------------------------------------------- */

/* One GEMM: C[M,N] = clamp(A[M,K] * B[K,N] + bias[N], clamp_min, clamp_max). */
typedef struct kb_plugin_gemm_args {
    size_t m, n, k;
    const kb_f16 *a; size_t lda;     /* A, lda >= k elements                       */
    const kb_f16 *b; size_t ldb;     /* plain B (ldb >= n), or NULL when packed    */
    const void *b_packed;            /* B from this realization's pack_b, or NULL  */
    size_t b_packed_size;            /* bytes at b_packed                          */
    const kb_f16 *bias;              /* n values or NULL; a packed B carries its
                                        own bias, so bias is NULL with b_packed    */
    kb_f16 *c; size_t ldc;           /* C, ldc >= n elements                       */
    float clamp_min, clamp_max;
    char *message;                   /* a refusal may explain itself here,         */
    size_t message_len;              /*   NUL-terminated, at most message_len      */
} kb_plugin_gemm_args;

/* One 2-D convolution: NHWC input, HWIO filter [kh][kw][c_in/groups][c_out],
 * NHWC output [n][out_h][out_w][c_out]. */
typedef struct kb_plugin_conv_args {
    const kb_conv_desc *desc;
    size_t out_h, out_w;
    const kb_f16 *input;
    const kb_f16 *filter;
    const kb_f16 *bias;              /* c_out values or NULL */
    kb_f16 *output;
    char *message;
    size_t message_len;
} kb_plugin_conv_args;

/* ---- micro-kernel form: GEMM ----------------------------------------------
 * Field for field the interface of a KleidiAI matmul micro-kernel
 * (kai_matmul_clamp_f16_f16p_f16p_ukernel, or, for kernels that read the LHS
 * unpacked, kai_matmul_clamp_f16_f16_f16p_ukernel), followed by its LHS packer
 * (kai_lhs_pack_*) and its RHS packer (kai_rhs_pack_kxn_*). Exactly one of
 * run_matmul (packed LHS: get_mr, get_lhs_packed_offset and the lhs_* packer
 * are required) and run_matmul_lhs (plain LHS: get_lhs_offset is required) is
 * set. rhs_pack receives a bias of N values (zeros when the call has none). */
typedef struct kb_plugin_matmul_ukernel {
    size_t (*get_m_step)(void);
    size_t (*get_n_step)(void);
    size_t (*get_mr)(void);
    size_t (*get_nr)(void);
    size_t (*get_kr)(void);
    size_t (*get_sr)(void);
    size_t (*get_lhs_packed_offset)(size_t m_idx, size_t k);
    size_t (*get_lhs_offset)(size_t m_idx, size_t lhs_stride);
    size_t (*get_rhs_packed_offset)(size_t n_idx, size_t k);
    size_t (*get_dst_offset)(size_t m_idx, size_t n_idx, size_t dst_stride);
    size_t (*get_dst_size)(size_t m, size_t n);
    void (*run_matmul)(size_t m, size_t n, size_t k, const void *lhs_packed,
                       const void *rhs_packed, void *dst, size_t dst_stride_row,
                       size_t dst_stride_col, float clamp_min, float clamp_max);
    void (*run_matmul_lhs)(size_t m, size_t n, size_t k, const void *lhs, size_t lhs_stride,
                           const void *rhs_packed, void *dst, size_t dst_stride_row,
                           size_t dst_stride_col, float clamp_min, float clamp_max);
    /* LHS packer */
    size_t (*lhs_get_m_step)(size_t mr);
    size_t (*lhs_get_packed_offset)(size_t m_idx, size_t k, size_t mr, size_t kr, size_t sr);
    size_t (*lhs_get_packed_size)(size_t m, size_t k, size_t mr, size_t kr, size_t sr);
    void (*lhs_pack)(size_t m, size_t k, size_t mr, size_t kr, size_t sr, size_t m_idx_start,
                     const void *lhs, size_t lhs_stride, void *lhs_packed);
    /* RHS packer (K x N source, bias inside the packed blocks) */
    size_t (*rhs_get_n_step)(void);
    size_t (*rhs_get_packed_offset)(size_t n_idx, size_t k);
    size_t (*rhs_get_packed_size)(size_t n, size_t k);
    void (*rhs_pack)(size_t num_groups, size_t n, size_t k, size_t nr, size_t kr, size_t sr,
                     size_t rhs_stride, const void *rhs, const void *bias, const void *scale,
                     void *rhs_packed, size_t extra_bytes, const void *params);
} kb_plugin_matmul_ukernel;

/* ---- micro-kernel form: convolution as an indirect GEMM -------------------
 * Field for field a KleidiAI imatmul micro-kernel
 * (kai_imatmul_clamp_f16_f16p_f16p_ukernel) with its LHS packer
 * (kai_lhs_imatmul_pack_*: rows given as a table of pointers) and RHS packer
 * (kai_rhs_imatmul_pack_kxn_*). kbench builds the pointer table: K is
 * k_chunk_count = kh * kw chunks of k_chunk_length = c_in values; for each
 * block of m_step output pixels (lhs_get_m_step()) and each chunk, m_step
 * pointers to input pixels, or pad_ptr (c_in zeros) where the filter tap
 * falls into the padding. Groups other than 1 are not expressible this way
 * (declare max_groups = 1). */
typedef struct kb_plugin_imatmul_ukernel {
    size_t (*get_m_step)(void);
    size_t (*get_n_step)(void);
    size_t (*get_lhs_packed_offset)(size_t m_idx, size_t k_chunk_count, size_t k_chunk_length);
    size_t (*get_rhs_packed_offset)(size_t n_idx, size_t k_chunk_count, size_t k_chunk_length);
    size_t (*get_dst_offset)(size_t m_idx, size_t n_idx, size_t dst_stride_row);
    size_t (*get_dst_size)(size_t m, size_t n);
    void (*run_imatmul)(size_t m, size_t n, size_t k_chunk_count, size_t k_chunk_length,
                        const void *lhs_packed, const void *rhs_packed, void *dst,
                        size_t dst_stride_row, float clamp_min, float clamp_max);
    /* LHS packer */
    size_t (*lhs_get_m_step)(void);
    size_t (*lhs_get_packed_offset)(size_t m_idx, size_t k_chunk_count, size_t k_chunk_length);
    size_t (*lhs_get_packed_size)(size_t m, size_t k_chunk_count, size_t k_chunk_length);
    void (*lhs_pack)(size_t m, size_t k_chunk_count, size_t k_chunk_length,
                     const void *const *lhs_ptrs, size_t lhs_ptr_offset, const void *pad_ptr,
                     void *lhs_packed);
    /* RHS packer (filters and bias) */
    size_t (*rhs_get_packed_size)(size_t n, size_t k_chunk_count, size_t k_chunk_length);
    void (*rhs_pack)(size_t n, size_t k_chunk_count, size_t k_chunk_length,
                     size_t rhs_row_stride, const void *rhs, const void *bias,
                     void *rhs_packed);
} kb_plugin_imatmul_ukernel;

/* ---- one realization -------------------------------------------------------- */

typedef struct kb_plugin_realization {
    const char *name;          /* [a-z0-9_], 1..47 characters, unique in the plugin; kbench
                                  shows it as "<plugin name>.<name>"                    */
    const char *kernel;        /* free text: what runs (shown beside verdicts)           */
    int op;                    /* KB_OP_GEMM or KB_OP_CONV2D                             */
    int form;                  /* KB_PLUGIN_WHOLE_CALL or KB_PLUGIN_MICRO_KERNEL         */
    int isa;                   /* kb_isa the code needs (checked before any call; the
                                  classes are a tree: KB_ISA_SVE2/SVE2P1 is SVE code on a
                                  CPU without SME, whose packed B records the SVE vector
                                  length as SME code's records the streaming one)        */
    int accum;                 /* kb_accum: KB_ACCUM_FP32 or KB_ACCUM_FP16               */
    uint32_t k_per_rounding;   /* products summed exactly per accumulator rounding
                                  (0 or 1: one rounding per product)                     */
    int bias;                  /* KB_PLUGIN_BIAS_LAST or KB_PLUGIN_BIAS_FIRST            */
    uint32_t bforms;           /* GEMM: KB_BFORM_PLAIN and/or KB_BFORM_NATIVE (B packed
                                  by this realization's own packer)                      */
    uint32_t max_m;            /* GEMM shape class: largest M it takes (1: GEMV), 0: any */
    uint32_t max_groups;       /* conv: largest groups it takes, 0: any                  */
    uint32_t conv_class;       /* conv: KB_CONV_CLASS_* it takes                         */
    int thread_safe;           /* 1: may run concurrently on disjoint outputs            */
    void *ctx;                 /* passed back to the whole-call functions                */
    /* KB_PLUGIN_WHOLE_CALL (GEMM: gemm, conv: conv2d) */
    kb_status (*gemm)(void *ctx, const kb_plugin_gemm_args *args);
    kb_status (*conv2d)(void *ctx, const kb_plugin_conv_args *args);
    size_t (*packed_b_size)(void *ctx, size_t n, size_t k);  /* with KB_BFORM_NATIVE */
    kb_status (*pack_b)(void *ctx, size_t n, size_t k, const kb_f16 *b, size_t ldb,
                        const kb_f16 *bias, void *dst, size_t dst_size);
    /* KB_PLUGIN_MICRO_KERNEL (GEMM: matmul, conv: imatmul) */
    const kb_plugin_matmul_ukernel *matmul;
    const kb_plugin_imatmul_ukernel *imatmul;
    /* ---- ABI version 2 (a version-1 table ends before these fields) ---- */
    int nan_clamp;             /* KB_PLUGIN_NAN_*: what the clamp makes of a NaN       */
    const char *rhs_layout;    /* GEMM: the layout of its packed B (pack_b, or rhs_pack)
                                  if it is a published one kbench implements, or NULL  */
    const char *lhs_layout;    /* micro-kernel GEMM with a packed LHS: its lhs_pack's
                                  layout, or NULL                                       */
    /* ---- ABI version 3 (a version-2 table ends before these fields) ---- */
    uint32_t flags;            /* KB_PLUGIN_PACK_*, KB_PLUGIN_SCRATCH_CAPPED            */
    uint32_t overread[KB_PLUGIN_OPERANDS]; /* bytes it may read past the end of each
                                  operand (KB_PLUGIN_OPERAND_*), at most
                                  KB_PLUGIN_OVERREAD_MAX                                 */
    uint64_t scratch_cap;      /* with KB_PLUGIN_SCRATCH_CAPPED: heap bytes it may hold
                                  after a call, per calling thread                       */
    const char *const *expect_symbols; /* NULL, or glob patterns ended by NULL          */
} kb_plugin_realization;

/* ---- the plugin ---------------------------------------------------------------- */

typedef struct kb_plugin {
    uint32_t abi_version;      /* KB_PLUGIN_ABI_VERSION the plugin was built against      */
    uint32_t struct_size;      /* sizeof(kb_plugin)                                       */
    const char *name;          /* [a-z0-9_], 1..31 characters, not a kbench backend name  */
    const char *version;       /* the plugin's own version, shown in every report         */
    const char *description;
    uint32_t count;            /* realizations                                            */
    const kb_plugin_realization *realizations;
} kb_plugin;

typedef const kb_plugin *(*kb_plugin_entry_fn)(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif
#endif /* KBENCH_PLUGIN_H */
