/* kb_parallel.c — a fork-join loop over independent tasks on pthreads.
 * Tasks write disjoint outputs, so results do not depend on the number of
 * threads or on which thread ran which task. */
#include "kb_internal.h"

#include <pthread.h>
#include <stdatomic.h>

#define KB_MAX_THREADS 64

typedef struct job {
    atomic_size_t next;
    size_t ntasks;
    kb_task_fn fn;
    void *ctx;
} job;

static void drain(job *j) {
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->ntasks) return;
        j->fn(j->ctx, i);
    }
}

static void *thread_main(void *arg) {
    drain((job *)arg);
    kb_scratch_free_thread(); /* helper threads end here: free their scratch */
    return NULL;
}

int kb_parallel_for(size_t ntasks, int threads, kb_task_fn fn, void *ctx) {
    if (threads > KB_MAX_THREADS) threads = KB_MAX_THREADS;
    if ((size_t)threads > ntasks) threads = (int)ntasks;
    job j;
    atomic_init(&j.next, 0);
    j.ntasks = ntasks;
    j.fn = fn;
    j.ctx = ctx;
    pthread_t tids[KB_MAX_THREADS];
    int started = 0;
    for (int t = 1; t < threads; t++) {
        if (pthread_create(&tids[started], NULL, thread_main, &j) != 0) break;
        started++;
    }
    drain(&j);
    for (int t = 0; t < started; t++) pthread_join(tids[t], NULL);
    return started + 1;
}
