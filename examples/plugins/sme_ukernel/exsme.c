/* exsme.c — example plugin (b): the micro-kernel form.
 *
 * Three of kbench's own SME2 micro-kernels and their packers (the files of
 * native/src/sme/ named in the Makefile, compiled into this library) handed
 * to kbench through the plugin ABI only, as a KleidiAI micro-kernel would be:
 *
 *   gemm_sme2_mopa          matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa with
 *                           lhs_pack_x16p2vlx2_x16_sme and rhs_pack_kxn_x16p2vlx2b_x16_x16_sme
 *   gemv_sme2_dot           matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot (plain LHS,
 *                           M = 1) with the same RHS packer
 *   conv2d_igemm_sme2_mopa  imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa with
 *                           lhs_imatmul_pack_x16p2vlx2_x16p_sme and
 *                           rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme
 *
 * kbench drives them with its generic micro-kernel loops; the results must be
 * bit-identical to kbench's own realizations of the same kernels
 * (gemm_sme2_mopa_f32acc, gemv_sme2_dot_f32acc, conv2d_igemm_sme2_mopa_f32acc),
 * at every streaming vector length. The micro-kernel functions are assigned
 * as they are; the packers' entry points take their arguments in a slightly
 * different order than KleidiAI's, so four one-line adapters below give them
 * KleidiAI's signatures (a KleidiAI packer needs none).
 *
 * Built for a machine without SME (or not aarch64), the table is the same
 * but kbench refuses the plugin before calling anything: every realization
 * needs SME2.
 *
 * The GEMMs declare the layouts (plugin ABI 2) their packers produce,
 * x16p2vlx2b and x16p2vlx2, so kbench compares the packed bytes with its own
 * packing of those layouts at every vector length. Built with
 * -DEX_FAULTY_PACKERS (libexsmepackers.so, a negative control: do not copy
 * it) the plugin is "exsmepackers" and adds gemm_sme2_rhs_one_byte, whose RHS
 * packer writes 0x0001 into one padding element of the last block (the last
 * column of that block, k-pair 0, when N is not a multiple of the block). */
#include "kbench_plugin.h"

#define EXPORT __attribute__((visibility("default")))

#if defined(__aarch64__)
#include "../../../native/src/sme/kb_sme.h"

#include <string.h>

/* ---- adapters: our packers with KleidiAI's signatures ------------------------- */

static size_t lhs_packed_offset(size_t m_idx, size_t k, size_t mr, size_t kr, size_t sr) {
    (void)kr, (void)sr;
    return kb_lhs_pack_x16p2vlx2_x16_sme_get_lhs_packed_offset(m_idx, k, mr);
}

static size_t lhs_packed_size(size_t m, size_t k, size_t mr, size_t kr, size_t sr) {
    (void)kr, (void)sr;
    return kb_lhs_pack_x16p2vlx2_x16_sme_get_lhs_packed_size(m, k, mr);
}

static void lhs_pack(size_t m, size_t k, size_t mr, size_t kr, size_t sr, size_t m_idx_start, const void *lhs,
                     size_t lhs_stride, void *lhs_packed) {
    (void)kr, (void)sr, (void)m_idx_start;
    kb_lhs_pack_x16p2vlx2_x16_sme_run(m, k, mr, lhs, lhs_stride, lhs_packed);
}

static void rhs_pack(size_t num_groups, size_t n, size_t k, size_t nr, size_t kr, size_t sr, size_t rhs_stride,
                     const void *rhs, const void *bias, const void *scale, void *rhs_packed, size_t extra_bytes,
                     const void *params) {
    (void)num_groups, (void)kr, (void)sr, (void)scale, (void)extra_bytes, (void)params;
    kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_run(n, k, nr, rhs, rhs_stride, bias, rhs_packed);
}

#ifdef EX_FAULTY_PACKERS
static void rhs_pack_one_byte(size_t num_groups, size_t n, size_t k, size_t nr, size_t kr, size_t sr,
                              size_t rhs_stride, const void *rhs, const void *bias, const void *scale,
                              void *rhs_packed, size_t extra_bytes, const void *params) {
    rhs_pack(num_groups, n, k, nr, kr, sr, rhs_stride, rhs, bias, scale, rhs_packed, extra_bytes, params);
    size_t block = kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_get_n_step();
    if (n % block) { /* the bug: the last column of the last block is padding and must be 0 */
        size_t start = kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_get_rhs_packed_offset((n - 1) / block * block, k);
        uint16_t one = 1;
        memcpy((unsigned char *)rhs_packed + start + (block + (block - 1) * 2) * 2, &one, 2);
    }
}
#endif

static size_t ilhs_m_step(void) { return kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_get_m_step(kb_sme_block()); }

static size_t ilhs_packed_offset(size_t m_idx, size_t kcc, size_t kcl) {
    return kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_get_lhs_packed_offset(m_idx, kcc, kcl, kb_sme_block());
}

static size_t ilhs_packed_size(size_t m, size_t kcc, size_t kcl) {
    return kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_get_lhs_packed_size(m, kcc, kcl, kb_sme_block());
}

static void ilhs_pack(size_t m, size_t kcc, size_t kcl, const void *const *ptrs, size_t ptr_offset,
                      const void *pad_ptr, void *lhs_packed) {
    kb_lhs_imatmul_pack_x16p2vlx2_x16p_sme_run(m, kcc, kcl, kb_sme_block(), ptrs, ptr_offset, pad_ptr, lhs_packed);
}

static void irhs_pack(size_t n, size_t kcc, size_t kcl, size_t row_stride, const void *rhs, const void *bias,
                      void *rhs_packed) {
    kb_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme_run(n, kcc, kcl, kb_sme_block(), rhs, row_stride, bias,
                                                      rhs_packed);
}

/* ---- the micro-kernels, field by field ----------------------------------------------- */

#define MOPA(f) kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_##f
#define DOT(f) kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_##f
#define IMOPA(f) kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_##f
#define RHS(f) kb_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme_##f

size_t MOPA(get_m_step)(void); size_t MOPA(get_n_step)(void); size_t MOPA(get_mr)(void);
size_t MOPA(get_nr)(void); size_t MOPA(get_kr)(void); size_t MOPA(get_sr)(void);
size_t MOPA(get_lhs_packed_offset)(size_t, size_t); size_t MOPA(get_rhs_packed_offset)(size_t, size_t);
size_t MOPA(get_dst_offset)(size_t, size_t, size_t); size_t MOPA(get_dst_size)(size_t, size_t);
void MOPA(run_matmul)(size_t, size_t, size_t, const void *, const void *, void *, size_t, size_t, float, float);
size_t DOT(get_m_step)(void); size_t DOT(get_n_step)(void); size_t DOT(get_nr)(void);
size_t DOT(get_kr)(void); size_t DOT(get_sr)(void); size_t DOT(get_lhs_offset)(size_t, size_t);
size_t DOT(get_rhs_packed_offset)(size_t, size_t); size_t DOT(get_dst_offset)(size_t, size_t, size_t);
size_t DOT(get_dst_size)(size_t, size_t);
void DOT(run_matmul)(size_t, size_t, size_t, const void *, size_t, const void *, void *, size_t, size_t, float,
                     float);
size_t IMOPA(get_m_step)(void); size_t IMOPA(get_n_step)(void);
size_t IMOPA(get_lhs_packed_offset)(size_t, size_t, size_t); size_t IMOPA(get_rhs_packed_offset)(size_t, size_t, size_t);
size_t IMOPA(get_dst_offset)(size_t, size_t, size_t); size_t IMOPA(get_dst_size)(size_t, size_t);
void IMOPA(run_imatmul)(size_t, size_t, size_t, size_t, const void *, const void *, void *, size_t, float, float);

static const kb_plugin_matmul_ukernel mopa = {
    .get_m_step = MOPA(get_m_step), .get_n_step = MOPA(get_n_step), .get_mr = MOPA(get_mr),
    .get_nr = MOPA(get_nr), .get_kr = MOPA(get_kr), .get_sr = MOPA(get_sr),
    .get_lhs_packed_offset = MOPA(get_lhs_packed_offset), .get_rhs_packed_offset = MOPA(get_rhs_packed_offset),
    .get_dst_offset = MOPA(get_dst_offset), .get_dst_size = MOPA(get_dst_size), .run_matmul = MOPA(run_matmul),
    .lhs_get_m_step = kb_lhs_pack_x16p2vlx2_x16_sme_get_m_step, .lhs_get_packed_offset = lhs_packed_offset,
    .lhs_get_packed_size = lhs_packed_size, .lhs_pack = lhs_pack,
    .rhs_get_n_step = RHS(get_n_step), .rhs_get_packed_offset = RHS(get_rhs_packed_offset),
    .rhs_get_packed_size = RHS(get_rhs_packed_size), .rhs_pack = rhs_pack,
};

static const kb_plugin_matmul_ukernel dot = {
    .get_m_step = DOT(get_m_step), .get_n_step = DOT(get_n_step), .get_nr = DOT(get_nr), .get_kr = DOT(get_kr),
    .get_sr = DOT(get_sr), .get_lhs_offset = DOT(get_lhs_offset), .get_rhs_packed_offset = DOT(get_rhs_packed_offset),
    .get_dst_offset = DOT(get_dst_offset), .get_dst_size = DOT(get_dst_size), .run_matmul_lhs = DOT(run_matmul),
    .rhs_get_n_step = RHS(get_n_step), .rhs_get_packed_offset = RHS(get_rhs_packed_offset),
    .rhs_get_packed_size = RHS(get_rhs_packed_size), .rhs_pack = rhs_pack,
};

#ifdef EX_FAULTY_PACKERS
static const kb_plugin_matmul_ukernel mopa_one_byte = {
    .get_m_step = MOPA(get_m_step), .get_n_step = MOPA(get_n_step), .get_mr = MOPA(get_mr),
    .get_nr = MOPA(get_nr), .get_kr = MOPA(get_kr), .get_sr = MOPA(get_sr),
    .get_lhs_packed_offset = MOPA(get_lhs_packed_offset), .get_rhs_packed_offset = MOPA(get_rhs_packed_offset),
    .get_dst_offset = MOPA(get_dst_offset), .get_dst_size = MOPA(get_dst_size), .run_matmul = MOPA(run_matmul),
    .lhs_get_m_step = kb_lhs_pack_x16p2vlx2_x16_sme_get_m_step, .lhs_get_packed_offset = lhs_packed_offset,
    .lhs_get_packed_size = lhs_packed_size, .lhs_pack = lhs_pack,
    .rhs_get_n_step = RHS(get_n_step), .rhs_get_packed_offset = RHS(get_rhs_packed_offset),
    .rhs_get_packed_size = RHS(get_rhs_packed_size), .rhs_pack = rhs_pack_one_byte,
};
#define MOPA_ONE_BYTE_UK &mopa_one_byte
#endif

static const kb_plugin_imatmul_ukernel imopa = {
    .get_m_step = IMOPA(get_m_step), .get_n_step = IMOPA(get_n_step),
    .get_lhs_packed_offset = IMOPA(get_lhs_packed_offset), .get_rhs_packed_offset = IMOPA(get_rhs_packed_offset),
    .get_dst_offset = IMOPA(get_dst_offset), .get_dst_size = IMOPA(get_dst_size), .run_imatmul = IMOPA(run_imatmul),
    .lhs_get_m_step = ilhs_m_step, .lhs_get_packed_offset = ilhs_packed_offset,
    .lhs_get_packed_size = ilhs_packed_size, .lhs_pack = ilhs_pack,
    .rhs_get_packed_size = kb_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme_get_rhs_packed_size,
    .rhs_pack = irhs_pack,
};
#define MOPA_UK &mopa
#define DOT_UK &dot
#define IMOPA_UK &imopa
#else
/* Not aarch64: no SME code to hand over. The tables point at stubs that
 * abort; kbench refuses the plugin (every realization needs SME2) before it
 * calls anything but the entry function. */
#include <stdlib.h>
static size_t z0(void) { abort(); }
static size_t z1(size_t a) { (void)a; abort(); }
static size_t z2(size_t a, size_t b) { (void)a, (void)b; abort(); }
static size_t z3(size_t a, size_t b, size_t c) { (void)a, (void)b, (void)c; abort(); }
static size_t z5(size_t a, size_t b, size_t c, size_t d, size_t e) { (void)a, (void)b, (void)c, (void)d, (void)e; abort(); }
static void run_stub(size_t m, size_t n, size_t k, const void *l, const void *r, void *d, size_t s, size_t c,
                     float lo, float hi) { (void)m, (void)n, (void)k, (void)l, (void)r, (void)d, (void)s, (void)c, (void)lo, (void)hi; abort(); }
static void lhs_stub(size_t m, size_t k, size_t mr, size_t kr, size_t sr, size_t i, const void *l, size_t s, void *o) {
    (void)m, (void)k, (void)mr, (void)kr, (void)sr, (void)i, (void)l, (void)s, (void)o; abort(); }
static void rhs_stub(size_t g, size_t n, size_t k, size_t nr, size_t kr, size_t sr, size_t s, const void *r,
                     const void *b, const void *sc, void *o, size_t e, const void *p) {
    (void)g, (void)n, (void)k, (void)nr, (void)kr, (void)sr, (void)s, (void)r, (void)b, (void)sc, (void)o, (void)e, (void)p; abort(); }
static void irun_stub(size_t m, size_t n, size_t a, size_t b, const void *l, const void *r, void *d, size_t s,
                      float lo, float hi) { (void)m, (void)n, (void)a, (void)b, (void)l, (void)r, (void)d, (void)s, (void)lo, (void)hi; abort(); }
static void ilhs_stub(size_t m, size_t a, size_t b, const void *const *p, size_t o, const void *pad, void *out) {
    (void)m, (void)a, (void)b, (void)p, (void)o, (void)pad, (void)out; abort(); }
static void irhs_stub(size_t n, size_t a, size_t b, size_t s, const void *r, const void *bias, void *o) {
    (void)n, (void)a, (void)b, (void)s, (void)r, (void)bias, (void)o; abort(); }
static const kb_plugin_matmul_ukernel stub_mm = {
    .get_m_step = z0, .get_n_step = z0, .get_mr = z0, .get_nr = z0, .get_kr = z0, .get_sr = z0,
    .get_lhs_packed_offset = z2, .get_rhs_packed_offset = z2, .get_dst_offset = z3, .get_dst_size = z2,
    .run_matmul = run_stub, .lhs_get_m_step = z1, .lhs_get_packed_offset = z5, .lhs_get_packed_size = z5,
    .lhs_pack = lhs_stub, .rhs_get_n_step = z0, .rhs_get_packed_offset = z2, .rhs_get_packed_size = z2,
    .rhs_pack = rhs_stub,
};
static const kb_plugin_imatmul_ukernel stub_im = {
    .get_m_step = z0, .get_n_step = z0, .get_lhs_packed_offset = z3, .get_rhs_packed_offset = z3,
    .get_dst_offset = z3, .get_dst_size = z2, .run_imatmul = irun_stub, .lhs_get_m_step = z0,
    .lhs_get_packed_offset = z3, .lhs_get_packed_size = z3, .lhs_pack = ilhs_stub, .rhs_get_packed_size = z3,
    .rhs_pack = irhs_stub,
};
#define MOPA_UK &stub_mm
#define DOT_UK &stub_mm
#define IMOPA_UK &stub_im
#define MOPA_ONE_BYTE_UK &stub_mm
#endif

static const kb_plugin_realization realizations[] = {
    {
        .name = "gemm_sme2_mopa",
        .kernel = "matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa",
        .op = KB_OP_GEMM, .form = KB_PLUGIN_MICRO_KERNEL, .isa = KB_ISA_SME2, .accum = KB_ACCUM_FP32,
        .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE,
        .thread_safe = 1, .matmul = MOPA_UK, .rhs_layout = "x16p2vlx2b", .lhs_layout = "x16p2vlx2",
    },
    {
        .name = "gemv_sme2_dot",
        .kernel = "matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot",
        .op = KB_OP_GEMM, .form = KB_PLUGIN_MICRO_KERNEL, .isa = KB_ISA_SME2, .accum = KB_ACCUM_FP32,
        .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE,
        .max_m = 1, .thread_safe = 1, .matmul = DOT_UK, .rhs_layout = "x16p2vlx2b",
    },
    {
        .name = "conv2d_igemm_sme2_mopa",
        .kernel = "imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa",
        .op = KB_OP_CONV2D, .form = KB_PLUGIN_MICRO_KERNEL, .isa = KB_ISA_SME2, .accum = KB_ACCUM_FP32,
        .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, .max_groups = 1, .thread_safe = 1,
        .imatmul = IMOPA_UK,
    },
#ifdef EX_FAULTY_PACKERS
    {
        .name = "gemm_sme2_rhs_one_byte",
        .kernel = "exsmepackers: the SME2 MOPA kernel, an RHS packer off x16p2vlx2b in one padding byte",
        .op = KB_OP_GEMM, .form = KB_PLUGIN_MICRO_KERNEL, .isa = KB_ISA_SME2, .accum = KB_ACCUM_FP32,
        .k_per_rounding = 1, .bias = KB_PLUGIN_BIAS_FIRST, .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE,
        .thread_safe = 1, .matmul = MOPA_ONE_BYTE_UK, .rhs_layout = "x16p2vlx2b", .lhs_layout = "x16p2vlx2",
    },
#endif
};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
#ifdef EX_FAULTY_PACKERS
    .name = "exsmepackers",
    .version = "1.0.0",
    .description = "negative control: exsme plus a GEMM whose RHS packer is off its layout in one byte",
#else
    .name = "exsme",
    .version = "1.0.0",
    .description = "example (b): kbench's SME2 micro-kernels and packers through the plugin ABI",
#endif
    .count = sizeof realizations / sizeof realizations[0],
    .realizations = realizations,
};

EXPORT const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &table;
}
