/* kb_parallel.c — a fork-join loop over independent tasks on pthreads.
 * Tasks write disjoint outputs, so results do not depend on the number of
 * threads or on which thread ran which task. Each thread has a slot number
 * (0 = the caller), so a driver can hand every thread its own part of a
 * scratch buffer it took before the loop. */
#include "kb_heaptag.h"
#include "kb_internal.h"

#include <pthread.h>
#include <stdatomic.h>

#define KB_MAX_THREADS 64

typedef struct job {
    atomic_size_t next;
    size_t ntasks;
    kb_task_fn fn;
    kb_slot_task_fn slot_fn;
    void *ctx;
} job;

typedef struct worker {
    job *j;
    int slot;
} worker;

static void drain(job *j, int slot) {
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->ntasks) return;
        if (j->slot_fn)
            j->slot_fn(j->ctx, i, slot);
        else
            j->fn(j->ctx, i);
    }
}

static void *thread_main(void *arg) {
    const worker *w = arg;
    drain(w->j, w->slot);
    kb_sme_note_thread_end(); /* streaming mode and ZA must be off here too */
    kb_scratch_free_thread(); /* helper threads end here: free their scratch */
    return NULL;
}

/* pthread_create with the calling thread's heap tag set to kbench's: what glibc
 * allocates for the new thread is kbench's bookkeeping, not the call's
 * (kb_heaptag.h). A function of its own, so that the loop below keeps its
 * registers (and a single-threaded call its instruction count). */
__attribute__((noinline)) static int start_thread(pthread_t *tid, worker *w) {
    int tag = kb_heap_tag_set(KB_HEAP_TAG_KBENCH);
    int rc = pthread_create(tid, NULL, thread_main, w);
    kb_heap_tag_set(tag);
    return rc;
}

int kb_parallel_threads(size_t ntasks, int threads) {
    if (threads > KB_MAX_THREADS) threads = KB_MAX_THREADS;
    if ((size_t)threads > ntasks) threads = (int)ntasks;
    return threads < 1 ? 1 : threads;
}

static int run(size_t ntasks, int threads, kb_task_fn fn, kb_slot_task_fn slot_fn, void *ctx) {
    threads = kb_parallel_threads(ntasks, threads);
    job j;
    atomic_init(&j.next, 0);
    j.ntasks = ntasks;
    j.fn = fn;
    j.slot_fn = slot_fn;
    j.ctx = ctx;
    pthread_t tids[KB_MAX_THREADS];
    worker ws[KB_MAX_THREADS];
    int started = 0;
    for (int t = 1; t < threads; t++) {
        ws[started].j = &j;
        ws[started].slot = started + 1;
        if (start_thread(&tids[started], &ws[started]) != 0) break;
        started++;
    }
    drain(&j, 0);
    for (int t = 0; t < started; t++) pthread_join(tids[t], NULL);
    return started + 1;
}

int kb_parallel_for(size_t ntasks, int threads, kb_task_fn fn, void *ctx) {
    return run(ntasks, threads, fn, NULL, ctx);
}

int kb_parallel_for_slots(size_t ntasks, int threads, kb_slot_task_fn fn, void *ctx) {
    return run(ntasks, threads, NULL, fn, ctx);
}
