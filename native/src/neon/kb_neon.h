/* kb_neon.h — the NEON FP16 backend: micro-kernel interface and drivers.
 *
 * Every micro-kernel computes one tile of at most mr x 16 outputs. Its A
 * operand is a table of row pointers, `taps` runs of `tap_len` values per
 * row: a plain GEMM has one run of K values per row, an indirect-GEMM
 * convolution one run of c_in/groups values per filter tap (a pointer to a
 * zero row stands for padding). B is a panel of taps*tap_len rows of 16
 * values, `b_stride` elements apart; bias holds 16 values or is NULL.
 * Kernels allocate nothing. */
#ifndef KB_NEON_H
#define KB_NEON_H

#include "../core/kb_internal.h"

#define KB_NEON_NR 16

typedef struct kb_neon_tile {
    size_t m, n;               /* rows (1..mr) and columns (1..16) to store  */
    size_t taps, tap_len;
    const kb_f16 *const *a;    /* a[r * taps + t]                            */
    const kb_f16 *b;
    size_t b_stride;
    const kb_f16 *bias;        /* 16 values or NULL                          */
    kb_f16 *c;
    size_t ldc;
    float clamp_min, clamp_max;
} kb_neon_tile;

/* The KleidiAI-style query/run interface of one micro-kernel. */
typedef struct kb_neon_ukernel {
    size_t (*get_m_step)(void);
    size_t (*get_n_step)(void);
    size_t (*get_mr)(void);
    size_t (*get_nr)(void);
    size_t (*get_kr)(void);
    void (*run)(const kb_neon_tile *t);
} kb_neon_ukernel;

#if defined(__aarch64__)
extern const kb_neon_ukernel kb_matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla;
extern const kb_neon_ukernel kb_matmul_clamp_f16_f16_f16p16x1b_4x16_neon_fhm_mlal;
extern const kb_neon_ukernel kb_matmul_clamp_f16_f16_f16p16x1b_4x16_neon_cvt_mla;
#endif

/* Drivers (kb_neon_driver.c): GEMM for every form of B, and the indirect
 * convolution, over any micro-kernel; both split tiles over threads. */
kb_status kb_neon_gemm(const kb_neon_ukernel *uk, const kb_gemm_call *c, kb_error *err);
kb_status kb_neon_conv_indirect(const kb_neon_ukernel *uk, const kb_conv_desc *d, size_t oh,
                                size_t ow, const kb_f16 *input, const kb_f16 *filter,
                                const kb_f16 *bias, kb_f16 *output, int threads,
                                kb_error *err);


#endif
