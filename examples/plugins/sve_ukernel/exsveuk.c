/* exsveuk.c — example plugin: kbench's own SVE2.1 micro-kernels through the
 * plugin ABI (the micro-kernel form, A read as it is).
 *
 * The files of native/src/sve/ named in the Makefile (the GEMM, the GEMV and
 * their RHS packer) are compiled into this library and handed to kbench through
 * their public micro-kernel interface only, as a KleidiAI micro-kernel would be:
 *
 *   gemm_sve2p1_dot   matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot with
 *                     rhs_pack_kxn_x16p4vlx2b_x16_x16_sve
 *   gemv_sve2p1_dot   matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot (M = 1) with
 *                     the same packer
 *
 * kbench drives them with its generic micro-kernel loop; the results must be
 * bit-identical to its own realizations of the same kernels
 * (gemm_sve2p1_dot_f32acc, gemv_sve2p1_dot_f32acc) and to KleidiAI's SVE2.1
 * kernel, at every SVE vector length, and the packer's bytes must be the
 * x16p4vlx2b layout it declares. The micro-kernel functions are assigned as
 * they are; the packer's entry point takes its arguments in another order than
 * KleidiAI's, so a one-line adapter gives it KleidiAI's signature. Both declare
 * what they do on purpose: FP32 from the bias, and FCLAMP's NaN -> clamp_min.
 *
 * Built for a machine that is not aarch64 the table is the same but kbench
 * refuses the plugin before calling anything: both realizations need SVE2.1. */
#include "kbench_plugin.h"

#define EXPORT __attribute__((visibility("default")))

#if defined(__aarch64__)
#include "../../../native/src/sve/kb_sve.h"

static void rhs_pack(size_t num_groups, size_t n, size_t k, size_t nr, size_t kr, size_t sr, size_t rhs_stride,
                     const void *rhs, const void *bias, const void *scale, void *rhs_packed, size_t extra_bytes,
                     const void *params) {
    (void)num_groups, (void)kr, (void)sr, (void)scale, (void)extra_bytes, (void)params;
    kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_run(n, k, nr, rhs, rhs_stride, bias, rhs_packed);
}

#define GEMM(f) kb_matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot_##f
#define GEMV(f) kb_matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot_##f
#define RHS(f) kb_rhs_pack_kxn_x16p4vlx2b_x16_x16_sve_##f
#define DECLARE(P)                                                                                \
    size_t P(get_m_step)(void); size_t P(get_n_step)(void); size_t P(get_nr)(void);              \
    size_t P(get_kr)(void); size_t P(get_sr)(void); size_t P(get_lhs_offset)(size_t, size_t);    \
    size_t P(get_rhs_packed_offset)(size_t, size_t); size_t P(get_dst_offset)(size_t, size_t, size_t); \
    size_t P(get_dst_size)(size_t, size_t);                                                       \
    void P(run_matmul)(size_t, size_t, size_t, const void *, size_t, const void *, void *, size_t, size_t, \
                       float, float);
DECLARE(GEMM)
DECLARE(GEMV)

#define UKERNEL(P)                                                                                \
    {                                                                                             \
        .get_m_step = P(get_m_step), .get_n_step = P(get_n_step), .get_nr = P(get_nr),           \
        .get_kr = P(get_kr), .get_sr = P(get_sr), .get_lhs_offset = P(get_lhs_offset),           \
        .get_rhs_packed_offset = P(get_rhs_packed_offset), .get_dst_offset = P(get_dst_offset),  \
        .get_dst_size = P(get_dst_size), .run_matmul_lhs = P(run_matmul),                         \
        .rhs_get_n_step = RHS(get_n_step), .rhs_get_packed_offset = RHS(get_rhs_packed_offset),  \
        .rhs_get_packed_size = RHS(get_rhs_packed_size), .rhs_pack = rhs_pack,                    \
    }
static const kb_plugin_matmul_ukernel gemm = UKERNEL(GEMM);
static const kb_plugin_matmul_ukernel gemv = UKERNEL(GEMV);
#define GEMM_UK &gemm
#define GEMV_UK &gemv
#else
/* Not aarch64: no SVE code to hand over. The table points at stubs that abort;
 * kbench refuses the plugin (both realizations need SVE2.1) before it calls
 * anything but the entry function. */
#include <stdlib.h>
static size_t z0(void) { abort(); }
static size_t z2(size_t a, size_t b) { (void)a, (void)b; abort(); }
static size_t z3(size_t a, size_t b, size_t c) { (void)a, (void)b, (void)c; abort(); }
static void run_stub(size_t m, size_t n, size_t k, const void *l, size_t ls, const void *r, void *d, size_t s,
                     size_t c, float lo, float hi) {
    (void)m, (void)n, (void)k, (void)l, (void)ls, (void)r, (void)d, (void)s, (void)c, (void)lo, (void)hi;
    abort();
}
static void rhs_stub(size_t g, size_t n, size_t k, size_t nr, size_t kr, size_t sr, size_t s, const void *r,
                     const void *b, const void *sc, void *o, size_t e, const void *p) {
    (void)g, (void)n, (void)k, (void)nr, (void)kr, (void)sr, (void)s, (void)r, (void)b, (void)sc, (void)o, (void)e;
    (void)p;
    abort();
}
static const kb_plugin_matmul_ukernel stub = {
    .get_m_step = z0, .get_n_step = z0, .get_nr = z0, .get_kr = z0, .get_sr = z0, .get_lhs_offset = z2,
    .get_rhs_packed_offset = z2, .get_dst_offset = z3, .get_dst_size = z2, .run_matmul_lhs = run_stub,
    .rhs_get_n_step = z0, .rhs_get_packed_offset = z2, .rhs_get_packed_size = z2, .rhs_pack = rhs_stub,
};
#define GEMM_UK &stub
#define GEMV_UK &stub
#endif

#define SVE21(nm, kern, uk, maxm)                                                                       \
    {                                                                                                   \
        .name = nm, .kernel = kern, .op = KB_OP_GEMM, .form = KB_PLUGIN_MICRO_KERNEL,                  \
        .isa = KB_ISA_SVE2P1, .accum = KB_ACCUM_FP32, .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, \
        .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE, .max_m = maxm, .thread_safe = 1, .matmul = uk,     \
        .nan_clamp = KB_PLUGIN_NAN_TO_MIN, .rhs_layout = "x16p4vlx2b",                                  \
    }

static const kb_plugin_realization realizations[] = {
    SVE21("gemm_sve2p1_dot", "matmul_clamp_f16_f16_f16p4vlx2b_5x4vl_sve2p1_dot", GEMM_UK, 0),
    SVE21("gemv_sve2p1_dot", "matmul_clamp_f16_f16_f16p4vlx2b_1x4vl_sve2p1_dot", GEMV_UK, 1),
};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
    .name = "exsveuk",
    .version = "1.0.0",
    .description = "kbench's SVE2.1 GEMM and GEMV micro-kernels and packer through the plugin ABI",
    .count = sizeof realizations / sizeof realizations[0],
    .realizations = realizations,
};

EXPORT const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &table;
}
