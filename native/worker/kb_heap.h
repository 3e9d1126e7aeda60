/* kb_heap.h — the worker's heap accounting (kb_heap.c): live heap bytes per
 * owner, and per call the bytes the called realization held when the call
 * started, the most it held at once during the call and what it still held
 * when the call returned.
 *
 * Owners: every block malloc and its family hand out in the worker carries
 * a 16-byte header naming whose it is. A block is the call's realization's
 * (the one the request forces: a plugin realization, one owner each) when it
 * is allocated while that call runs, by any thread (threads the plugin
 * starts included) that has not marked itself (kb_heaptag.h): kbench's own
 * scratch (KB_HEAP_TAG_SCRATCH) is the owner "kbench scratch" whoever's call
 * it is, which is what our own realizations hold; kbench's bookkeeping
 * (KB_HEAP_TAG_KBENCH, and everything outside a call: the request's buffers,
 * the reply, loading a plugin) is nobody's. A block is charged to its owner
 * until it is freed, whoever frees it.
 *
 * Timed requests are not measured: while one runs, the allocator hands
 * blocks straight to glibc, without a header or a counter (free tells the
 * two kinds apart by the header's magic word).
 *
 * The allocator forwards to glibc's __libc_malloc family (the dynamically
 * linked workers, whose definitions of malloc, free, ... interpose glibc's
 * for the whole process, plugins and libc itself included) or, in the
 * statically linked worker (KB_HEAP_WRAP), wraps them at link time
 * (-Wl,--wrap=malloc,...: every reference in the program, libc.a's own
 * included, goes through it). Memory a library maps itself (mmap) is not
 * heap and is not seen. A dynamically linked worker into which another
 * allocator is preloaded (LD_PRELOAD) hands every call to it and counts
 * nothing (KB_HEAP_FOREIGN). */
#ifndef KB_HEAP_H
#define KB_HEAP_H

#include "kb_wire.h"

#include <stdint.h>

/* Why a call's heap figures are missing (0: they are there). */
enum {
    KB_HEAP_MEASURED = 0,
    KB_HEAP_NO_CALL = 1,          /* the request was refused before the call ran          */
    KB_HEAP_TIMED = 2,            /* a timed request: blocks are not counted while it runs */
    KB_HEAP_UNATTRIBUTED = 3,     /* no realization forced, and plugins are loaded: the
                                     call's blocks cannot be given an owner in advance    */
    KB_HEAP_GUARDED_SCRATCH = 4,  /* one of ours in a checking request: kbench's scratch
                                     lies in guarded mappings then, not on the heap        */
    KB_HEAP_NOT_BUILT = 5,        /* a worker built without the accounting (the fuzzer's)  */
    KB_HEAP_FOREIGN = 6           /* another allocator is preloaded into the worker
                                     (LD_PRELOAD): every block is its, none is counted    */
};

/* Whose figures they are. */
enum { KB_HEAP_OF_PLUGIN = 1, KB_HEAP_OF_SCRATCH = 2 };

#ifndef KB_WORKER_FUZZ
/* Opens the accounting window of a request's call: `force` names the
 * realization it forces (NULL: the selector's choice), `timed` stops counting
 * until kb_heap_end, `guarded` says its inputs and kbench's scratch lie in
 * guarded mappings (a checking request). */
void kb_heap_begin(const char *force, int timed, int guarded);
/* Closes it, keeping the call's figures for kb_heap_write. */
void kb_heap_end(void);
/* Appends the figures of the last call (u32 status KB_HEAP_*, u32 whose
 * KB_HEAP_OF_*, u64 before, u64 peak, u64 after) to a reply and forgets
 * them: a reply with no call since says KB_HEAP_NO_CALL. */
void kb_heap_write(kb_writer *w);
/* Forgets them (a request whose reply does not carry them). */
void kb_heap_forget(void);
#else /* the fuzz harness builds with its sanitizer's allocator */
static inline void kb_heap_begin(const char *force, int timed, int guarded) {
    (void)force, (void)timed, (void)guarded;
}
static inline void kb_heap_end(void) {}
static inline void kb_heap_forget(void) {}
static inline void kb_heap_write(kb_writer *w) {
    kb_wr_u32(w, KB_HEAP_NOT_BUILT);
    kb_wr_u32(w, 0);
    kb_wr_u64(w, 0);
    kb_wr_u64(w, 0);
    kb_wr_u64(w, 0);
}
#endif

#endif
