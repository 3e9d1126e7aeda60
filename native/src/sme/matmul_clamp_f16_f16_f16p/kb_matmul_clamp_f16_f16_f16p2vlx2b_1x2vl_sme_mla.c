/* kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla.c
 *
 * FP16 GEMV micro-kernel for SME without SME2 (M = 1): a plain FP16 LHS row
 * times the packed RHS with bias (x16p2vlx2b), 2VL output columns per block,
 * in streaming SVE registers (no ZA).
 *
 * Two FP32 accumulator vectors per block (columns [0, VL32) and
 * [VL32, 2*VL32)). The LHS is read sixteen values at a time, each group of
 * eight replicated into every 128-bit segment (LD1RQH); for each k pair the
 * widening multiply-adds by indexed element FMLALB and FMLALT add
 * b[k][j]*a[k] and then b[k+1][j]*a[k+1], one product at a time. The main
 * loop takes eight k pairs per step; the last (K mod 16) values follow one
 * pair at a time (LD1RW broadcasts the pair), an odd last k alone (LD1RH:
 * (a[K-1], a[K-1]) with only the bottom product taken).
 *
 * Accumulation (bias first, as KleidiAI's SME GEMV): acc = fp32(bias[j]) + 0
 * (exact; a -0 bias becomes +0), then acc = fp32(acc + a[k]*b[k][j]) for
 * k = 0 .. K-1 in order (the product of two FP16 values is exact in FP32,
 * so each fused step rounds once); clamp in FP32; round once to FP16. K
 * roundings on one chain: the fingerprint model "fp32_chain_bias_first",
 * declared as FP32, k_per_rounding = 1, error model "gemm_bias_first".
 *
 * The kernel enters streaming mode itself (SMSTART, which also enables ZA;
 * ZA is not used) and leaves both off (SMSTOP) before it returns. */
#include "../kb_sme.h"

#if defined(__aarch64__)
#include "../kb_sme_asm.h"

#include <stddef.h>

/* One k pair of the main loop: RHS vectors V, V+1 (mul vl, from x24) times
 * the LHS values I, I+1 of z6 or z7 (an indexed FMLALB takes z0-z7). */
#define PAIR(V0, V1, ZA, I0, I1)                               \
    "ld1h {z0.h}, p0/z, [x24, #" V0 ", mul vl]\n"              \
    "ld1h {z1.h}, p0/z, [x24, #" V1 ", mul vl]\n"              \
    "fmlalb z16.s, z0.h, " ZA ".h[" I0 "]\n"                   \
    "fmlalb z17.s, z1.h, " ZA ".h[" I0 "]\n"                   \
    "fmlalt z16.s, z0.h, " ZA ".h[" I1 "]\n"                   \
    "fmlalt z17.s, z1.h, " ZA ".h[" I1 "]\n"

/* out of line: the driver and the public run entry point share one copy */
KB_NOINLINE static void kb_sme_gemv_core(const kb_sme_gemv_args *args) {
    __asm__ volatile(
        ".arch armv8.2-a+sme\n" /* streaming-legal SME only */
        "smstart\n"
        "ptrue p0.b\n"
        "cntw x16\n"
        "rdsvl x17, #1\n"
        "lsl x13, x16, #1\n"                      /* nr = 2 * VL32          */
        "ldr x1, [%x[args], %[o_a]]\n"
        "ldr x2, [%x[args], %[o_k]]\n"
        "ldr x3, [%x[args], %[o_rhs]]\n"
        "ldr x4, [%x[args], %[o_rbs]]\n"
        "ldr x5, [%x[args], %[o_n]]\n"
        "ldr x6, [%x[args], %[o_dst]]\n"
        "ldr x7, [%x[args], %[o_fl]]\n"
        "ld1rw {z30.s}, p0/z, [%x[args], %[o_lo]]\n"
        "ld1rw {z31.s}, p0/z, [%x[args], %[o_hi]]\n"
        "dup z28.s, #0\n"
        "lsr x9, x2, #4\n"                        /* steps of 16 k          */
        "ubfx x10, x2, #1, #3\n"                  /* whole pairs after them */

        "1:\n"                                    /* ---- block ----        */
        "ld1h {z16.s}, p0/z, [x3]\n"              /* acc = bias + 0         */
        "ld1h {z17.s}, p0/z, [x3, #1, mul vl]\n"
        "fcvt z16.s, p0/m, z16.h\n"
        "fcvt z17.s, p0/m, z17.h\n"
        "fadd z16.s, z16.s, z28.s\n"
        "fadd z17.s, z17.s, z28.s\n"
        "add x24, x3, x17\n"                      /* first k pair           */
        "addvl x24, x24, #8\n"                    /* loads at -8 .. 7 VL    */
        "mov x23, x1\n"
        "cbz x9, 3f\n"
        "mov x25, x9\n"
        "2:\n"                                    /* eight k pairs per step */
        "ld1rqh {z6.h}, p0/z, [x23]\n"
        "ld1rqh {z7.h}, p0/z, [x23, #16]\n"
        PAIR("-8", "-7", "z6", "0", "1")
        PAIR("-6", "-5", "z6", "2", "3")
        PAIR("-4", "-3", "z6", "4", "5")
        PAIR("-2", "-1", "z6", "6", "7")
        PAIR("0", "1", "z7", "0", "1")
        PAIR("2", "3", "z7", "2", "3")
        PAIR("4", "5", "z7", "4", "5")
        PAIR("6", "7", "z7", "6", "7")
        "add x23, x23, #32\n"
        "addvl x24, x24, #16\n"
        "subs x25, x25, #1\n"
        "b.ne 2b\n"
        "3:\n"
        "addvl x24, x24, #-8\n"
        "cbz x10, 5f\n"
        "mov x25, x10\n"
        "4:\n"                                    /* one k pair             */
        "ld1rw {z6.s}, p0/z, [x23]\n"             /* (a[k], a[k+1])         */
        "ld1h {z0.h}, p0/z, [x24]\n"
        "ld1h {z1.h}, p0/z, [x24, #1, mul vl]\n"
        "fmlalb z16.s, z0.h, z6.h[0]\n"
        "fmlalb z17.s, z1.h, z6.h[0]\n"
        "fmlalt z16.s, z0.h, z6.h[1]\n"
        "fmlalt z17.s, z1.h, z6.h[1]\n"
        "add x23, x23, #4\n"
        "addvl x24, x24, #2\n"
        "subs x25, x25, #1\n"
        "b.ne 4b\n"
        "5:\n"
        "tbz x2, #0, 6f\n"                        /* odd K: the last k      */
        "ld1rh {z6.h}, p0/z, [x23]\n"
        "ld1h {z0.h}, p0/z, [x24]\n"
        "ld1h {z1.h}, p0/z, [x24, #1, mul vl]\n"
        "fmlalb z16.s, z0.h, z6.h[0]\n"
        "fmlalb z17.s, z1.h, z6.h[0]\n"
        "6:\n"                                    /* clamp, FP16, store     */
        "tbnz x7, #2, 8f\n"
        KB_SME_CLAMP_MAXMIN("z16")
        KB_SME_CLAMP_MAXMIN("z17")
        "7:\n"
        "cmp x5, x13\n"
        "csel x26, x5, x13, lo\n"
        "whilelt p4.s, xzr, x26\n"
        "whilelt p5.s, x16, x26\n"
        "fcvt z16.h, p0/m, z16.s\n"
        "fcvt z17.h, p0/m, z17.s\n"
        "st1h {z16.s}, p4, [x6]\n"
        "st1h {z17.s}, p5, [x6, #1, mul vl]\n"
        "add x3, x3, x4\n"
        "add x6, x6, x17\n"
        "subs x5, x5, x13\n"
        "b.gt 1b\n"
        "b 9f\n"
        "8:\n"                                    /* clamp_max is -0        */
        KB_SME_CLAMP("z16")
        KB_SME_CLAMP("z17")
        "b 7b\n"
        "9:\n"
        "smstop\n"
        :
        : [args] "r"(args),
          [o_a] "I"(offsetof(kb_sme_gemv_args, a)),
          [o_k] "I"(offsetof(kb_sme_gemv_args, k)),
          [o_rhs] "I"(offsetof(kb_sme_gemv_args, rhs)),
          [o_rbs] "I"(offsetof(kb_sme_gemv_args, rhs_block_stride)),
          [o_n] "I"(offsetof(kb_sme_gemv_args, n)),
          [o_dst] "I"(offsetof(kb_sme_gemv_args, dst)),
          [o_fl] "I"(offsetof(kb_sme_gemv_args, flags)),
          [o_lo] "I"(offsetof(kb_sme_gemv_args, clamp_min)),
          [o_hi] "I"(offsetof(kb_sme_gemv_args, clamp_max))
        : "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x9", "x10", "x13", "x16", "x17", "x23",
          "x24", "x25", "x26", KB_SME_CLOBBER_VEC);
}
#undef PAIR

/* ---- micro-kernel interface -------------------------------------------- */

size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_m_step(void) { return 1; }
size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_n_step(void) { return kb_sme_block(); }
size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_mr(void) { return 1; }
size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_nr(void) { return kb_sme_block(); }
size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_kr(void) { return KB_SME_KR; }
size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_sr(void) { return KB_SME_SR; }

size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_lhs_offset(size_t m_idx, size_t lhs_stride) {
    return m_idx * lhs_stride;
}

size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_rhs_packed_offset(size_t n_idx, size_t k) {
    return kb_sme_rhs_offset(n_idx, kb_sme_block(), k);
}

size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_dst_offset(size_t m_idx, size_t n_idx,
                                                                      size_t dst_stride) {
    return m_idx * dst_stride + n_idx * sizeof(kb_f16);
}

size_t kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_dst_size(size_t m, size_t n) {
    return m * n * sizeof(kb_f16);
}

/* Each of the m rows is one GEMV; dst_stride_col must be sizeof(kb_f16). */
void kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_run_matmul(
    size_t m, size_t n, size_t k, const void *lhs, size_t lhs_stride, const void *rhs_packed,
    void *dst, size_t dst_stride_row, size_t dst_stride_col, float clamp_min, float clamp_max) {
    (void)dst_stride_col;
    if (n == 0 || k == 0) return;
    for (size_t i = 0; i < m; i++) {
        kb_sme_gemv_args a = {
            .a = (const unsigned char *)lhs + i * lhs_stride, .k = k,
            .rhs = rhs_packed, .rhs_block_stride = kb_sme_rhs_block_bytes(kb_sme_block(), k),
            .n = n, .dst = (unsigned char *)dst + i * dst_stride_row,
            .flags = kb_sme_clamp_flags(clamp_max),
            .clamp_min = clamp_min, .clamp_max = clamp_max,
        };
        kb_sme_gemv_core(&a);
    }
}

const kb_sme_gemv_ukernel kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla = {
    .name = "matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla",
    .get_m_step = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_m_step,
    .get_n_step = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_n_step,
    .get_mr = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_mr,
    .get_nr = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_nr,
    .get_kr = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_kr,
    .get_sr = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_sr,
    .get_lhs_offset = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_lhs_offset,
    .get_rhs_packed_offset = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_rhs_packed_offset,
    .get_dst_offset = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_dst_offset,
    .get_dst_size = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_dst_size,
    .run_matmul = kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_run_matmul,
    .core = kb_sme_gemv_core,
};


/* Functions kbench's own drivers never call (kbench run --coverage lists them
 * apart, with the reason). */
#define KB_WHY "the public micro-kernel interface: kbench's SME driver calls the core with its own blocking and K chunks"
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_mr, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_sr, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_lhs_offset, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_rhs_packed_offset, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_dst_offset, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_get_dst_size, KB_WHY);
KB_NOT_DRIVEN(kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla_run_matmul, KB_WHY);
#undef KB_WHY

#endif /* __aarch64__ */
