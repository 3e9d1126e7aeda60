/* kb_sme_asm.h — pieces of assembly text shared by the SME micro-kernels.
 *
 * Register conventions inside every kernel: p0 = all lanes, z30 = clamp_min
 * and z31 = clamp_max broadcast as FP32, p6 a scratch predicate.
 *
 * The clamp is the store step of every backend (kb_store_f16): v < lo gives
 * lo, v > hi gives hi, anything else (NaN included) stays. What the
 * candidate instructions do (Arm ARM, and measured under QEMU 11.1 with a
 * quiet NaN, -0, +0, +-1, +-inf against bounds (-1, 1), (+0, +0), (-0, -0),
 * (-inf, inf), (+0, -0)):
 *   - FCLAMP is a clamp to minimum/maximum *number* (FMAXNM/FMINNM rules): a
 *     quiet NaN becomes clamp_min. Unusable: NaN must pass.
 *   - FMAX then FMIN (predicated, or SME2's multi-vector forms) return the
 *     NaN operand unchanged (payload and sign kept) and agree with the
 *     compare/select clamp on every value except zeros of opposite sign:
 *     FMAX(-0, +0) = +0 where the clamp keeps -0, FMIN(+0, -0) = -0 where it
 *     keeps +0. The FP32 accumulators of these kernels are never -0 (every
 *     chain starts from +0 or from the bias plus +0, and a sum of FP16
 *     products that is not exactly zero cannot round to zero in FP32), so
 *     FMAX(v, lo) is exact for every lo; FMIN(w, hi) is exact unless w is +0
 *     and hi is -0. A call whose clamp_max is -0 therefore sets
 *     KB_SME_CLAMP_SELECT (kb_sme_clamp_flags) and the kernels clamp by
 *     compare/select (KB_SME_CLAMP) there; every other call takes FMAX/FMIN. */
#ifndef KB_SME_ASM_H
#define KB_SME_ASM_H

#define KB_SME_CLAMP(z)                        \
    "fcmgt p6.s, p0/z, z30.s, " z ".s\n"       \
    "mov " z ".s, p6/m, z30.s\n"               \
    "fcmgt p6.s, p0/z, " z ".s, z31.s\n"       \
    "mov " z ".s, p6/m, z31.s\n"

/* The FMAX/FMIN clamp of one FP32 vector (exact unless clamp_max is -0). */
#define KB_SME_CLAMP_MAXMIN(z)                 \
    "fmax " z ".s, p0/m, " z ".s, z30.s\n"     \
    "fmin " z ".s, p0/m, " z ".s, z31.s\n"

/* Clamp two FP32 vectors, narrow them to FP16 (round to nearest even, into
 * the low half of each 32-bit container) and store the columns [0, VL32)
 * under p4 and [VL32, 2*VL32) under p5 at the row address in xrow. */
#define KB_SME_STORE_ROW(za, zb, xrow)         \
    KB_SME_CLAMP(za)                           \
    KB_SME_CLAMP(zb)                           \
    "fcvt " za ".h, p0/m, " za ".s\n"          \
    "fcvt " zb ".h, p0/m, " zb ".s\n"          \
    "st1h {" za ".s}, p4, [" xrow "]\n"        \
    "st1h {" zb ".s}, p5, [" xrow ", #1, mul vl]\n"

/* The LHS packers' store step: x11 k pairs out of the columns of tiles TA
 * (rows [0, VL32)) and TB (rows [VL32, mr)) to x13 (each pair: TA's column,
 * then TB's), four pairs per step, then one at a time. Uses w12, x9, x14;
 * x15, x19, x28 hold 2, 4 and 6 vectors in 32-bit units, x17 the SVL in
 * bytes; L1-L4 are four unused numeric labels. */
#define KB_SME_LHS_STORE(TA, TB, L1, L2, L3, L4)                                   \
    "mov w12, #0\n"                                                     \
    "add x14, x13, x17\n"                                               \
    "lsr x9, x11, #2\n"                                                 \
    "and x11, x11, #3\n"                                                \
    "cbz x9, " L2 "f\n"                                                 \
    L1 ":\n"                                                            \
    "st1w {" TA ".s[w12, 0]}, p0, [x13]\n"                              \
    "st1w {" TB ".s[w12, 0]}, p0, [x14]\n"                              \
    "st1w {" TA ".s[w12, 1]}, p0, [x13, x15, lsl #2]\n"                 \
    "st1w {" TB ".s[w12, 1]}, p0, [x14, x15, lsl #2]\n"                 \
    "st1w {" TA ".s[w12, 2]}, p0, [x13, x19, lsl #2]\n"                 \
    "st1w {" TB ".s[w12, 2]}, p0, [x14, x19, lsl #2]\n"                 \
    "st1w {" TA ".s[w12, 3]}, p0, [x13, x28, lsl #2]\n"                 \
    "st1w {" TB ".s[w12, 3]}, p0, [x14, x28, lsl #2]\n"                 \
    "add x13, x13, x19, lsl #3\n"                                       \
    "add x14, x14, x19, lsl #3\n"                                       \
    "add w12, w12, #4\n"                                                \
    "subs x9, x9, #1\n"                                                 \
    "b.ne " L1 "b\n"                                                    \
    L2 ":\n"                                                            \
    "cbz x11, " L4 "f\n"                                                \
    L3 ":\n"                                                            \
    "st1w {" TA ".s[w12, 0]}, p0, [x13]\n"                              \
    "st1w {" TB ".s[w12, 0]}, p0, [x14]\n"                              \
    "addvl x13, x13, #2\n"                                              \
    "addvl x14, x14, #2\n"                                              \
    "add w12, w12, #1\n"                                                \
    "subs x11, x11, #1\n"                                               \
    "b.ne " L3 "b\n"                                                    \
    L4 ":\n"

/* Everything a kernel's assembly may change besides its x registers: the
 * whole FP/SIMD file (SMSTART and SMSTOP zero it), flags and memory. The
 * SVE predicate registers hold nothing the compiler relies on in this
 * backend (no SVE code generation) and are caller-saved in the base PCS. */
#define KB_SME_CLOBBER_VEC                                                         \
    "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9",     \
        "v10", "v11", "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19",       \
        "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29",       \
        "v30", "v31"

#endif /* KB_SME_ASM_H */
