/* kb_heaptag.h — whose heap memory a thread is allocating, for the worker's
 * heap accounting (native/worker/kb_heap.c, which interposes malloc and its
 * family): kbench marks the allocations it makes inside a call on its own
 * behalf, so that they are never charged to the realization being called.
 * Outside the worker nothing reads the tag; setting it costs one store to a
 * thread-local variable. */
#ifndef KB_HEAPTAG_H
#define KB_HEAPTAG_H

enum {
    KB_HEAP_TAG_CALL = 0,    /* the default: charged to the call that is running (the
                                realization it forces), in any thread, threads a
                                plugin starts included                                */
    KB_HEAP_TAG_KBENCH = 1,  /* kbench's own bookkeeping (threads it starts, a zero
                                bias it passes a packer): nobody's                    */
    KB_HEAP_TAG_SCRATCH = 2  /* kbench's scratch (kb_scratch.c): its own realizations'
                                scratch, capped at KB_SCRATCH_RETAIN_CAP per thread   */
};

#include <stddef.h>

extern _Thread_local int kb_heap_tag;

/* Sets the calling thread's tag; returns the one it replaces (to restore).
 * Around a call the compiler cannot see into (pthread_create); around
 * malloc itself use kb_heap_malloc. */
static inline int kb_heap_tag_set(int tag) {
    int prev = kb_heap_tag;
    kb_heap_tag = tag;
    return prev;
}

/* malloc / calloc with the calling thread's tag set to `tag` for the call. */
void *kb_heap_malloc(int tag, size_t bytes);
void *kb_heap_calloc(int tag, size_t count, size_t size);

#endif
