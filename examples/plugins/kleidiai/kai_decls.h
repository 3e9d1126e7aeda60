/* kai_decls.h — what the KleidiAI adapter (kbx_kleidiai.c) uses of KleidiAI,
 * declared from KleidiAI's published interface (v1.30 and the generic
 * micro-kernel API that followed it).
 *
 * Built against a KleidiAI checkout (make KLEIDIAI_SRC=..., which defines
 * KBX_KLEIDIAI_HEADERS) the adapter includes KleidiAI's own headers first: the
 * generic API's structures then come from there, and every prototype below is
 * a redeclaration the compiler checks against KleidiAI's (a mismatch is a
 * compile error). Without a checkout (`make check`, as CI runs it) the
 * structures below stand in for KleidiAI's, so that the adapter compiles; no
 * KleidiAI code is in this repository. */
#ifndef KBX_KAI_DECLS_H
#define KBX_KAI_DECLS_H

#include <stddef.h>
#include <stdint.h>

#ifdef KBX_KLEIDIAI_HEADERS
#include "kai/ukernels/matmul/kai_matmul.h"
#include "kai/ukernels/matmul/kai_matmul_pack_lhs.h"
#include "kai/ukernels/matmul/kai_matmul_pack_rhs.h"
#include "kai/ukernels/matmul/imatmul_clamp_f16_f16p_f16p/kai_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa.h"
#include "kai/ukernels/matmul/matmul_clamp_f16_f16_f16p/kai_matmul_clamp_f16_f16_f16p16x1biasf16_6x16x8_neon_mla.h"
#include "kai/ukernels/matmul/matmul_clamp_f16_f16_f16p/kai_matmul_clamp_f16_f16_f16p2vlx2b_1x16vl_sme2_dot.h"
#include "kai/ukernels/matmul/matmul_clamp_f16_f16p_f16p/kai_matmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa.h"
#include "kai/ukernels/matmul/pack/kai_lhs_imatmul_pack_x16p2vlx2_x16p_sme.h"
#include "kai/ukernels/matmul/pack/kai_lhs_pack_x16p2vlx2_x16_sme.h"
#include "kai/ukernels/matmul/pack/kai_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme.h"
#include "kai/ukernels/matmul/pack/kai_rhs_pack_kxn_f16p16x1biasf16_f16_f16_neon.h"
#include "kai/ukernels/matmul/pack/kai_rhs_pack_kxn_x16p2vlx2b_x16_x16_sme.h"
#else
/* ---- the generic micro-kernel API: argument structures (layout as published) ---- */

/* matmul micro-kernels */
struct kai_matmul_uker_config { struct { size_t bl; } format; };
struct kai_matmul_uker_dim_args { size_t m, n, k; };
struct kai_matmul_uker_lhs_dim_args { size_t m, k; };
struct kai_matmul_uker_lhs_stride_args { size_t m; };
struct kai_matmul_uker_rhs_dim_args { size_t n, k; };
struct kai_matmul_uker_rhs_stride_args { size_t n; };
struct kai_matmul_uker_dst_dim_args { size_t m, n; };
struct kai_matmul_uker_dst_stride_args { size_t m; };
struct kai_matmul_uker_args {
    uint64_t flags;
    struct kai_matmul_uker_dim_args shape;
    struct {
        struct { void *ptr; struct kai_matmul_uker_dst_stride_args stride; } dst;
        struct { const void *ptr; struct kai_matmul_uker_lhs_stride_args stride; } lhs;
        struct { const void *ptr; struct kai_matmul_uker_rhs_stride_args stride; } rhs;
        struct {  /* accumulation bias (global, per M, per N), then scale bias (same three) */
            struct { const void *ptr; } acc_bias_global, acc_bias_m, acc_bias_n;
            struct { const void *ptr; } scale_bias_global, scale_bias_m, scale_bias_n;
        } bias;
        struct { struct { const void *ptr; } acc_scale_global, acc_scale_m, acc_scale_n; } scale;
    } operand;
    struct { struct { const void *min_ptr, *max_ptr; } clamp; } activation;
};
enum { KAI_MATMUL_UKER_FLAGS_ARGS_CLAMP = 0x10000 };
struct kai_matmul_uker_api {
    void (*run)(const struct kai_matmul_uker_config *, const struct kai_matmul_uker_args *);
    struct kai_matmul_uker_dim_args (*get_step)(const struct kai_matmul_uker_config *);
    struct kai_matmul_uker_lhs_stride_args (*get_lhs_stride)(const struct kai_matmul_uker_config *,
                                                             const struct kai_matmul_uker_lhs_dim_args *);
    size_t (*get_lhs_offset)(const struct kai_matmul_uker_config *, const struct kai_matmul_uker_lhs_dim_args *,
                             const struct kai_matmul_uker_lhs_stride_args *);
    struct kai_matmul_uker_rhs_stride_args (*get_rhs_stride)(const struct kai_matmul_uker_config *,
                                                             const struct kai_matmul_uker_rhs_dim_args *);
    size_t (*get_rhs_offset)(const struct kai_matmul_uker_config *, const struct kai_matmul_uker_rhs_dim_args *,
                             const struct kai_matmul_uker_rhs_stride_args *);
    struct kai_matmul_uker_dst_stride_args (*get_dst_stride)(const struct kai_matmul_uker_config *,
                                                             const struct kai_matmul_uker_dst_dim_args *);
    size_t (*get_dst_offset)(const struct kai_matmul_uker_config *, const struct kai_matmul_uker_dst_dim_args *,
                             const struct kai_matmul_uker_dst_stride_args *);
    size_t (*get_dst_size)(const struct kai_matmul_uker_config *, const struct kai_matmul_uker_dst_dim_args *,
                           const struct kai_matmul_uker_dst_stride_args *);
};

/* LHS packers */
struct kai_matmul_pack_lhs_uker_config { struct { size_t mr, kr, sr; } format; };
struct kai_matmul_pack_lhs_uker_dim_args { size_t m, k; };
struct kai_matmul_pack_lhs_uker_lhs_dim_args { size_t m, k; };
struct kai_matmul_pack_lhs_uker_lhs_stride_args { size_t m; };
struct kai_matmul_pack_lhs_uker_lhs_packed_dim_args { size_t m, k; };
struct kai_matmul_pack_lhs_uker_lhs_packed_stride_args { size_t m; };
struct kai_matmul_pack_lhs_uker_args {
    uint64_t flags;
    struct kai_matmul_pack_lhs_uker_dim_args shape;
    struct {
        struct { void *ptr; struct kai_matmul_pack_lhs_uker_lhs_packed_stride_args stride; } lhs_packed;
        struct { const void *ptr; struct kai_matmul_pack_lhs_uker_lhs_stride_args stride; } lhs;
    } operand;
};
struct kai_matmul_pack_lhs_uker_api {
    void (*run)(const struct kai_matmul_pack_lhs_uker_config *, const struct kai_matmul_pack_lhs_uker_args *);
    struct kai_matmul_pack_lhs_uker_dim_args (*get_step)(const struct kai_matmul_pack_lhs_uker_config *);
    struct kai_matmul_pack_lhs_uker_lhs_stride_args (*get_lhs_stride)(
        const struct kai_matmul_pack_lhs_uker_config *, const struct kai_matmul_pack_lhs_uker_lhs_dim_args *);
    size_t (*get_lhs_offset)(const struct kai_matmul_pack_lhs_uker_config *,
                             const struct kai_matmul_pack_lhs_uker_lhs_dim_args *,
                             const struct kai_matmul_pack_lhs_uker_lhs_stride_args *);
    struct kai_matmul_pack_lhs_uker_lhs_packed_stride_args (*get_lhs_packed_stride)(
        const struct kai_matmul_pack_lhs_uker_config *, const struct kai_matmul_pack_lhs_uker_lhs_packed_dim_args *);
    size_t (*get_lhs_packed_offset)(const struct kai_matmul_pack_lhs_uker_config *,
                                    const struct kai_matmul_pack_lhs_uker_lhs_packed_dim_args *,
                                    const struct kai_matmul_pack_lhs_uker_lhs_packed_stride_args *);
    size_t (*get_lhs_packed_size)(const struct kai_matmul_pack_lhs_uker_config *,
                                  const struct kai_matmul_pack_lhs_uker_lhs_packed_dim_args *,
                                  const struct kai_matmul_pack_lhs_uker_lhs_packed_stride_args *);
};

/* RHS packers */
struct kai_matmul_pack_rhs_uker_config { struct { size_t nr, kr, sr, bl; } format; };
struct kai_matmul_pack_rhs_uker_dim_args { size_t n, k; };
struct kai_matmul_pack_rhs_uker_rhs_dim_args { size_t n, k; };
struct kai_matmul_pack_rhs_uker_rhs_stride_args { size_t n, k; };
struct kai_matmul_pack_rhs_uker_rhs_packed_dim_args { size_t n, k; };
struct kai_matmul_pack_rhs_uker_rhs_packed_stride_args { size_t n; };
struct kai_matmul_pack_rhs_uker_bias_n_dim_args { size_t n; };
struct kai_matmul_pack_rhs_uker_scale_n_dim_args { size_t n; };
struct kai_matmul_pack_rhs_uker_args {
    uint64_t flags;
    struct kai_matmul_pack_rhs_uker_dim_args shape;
    struct {
        struct { const void *ptr; struct kai_matmul_pack_rhs_uker_rhs_stride_args stride; } rhs;
        struct { void *ptr; struct kai_matmul_pack_rhs_uker_rhs_packed_stride_args stride; } rhs_packed;
        struct { const void *ptr; } bias_n, k_sum_scale_global, scale_n, scale_global;
    } operand;
};
struct kai_matmul_pack_rhs_uker_api {
    void (*run)(const struct kai_matmul_pack_rhs_uker_config *, const struct kai_matmul_pack_rhs_uker_args *);
    struct kai_matmul_pack_rhs_uker_dim_args (*get_step)(const struct kai_matmul_pack_rhs_uker_config *);
    struct kai_matmul_pack_rhs_uker_rhs_stride_args (*get_rhs_stride)(
        const struct kai_matmul_pack_rhs_uker_config *, const struct kai_matmul_pack_rhs_uker_rhs_dim_args *);
    size_t (*get_rhs_offset)(const struct kai_matmul_pack_rhs_uker_config *,
                             const struct kai_matmul_pack_rhs_uker_rhs_dim_args *,
                             const struct kai_matmul_pack_rhs_uker_rhs_stride_args *);
    struct kai_matmul_pack_rhs_uker_rhs_packed_stride_args (*get_rhs_packed_stride)(
        const struct kai_matmul_pack_rhs_uker_config *, const struct kai_matmul_pack_rhs_uker_rhs_packed_dim_args *);
    size_t (*get_rhs_packed_offset)(const struct kai_matmul_pack_rhs_uker_config *,
                                    const struct kai_matmul_pack_rhs_uker_rhs_packed_dim_args *,
                                    const struct kai_matmul_pack_rhs_uker_rhs_packed_stride_args *);
    size_t (*get_rhs_packed_size)(const struct kai_matmul_pack_rhs_uker_config *,
                                  const struct kai_matmul_pack_rhs_uker_rhs_packed_dim_args *,
                                  const struct kai_matmul_pack_rhs_uker_rhs_packed_stride_args *);
    size_t (*get_bias_n_offset)(const struct kai_matmul_pack_rhs_uker_config *,
                                const struct kai_matmul_pack_rhs_uker_bias_n_dim_args *);
    size_t (*get_scale_n_offset)(const struct kai_matmul_pack_rhs_uker_config *,
                                 const struct kai_matmul_pack_rhs_uker_scale_n_dim_args *);
};
#endif /* KBX_KLEIDIAI_HEADERS */

/* ---- the generic API's kernels and packers the adapter takes ----------------------- */
struct kai_matmul_uker_api kai_matmul_clamp_f16_f16p4vsx2_f16p4vsx2bf16_8vsx8vs_sme2_mopa(void);
struct kai_matmul_uker_api kai_matmul_clamp_f16_f16_f16p4vsx2bf16_1x32vs_sme2_dot(void);
struct kai_matmul_pack_lhs_uker_api kai_matmul_pack_lhs_mxk_x16p4vsx2_x16_sme(void);
struct kai_matmul_pack_rhs_uker_api kai_matmul_pack_rhs_kxn_x16p4vsx2bx16_x16_x16_sme(void);
/* SVE2.1: the kernel and its SVE packer */
struct kai_matmul_uker_api kai_matmul_clamp_f16_f16_f16p16vsx2bf16_6x16vs_sve2p1_dot(void);
struct kai_matmul_pack_rhs_uker_api kai_rhs_pack_kxn_x16p16vsx2bx16_x16_x16_sve(void);

/* ---- the v1.30 family form: kai_<query>_<kernel>, one function per query ----------- */
#define KBX_MATMUL_PACKED_LHS_DECLS(kern)                                                              \
    size_t kai_get_m_step_##kern(void);                                                               \
    size_t kai_get_n_step_##kern(void);                                                               \
    size_t kai_get_mr_##kern(void);                                                                   \
    size_t kai_get_nr_##kern(void);                                                                   \
    size_t kai_get_kr_##kern(void);                                                                   \
    size_t kai_get_sr_##kern(void);                                                                   \
    size_t kai_get_lhs_packed_offset_##kern(size_t m_idx, size_t k);                                  \
    size_t kai_get_rhs_packed_offset_##kern(size_t n_idx, size_t k);                                  \
    size_t kai_get_dst_offset_##kern(size_t m_idx, size_t n_idx, size_t dst_stride_row);              \
    size_t kai_get_dst_size_##kern(size_t m, size_t n);                                               \
    void kai_run_##kern(size_t m, size_t n, size_t k, const void *lhs_packed, const void *rhs_packed, \
                        void *dst, size_t dst_stride_row, size_t dst_stride_col, float clamp_min,     \
                        float clamp_max);

#define KBX_MATMUL_PLAIN_LHS_DECLS(kern)                                                              \
    size_t kai_get_m_step_##kern(void);                                                               \
    size_t kai_get_n_step_##kern(void);                                                               \
    size_t kai_get_nr_##kern(void);                                                                   \
    size_t kai_get_kr_##kern(void);                                                                   \
    size_t kai_get_sr_##kern(void);                                                                   \
    size_t kai_get_rhs_packed_offset_##kern(size_t n_idx, size_t k);                                  \
    size_t kai_get_dst_offset_##kern(size_t m_idx, size_t n_idx, size_t dst_stride);                  \
    size_t kai_get_dst_size_##kern(size_t m, size_t n);                                               \
    void kai_run_##kern(size_t m, size_t n, size_t k, const void *lhs, size_t lhs_stride,            \
                        const void *rhs_packed, void *dst, size_t dst_stride_row, size_t dst_stride_col, \
                        float clamp_min, float clamp_max);

#define KBX_RHS_PACK_DECLS(pack)                                                                      \
    size_t kai_get_n_step_##pack(void);                                                               \
    size_t kai_get_rhs_packed_offset_##pack(size_t n_idx, size_t k);                                  \
    size_t kai_get_rhs_packed_size_##pack(size_t n, size_t k);                                        \
    void kai_run_##pack(size_t num_groups, size_t n, size_t k, size_t nr, size_t kr, size_t sr,      \
                        size_t rhs_stride, const void *rhs, const void *bias, const void *scale,      \
                        void *rhs_packed, size_t extra_bytes, const void *params);

KBX_MATMUL_PACKED_LHS_DECLS(matmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa)
KBX_MATMUL_PLAIN_LHS_DECLS(matmul_clamp_f16_f16_f16p2vlx2b_1x16vl_sme2_dot)
KBX_MATMUL_PLAIN_LHS_DECLS(matmul_clamp_f16_f16_f16p16x1biasf16_6x16x8_neon_mla)
size_t kai_get_lhs_offset_matmul_clamp_f16_f16_f16p16x1biasf16_6x16x8_neon_mla(size_t m_idx, size_t stride);
KBX_RHS_PACK_DECLS(rhs_pack_kxn_x16p2vlx2b_x16_x16_sme)
KBX_RHS_PACK_DECLS(rhs_pack_kxn_f16p16x1biasf16_f16_f16_neon)

size_t kai_get_m_step_lhs_pack_x16p2vlx2_x16_sme(size_t mr);
size_t kai_get_lhs_packed_offset_lhs_pack_x16p2vlx2_x16_sme(size_t m_idx, size_t k, size_t mr, size_t kr, size_t sr);
size_t kai_get_lhs_packed_size_lhs_pack_x16p2vlx2_x16_sme(size_t m, size_t k, size_t mr, size_t kr, size_t sr);
void kai_run_lhs_pack_x16p2vlx2_x16_sme(size_t m, size_t k, size_t mr, size_t kr, size_t sr, size_t m_idx_start,
                                        const void *lhs, size_t lhs_stride_row, void *lhs_packed);

/* the imatmul (convolution) kernel and its packers */
size_t kai_get_m_step_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa(void);
size_t kai_get_n_step_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa(void);
size_t kai_get_lhs_packed_offset_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa(
    size_t m_idx, size_t k_chunk_count, size_t k_chunk_length);
size_t kai_get_rhs_packed_offset_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa(
    size_t n_idx, size_t k_chunk_count, size_t k_chunk_length);
size_t kai_get_dst_offset_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa(size_t m_idx, size_t n_idx,
                                                                                size_t dst_stride_row);
size_t kai_get_dst_size_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa(size_t m, size_t n);
void kai_run_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa(
    size_t m, size_t n, size_t k_chunk_count, size_t k_chunk_length, const void *lhs_packed,
    const void *rhs_packed, void *dst, size_t dst_stride_row, float clamp_min, float clamp_max);
size_t kai_get_m_step_lhs_imatmul_pack_x16p2vlx2_x16p_sme(void);
size_t kai_get_lhs_packed_offset_lhs_imatmul_pack_x16p2vlx2_x16p_sme(size_t m_idx, size_t k_chunk_count,
                                                                     size_t k_chunk_length);
size_t kai_get_lhs_packed_size_lhs_imatmul_pack_x16p2vlx2_x16p_sme(size_t m, size_t k_chunk_count,
                                                                   size_t k_chunk_length);
void kai_run_lhs_imatmul_pack_x16p2vlx2_x16p_sme(size_t m, size_t k_chunk_count, size_t k_chunk_length,
                                                 const void *const *lhs_ptrs, size_t lhs_ptr_offset,
                                                 const void *pad_ptr, void *lhs_packed);
size_t kai_get_rhs_packed_size_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme(size_t n, size_t k_chunk_count,
                                                                          size_t k_chunk_length);
void kai_run_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme(size_t n, size_t k_chunk_count, size_t k_chunk_length,
                                                         size_t rhs_stride_row, const void *rhs, const void *bias,
                                                         void *rhs_packed);

#endif /* KBX_KAI_DECLS_H */
