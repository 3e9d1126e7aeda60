/* kb_scratch.c — thread-local scratch for drivers (never for kernels).
 * A thread keeps at most KB_SCRATCH_RETAIN_CAP bytes between calls; a
 * larger buffer lives only for the call that needed it. */
#include "kb_internal.h"

#include <stdlib.h>

static _Thread_local void *scratch_ptr;
static _Thread_local size_t scratch_cap;

void *kb_scratch_get(size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (bytes <= scratch_cap) return scratch_ptr;
    free(scratch_ptr);
    scratch_ptr = malloc(bytes);
    scratch_cap = scratch_ptr ? bytes : 0;
    return scratch_ptr;
}

void kb_scratch_release(void) {
    if (scratch_cap > KB_SCRATCH_RETAIN_CAP) {
        free(scratch_ptr);
        scratch_ptr = NULL;
        scratch_cap = 0;
    }
}

size_t kb_scratch_retained_bytes(void) { return scratch_cap; }

void kb_scratch_free_thread(void) {
    free(scratch_ptr);
    scratch_ptr = NULL;
    scratch_cap = 0;
}
