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
 *   gemm_allocators      every allocation function of the C library (malloc,
 *                        calloc, realloc, reallocarray, posix_memalign,
 *                        aligned_alloc, memalign, valloc, pvalloc, free,
 *                        malloc_usable_size), each result checked (alignment,
 *                        zeroed or kept contents, usable size); it holds
 *                        EX_ALLOC_KEPT bytes after every call (passes; the
 *                        tests hold kbench's figures to that number)
 *
 * kbench sees heap blocks (malloc and its family) in a worker; memory a
 * library maps itself is not seen. */
#define _GNU_SOURCE /* memalign, valloc, pvalloc, reallocarray, malloc_usable_size */
#include "kbench_plugin.h"

#include "../common/exfp16.h"

#include <malloc.h>
#include <stdio.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

#define EX_SCRATCH_CAP ((uint64_t)64 << 10)
#define EX_LEAK_BYTES 1000u
#define EX_THREAD_LEAK_BYTES 512u
#define EX_THREAD_CAP ((uint64_t)4 << 10)

enum { CAPPED, KEEPS, LEAKS, THREADED, THREAD_LEAKS, ALLOCATORS };

/* gemm_allocators keeps these blocks (bytes asked for) between calls */
#define EX_ALLOC_KEPT (100u + 300u + 1000u + 1280u + 50u + 70u + 500u + 77u)

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

static void *kept[8]; /* gemm_allocators: the blocks of its last call */

static int aligned_to(const void *p, size_t a) { return p && ((uintptr_t)p & (a - 1)) == 0; }

static int all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* Every allocation function, each result checked; 0 when all held. Frees the
 * previous call's blocks first, so that it holds EX_ALLOC_KEPT bytes after
 * every call. */
static int allocators(void) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < 8; i++) free(kept[i]);
    memset(kept, 0, sizeof kept);
    if (!(kept[0] = malloc(100)) || malloc_usable_size(kept[0]) < 100) return 1;
    if (!(kept[1] = calloc(10, 30)) || !all_zero(kept[1], 300)) return 2;
    if (posix_memalign(&kept[2], 256, 1000) != 0 || !aligned_to(kept[2], 256)) return 3;
    if (posix_memalign(&kept[7], 3, 8) == 0) return 4; /* not a power of two: EINVAL */
    unsigned char *a = aligned_alloc(64, 640);
    if (!aligned_to(a, 64)) return 5;
    memset(a, 0x5a, 640);
    if (!(kept[3] = realloc(a, 1280)) || ((unsigned char *)kept[3])[639] != 0x5a) return 6;
    if (!(kept[4] = memalign(4096, 50)) || !aligned_to(kept[4], 4096)) return 7;
    if (!(kept[5] = valloc(70)) || !aligned_to(kept[5], page)) return 8;
    void *pv = pvalloc(1); /* a whole page, freed at once: only in the peak */
    if (!aligned_to(pv, page) || malloc_usable_size(pv) < page) return 9;
    free(pv);
    unsigned char *r = malloc(10);
    if (!r) return 10;
    memcpy(r, "kbench-ok", 10);
    if (!(r = realloc(r, 2000)) || memcmp(r, "kbench-ok", 10)) return 11;
    if (!(kept[6] = realloc(r, 500)) || memcmp(kept[6], "kbench-ok", 10)) return 12;
    if (!(kept[7] = reallocarray(NULL, 7, 11))) return 13;
    volatile size_t huge = SIZE_MAX / 2; /* (volatile: the compiler would warn of the overflow) */
    if (reallocarray(NULL, huge, 3) != NULL) return 14; /* overflow: ENOMEM */
    free(NULL);
    return 0;
}

static kb_status gemm(void *ctx, const kb_plugin_gemm_args *a) {
    int kind = *(const int *)ctx;
    if (kind == ALLOCATORS) {
        int bad = allocators();
        if (bad && a->message && a->message_len)
            snprintf(a->message, a->message_len, "allocation check %d failed", bad);
        if (bad) return KB_ERR_INTERNAL;
        float *bw = malloc(a->k * a->n * sizeof(float));
        if (!bw) return KB_ERR_OUT_OF_MEMORY;
        widen(a, bw);
        compute(a, bw);
        free(bw);
        return KB_OK;
    }
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

static const int kinds[] = {CAPPED, KEEPS, LEAKS, THREADED, THREAD_LEAKS, ALLOCATORS};

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
    GEMM("gemm_allocators", ALLOCATORS, "calls every allocation function and keeps 3,377 bytes",
         KB_PLUGIN_SCRATCH_CAPPED, EX_ALLOC_KEPT),
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
