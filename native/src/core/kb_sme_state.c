/* kb_sme_state.c — checks that streaming mode and ZA are off (SVCR.SM and
 * SVCR.ZA zero) after a call.
 *
 * Every SME micro-kernel enters streaming mode and enables ZA itself and
 * must leave both off before it returns: C code runs outside streaming mode,
 * and on a CPU without FEAT_SME_FA64 the first NEON instruction executed in
 * streaming mode traps (SIGILL). QEMU's `-cpu max` implements FA64, so there
 * a kernel that forgets its SMSTOP still computes the right numbers; this
 * check makes such a kernel fail on every CPU with SME.
 *
 * The calling thread's SVCR is read directly (MRS of S3_3_C4_C2_2, valid in
 * and out of streaming mode on any CPU with SME). Helper threads of the
 * thread pool report their own SVCR when they end (kb_sme_note_thread_end),
 * and the next check of any thread reports and clears that count. Where the
 * CPU has no SME the check reads nothing and passes. */
#include "kb_internal.h"

#include <stdatomic.h>

#define KB_SVCR_SM 1u
#define KB_SVCR_ZA 2u

static atomic_uint helper_threads_left_on;

#if defined(__aarch64__)
static uint64_t read_svcr(void) {
    uint64_t v;
    __asm__ volatile("mrs %0, S3_3_C4_C2_2" : "=r"(v)); /* mrs x, SVCR */
    return v;
}

/* SMSTOP (both SM and ZA off): as an encoded word, so that this file needs
 * no SME-aware assembler flags. Leaving streaming mode zeroes the vector
 * registers, hence the clobbers. */
static void smstop(void) {
    __asm__ volatile(".inst 0xd503467f" /* smstop */
                     ::: "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9",
                       "v10", "v11", "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19",
                       "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29",
                       "v30", "v31");
}
#endif

/* SVCR of the calling thread (0 where the CPU has no SME). */
static uint64_t current_svcr(void) {
#if defined(__aarch64__)
    kb_cpu_info cpu;
    kb_cpu_detect(&cpu);
    if (cpu.features & KB_CPU_SME) return read_svcr();
#endif
    return 0;
}

void kb_sme_note_thread_end(void) {
    if (current_svcr() & (KB_SVCR_SM | KB_SVCR_ZA)) atomic_fetch_add(&helper_threads_left_on, 1u);
}

kb_status kb_check_sme_state(kb_error *err) {
    kb_clear_error(err);
    uint64_t svcr = current_svcr() & (KB_SVCR_SM | KB_SVCR_ZA);
    unsigned helpers = atomic_exchange(&helper_threads_left_on, 0u);
    if (svcr) {
#if defined(__aarch64__)
        smstop(); /* so that the next call starts from a clean state */
#endif
        return kb_fail(err, KB_ERR_INTERNAL, "SVCR",
                       "%s%s%s still on after the call (SVCR = 0x%llx): an SME kernel did not "
                       "leave them; a CPU without FEAT_SME_FA64 traps on the next NEON instruction",
                       (svcr & KB_SVCR_SM) ? "streaming mode" : "",
                       (svcr & KB_SVCR_SM) && (svcr & KB_SVCR_ZA) ? " and " : "",
                       (svcr & KB_SVCR_ZA) ? "ZA" : "", (unsigned long long)svcr);
    }
    if (helpers)
        return kb_fail(err, KB_ERR_INTERNAL, "SVCR",
                       "%u helper thread(s) ended with streaming mode or ZA still on: an SME "
                       "kernel did not leave them", helpers);
    return KB_OK;
}
