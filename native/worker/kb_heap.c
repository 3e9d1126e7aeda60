/* kb_heap.c — the worker's interposed allocator and its heap accounting
 * (kb_heap.h says what is counted and how blocks get an owner).
 *
 * A counted block: [16-byte header][the caller's n bytes]; an aligned one
 * (alignment A > 16) starts A bytes into a block glibc aligned to A, its
 * header in the 16 bytes before it. The header: the n bytes asked for, the
 * owner, log2 of the offset from glibc's block, and a magic word in its last
 * four bytes. Those four bytes of a block glibc handed out directly are the
 * upper half of glibc's own chunk-size field, 0 for any block under 4 GiB,
 * so free and realloc tell a counted block from an uncounted one (handed out
 * while a timed request ran, or by code that calls glibc directly). Bytes
 * are those asked for, not glibc's rounding: the figures do not depend on
 * the C library's version.
 *
 * Cost: a counted allocation takes one thread-local load, one relaxed atomic
 * add, and while a call's window is open a compare with the window's owner
 * (and an update of the window's peak); a free one relaxed atomic add. A
 * timed request pays one relaxed load per call of malloc. */
#define _GNU_SOURCE
#include "kb_heap.h"

#include "../src/core/kb_heaptag.h"
#include "kbench.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#if defined(KB_HEAP_WRAP) /* the static worker: -Wl,--wrap=malloc,... */
#define API(name) __wrap_##name
void *__real_malloc(size_t n);
void __real_free(void *p);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
void *__real_memalign(size_t align, size_t n);
size_t __real_malloc_usable_size(void *p);
#define REAL_MALLOC __real_malloc
#define REAL_FREE __real_free
#define REAL_CALLOC __real_calloc
#define REAL_REALLOC __real_realloc
#define REAL_MEMALIGN __real_memalign
static size_t real_usable(void *p) { return __real_malloc_usable_size(p); }
#else /* a dynamically linked worker: these definitions interpose glibc's */
#include <dlfcn.h>
#define API(name) name
void *__libc_malloc(size_t n);
void __libc_free(void *p);
void *__libc_calloc(size_t a, size_t b);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);
#define REAL_MALLOC __libc_malloc
#define REAL_FREE __libc_free
#define REAL_CALLOC __libc_calloc
#define REAL_REALLOC __libc_realloc
#define REAL_MEMALIGN __libc_memalign
#define KB_HEAP_CAN_DEFER 1
static size_t real_usable(void *p) { /* a block glibc handed out directly */
    static size_t (*_Atomic next)(void *);
    size_t (*fn)(void *) = atomic_load_explicit(&next, memory_order_acquire);
    if (!fn) {
        fn = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
        atomic_store_explicit(&next, fn, memory_order_release);
    }
    return fn ? fn(p) : 0;
}
#endif

#if defined(KB_HEAP_CAN_DEFER)
/* Another allocator preloaded into the worker (LD_PRELOAD: a sanitizer's
 * runtime, jemalloc, tcmalloc) hands out blocks this file never sees (its
 * own interceptors, strdup and the like, allocate with it directly): mixing
 * its blocks with glibc's would free one allocator's block with the other's
 * free. Then every call goes to that allocator, nothing is counted, and each
 * call's figures say why (KB_HEAP_FOREIGN). Decided once, at load, before
 * any thread runs. */
static struct {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*memalign)(size_t, size_t);
    size_t (*usable)(void *);
} foreign;
static int deferring; /* written once, by the constructor below */

__attribute__((constructor(101))) static void kb_heap_detect(void) {
    void *next = dlsym(RTLD_NEXT, "malloc");
    if (!next || next == (void *)__libc_malloc) return;
    foreign.malloc = (void *(*)(size_t))next;
    foreign.free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    foreign.calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    foreign.realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    foreign.memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
    foreign.usable = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
    if (foreign.free && foreign.calloc && foreign.realloc && foreign.memalign) deferring = 1;
}
#define DEFER(call) \
    do {            \
        if (deferring) return foreign.call; \
    } while (0)
#define DEFER_VOID(call) \
    do {                 \
        if (deferring) { \
            foreign.call; \
            return;      \
        }                \
    } while (0)
#else
#define DEFER(call) ((void)0)
#define DEFER_VOID(call) ((void)0)
#endif

/* the functions this file defines (interposed or wrapped) */
void *API(malloc)(size_t n);
void API(free)(void *p);
void *API(calloc)(size_t a, size_t b);
void *API(realloc)(void *p, size_t n);
void *API(reallocarray)(void *p, size_t a, size_t b);
void *API(memalign)(size_t align, size_t n);
void *API(aligned_alloc)(size_t align, size_t n);
int API(posix_memalign)(void **out, size_t align, size_t n);
void *API(valloc)(size_t n);
void *API(pvalloc)(size_t n);
size_t API(malloc_usable_size)(void *p);

#define MAGIC 0x4b484550u /* "PEHK" */
#define HDR 16u
#define HDR_SHIFT 4u

typedef struct hdr {
    uint64_t size;  /* bytes asked for */
    uint16_t owner; /* OWNER_* or a plugin realization's slot */
    uint8_t shift;  /* the block starts 1 << shift bytes into glibc's */
    uint8_t unused;
    uint32_t magic;
} hdr;
_Static_assert(sizeof(hdr) == HDR, "the header is 16 bytes");

/* owners: kbench's bookkeeping and everything outside a call; kbench's
 * scratch; an unforced call's blocks; then one per plugin realization
 * (plugin index x PLUGIN_SLOTS + realization index) */
enum { OWNER_KBENCH = 0, OWNER_SCRATCH = 1, OWNER_UNKNOWN = 2, OWNER_PLUGIN = 3 };
#define PLUGINS 16
#define PLUGIN_SLOTS 64
#define OWNERS (OWNER_PLUGIN + PLUGINS * PLUGIN_SLOTS)

static _Atomic int64_t live[OWNERS];
static _Atomic int window_owner = -1; /* the open call's owner, -1: none */
static _Atomic int64_t window_peak;
static _Atomic int paused; /* a timed request runs: nothing is counted */

/* the last call's figures, for its reply (written and read by the worker's
 * main thread only) */
static struct {
    uint32_t status, whose;
    int owner;
    int64_t before, peak, after;
} last = {KB_HEAP_NO_CALL, 0, -1, 0, 0, 0};

/* ---- accounting ------------------------------------------------------------------ */

static unsigned owner_now(void) {
    int w = atomic_load_explicit(&window_owner, memory_order_relaxed);
    if (w < 0) return OWNER_KBENCH; /* no call runs (and before main: no thread-local read) */
    switch (kb_heap_tag) {
    case KB_HEAP_TAG_KBENCH: return OWNER_KBENCH;
    case KB_HEAP_TAG_SCRATCH: return OWNER_SCRATCH;
    default: return (unsigned)w;
    }
}

static void charge(unsigned owner, int64_t bytes) {
    int64_t now = atomic_fetch_add_explicit(&live[owner], bytes, memory_order_relaxed) + bytes;
    if (bytes <= 0 || (int)owner != atomic_load_explicit(&window_owner, memory_order_relaxed)) return;
    int64_t peak = atomic_load_explicit(&window_peak, memory_order_relaxed);
    while (now > peak &&
           !atomic_compare_exchange_weak_explicit(&window_peak, &peak, now, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
}

static bool counted(void *p, hdr *h) {
    memcpy(h, (unsigned char *)p - HDR, HDR);
    return h->magic == MAGIC;
}

/* A block from glibc (raw, NULL on failure) made a counted block of n bytes
 * starting 1 << shift bytes in. */
static void *finish(unsigned char *raw, size_t n, unsigned shift) {
    if (!raw) return NULL;
    unsigned char *user = raw + ((size_t)1 << shift);
    hdr h = {n, (uint16_t)owner_now(), (uint8_t)shift, 0, MAGIC};
    memcpy(user - HDR, &h, HDR);
    charge(h.owner, (int64_t)n);
    return user;
}

static bool pausing(void) { return atomic_load_explicit(&paused, memory_order_relaxed) != 0; }

static void *enomem(void) {
    errno = ENOMEM;
    return NULL;
}

/* ---- the allocator ------------------------------------------------------------- */

void *API(malloc)(size_t n) {
    DEFER(malloc(n));
    if (pausing()) return REAL_MALLOC(n);
    if (n > SIZE_MAX - HDR) return enomem();
    return finish(REAL_MALLOC(n + HDR), n, HDR_SHIFT);
}

void *API(calloc)(size_t a, size_t b) {
    DEFER(calloc(a, b));
    if (pausing()) return REAL_CALLOC(a, b);
    size_t n;
    if (__builtin_mul_overflow(a, b, &n) || n > SIZE_MAX - HDR) return enomem();
    return finish(REAL_CALLOC(1, n + HDR), n, HDR_SHIFT);
}

void API(free)(void *p) {
    DEFER_VOID(free(p));
    hdr h;
    if (!p) return;
    if (!counted(p, &h)) {
        REAL_FREE(p);
        return;
    }
    charge(h.owner, -(int64_t)h.size);
    memset((unsigned char *)p - sizeof h.magic, 0, sizeof h.magic);
    REAL_FREE((unsigned char *)p - ((size_t)1 << h.shift));
}

void *API(realloc)(void *p, size_t n) {
    DEFER(realloc(p, n));
    hdr h;
    if (!p) return API(malloc)(n);
    if (!counted(p, &h)) return REAL_REALLOC(p, n); /* an uncounted block stays uncounted */
    if (n == 0) {                                   /* as glibc: freed, NULL returned */
        API(free)(p);
        return NULL;
    }
    if (h.shift == HDR_SHIFT) { /* the header moves with the block; its owner stays */
        if (n > SIZE_MAX - HDR) return enomem();
        unsigned char *raw = REAL_REALLOC((unsigned char *)p - HDR, n + HDR);
        if (!raw) return NULL;
        int64_t delta = (int64_t)n - (int64_t)h.size;
        h.size = n;
        memcpy(raw, &h, HDR);
        charge(h.owner, delta);
        return raw + HDR;
    }
    void *q = API(malloc)(n); /* an aligned block moves (realloc promises no alignment) */
    if (!q) return NULL;
    memcpy(q, p, h.size < n ? h.size : n);
    API(free)(p);
    return q;
}

void *API(reallocarray)(void *p, size_t a, size_t b) {
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) return enomem();
    return API(realloc)(p, n);
}

/* A counted block aligned to `align` (any value: rounded up to a power of two, as glibc's memalign does). */
static void *aligned(size_t align, size_t n) {
    if (align > SIZE_MAX / 2 + 1) {
        errno = EINVAL;
        return NULL;
    }
    size_t a = HDR;
    unsigned shift = HDR_SHIFT;
    while (a < align) a <<= 1, shift++;
    DEFER(memalign(a, n));
    if (a == HDR) return API(malloc)(n); /* glibc's blocks are 16-byte aligned */
    if (pausing()) return REAL_MEMALIGN(a, n);
    if (n > SIZE_MAX - a) return enomem();
    return finish(REAL_MEMALIGN(a, n + a), n, shift);
}

void *API(memalign)(size_t align, size_t n) { return aligned(align, n); }

void *API(aligned_alloc)(size_t align, size_t n) { return aligned(align, n); }

int API(posix_memalign)(void **out, size_t align, size_t n) {
    if (align == 0 || align % sizeof(void *) || (align & (align - 1))) return EINVAL;
    int saved = errno; /* posix_memalign reports in its result, errno is left alone */
    void *p = aligned(align, n);
    if (!p) {
        int rc = errno == EINVAL ? EINVAL : ENOMEM;
        errno = saved;
        return rc;
    }
    *out = p;
    return 0;
}

static size_t page(void) {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096u;
}

void *API(valloc)(size_t n) { return aligned(page(), n); }

void *API(pvalloc)(size_t n) {
    size_t pg = page();
    if (n > SIZE_MAX - pg) return enomem();
    return aligned(pg, n ? (n + pg - 1) / pg * pg : pg);
}

size_t API(malloc_usable_size)(void *p) {
    hdr h;
    if (!p) return 0;
#if defined(KB_HEAP_CAN_DEFER)
    if (deferring) return foreign.usable ? foreign.usable(p) : 0;
#endif
    return counted(p, &h) ? (size_t)h.size : real_usable(p);
}

/* ---- call windows ---------------------------------------------------------------- */

/* The owner of a forced realization: its plugin slot, kbench's scratch for
 * one of ours ("" too: a request of our own packer), OWNER_UNKNOWN for the
 * selector's own choice among plugins. */
static int owner_of(const char *force) {
    size_t plugins = kb_plugin_count();
    if (!force) return plugins ? OWNER_UNKNOWN : OWNER_SCRATCH;
    const char *dot = strchr(force, '.');
    if (!dot) return OWNER_SCRATCH; /* our realizations' names have no dot */
    kb_error err;
    for (size_t p = 0; p < plugins && p < PLUGINS; p++) {
        kb_plugin_info info;
        if (kb_plugin_get(p, &info, &err) != KB_OK || strlen(info.name) != (size_t)(dot - force) ||
            strncmp(info.name, force, (size_t)(dot - force)))
            continue;
        for (uint32_t i = 0; i < info.realizations && i < PLUGIN_SLOTS; i++) {
            kb_plugin_realization_info ri;
            if (kb_plugin_realization_get(p, i, &ri, &err) == KB_OK && !strcmp(ri.name, force))
                return OWNER_PLUGIN + (int)(p * PLUGIN_SLOTS + i);
        }
    }
    return OWNER_UNKNOWN; /* a plugin's name kbench does not know: the call is refused */
}

void kb_heap_begin(const char *force, int timed, int guarded) {
    last.owner = -1;
#if defined(KB_HEAP_CAN_DEFER)
    if (deferring) {
        last.status = KB_HEAP_FOREIGN;
        return;
    }
#endif
    if (timed) {
        last.status = KB_HEAP_TIMED;
        atomic_store_explicit(&paused, 1, memory_order_relaxed);
        return;
    }
    int owner = owner_of(force);
    last.owner = owner;
    last.whose = owner == OWNER_SCRATCH ? KB_HEAP_OF_SCRATCH : KB_HEAP_OF_PLUGIN;
    last.status = owner == OWNER_UNKNOWN ? KB_HEAP_UNATTRIBUTED
                  : owner == OWNER_SCRATCH && guarded ? KB_HEAP_GUARDED_SCRATCH
                                                      : KB_HEAP_MEASURED;
    last.before = atomic_load_explicit(&live[owner], memory_order_relaxed);
    atomic_store_explicit(&window_peak, last.before, memory_order_relaxed);
    atomic_store_explicit(&window_owner, owner, memory_order_seq_cst);
}

void kb_heap_end(void) {
    atomic_store_explicit(&paused, 0, memory_order_relaxed);
    if (last.owner < 0) return;
    atomic_store_explicit(&window_owner, -1, memory_order_seq_cst);
    last.after = atomic_load_explicit(&live[last.owner], memory_order_relaxed);
    last.peak = atomic_load_explicit(&window_peak, memory_order_relaxed);
    if (last.peak < last.after) last.peak = last.after;
}

static uint64_t bytes(int64_t v) { return v > 0 ? (uint64_t)v : 0; }

void kb_heap_write(kb_writer *w) {
    bool shown = last.status == KB_HEAP_MEASURED;
    kb_wr_u32(w, last.status);
    kb_wr_u32(w, shown ? last.whose : 0);
    kb_wr_u64(w, shown ? bytes(last.before) : 0);
    kb_wr_u64(w, shown ? bytes(last.peak) : 0);
    kb_wr_u64(w, shown ? bytes(last.after) : 0);
    kb_heap_forget();
}

void kb_heap_forget(void) {
    last.status = KB_HEAP_NO_CALL;
    last.owner = -1;
}
