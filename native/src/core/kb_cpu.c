/* kb_cpu.c — runtime CPU feature detection and the order of ISA classes. */
#include "kb_internal.h"

#include <string.h>

/* Linux aarch64 hwcaps (uapi asm/hwcap.h; bookworm's 6.1 headers lack the
 * SME2 and SVE2p1 bits). Read under qemu-aarch64 11.1.3: see
 * ci/TOOLCHAIN-NOTES.md. */
#define KB_HWCAP_FPHP (1ull << 9)
#define KB_HWCAP_ASIMDHP (1ull << 10)
#define KB_HWCAP_SVE (1ull << 22)
#define KB_HWCAP_ASIMDFHM (1ull << 23)
#define KB_HWCAP2_SVE2 (1ull << 1)
#define KB_HWCAP2_SME (1ull << 23)
#define KB_HWCAP2_SVE2P1 (1ull << 36)
#define KB_HWCAP2_SME2 (1ull << 37)

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
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

/* RDVL X0, #1: the SVE vector length in bytes (outside streaming mode,
 * where every caller of kb_cpu_detect runs). */
static uint32_t kb_read_vl_bytes(void) {
    register uint64_t x0 __asm__("x0");
    __asm__ volatile(".inst 0x04bf5020" : "=r"(x0));
    return (uint32_t)x0;
}
#endif

/* The features each class implies (its own and those of every class below
 * it in the tree scalar < neon < fhm < {sme < sme2, sve2 < sve2p1}). */
static uint32_t implied(int isa) {
    const uint32_t fhm = KB_CPU_FP16 | KB_CPU_FHM;
    switch (isa) {
    case KB_ISA_SCALAR: return 0;
    case KB_ISA_NEON_FP16: return KB_CPU_FP16;
    case KB_ISA_NEON_FHM: return fhm;
    case KB_ISA_SME: return fhm | KB_CPU_SME;
    case KB_ISA_SME2: return fhm | KB_CPU_SME | KB_CPU_SME2;
    case KB_ISA_SVE2: return fhm | KB_CPU_SVE | KB_CPU_SVE2;
    case KB_ISA_SVE2P1: return fhm | KB_CPU_SVE | KB_CPU_SVE2 | KB_CPU_SVE2P1;
    default: return UINT32_MAX; /* not a class */
    }
}

static bool is_class(int isa) { return isa >= KB_ISA_SCALAR && isa < KB_ISA_COUNT; }

const char *kb_isa_name(int isa) {
    static const char *const names[KB_ISA_COUNT] = {"scalar", "neon", "fhm", "sme", "sme2", "sve2", "sve2p1"};
    return is_class(isa) ? names[isa] : NULL;
}

int kb_isa_within(int isa, int cap) {
    if (!is_class(isa)) return 0;
    if (cap == KB_ISA_NO_CAP) return 1;
    if (!is_class(cap)) return 0;
    return (implied(isa) & ~implied(cap)) == 0;
}

/* The first class, in this order, whose implied features are all in
 * `have`: each class comes before the classes below it, and SME's branch
 * before SVE's. For the features two classes share (those of one class: the
 * common part of two paths from the root of the tree) it is that class; for a
 * CPU's features it is its best class, SME's branch first. */
static const int kb_best_first[KB_ISA_COUNT] = {KB_ISA_SME2,     KB_ISA_SME,       KB_ISA_SVE2P1,
                                                KB_ISA_SVE2,     KB_ISA_NEON_FHM,  KB_ISA_NEON_FP16,
                                                KB_ISA_SCALAR};

static int best_class(uint32_t have) {
    for (int i = 0; i < KB_ISA_COUNT; i++)
        if ((implied(kb_best_first[i]) & ~have) == 0) return kb_best_first[i];
    return KB_ISA_SCALAR;
}

int kb_isa_meet(int cap_a, int cap_b) {
    if ((!is_class(cap_a) && cap_a != KB_ISA_NO_CAP) || (!is_class(cap_b) && cap_b != KB_ISA_NO_CAP)) return -1;
    if (cap_a == KB_ISA_NO_CAP) return cap_b;
    if (cap_b == KB_ISA_NO_CAP) return cap_a;
    return best_class(implied(cap_a) & implied(cap_b));
}

int kb_cpu_has_class(const kb_cpu_info *cpu, int isa) {
    return is_class(isa) && (implied(isa) & ~cpu->features) == 0;
}

bool kb_cpu_has_isa(const kb_cpu_info *cpu, int isa) { return kb_cpu_has_class(cpu, isa) != 0; }

/* Features that are only meaningful on top of others are dropped without
 * them, and the best class is set. */
static void settle(kb_cpu_info *out) {
    if (!(out->features & KB_CPU_SME)) out->features &= ~KB_CPU_SME2;
    if (!(out->features & KB_CPU_FP16)) out->features &= ~KB_CPU_FHM;
    if (!(out->features & KB_CPU_SVE)) out->features &= ~KB_CPU_SVE2;
    if (!(out->features & KB_CPU_SVE2)) out->features &= ~KB_CPU_SVE2P1;
    /* the best class: SME's branch over SVE's when a CPU has both (the
     * order in which dispatch prefers them) */
    out->isa = best_class(out->features);
}

void kb_cpu_from_hwcaps(uint64_t hw, uint64_t hw2, kb_cpu_info *out) {
    memset(out, 0, sizeof *out);
    strcpy(out->arch, "aarch64");
    if ((hw & KB_HWCAP_FPHP) && (hw & KB_HWCAP_ASIMDHP)) out->features |= KB_CPU_FP16;
    if (hw & KB_HWCAP_ASIMDFHM) out->features |= KB_CPU_FHM;
    if (hw & KB_HWCAP_SVE) out->features |= KB_CPU_SVE;
    if (hw2 & KB_HWCAP2_SVE2) out->features |= KB_CPU_SVE2;
    if (hw2 & KB_HWCAP2_SVE2P1) out->features |= KB_CPU_SVE2P1;
    if (hw2 & KB_HWCAP2_SME) out->features |= KB_CPU_SME;
    if (hw2 & KB_HWCAP2_SME2) out->features |= KB_CPU_SME2;
    settle(out);
}

void kb_cpu_detect(kb_cpu_info *out) {
#if defined(__aarch64__) && defined(__linux__)
    kb_cpu_from_hwcaps(getauxval(AT_HWCAP), getauxval(AT_HWCAP2), out);
#else
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
#if defined(__aarch64__) && defined(__APPLE__)
    if (kb_sysctl_flag("hw.optional.arm.FEAT_FP16")) out->features |= KB_CPU_FP16;
    if (kb_sysctl_flag("hw.optional.arm.FEAT_FHM")) out->features |= KB_CPU_FHM;
    if (kb_sysctl_flag("hw.optional.arm.FEAT_SME")) out->features |= KB_CPU_SME;
    if (kb_sysctl_flag("hw.optional.arm.FEAT_SME2")) out->features |= KB_CPU_SME2;
#endif
    settle(out);
#endif
#if defined(__aarch64__)
    if (out->features & KB_CPU_SME) out->sme_vector_bits = kb_read_svl_bytes() * 8u;
    if (out->features & KB_CPU_SVE) out->sve_vector_bits = kb_read_vl_bytes() * 8u;
#endif
}

uint32_t kb_isa_vector_bits(int isa) {
    if (isa != KB_ISA_SME && isa != KB_ISA_SME2 && isa != KB_ISA_SVE2 && isa != KB_ISA_SVE2P1) return 0;
    kb_cpu_info cpu;
    kb_cpu_detect(&cpu);
    return (isa == KB_ISA_SME || isa == KB_ISA_SME2) ? cpu.sme_vector_bits : cpu.sve_vector_bits;
}
