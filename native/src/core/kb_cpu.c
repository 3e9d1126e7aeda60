/* kb_cpu.c — runtime CPU feature detection. */
#include "kb_internal.h"

#include <string.h>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define KB_HWCAP_FPHP (1ul << 9)
#define KB_HWCAP_ASIMDHP (1ul << 10)
#define KB_HWCAP_SVE (1ul << 22)
#define KB_HWCAP_ASIMDFHM (1ul << 23)
#define KB_HWCAP2_SME (1ul << 23)
#define KB_HWCAP2_SME2 (1ul << 37)
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
static int kb_sysctl_flag(const char *name) {
    int v = 0;
    size_t len = sizeof v;
    if (sysctlbyname(name, &v, &len, NULL, 0) != 0) return 0;
    return v != 0;
}
#endif

#if defined(__aarch64__)
/* RDSVL X0, #1 (valid outside streaming mode), as an encoded word so that
 * this file needs no SME-aware assembler flags. */
static uint32_t kb_read_svl_bytes(void) {
    register uint64_t x0 __asm__("x0");
    __asm__ volatile(".inst 0x04bf5820" : "=r"(x0));
    return (uint32_t)x0;
}
#endif

void kb_cpu_detect(kb_cpu_info *out) {
    memset(out, 0, sizeof *out);
#if defined(__x86_64__)
    strcpy(out->arch, "x86_64");
#elif defined(__aarch64__)
    strcpy(out->arch, "aarch64");
#elif defined(__i386__)
    strcpy(out->arch, "x86");
#else
    strcpy(out->arch, "unknown");
#endif
#if defined(__aarch64__) && defined(__linux__)
    unsigned long hw = getauxval(AT_HWCAP);
    unsigned long hw2 = getauxval(AT_HWCAP2);
    if ((hw & KB_HWCAP_FPHP) && (hw & KB_HWCAP_ASIMDHP)) out->features |= KB_CPU_FP16;
    if (hw & KB_HWCAP_ASIMDFHM) out->features |= KB_CPU_FHM;
    if (hw & KB_HWCAP_SVE) out->features |= KB_CPU_SVE;
    if (hw2 & KB_HWCAP2_SME) out->features |= KB_CPU_SME;
    if (hw2 & KB_HWCAP2_SME2) out->features |= KB_CPU_SME2;
#elif defined(__aarch64__) && defined(__APPLE__)
    if (kb_sysctl_flag("hw.optional.arm.FEAT_FP16")) out->features |= KB_CPU_FP16;
    if (kb_sysctl_flag("hw.optional.arm.FEAT_FHM")) out->features |= KB_CPU_FHM;
    if (kb_sysctl_flag("hw.optional.arm.FEAT_SME")) out->features |= KB_CPU_SME;
    if (kb_sysctl_flag("hw.optional.arm.FEAT_SME2")) out->features |= KB_CPU_SME2;
#endif
#if defined(__aarch64__)
    if (out->features & KB_CPU_SME) out->sme_vector_bits = kb_read_svl_bytes() * 8u;
#endif
    /* SME2 is only meaningful on top of SME; FHM on top of FP16. */
    if (!(out->features & KB_CPU_SME)) out->features &= ~KB_CPU_SME2;
    if (!(out->features & KB_CPU_FP16)) out->features &= ~KB_CPU_FHM;
    out->isa = KB_ISA_SCALAR;
    if (out->features & KB_CPU_FP16) out->isa = KB_ISA_NEON_FP16;
    if (out->features & KB_CPU_FHM) out->isa = KB_ISA_NEON_FHM;
    if (out->features & KB_CPU_SME) out->isa = KB_ISA_SME;
    if (out->features & KB_CPU_SME2) out->isa = KB_ISA_SME2;
}

bool kb_cpu_has_isa(const kb_cpu_info *cpu, int isa) {
    switch (isa) {
    case KB_ISA_SCALAR: return true;
    case KB_ISA_NEON_FP16: return (cpu->features & KB_CPU_FP16) != 0;
    case KB_ISA_NEON_FHM: return (cpu->features & (KB_CPU_FP16 | KB_CPU_FHM)) == (KB_CPU_FP16 | KB_CPU_FHM);
    case KB_ISA_SME: return (cpu->features & KB_CPU_SME) != 0;
    case KB_ISA_SME2: return (cpu->features & (KB_CPU_SME | KB_CPU_SME2)) == (KB_CPU_SME | KB_CPU_SME2);
    default: return false;
    }
}
