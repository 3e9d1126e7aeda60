/* kbx_kleidiai.c — Arm KleidiAI's FP16 kernels as one kbench plugin ("kleidiai").
 *
 * Built by this folder's Makefile against a KleidiAI checkout
 * (make KLEIDIAI_SRC=/path/to/kleidiai): the KleidiAI sources named there are
 * compiled into the library beside this file. Seven realizations, each named
 * in `kernel` exactly as KleidiAI spells its micro-kernel:
 *
 *   v1.30 family form (one C function per query; assigned to the table's
 *   fields as they are, but for the GEMV's LHS offset, see dot_lhs_offset):
 *     gemm_sme2_mopa   kai_matmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa with
 *                      kai_lhs_pack_x16p2vlx2_x16_sme and kai_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme
 *     gemv_sme2_dot    kai_matmul_clamp_f16_f16_f16p2vlx2b_1x16vl_sme2_dot (M = 1), same RHS packer
 *     gemm_neon_mla    kai_matmul_clamp_f16_f16_f16p16x1biasf16_6x16x8_neon_mla with
 *                      kai_rhs_pack_kxn_f16p16x1biasf16_f16_f16_neon
 *     conv2d_sme2_imatmul  kai_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa with
 *                      kai_lhs_imatmul_pack_x16p2vlx2_x16p_sme and
 *                      kai_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme
 *   generic micro-kernel API (one function returning a table that takes
 *   argument structures; the small functions below give its entries the
 *   plugin ABI's signatures):
 *     gemm_sme2_mopa_8vsx8vs  kai_matmul_clamp_f16_f16p4vsx2_f16p4vsx2bf16_8vsx8vs_sme2_mopa
 *                      (its edge variants 16vsx4vs ... 4vsx4vs run behind the one `run`) with
 *                      kai_matmul_pack_lhs_mxk_x16p4vsx2_x16_sme and
 *                      kai_matmul_pack_rhs_kxn_x16p4vsx2bx16_x16_x16_sme
 *     gemv_sme2_dot_1x32vs    kai_matmul_clamp_f16_f16_f16p4vsx2bf16_1x32vs_sme2_dot (M = 1),
 *                      same RHS packer
 *     gemm_sve2p1_dot  kai_matmul_clamp_f16_f16_f16p16vsx2bf16_6x16vs_sve2p1_dot (SVE2.1, A read
 *                      as it is) with kai_rhs_pack_kxn_x16p16vsx2bx16_x16_x16_sve
 *
 * Declarations: the SME and SVE2.1 kernels clamp with FCLAMP (a NaN result becomes
 * clamp_min: KB_PLUGIN_NAN_TO_MIN); the NEON kernel clamps with FMAX/FMIN,
 * which propagate NaN. The packers' layouts are declared where kbench
 * implements them (RHS x16p2vlx2b and x16p16x1b, LHS x16p2vlx2; the generic
 * packers' 4vs blocks are one vector length of 32-bit lanes: x16p1vlx2b and
 * x16p1vlx2; the SVE packer's 16vs blocks are four SVE vector lengths of 32-bit
 * lanes: x16p4vlx2b), so kbench compares their bytes with its own packing.
 *
 * Where the generic API's GEMM runs: kbench calls a micro-kernel once per
 * m_step band of rows over all of N, and, when threads outnumber the bands,
 * over ranges of whole n_step blocks. The 8vsx8vs kernel's own steps are one
 * vector length (of 32-bit lanes) in M and in N, and its `run` picks a variant
 * per region of the call: 8vsx8vs for the main tiles, 16vsx4vs or 8vsx4vs for
 * the right edge, 4vsx16vs, 4vsx8vs or 4vsx4vs for the bottom edge. A band one
 * vector length high never reaches the main tile; and the variants round
 * differently (a column computed by 8vsx4vs can differ in the last bit from
 * the same column computed by 8vsx8vs: 2 of 1,665 outputs of a 37 x 45 x 70
 * GEMM at SVL 512), so splitting N at one vector length would make the bits
 * depend on the thread count (kbench's determinism suite caught exactly that).
 * So the steps this adapter reports are four of the kernel's (G_WIDE): the
 * height of its tallest variant and the width of its widest. Every variant
 * still runs (kbench derives its tail shapes from these steps), and a split
 * of N at a multiple of four vector lengths hands every column to the variant
 * one call over all of N would.
 *
 * Built for a machine other than aarch64 (or with `make check`, against
 * kai_decls.h alone) nothing here calls KleidiAI: see the Makefile. */
#include "kbench_plugin.h"

#include "kai_decls.h"

#include <math.h>
#include <stdbool.h>

#define EXPORT __attribute__((visibility("default")))

#ifndef KBX_KLEIDIAI_VERSION /* the Makefile passes the checkout's `git describe` */
#define KBX_KLEIDIAI_VERSION "unknown"
#endif

#define KAI(query, name) kai_##query##_##name

/* ---- v1.30 family form ---------------------------------------------------------------- */

#define MOPA matmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa
#define DOT matmul_clamp_f16_f16_f16p2vlx2b_1x16vl_sme2_dot
#define NEON matmul_clamp_f16_f16_f16p16x1biasf16_6x16x8_neon_mla
#define LHS lhs_pack_x16p2vlx2_x16_sme
#define RHS rhs_pack_kxn_x16p2vlx2b_x16_x16_sme
#define NRHS rhs_pack_kxn_f16p16x1biasf16_f16_f16_neon
#define IMOPA imatmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa
#define ILHS lhs_imatmul_pack_x16p2vlx2_x16p_sme
#define IRHS rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme
#define XKAI(q, n) KAI(q, n)

static const kb_plugin_matmul_ukernel mopa = {
    .get_m_step = XKAI(get_m_step, MOPA), .get_n_step = XKAI(get_n_step, MOPA), .get_mr = XKAI(get_mr, MOPA),
    .get_nr = XKAI(get_nr, MOPA), .get_kr = XKAI(get_kr, MOPA), .get_sr = XKAI(get_sr, MOPA),
    .get_lhs_packed_offset = XKAI(get_lhs_packed_offset, MOPA),
    .get_rhs_packed_offset = XKAI(get_rhs_packed_offset, MOPA), .get_dst_offset = XKAI(get_dst_offset, MOPA),
    .get_dst_size = XKAI(get_dst_size, MOPA), .run_matmul = XKAI(run, MOPA),
    .lhs_get_m_step = XKAI(get_m_step, LHS), .lhs_get_packed_offset = XKAI(get_lhs_packed_offset, LHS),
    .lhs_get_packed_size = XKAI(get_lhs_packed_size, LHS), .lhs_pack = XKAI(run, LHS),
    .rhs_get_n_step = XKAI(get_n_step, RHS), .rhs_get_packed_offset = XKAI(get_rhs_packed_offset, RHS),
    .rhs_get_packed_size = XKAI(get_rhs_packed_size, RHS), .rhs_pack = XKAI(run, RHS),
};

/* The 1x16vl GEMV has no get_lhs_offset query (its row is read as it is, at
 * M = 1 always from the start): the one adapter of the v1.30 form. */
static size_t dot_lhs_offset(size_t m_idx, size_t lhs_stride) { return m_idx * lhs_stride; }

static const kb_plugin_matmul_ukernel dot = {
    .get_m_step = XKAI(get_m_step, DOT), .get_n_step = XKAI(get_n_step, DOT), .get_nr = XKAI(get_nr, DOT),
    .get_kr = XKAI(get_kr, DOT), .get_sr = XKAI(get_sr, DOT), .get_lhs_offset = dot_lhs_offset,
    .get_rhs_packed_offset = XKAI(get_rhs_packed_offset, DOT), .get_dst_offset = XKAI(get_dst_offset, DOT),
    .get_dst_size = XKAI(get_dst_size, DOT), .run_matmul_lhs = XKAI(run, DOT),
    .rhs_get_n_step = XKAI(get_n_step, RHS), .rhs_get_packed_offset = XKAI(get_rhs_packed_offset, RHS),
    .rhs_get_packed_size = XKAI(get_rhs_packed_size, RHS), .rhs_pack = XKAI(run, RHS),
};

/* KleidiAI's NEON RHS packer writes no bias for the padding columns of its last
 * block (at N = 1 the 30 bytes of columns 1..15): the realization declares its
 * padding unspecified (KB_PLUGIN_PACK_PADDING_UNSPECIFIED), so kbench compares
 * every other byte with x16p16x1b and checks that C does not depend on it; the
 * packer is assigned as it is. */
static const kb_plugin_matmul_ukernel neon = {
    .get_m_step = XKAI(get_m_step, NEON), .get_n_step = XKAI(get_n_step, NEON), .get_nr = XKAI(get_nr, NEON),
    .get_kr = XKAI(get_kr, NEON), .get_sr = XKAI(get_sr, NEON), .get_lhs_offset = XKAI(get_lhs_offset, NEON),
    .get_rhs_packed_offset = XKAI(get_rhs_packed_offset, NEON), .get_dst_offset = XKAI(get_dst_offset, NEON),
    .get_dst_size = XKAI(get_dst_size, NEON), .run_matmul_lhs = XKAI(run, NEON),
    .rhs_get_n_step = XKAI(get_n_step, NRHS), .rhs_get_packed_offset = XKAI(get_rhs_packed_offset, NRHS),
    .rhs_get_packed_size = XKAI(get_rhs_packed_size, NRHS), .rhs_pack = XKAI(run, NRHS),
};

static const kb_plugin_imatmul_ukernel imopa = {
    .get_m_step = XKAI(get_m_step, IMOPA), .get_n_step = XKAI(get_n_step, IMOPA),
    .get_lhs_packed_offset = XKAI(get_lhs_packed_offset, IMOPA),
    .get_rhs_packed_offset = XKAI(get_rhs_packed_offset, IMOPA), .get_dst_offset = XKAI(get_dst_offset, IMOPA),
    .get_dst_size = XKAI(get_dst_size, IMOPA), .run_imatmul = XKAI(run, IMOPA),
    .lhs_get_m_step = XKAI(get_m_step, ILHS), .lhs_get_packed_offset = XKAI(get_lhs_packed_offset, ILHS),
    .lhs_get_packed_size = XKAI(get_lhs_packed_size, ILHS), .lhs_pack = XKAI(run, ILHS),
    .rhs_get_packed_size = XKAI(get_rhs_packed_size, IRHS), .rhs_pack = XKAI(run, IRHS),
};

/* ---- generic micro-kernel API ----------------------------------------------------------
 * Each entry of KleidiAI's table takes a configuration and argument
 * structures; the functions below fill them from the plugin ABI's scalar
 * arguments. The configurations are all defaults (no block length). */

#define GMOPA kai_matmul_clamp_f16_f16p4vsx2_f16p4vsx2bf16_8vsx8vs_sme2_mopa
#define GDOT kai_matmul_clamp_f16_f16_f16p4vsx2bf16_1x32vs_sme2_dot
#define GLHS kai_matmul_pack_lhs_mxk_x16p4vsx2_x16_sme
#define GRHS kai_matmul_pack_rhs_kxn_x16p4vsx2bx16_x16_x16_sme
#define G_KR 2           /* the "x2" of the layouts' names: k values per pair (no query gives it) */
#define G_WIDE 4         /* kernel steps per kbench block, in M and in N: the height of the
                            tallest variant (16vsx4vs) and the width of the widest (4vsx16vs) */

static const struct kai_matmul_uker_config mm_cfg = {.format = {.bl = 0}};

static struct kai_matmul_pack_lhs_uker_config lhs_cfg(size_t mr, size_t kr, size_t sr) {
    struct kai_matmul_pack_lhs_uker_config c = {.format = {.mr = mr, .kr = kr, .sr = sr}};
    return c;
}

static struct kai_matmul_pack_rhs_uker_config rhs_cfg(size_t nr, size_t kr, size_t sr) {
    struct kai_matmul_pack_rhs_uker_config c = {.format = {.nr = nr, .kr = kr, .sr = sr, .bl = 0}};
    return c;
}

/* an RHS packer's queries and its run, as the plugin ABI's rhs_* entries: p_rhs_n_step ...
 * p_rhs_pack for the packer api (GRHS, shared by both SME2 generic kernels; SRHS) */
#define G_RHS_QUERIES(p, api)                                                                          \
    static size_t p##_rhs_n_step(void) {                                                              \
        struct kai_matmul_pack_rhs_uker_config c = rhs_cfg(0, G_KR, 1);                               \
        return api().get_step(&c).n;                                                                  \
    }                                                                                                 \
    static size_t p##_rhs_packed_stride(size_t k) {                                                   \
        struct kai_matmul_pack_rhs_uker_config c = rhs_cfg(p##_rhs_n_step(), G_KR, 1);                \
        struct kai_matmul_pack_rhs_uker_rhs_packed_dim_args shape = {.n = 0, .k = k};                 \
        return api().get_rhs_packed_stride(&c, &shape).n;                                             \
    }                                                                                                 \
    static size_t p##_rhs_packed_offset(size_t n_idx, size_t k) {                                     \
        struct kai_matmul_pack_rhs_uker_config c = rhs_cfg(p##_rhs_n_step(), G_KR, 1);                \
        struct kai_matmul_pack_rhs_uker_rhs_packed_dim_args index = {.n = n_idx, .k = 0};             \
        struct kai_matmul_pack_rhs_uker_rhs_packed_stride_args stride = {.n = p##_rhs_packed_stride(k)}; \
        return api().get_rhs_packed_offset(&c, &index, &stride);                                      \
    }                                                                                                 \
    static size_t p##_rhs_packed_size(size_t n, size_t k) {                                           \
        struct kai_matmul_pack_rhs_uker_config c = rhs_cfg(p##_rhs_n_step(), G_KR, 1);                \
        struct kai_matmul_pack_rhs_uker_rhs_packed_dim_args shape = {.n = n, .k = k};                 \
        struct kai_matmul_pack_rhs_uker_rhs_packed_stride_args stride = {.n = p##_rhs_packed_stride(k)}; \
        return api().get_rhs_packed_size(&c, &shape, &stride);                                        \
    }                                                                                                 \
    static void p##_rhs_pack(size_t num_groups, size_t n, size_t k, size_t nr, size_t kr, size_t sr,  \
                             size_t rhs_stride, const void *rhs, const void *bias, const void *scale, \
                             void *rhs_packed, size_t extra_bytes, const void *params) {             \
        (void)num_groups, (void)scale, (void)extra_bytes, (void)params; /* kbench: 1, NULL, 0, NULL */ \
        struct kai_matmul_pack_rhs_uker_config c = rhs_cfg(nr, kr, sr);                               \
        struct kai_matmul_pack_rhs_uker_args a = {.flags = 0, .shape = {.n = n, .k = k}};             \
        a.operand.rhs.ptr = rhs;                                                                      \
        a.operand.rhs.stride.n = 2; /* FP16 elements along a row of K x N */                          \
        a.operand.rhs.stride.k = rhs_stride;                                                          \
        a.operand.rhs_packed.ptr = rhs_packed;                                                        \
        a.operand.rhs_packed.stride.n = p##_rhs_packed_stride(k);                                     \
        a.operand.bias_n.ptr = bias;                                                                  \
        api().run(&c, &a);                                                                            \
    }

G_RHS_QUERIES(g, GRHS)

static size_t g_lhs_packed_stride(size_t k, size_t mr, size_t kr, size_t sr) {
    struct kai_matmul_pack_lhs_uker_config c = lhs_cfg(mr, kr, sr);
    struct kai_matmul_pack_lhs_uker_lhs_packed_dim_args shape = {.m = 0, .k = k};
    return GLHS().get_lhs_packed_stride(&c, &shape).m;
}

static size_t g_lhs_m_step(size_t mr) {
    struct kai_matmul_pack_lhs_uker_config c = lhs_cfg(mr, G_KR, 1);
    return GLHS().get_step(&c).m;
}

static size_t g_lhs_packed_offset(size_t m_idx, size_t k, size_t mr, size_t kr, size_t sr) {
    struct kai_matmul_pack_lhs_uker_config c = lhs_cfg(mr, kr, sr);
    struct kai_matmul_pack_lhs_uker_lhs_packed_dim_args index = {.m = m_idx, .k = 0};
    struct kai_matmul_pack_lhs_uker_lhs_packed_stride_args stride = {.m = g_lhs_packed_stride(k, mr, kr, sr)};
    return GLHS().get_lhs_packed_offset(&c, &index, &stride);
}

static size_t g_lhs_packed_size(size_t m, size_t k, size_t mr, size_t kr, size_t sr) {
    struct kai_matmul_pack_lhs_uker_config c = lhs_cfg(mr, kr, sr);
    struct kai_matmul_pack_lhs_uker_lhs_packed_dim_args shape = {.m = m, .k = k};
    struct kai_matmul_pack_lhs_uker_lhs_packed_stride_args stride = {.m = g_lhs_packed_stride(k, mr, kr, sr)};
    return GLHS().get_lhs_packed_size(&c, &shape, &stride);
}

static void g_lhs_pack(size_t m, size_t k, size_t mr, size_t kr, size_t sr, size_t m_idx_start, const void *lhs,
                       size_t lhs_stride, void *lhs_packed) {
    (void)m_idx_start; /* kbench packs the whole LHS: 0 */
    struct kai_matmul_pack_lhs_uker_config c = lhs_cfg(mr, kr, sr);
    struct kai_matmul_pack_lhs_uker_args a = {.flags = 0, .shape = {.m = m, .k = k}};
    a.operand.lhs.ptr = lhs;
    a.operand.lhs.stride.m = lhs_stride;
    a.operand.lhs_packed.ptr = lhs_packed;
    a.operand.lhs_packed.stride.m = g_lhs_packed_stride(k, mr, kr, sr);
    GLHS().run(&c, &a);
}

/* the kernels' queries: api is GMOPA, GDOT or SDOT, rp the prefix of its RHS packer's queries,
 * always_clamp whether every call passes the clamp flag (see p##_run) */
#define G_KERNEL_QUERIES(p, api, rp, always_clamp)                                                     \
    static size_t p##_kernel_m_step(void) { return api().get_step(&mm_cfg).m; }                        \
    static size_t p##_kernel_n_step(void) { return api().get_step(&mm_cfg).n; }                        \
    static size_t p##_nr(void) { return rp##_rhs_n_step(); }                                          \
    static size_t p##_kr(void) { return G_KR; }                                                       \
    static size_t p##_sr(void) { return 1; }                                                          \
    static size_t p##_rhs_stride(size_t k) {                                                          \
        struct kai_matmul_uker_rhs_dim_args shape = {.n = 0, .k = k};                                  \
        return api().get_rhs_stride(&mm_cfg, &shape).n;                                               \
    }                                                                                                 \
    static size_t p##_rhs_packed_offset(size_t n_idx, size_t k) {                                     \
        struct kai_matmul_uker_rhs_dim_args index = {.n = n_idx, .k = 0};                              \
        struct kai_matmul_uker_rhs_stride_args stride = {.n = p##_rhs_stride(k)};                      \
        return api().get_rhs_offset(&mm_cfg, &index, &stride);                                        \
    }                                                                                                 \
    static size_t p##_dst_offset(size_t m_idx, size_t n_idx, size_t dst_stride) {                     \
        struct kai_matmul_uker_dst_dim_args index = {.m = m_idx, .n = n_idx};                          \
        struct kai_matmul_uker_dst_stride_args stride = {.m = dst_stride};                             \
        return api().get_dst_offset(&mm_cfg, &index, &stride);                                        \
    }                                                                                                 \
    static size_t p##_dst_size(size_t m, size_t n) {                                                  \
        struct kai_matmul_uker_dst_dim_args shape = {.m = m, .n = n};                                  \
        struct kai_matmul_uker_dst_stride_args stride = api().get_dst_stride(&mm_cfg, &shape);         \
        return api().get_dst_size(&mm_cfg, &shape, &stride);                                          \
    }                                                                                                 \
    /* one call: dst_stride_col is the FP16 element (kbench passes 2); clamp_min/max as floats,    \
     * the clamp flag only for finite bounds (without it an SME kernel clamps at +-FLT_MAX, which  \
     * is +-inf in FP16: the same result, as a caller with no activation calls it); always for a   \
     * kernel that skips its clamp without it (always_clamp: the SVE2.1 kernel, whose NaN would    \
     * then pass instead of becoming clamp_min as its realization declares) */                     \
    static void p##_run(size_t m, size_t n, size_t k, const void *lhs, size_t lhs_stride, const void *rhs, \
                        void *dst, size_t dst_stride_row, float clamp_min, float clamp_max) {          \
        bool clamp = (always_clamp) || clamp_min != -INFINITY || clamp_max != INFINITY;               \
        struct kai_matmul_uker_args a = {.flags = clamp ? KAI_MATMUL_UKER_FLAGS_ARGS_CLAMP : 0,       \
                                         .shape = {.m = m, .n = n, .k = k}};                          \
        a.operand.lhs.ptr = lhs;                                                                      \
        a.operand.lhs.stride.m = lhs_stride;                                                          \
        a.operand.rhs.ptr = rhs;                                                                      \
        a.operand.rhs.stride.n = p##_rhs_stride(k);                                                   \
        a.operand.dst.ptr = dst;                                                                      \
        a.operand.dst.stride.m = dst_stride_row;                                                      \
        a.activation.clamp.min_ptr = &clamp_min;                                                      \
        a.activation.clamp.max_ptr = &clamp_max;                                                      \
        api().run(&mm_cfg, &a);                                                                       \
    }

G_KERNEL_QUERIES(gmopa, GMOPA, g, false)
G_KERNEL_QUERIES(gdot, GDOT, g, false)

/* 8vsx8vs with its packed LHS */
static size_t gmopa_m_step(void) { return G_WIDE * gmopa_kernel_m_step(); }
static size_t gmopa_n_step(void) { return G_WIDE * gmopa_kernel_n_step(); }
static size_t gmopa_mr(void) { return g_lhs_m_step(0); }

static size_t gmopa_lhs_stride(size_t k) {
    struct kai_matmul_uker_lhs_dim_args shape = {.m = 0, .k = k};
    return GMOPA().get_lhs_stride(&mm_cfg, &shape).m;
}

static size_t gmopa_lhs_packed_offset(size_t m_idx, size_t k) {
    struct kai_matmul_uker_lhs_dim_args index = {.m = m_idx, .k = 0};
    struct kai_matmul_uker_lhs_stride_args stride = {.m = gmopa_lhs_stride(k)};
    return GMOPA().get_lhs_offset(&mm_cfg, &index, &stride);
}

static void gmopa_run_matmul(size_t m, size_t n, size_t k, const void *lhs_packed, const void *rhs_packed, void *dst,
                             size_t dst_stride_row, size_t dst_stride_col, float clamp_min, float clamp_max) {
    (void)dst_stride_col;
    gmopa_run(m, n, k, lhs_packed, gmopa_lhs_stride(k), rhs_packed, dst, dst_stride_row, clamp_min, clamp_max);
}

/* 1x32vs reads the LHS row as it is */
static size_t gdot_m_step(void) { return gdot_kernel_m_step(); }
static size_t gdot_n_step(void) { return gdot_kernel_n_step(); }

static size_t gdot_lhs_offset(size_t m_idx, size_t lhs_stride) { return m_idx * lhs_stride; }

/* run_matmul_lhs of a kernel reading A as it is (gdot, sdot) */
#define G_RUN_PLAIN_LHS(p)                                                                             \
    static void p##_run_matmul(size_t m, size_t n, size_t k, const void *lhs, size_t lhs_stride,       \
                               const void *rhs_packed, void *dst, size_t dst_stride_row,              \
                               size_t dst_stride_col, float clamp_min, float clamp_max) {             \
        (void)dst_stride_col;                                                                         \
        p##_run(m, n, k, lhs, lhs_stride, rhs_packed, dst, dst_stride_row, clamp_min, clamp_max);      \
    }

G_RUN_PLAIN_LHS(gdot)

static const kb_plugin_matmul_ukernel gmopa = {
    .get_m_step = gmopa_m_step, .get_n_step = gmopa_n_step, .get_mr = gmopa_mr, .get_nr = gmopa_nr,
    .get_kr = gmopa_kr, .get_sr = gmopa_sr, .get_lhs_packed_offset = gmopa_lhs_packed_offset,
    .get_rhs_packed_offset = gmopa_rhs_packed_offset, .get_dst_offset = gmopa_dst_offset,
    .get_dst_size = gmopa_dst_size, .run_matmul = gmopa_run_matmul,
    .lhs_get_m_step = g_lhs_m_step, .lhs_get_packed_offset = g_lhs_packed_offset,
    .lhs_get_packed_size = g_lhs_packed_size, .lhs_pack = g_lhs_pack,
    .rhs_get_n_step = g_rhs_n_step, .rhs_get_packed_offset = g_rhs_packed_offset,
    .rhs_get_packed_size = g_rhs_packed_size, .rhs_pack = g_rhs_pack,
};

static const kb_plugin_matmul_ukernel gdot = {
    .get_m_step = gdot_m_step, .get_n_step = gdot_n_step, .get_nr = gdot_nr, .get_kr = gdot_kr,
    .get_sr = gdot_sr, .get_lhs_offset = gdot_lhs_offset, .get_rhs_packed_offset = gdot_rhs_packed_offset,
    .get_dst_offset = gdot_dst_offset, .get_dst_size = gdot_dst_size, .run_matmul_lhs = gdot_run_matmul,
    .rhs_get_n_step = g_rhs_n_step, .rhs_get_packed_offset = g_rhs_packed_offset,
    .rhs_get_packed_size = g_rhs_packed_size, .rhs_pack = g_rhs_pack,
};

/* ---- SVE2.1 (generic micro-kernel API, plain LHS) ---------------------------------------
 * kai_matmul_clamp_f16_f16_f16p16vsx2bf16_6x16vs_sve2p1_dot with its packer
 * kai_rhs_pack_kxn_x16p16vsx2bx16_x16_x16_sve: SVE code (FDOT of FP16 pairs into FP32,
 * by element of A) on CPUs with SVE2.1, whether or not they have SME; the runtime picks it
 * where SME is absent. Its blocks are 16 vscale = SVE vector length / 8 columns: four
 * vector lengths of 32-bit lanes, "x16p4vlx2b" at the SVE vector length the
 * realization runs at (kbench records that length in the packed B's header).
 *
 * Its get_step gives M = 1 (it takes any number of rows and runs them six at a time,
 * then a tail of 1 to 5: the "6x" of its name), as a runtime calls it, with all of M.
 * kbench calls a plain-LHS micro-kernel once per m_step band, so the adapter reports
 * bands of twelve rows (S_BAND): each call runs the six-row path twice (its loop to the
 * next six rows included), the last band its tail paths, and every output is computed
 * by the same chain of FDOTs whatever the band (bands change no bit). */
#define SDOT kai_matmul_clamp_f16_f16_f16p16vsx2bf16_6x16vs_sve2p1_dot
#define SRHS kai_rhs_pack_kxn_x16p16vsx2bx16_x16_x16_sve
#define S_BAND 12

G_RHS_QUERIES(s, SRHS)
G_KERNEL_QUERIES(sdot, SDOT, s, true)

static size_t sdot_m_step(void) { return S_BAND * sdot_kernel_m_step(); }
static size_t sdot_n_step(void) { return sdot_kernel_n_step(); }

static size_t sdot_lhs_offset(size_t m_idx, size_t lhs_stride) {
    struct kai_matmul_uker_lhs_dim_args index = {.m = m_idx, .k = 0};
    struct kai_matmul_uker_lhs_stride_args stride = {.m = lhs_stride};
    return SDOT().get_lhs_offset(&mm_cfg, &index, &stride);
}

G_RUN_PLAIN_LHS(sdot)

static const kb_plugin_matmul_ukernel sdot = {
    .get_m_step = sdot_m_step, .get_n_step = sdot_n_step, .get_nr = sdot_nr, .get_kr = sdot_kr,
    .get_sr = sdot_sr, .get_lhs_offset = sdot_lhs_offset, .get_rhs_packed_offset = sdot_rhs_packed_offset,
    .get_dst_offset = sdot_dst_offset, .get_dst_size = sdot_dst_size, .run_matmul_lhs = sdot_run_matmul,
    .rhs_get_n_step = s_rhs_n_step, .rhs_get_packed_offset = s_rhs_packed_offset,
    .rhs_get_packed_size = s_rhs_packed_size, .rhs_pack = s_rhs_pack,
};

/* where each realization's calls do their work (expect_symbols): its kernel, KleidiAI's
 * assembly or C (on emulated targets kbench checks that every call entered it) */
static const char *const sdot_expect[] = {"kai_kernel_matmul_clamp_f16_f16_f16p16vsx2bf16_6x16vs_sve2p1_dot", NULL};
static const char *const mopa_expect[] = {"kai_kernel_matmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa", NULL};
static const char *const dot_expect[] = {"kai_kernel_matmul_clamp_f16_f16_f16p2vlx2b_1x16vl_sme2_dot", NULL};
static const char *const neon_expect[] = {"kai_run_matmul_clamp_f16_f16_f16p16x1biasf16_6x16x8_neon_mla", NULL};
static const char *const imopa_expect[] = {"kai_kernel_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa", NULL};
static const char *const gmopa_expect[] = {"kai_kernel_matmul_clamp_f16_f16p4vsx2_f16p4vsx2bf16_*_sme2_mopa", NULL};
static const char *const gdot_expect[] = {"kai_kernel_matmul_clamp_f16_f16_f16p4vsx2bf16_1x32vs_sme2_dot", NULL};

/* ---- the table ------------------------------------------------------------------------ */

#define SME2_GEMM(nm, kern, uk, maxm, rl, ll, ex)                                                      \
    {                                                                                                  \
        .name = nm, .kernel = kern, .op = KB_OP_GEMM, .form = KB_PLUGIN_MICRO_KERNEL,                 \
        .isa = KB_ISA_SME2, .accum = KB_ACCUM_FP32, .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, \
        .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE, .max_m = maxm, .thread_safe = 1, .matmul = uk,    \
        .nan_clamp = KB_PLUGIN_NAN_TO_MIN, .rhs_layout = rl, .lhs_layout = ll, .expect_symbols = ex,  \
    }

static const kb_plugin_realization realizations[] = {
    SME2_GEMM("gemm_sme2_mopa", "kai_matmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa", &mopa, 0,
              "x16p2vlx2b", "x16p2vlx2", mopa_expect),
    SME2_GEMM("gemv_sme2_dot", "kai_matmul_clamp_f16_f16_f16p2vlx2b_1x16vl_sme2_dot", &dot, 1, "x16p2vlx2b", NULL,
              dot_expect),
    {
        .name = "gemm_neon_mla", .kernel = "kai_matmul_clamp_f16_f16_f16p16x1biasf16_6x16x8_neon_mla",
        .op = KB_OP_GEMM, .form = KB_PLUGIN_MICRO_KERNEL, .isa = KB_ISA_NEON_FP16, .accum = KB_ACCUM_FP16,
        .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE,
        .thread_safe = 1, .matmul = &neon, .nan_clamp = KB_PLUGIN_NAN_PROPAGATE, .rhs_layout = "x16p16x1b",
        .flags = KB_PLUGIN_PACK_PADDING_UNSPECIFIED, .expect_symbols = neon_expect,
    },
    {
        .name = "conv2d_sme2_imatmul", .kernel = "kai_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa",
        .op = KB_OP_CONV2D, .form = KB_PLUGIN_MICRO_KERNEL, .isa = KB_ISA_SME2, .accum = KB_ACCUM_FP32,
        .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, .max_groups = 1, .thread_safe = 1,
        .imatmul = &imopa, .nan_clamp = KB_PLUGIN_NAN_TO_MIN, .expect_symbols = imopa_expect,
    },
    SME2_GEMM("gemm_sme2_mopa_8vsx8vs", "kai_matmul_clamp_f16_f16p4vsx2_f16p4vsx2bf16_8vsx8vs_sme2_mopa", &gmopa, 0,
              "x16p1vlx2b", "x16p1vlx2", gmopa_expect),
    SME2_GEMM("gemv_sme2_dot_1x32vs", "kai_matmul_clamp_f16_f16_f16p4vsx2bf16_1x32vs_sme2_dot", &gdot, 1,
              "x16p1vlx2b", NULL, gdot_expect),
    /* FDOT rounds each k pair's sum to FP32 once, then its addition to the accumulator
     * (started from the bias, exactly): ceil(K/2) + 1 roundings on the longest chain,
     * which k_per_rounding = 1 (K roundings) bounds for every K (2 would give ceil(K/2),
     * one short); FCLAMP turns a NaN into clamp_min */
    {
        .name = "gemm_sve2p1_dot", .kernel = "kai_matmul_clamp_f16_f16_f16p16vsx2bf16_6x16vs_sve2p1_dot",
        .op = KB_OP_GEMM, .form = KB_PLUGIN_MICRO_KERNEL, .isa = KB_ISA_SVE2P1, .accum = KB_ACCUM_FP32,
        .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE,
        .thread_safe = 1, .matmul = &sdot, .nan_clamp = KB_PLUGIN_NAN_TO_MIN, .rhs_layout = "x16p4vlx2b",
        .expect_symbols = sdot_expect,
    },
};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
    .name = "kleidiai",
    .version = KBX_KLEIDIAI_VERSION,
    .description = "Arm KleidiAI's FP16 GEMM, GEMV and convolution micro-kernels, built from a checkout",
    .count = sizeof realizations / sizeof realizations[0],
    .realizations = realizations,
};

EXPORT const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &table;
}
