/* kb_sve_asm.h — assembler macros shared by the SVE2.1 kernels and packer.
 *
 * The SVE2.1 instructions are emitted as encoded words (the macros below:
 * each one's mnemonic in its comment, checked against clang-19's assembler),
 * so that the backend builds with assemblers that know SVE2 but not SVE2.1.
 * Register operands are numbers (z8 is 8, x9 is 9, pn8 is 8), so the
 * kernels' macros can compute them. KB_SVE_ASM_BEGIN defines the macros at
 * the start of an assembly block and KB_SVE_ASM_END removes them at its end
 * (assemblers keep macros for the rest of the file).
 *
 * The clamp is KleidiAI's: the bounds rounded to FP16 (FCVT), and FCLAMP of
 * the FP16 result, a clamp to minimum/maximum *number*: a NaN becomes
 * clamp_min (declared: nan_clamp = clamp_min), and +0 orders above -0. */
#ifndef KB_SVE_ASM_H
#define KB_SVE_ASM_H

#define KB_SVE_ASM_BEGIN                                                                         \
    ".arch armv8.2-a+sve2\n"                                                                     \
    /* fdot z<zd>.s, z<zn>.h, z<zm>.h[i] (zm in z0-z7) */                                        \
    ".macro kb_fdot zd, zn, zm, i\n"                                                             \
    ".inst 0x64204000 | ((\\i) << 19) | ((\\zm) << 16) | ((\\zn) << 5) | (\\zd)\n"               \
    ".endm\n"                                                                                    \
    /* fclamp z<zd>.h, z<zn>.h, z<zm>.h */                                                       \
    ".macro kb_fclamp zd, zn, zm\n"                                                              \
    ".inst 0x64602400 | ((\\zm) << 16) | ((\\zn) << 5) | (\\zd)\n"                               \
    ".endm\n"                                                                                    \
    /* ld1h {z<zt>.h - z<zt+3>.h}, pn<pn>/z, [x<xn>, #imm, mul vl] (imm: -32 ... 28, by 4) */   \
    ".macro kb_ld1h_x4 zt, pn, xn, imm\n"                                                        \
    ".inst 0xa040a000 | ((((\\imm) / 4) & 15) << 16) | (((\\pn) - 8) << 10) | ((\\xn) << 5) | (\\zt)\n" \
    ".endm\n"                                                                                    \
    /* ld1h {z<zt>.h - z<zt+1>.h}, pn<pn>/z, [x<xn>, #imm, mul vl] (imm: -16 ... 14, by 2) */   \
    ".macro kb_ld1h_x2 zt, pn, xn, imm\n"                                                        \
    ".inst 0xa0402000 | ((((\\imm) / 2) & 15) << 16) | (((\\pn) - 8) << 10) | ((\\xn) << 5) | (\\zt)\n" \
    ".endm\n"                                                                                    \
    /* ld1h {z<zt>.h - z<zt+1>.h}, pn<pn>/z, [x<xn>, x<xm>, lsl #1] */                          \
    ".macro kb_ld1h_x2_ss zt, pn, xn, xm\n"                                                      \
    ".inst 0xa0002000 | ((\\xm) << 16) | (((\\pn) - 8) << 10) | ((\\xn) << 5) | (\\zt)\n"        \
    ".endm\n"                                                                                    \
    /* st1h {z<zt>.h - z<zt+1>.h}, pn<pn>, [x<xn>, x<xm>, lsl #1] */                            \
    ".macro kb_st1h_x2_ss zt, pn, xn, xm\n"                                                      \
    ".inst 0xa0202000 | ((\\xm) << 16) | (((\\pn) - 8) << 10) | ((\\xn) << 5) | (\\zt)\n"        \
    ".endm\n"                                                                                    \
    /* st1h {z<zt>.h - z<zt+1>.h}, pn<pn>, [x<xn>, #imm, mul vl] (imm: -16 ... 14, by 2) */     \
    ".macro kb_st1h_x2 zt, pn, xn, imm\n"                                                        \
    ".inst 0xa0602000 | ((((\\imm) / 2) & 15) << 16) | (((\\pn) - 8) << 10) | ((\\xn) << 5) | (\\zt)\n" \
    ".endm\n"                                                                                    \
    /* st1h {z<zt>.h - z<zt+3>.h}, pn<pn>, [x<xn>, #imm, mul vl] (imm: -32 ... 28, by 4) */     \
    ".macro kb_st1h_x4 zt, pn, xn, imm\n"                                                        \
    ".inst 0xa060a000 | ((((\\imm) / 4) & 15) << 16) | (((\\pn) - 8) << 10) | ((\\xn) << 5) | (\\zt)\n" \
    ".endm\n"                                                                                    \
    /* ptrue pn<pn>.h */                                                                         \
    ".macro kb_ptrue_pn_h pn\n"                                                                  \
    ".inst 0x25607810 | ((\\pn) - 8)\n"                                                          \
    ".endm\n"                                                                                    \
    /* whilelt pn<pn>.h, x<xn>, x<xm>, vlx2 */                                                   \
    ".macro kb_whilelt_pn_h_vlx2 pn, xn, xm\n"                                                   \
    ".inst 0x25604410 | ((\\xm) << 16) | ((\\xn) << 5) | ((\\pn) - 8)\n"                         \
    ".endm\n"                                                                                    \
    /* whilelt pn<pn>.h, x<xn>, x<xm>, vlx4 */                                                   \
    ".macro kb_whilelt_pn_h_vlx4 pn, xn, xm\n"                                                   \
    ".inst 0x25606410 | ((\\xm) << 16) | ((\\xn) << 5) | ((\\pn) - 8)\n"                         \
    ".endm\n"

#define KB_SVE_ASM_END                                                                           \
    ".purgem kb_fdot\n.purgem kb_fclamp\n.purgem kb_ld1h_x4\n.purgem kb_ld1h_x2\n"               \
    ".purgem kb_ld1h_x2_ss\n.purgem kb_st1h_x2_ss\n.purgem kb_st1h_x2\n.purgem kb_st1h_x4\n"     \
    ".purgem kb_ptrue_pn_h\n.purgem kb_whilelt_pn_h_vlx2\n.purgem kb_whilelt_pn_h_vlx4\n"

/* Every vector register; the predicates are not named (C code compiled
 * without SVE never holds a value in one). */
#define KB_SVE_CLOBBER_VEC                                                                       \
    "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11",    \
        "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23",      \
        "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31"

#endif /* KB_SVE_ASM_H */
