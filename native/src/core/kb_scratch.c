/* kb_scratch.c — thread-local scratch for drivers (never for kernels).
 * Two slots: the outer one for operator-level drivers (im2col buffers,
 * indirection tables) and the inner one for GEMM drivers (packed panels),
 * so a convolution can call a GEMM without losing its own buffer. A thread
 * keeps at most KB_SCRATCH_RETAIN_CAP bytes between calls (the entry points
 * release at their end); a larger buffer lives only for the call. */
#include "kb_internal.h"

#include <stdlib.h>

enum { SLOT_OUTER = 0, SLOT_INNER = 1, SLOTS = 2 };

static _Thread_local void *scratch_ptr[SLOTS];
static _Thread_local size_t scratch_cap[SLOTS];

static void *get(int slot, size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (bytes <= scratch_cap[slot]) return scratch_ptr[slot];
    free(scratch_ptr[slot]);
    scratch_ptr[slot] = malloc(bytes);
    scratch_cap[slot] = scratch_ptr[slot] ? bytes : 0;
    return scratch_ptr[slot];
}

void *kb_scratch_get(size_t bytes) { return get(SLOT_INNER, bytes); }
void *kb_scratch_get_outer(size_t bytes) { return get(SLOT_OUTER, bytes); }

size_t kb_scratch_retained_bytes(void) { return scratch_cap[0] + scratch_cap[1]; }

void kb_scratch_release(void) {
    while (kb_scratch_retained_bytes() > KB_SCRATCH_RETAIN_CAP) {
        int big = scratch_cap[SLOT_OUTER] >= scratch_cap[SLOT_INNER] ? SLOT_OUTER : SLOT_INNER;
        free(scratch_ptr[big]);
        scratch_ptr[big] = NULL;
        scratch_cap[big] = 0;
    }
}

void kb_scratch_free_thread(void) {
    for (int s = 0; s < SLOTS; s++) {
        free(scratch_ptr[s]);
        scratch_ptr[s] = NULL;
        scratch_cap[s] = 0;
    }
}
