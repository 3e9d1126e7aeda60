/* kb_scratch.c — thread-local scratch for drivers (never for kernels).
 * Two slots: the outer one for operator-level drivers (im2col buffers,
 * indirection tables) and the inner one for GEMM drivers (packed panels),
 * so a convolution can call a GEMM without losing its own buffer. A thread
 * keeps at most KB_SCRATCH_RETAIN_CAP bytes between calls (the entry points
 * release at their end); a larger buffer lives only for the call.
 *
 * With a guard mode set (kb_guard_set_mode, checking runs in a worker) every
 * scratch buffer is a guarded one of exactly the size asked for (kb_guard.c),
 * and drivers may take their pieces one by one (kb_scratch_piece) so that
 * each piece a kernel reads ends at a guard page of its own. Guarded
 * buffers live until the entry point releases its scratch. */
#include "kb_heaptag.h"
#include "kb_internal.h"

#include <stdlib.h>

enum { SLOT_OUTER = 0, SLOT_INNER = 1, SLOTS = 2 };

static _Thread_local void *scratch_ptr[SLOTS];
static _Thread_local size_t scratch_cap[SLOTS];

#define PIECES 16
static _Thread_local void *guarded[SLOTS];
static _Thread_local void *pieces[PIECES];
static _Thread_local int npieces;
static _Thread_local int any_guarded; /* a guarded buffer is held: release frees it */

static void *get(int slot, size_t bytes) {
    if (bytes == 0) bytes = 1;
    int mode = kb_guard_on();
    if (mode != KB_GUARD_OFF) {
        kb_guard_free(guarded[slot]);
        any_guarded = 1;
        guarded[slot] = kb_guard_alloc(bytes, 64, mode, 0,
                                       slot == SLOT_OUTER ? "kbench scratch (im2col columns or indirection table)"
                                                          : "kbench-packed operands (scratch)");
        return guarded[slot];
    }
    if (bytes <= scratch_cap[slot]) return scratch_ptr[slot];
    free(scratch_ptr[slot]);
    scratch_ptr[slot] = kb_heap_malloc(KB_HEAP_TAG_SCRATCH, bytes); /* kbench's, whoever's call it is */
    scratch_cap[slot] = scratch_ptr[slot] ? bytes : 0;
    return scratch_ptr[slot];
}

void *kb_scratch_get(size_t bytes) { return get(SLOT_INNER, bytes); }

void *kb_scratch_piece(size_t bytes, size_t allowance, const char *name) {
    if (kb_guard_on() == KB_GUARD_OFF || npieces >= PIECES) return NULL;
    void *p = kb_guard_alloc(bytes ? bytes : 1, 16, kb_guard_on(), allowance, name);
    if (p) pieces[npieces++] = p;
    any_guarded = 1;
    return p;
}

static void free_guarded(void) {
    if (!any_guarded) return;
    any_guarded = 0;
    for (int s = 0; s < SLOTS; s++) {
        kb_guard_free(guarded[s]);
        guarded[s] = NULL;
    }
    while (npieces > 0) kb_guard_free(pieces[--npieces]);
}
void *kb_scratch_get_outer(size_t bytes) { return get(SLOT_OUTER, bytes); }

size_t kb_scratch_retained_bytes(void) { return scratch_cap[0] + scratch_cap[1]; }

void kb_scratch_release(void) {
    free_guarded();
    while (kb_scratch_retained_bytes() > KB_SCRATCH_RETAIN_CAP) {
        int big = scratch_cap[SLOT_OUTER] >= scratch_cap[SLOT_INNER] ? SLOT_OUTER : SLOT_INNER;
        free(scratch_ptr[big]);
        scratch_ptr[big] = NULL;
        scratch_cap[big] = 0;
    }
}

void kb_scratch_free_thread(void) {
    free_guarded();
    for (int s = 0; s < SLOTS; s++) {
        free(scratch_ptr[s]);
        scratch_ptr[s] = NULL;
        scratch_cap[s] = 0;
    }
}
