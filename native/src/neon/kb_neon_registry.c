/* kb_neon_registry.c — the NEON FP16 backend's rows of the dispatch table,
 * in priority order (FP32 accumulation first; the FP16-accumulating kernel
 * is chosen by forcing it or by a tuned dispatch table; the cache-blocked
 * variants last, so default dispatch picks the unblocked kernels), and its
 * native packer: blocks of 16 columns, bias first, then K rows of 16 values.
 *
 * Cache-blocked variants (kb_neon_blocking) are the same kernels in the
 * blocked driver loop, named by their block sizes: _mb<M>_nb<N>_kb<K>.
 * They carry partial sums between K blocks in the accumulator format (FP32
 * or FP16), so they compute every output by the same chain of roundings as
 * the unblocked kernel and declare the same model (k_per_rounding = 1).
 * Two sizes per kernel: a small one (A block 2-3 KiB, B block 8 KiB: L1)
 * and a large one (A block 32-48 KiB: L1, B block 128 KiB: L2). mb is a
 * multiple of the kernel's mr, nb of 16. */
#if defined(__aarch64__)
#include "kb_neon.h"

#define GEMM_RUN(fn, uk, mb, nb, kb)                                                              \
    static kb_status fn(const kb_gemm_call *c, kb_error *err) {                                   \
        static const kb_neon_blocking blk = {mb, nb, kb};                                         \
        return kb_neon_gemm(&uk, &blk, c, err);                                                   \
    }
#define CONV_RUN(fn, uk)                                                                          \
    static kb_status fn(const kb_conv_impl *self, const kb_conv_desc *d, size_t oh, size_t ow,    \
                        const kb_f16 *in, const kb_f16 *flt, const kb_f16 *bias, kb_f16 *out,     \
                        const kb_selector *sel, kb_error *err) {                                  \
        (void)self;                                                                               \
        return kb_neon_conv_indirect(&uk, d, oh, ow, in, flt, bias, out,                          \
                                     sel->threads > 0 ? sel->threads : 1, err);                  \
    }

#define UK_FHM kb_matmul_clamp_f16_f16_f16p16x1b_4x16_neon_fhm_mlal
#define UK_CVT kb_matmul_clamp_f16_f16_f16p16x1b_4x16_neon_cvt_mla
#define UK_F16 kb_matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla

/* A micro-kernel's steps, from its own queries (kbench's tails follow them). */
#define STEPS(fn, uk)                                                                             \
    static void fn(uint32_t s[3]) {                                                               \
        s[0] = (uint32_t)uk.get_m_step();                                                         \
        s[1] = (uint32_t)uk.get_n_step();                                                         \
        s[2] = (uint32_t)uk.get_kr();                                                             \
    }
STEPS(steps_fhm, UK_FHM)
STEPS(steps_cvt, UK_CVT)
STEPS(steps_f16, UK_F16)

GEMM_RUN(gemm_fhm, UK_FHM, 0, 0, 0)
GEMM_RUN(gemm_cvt, UK_CVT, 0, 0, 0)
GEMM_RUN(gemm_f16, UK_F16, 0, 0, 0)
GEMM_RUN(gemm_fhm_s, UK_FHM, 16, 64, 64)
GEMM_RUN(gemm_fhm_l, UK_FHM, 64, 256, 256)
GEMM_RUN(gemm_cvt_s, UK_CVT, 16, 64, 64)
GEMM_RUN(gemm_cvt_l, UK_CVT, 64, 256, 256)
GEMM_RUN(gemm_f16_s, UK_F16, 24, 64, 64)
GEMM_RUN(gemm_f16_l, UK_F16, 96, 256, 256)
CONV_RUN(conv_fhm, UK_FHM)
CONV_RUN(conv_cvt, UK_CVT)
CONV_RUN(conv_f16, UK_F16)

#define BFORMS (KB_BFORM_PLAIN | KB_BFORM_PORTABLE | KB_BFORM_NATIVE)
#define K_FHM "matmul_clamp_f16_f16_f16p16x1b_4x16_neon_fhm_mlal"
#define K_CVT "matmul_clamp_f16_f16_f16p16x1b_4x16_neon_cvt_mla"
#define K_F16 "matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla"

/* The FP16-accumulating kernel starts its chain from the bias (K roundings):
 * error model GEMM_BIAS_FIRST; the FP32 ones add the bias last (GEMM). */
#define ERR_MODEL(acc) ((acc) == KB_ACCUM_FP16 ? KB_ERROR_MODEL_GEMM_BIAS_FIRST : KB_ERROR_MODEL_GEMM)

#define GEMM_ROW(var, nm, kern, isa_, acc, fn, mb, nb, kb, st)                                    \
    static const kb_gemm_impl var = {                                                             \
        .name = nm, .backend = KB_BACKEND_NEON, .kernel = kern, .isa = isa_, .accum = acc,        \
        .k_per_rounding = 1, .bforms = BFORMS, .native_layout = KB_LAYOUT_NEON, .threaded = 1,   \
        .run = fn, .block_m = mb, .block_n = nb, .block_k = kb, .error_model = ERR_MODEL(acc),    \
        .steps = st}

GEMM_ROW(g_fhm, "gemm_neon_f32acc_fhm", K_FHM, KB_ISA_NEON_FHM, KB_ACCUM_FP32, gemm_fhm, 0, 0, 0,
         steps_fhm);
GEMM_ROW(g_cvt, "gemm_neon_f32acc_cvt", K_CVT, KB_ISA_NEON_FP16, KB_ACCUM_FP32, gemm_cvt, 0, 0, 0,
         steps_cvt);
GEMM_ROW(g_f16, "gemm_neon_f16acc", K_F16, KB_ISA_NEON_FP16, KB_ACCUM_FP16, gemm_f16, 0, 0, 0,
         steps_f16);
GEMM_ROW(g_fhm_s, "gemm_neon_f32acc_fhm_mb16_nb64_kb64", K_FHM, KB_ISA_NEON_FHM, KB_ACCUM_FP32,
         gemm_fhm_s, 16, 64, 64, steps_fhm);
GEMM_ROW(g_fhm_l, "gemm_neon_f32acc_fhm_mb64_nb256_kb256", K_FHM, KB_ISA_NEON_FHM, KB_ACCUM_FP32,
         gemm_fhm_l, 64, 256, 256, steps_fhm);
GEMM_ROW(g_cvt_s, "gemm_neon_f32acc_cvt_mb16_nb64_kb64", K_CVT, KB_ISA_NEON_FP16, KB_ACCUM_FP32,
         gemm_cvt_s, 16, 64, 64, steps_cvt);
GEMM_ROW(g_cvt_l, "gemm_neon_f32acc_cvt_mb64_nb256_kb256", K_CVT, KB_ISA_NEON_FP16, KB_ACCUM_FP32,
         gemm_cvt_l, 64, 256, 256, steps_cvt);
GEMM_ROW(g_f16_s, "gemm_neon_f16acc_mb24_nb64_kb64", K_F16, KB_ISA_NEON_FP16, KB_ACCUM_FP16,
         gemm_f16_s, 24, 64, 64, steps_f16);
GEMM_ROW(g_f16_l, "gemm_neon_f16acc_mb96_nb256_kb256", K_F16, KB_ISA_NEON_FP16, KB_ACCUM_FP16,
         gemm_f16_l, 96, 256, 256, steps_f16);

#define IGEMM(var, nm, kern, isa_, acc, fn, st)                                                  \
    static const kb_conv_impl var = {.name = nm, .backend = KB_BACKEND_NEON, .kernel = kern,    \
                                     .isa = isa_, .accum = acc, .k_per_rounding = 1,            \
                                     .threaded = 1, .run = fn, .error_model = ERR_MODEL(acc),   \
                                     .steps = st}
#define IM2COL(var, nm, kern, isa_, acc, g)                                                      \
    static const kb_conv_impl var = {.name = nm, .backend = KB_BACKEND_NEON, .kernel = kern,    \
                                     .isa = isa_, .accum = acc, .k_per_rounding = 1,            \
                                     .threaded = 1, .run = kb_conv_im2col_gemm_run, .gemm = &g,  \
                                     .error_model = ERR_MODEL(acc)}

IGEMM(c_ind_fhm, "conv2d_igemm_neon_f32acc_fhm",
      "imatmul_clamp_f16_f16_f16p16x1b_4x16_neon_fhm_mlal", KB_ISA_NEON_FHM, KB_ACCUM_FP32, conv_fhm,
      steps_fhm);
IGEMM(c_ind_cvt, "conv2d_igemm_neon_f32acc_cvt",
      "imatmul_clamp_f16_f16_f16p16x1b_4x16_neon_cvt_mla", KB_ISA_NEON_FP16, KB_ACCUM_FP32, conv_cvt,
      steps_cvt);
IGEMM(c_ind_f16, "conv2d_igemm_neon_f16acc",
      "imatmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla", KB_ISA_NEON_FP16, KB_ACCUM_FP16, conv_f16,
      steps_f16);
IM2COL(c_i2c_fhm, "conv2d_im2col_gemm_neon_f32acc_fhm",
       "im2col_f16+" K_FHM, KB_ISA_NEON_FHM, KB_ACCUM_FP32, g_fhm);
IM2COL(c_i2c_cvt, "conv2d_im2col_gemm_neon_f32acc_cvt",
       "im2col_f16+" K_CVT, KB_ISA_NEON_FP16, KB_ACCUM_FP32, g_cvt);
IM2COL(c_i2c_f16, "conv2d_im2col_gemm_neon_f16acc",
       "im2col_f16+" K_F16, KB_ISA_NEON_FP16, KB_ACCUM_FP16, g_f16);

static const kb_gemm_impl *const gemm_rows[] = {&g_fhm,   &g_cvt,   &g_f16,   &g_fhm_s, &g_fhm_l,
                                                &g_cvt_s, &g_cvt_l, &g_f16_s, &g_f16_l};
static const kb_conv_impl *const conv_rows[] = {&c_ind_fhm, &c_ind_cvt, &c_i2c_fhm,
                                                &c_i2c_cvt, &c_ind_f16, &c_i2c_f16};

const kb_gemm_impl *const *kb_neon_gemm_impls(size_t *count) {
    *count = sizeof gemm_rows / sizeof gemm_rows[0];
    return gemm_rows;
}

const kb_conv_impl *const *kb_neon_conv_impls(size_t *count) {
    *count = sizeof conv_rows / sizeof conv_rows[0];
    return conv_rows;
}

#endif
