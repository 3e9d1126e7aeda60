/* exscratch.c — example plugin for kbench's scratch-memory check: portable C
 * GEMMs (plain B, FP32 chain over k, bias last) that keep heap memory between
 * calls in the ways a runtime does, and in ways it must not. Each computes
 * the right result; only what it holds after a call differs:
 *
 *   gemm_capped          copies B (as FP32) into the calling thread's scratch,
 *                        kept for the next call up to 64 KiB, a larger buffer
 *                        freed when the call returns; declares the 64 KiB cap
 *                        (passes)
 *   gemm_keeps_past_cap  the same, but keeps a buffer of any size; declares the
 *                        same cap (a call whose B is larger fails: "keeps N
 *                        bytes after a call, its declared cap is 65,536 per
 *                        thread")
 *   gemm_leaks           allocates a 1,000-byte record per call and loses it
 *                        (fails: "leaks 1,000 bytes per call"); declares no cap
 *   gemm_threaded        computes C on a thread it starts, which copies B into
 *                        a buffer it allocates and frees (passes: the thread's
 *                        buffer is in the call's peak); declares a cap of 4 KiB
 *                        (what glibc keeps of a thread that ended, its dynamic
 *                        thread vector with the cached stack, is the call's too)
 *   gemm_thread_leaks    the same, and the thread loses a 512-byte record per
 *                        call (fails: the thread's blocks are the call's)
 *
 * kbench sees heap blocks (malloc and its family) in a worker; memory a
 * library maps itself is not seen. */
#include "kbench_plugin.h"

#include "../common/exfp16.h"

#include <pthread.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

#define EX_SCRATCH_CAP ((uint64_t)64 << 10)
#define EX_LEAK_BYTES 1000u
#define EX_THREAD_LEAK_BYTES 512u
#define EX_THREAD_CAP ((uint64_t)4 << 10)

enum { CAPPED, KEEPS, LEAKS, THREADED, THREAD_LEAKS };

/* the calling thread's scratch */
static _Thread_local float *scratch;
static _Thread_local size_t scratch_bytes;

static float *scratch_get(size_t bytes) {
    if (bytes <= scratch_bytes) return scratch;
    free(scratch);
    scratch = malloc(bytes);
    scratch_bytes = scratch ? bytes : 0;
    return scratch;
}

static void scratch_trim(void) {
    if (scratch_bytes > EX_SCRATCH_CAP) {
        free(scratch);
        scratch = NULL;
        scratch_bytes = 0;
    }
}

/* C from B already widened to FP32 (bw: K x N, row-major) */
static void compute(const kb_plugin_gemm_args *a, const float *bw) {
    for (size_t i = 0; i < a->m; i++)
        for (size_t j = 0; j < a->n; j++) {
            float acc = 0.0f;
            for (size_t kk = 0; kk < a->k; kk++) acc += ex_h2f(a->a[i * a->lda + kk]) * bw[kk * a->n + j];
            if (a->bias) acc += ex_h2f(a->bias[j]);
            a->c[i * a->ldc + j] = ex_store(acc, a->clamp_min, a->clamp_max);
        }
}

static void widen(const kb_plugin_gemm_args *a, float *bw) {
    for (size_t kk = 0; kk < a->k; kk++)
        for (size_t j = 0; j < a->n; j++) bw[kk * a->n + j] = ex_h2f(a->b[kk * a->ldb + j]);
}

typedef struct job {
    const kb_plugin_gemm_args *a;
    int leak;
    kb_status st;
} job;

static void *thread_main(void *arg) {
    job *jb = arg;
    float *bw = malloc(jb->a->k * jb->a->n * sizeof(float));
    if (!bw) {
        jb->st = KB_ERR_OUT_OF_MEMORY;
        return NULL;
    }
    widen(jb->a, bw);
    compute(jb->a, bw);
    free(bw);
    if (jb->leak) {
        volatile char *lost = malloc(EX_THREAD_LEAK_BYTES); /* the planted defect */
        if (lost) lost[0] = 1;
    }
    jb->st = KB_OK;
    return NULL;
}

static void *record; /* gemm_leaks: the last call's record (the one before is lost) */

static kb_status gemm(void *ctx, const kb_plugin_gemm_args *a) {
    int kind = *(const int *)ctx;
    if (kind == THREADED || kind == THREAD_LEAKS) {
        job jb = {a, kind == THREAD_LEAKS, KB_ERR_INTERNAL};
        pthread_t t;
        if (pthread_create(&t, NULL, thread_main, &jb) != 0) return KB_ERR_INTERNAL;
        pthread_join(t, NULL);
        return jb.st;
    }
    if (kind == LEAKS) {
        record = malloc(EX_LEAK_BYTES); /* the planted defect: the previous record is lost */
        if (!record) return KB_ERR_OUT_OF_MEMORY;
        ((volatile char *)record)[0] = 1;
    }
    size_t bytes = a->k * a->n * sizeof(float);
    float *bw = kind == LEAKS ? malloc(bytes) : scratch_get(bytes);
    if (!bw) return KB_ERR_OUT_OF_MEMORY;
    widen(a, bw);
    compute(a, bw);
    if (kind == LEAKS)
        free(bw);
    else if (kind == CAPPED)
        scratch_trim(); /* KEEPS: the planted defect, no trim */
    return KB_OK;
}

static const int kinds[] = {CAPPED, KEEPS, LEAKS, THREADED, THREAD_LEAKS};

#define GEMM(NAME, KIND, WHAT, FLAGS, CAP)                                                              \
    {                                                                                                   \
        .name = NAME, .kernel = "exscratch: portable C GEMM that " WHAT, .op = KB_OP_GEMM,             \
        .form = KB_PLUGIN_WHOLE_CALL, .isa = KB_ISA_SCALAR, .accum = KB_ACCUM_FP32, .k_per_rounding = 1, \
        .bias = KB_PLUGIN_BIAS_LAST, .bforms = KB_BFORM_PLAIN, .thread_safe = 1, .ctx = (void *)&kinds[KIND], \
        .gemm = gemm, .flags = (FLAGS), .scratch_cap = (CAP),                                            \
    }

static const kb_plugin_realization realizations[] = {
    GEMM("gemm_capped", CAPPED, "keeps its thread's scratch up to its declared 64 KiB cap",
         KB_PLUGIN_SCRATCH_CAPPED, EX_SCRATCH_CAP),
    GEMM("gemm_keeps_past_cap", KEEPS, "keeps its thread's scratch past its declared 64 KiB cap",
         KB_PLUGIN_SCRATCH_CAPPED, EX_SCRATCH_CAP),
    GEMM("gemm_leaks", LEAKS, "leaks 1,000 bytes per call", 0, 0),
    GEMM("gemm_threaded", THREADED, "computes on a thread that allocates and frees its buffer",
         KB_PLUGIN_SCRATCH_CAPPED, EX_THREAD_CAP),
    GEMM("gemm_thread_leaks", THREAD_LEAKS, "computes on a thread that leaks 512 bytes per call",
         KB_PLUGIN_SCRATCH_CAPPED, EX_THREAD_CAP),
};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
    .name = "exscratch",
    .version = "1.0.0",
    .description = "scratch memory kept within a declared cap, past it, leaked, and on a thread",
    .count = sizeof realizations / sizeof realizations[0],
    .realizations = realizations,
};

EXPORT const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &table;
}
