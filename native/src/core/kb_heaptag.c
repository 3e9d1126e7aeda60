/* kb_heaptag.c — the thread's heap tag (kb_heaptag.h) and the allocations
 * kbench makes under a tag. */
#include "kb_heaptag.h"

#include <stdlib.h>

_Thread_local int kb_heap_tag;

/* malloc and calloc reached through pointers the compiler cannot see
 * through: a compiler may assume that malloc itself reads no variable of the
 * program, and drop the stores to kb_heap_tag around a direct call */
static void *(*volatile const tagged_malloc)(size_t) = malloc;
static void *(*volatile const tagged_calloc)(size_t, size_t) = calloc;

void *kb_heap_malloc(int tag, size_t bytes) {
    int prev = kb_heap_tag_set(tag);
    void *p = tagged_malloc(bytes);
    kb_heap_tag_set(prev);
    return p;
}

void *kb_heap_calloc(int tag, size_t count, size_t size) {
    int prev = kb_heap_tag_set(tag);
    void *p = tagged_calloc(count, size);
    kb_heap_tag_set(prev);
    return p;
}
