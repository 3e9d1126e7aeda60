/* kb_guard.c — guard pages around the buffers a kernel reads, for checking
 * runs (kbench.h: kb_guard_*).
 *
 * A guarded buffer lives in its own anonymous mapping. In KB_GUARD_END mode
 * its last byte is the last byte before an inaccessible page (rounded down
 * only as far as the buffer's alignment needs), or, with an allowance (the
 * bytes a plugin declares it may read past the end of the operand), the
 * allowance's last byte is; in KB_GUARD_START mode its first byte is the
 * first after one. The rest of the mapping (before the
 * buffer, or after it) is filled with FP16 NaN poison, so a kernel that
 * reads a little way out on the unguarded side reads NaN. A read (or write)
 * into a guard page faults; the worker's signal handler asks
 * kb_guard_describe which buffer the address belongs to and reports it.
 *
 * The registry is a fixed table: entries are claimed and released under a
 * mutex and read by kb_guard_describe without one (it runs in a signal
 * handler, so it only reads plain fields and formats with its own code). */
#define _DEFAULT_SOURCE
#include "kb_internal.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#define KB_HAVE_GUARD 1
#endif

#define GUARD_SLOTS 4096
#define POISON 0x7E49u /* an FP16 NaN payload, as kbench's Python side uses */

typedef struct guard_region {
    _Atomic int used;
    unsigned char *map;      /* the whole mapping                      */
    size_t map_size;
    unsigned char *data;     /* the buffer inside it                   */
    size_t size;
    unsigned char *guard;    /* the inaccessible page                  */
    size_t page;
    size_t allowance;        /* declared readable bytes past the end  */
    int mode;
    char name[48];
} guard_region;

static guard_region regions[GUARD_SLOTS];
_Atomic int kb_guard_scratch_mode;

void kb_guard_set_mode(int mode) { atomic_store(&kb_guard_scratch_mode, mode); }
int kb_guard_mode(void) { return atomic_load(&kb_guard_scratch_mode); }

#ifdef KB_HAVE_GUARD
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static size_t page_size(void) {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096u;
}

void *kb_guard_alloc(size_t size, size_t align, int mode, size_t allowance, const char *name) {
    if (mode != KB_GUARD_END && mode != KB_GUARD_START) return NULL;
    if (align == 0 || (align & (align - 1)) || align > 4096) align = 64;
    size_t page = page_size();
    if (size == 0) size = 1;
    if (mode != KB_GUARD_END) allowance = 0; /* an allowance is past the end */
    if (size > SIZE_MAX - 3 * page || allowance > SIZE_MAX - 3 * page - size) return NULL;
    /* data pages (and the allowance), one page of poison on the unguarded side, the guard page */
    size_t data_pages = (size + allowance + align + page - 1) / page;
    size_t map_size = (data_pages + 2) * page;
    unsigned char *map = mmap(NULL, map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return NULL;
    unsigned char *guard, *data;
    if (mode == KB_GUARD_END) {
        guard = map + (data_pages + 1) * page;
        uintptr_t end = (uintptr_t)guard - allowance;
        data = (unsigned char *)((end - size) & ~(uintptr_t)(align - 1));
    } else {
        guard = map;
        data = map + page;
    }
    for (unsigned char *p = map; p + 1 < map + map_size; p += 2) { /* NaN poison around the buffer */
        if (p + 1 < guard || p >= guard + page) {
            p[0] = (unsigned char)(POISON & 0xffu);
            p[1] = (unsigned char)(POISON >> 8);
        }
    }
    if (mprotect(guard, page, PROT_NONE) != 0) {
        munmap(map, map_size);
        return NULL;
    }
    pthread_mutex_lock(&lock);
    guard_region *r = NULL;
    for (int i = 0; i < GUARD_SLOTS && !r; i++)
        if (!atomic_load(&regions[i].used)) r = &regions[i];
    if (r) {
        r->map = map;
        r->map_size = map_size;
        r->data = data;
        r->size = size;
        r->guard = guard;
        r->page = page;
        r->allowance = allowance;
        r->mode = mode;
        size_t n = name ? strlen(name) : 0;
        if (n >= sizeof r->name) n = sizeof r->name - 1;
        memcpy(r->name, name ? name : "", n);
        r->name[n] = '\0';
        atomic_store(&r->used, 1);
    }
    pthread_mutex_unlock(&lock);
    if (!r) {
        munmap(map, map_size);
        return NULL;
    }
    return data;
}

static guard_region *find(const void *data) {
    for (int i = 0; i < GUARD_SLOTS; i++)
        if (atomic_load(&regions[i].used) && regions[i].data == data) return &regions[i];
    return NULL;
}

void kb_guard_name(const void *data, const char *name) {
    pthread_mutex_lock(&lock);
    guard_region *r = find(data);
    if (r) {
        size_t n = strlen(name);
        if (n >= sizeof r->name) n = sizeof r->name - 1;
        memcpy(r->name, name, n);
        r->name[n] = '\0';
    }
    pthread_mutex_unlock(&lock);
}

void kb_guard_free(void *data) {
    if (!data) return;
    pthread_mutex_lock(&lock);
    guard_region *r = find(data);
    if (r) {
        munmap(r->map, r->map_size);
        atomic_store(&r->used, 0);
    }
    pthread_mutex_unlock(&lock);
}

/* ---- describing a fault address (async-signal-safe) --------------------- */

typedef struct out_buf {
    char *p;
    size_t left;
} out_buf;

static void put(out_buf *o, const char *s) {
    while (*s && o->left > 1) {
        *o->p++ = *s++;
        o->left--;
    }
}

static void put_u(out_buf *o, unsigned long long v) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && n < 24);
    while (n--) {
        char c[2] = {digits[n], '\0'};
        put(o, c);
    }
}

/* An access that faults may report its own first byte rather than the first
 * byte of the guard page it reaches (an access that straddles the page
 * boundary): an address from the buffer up to the end of its guard page
 * (END), or from the guard page to the buffer's end (START), is the
 * buffer's. */
static bool hit(const guard_region *r, const unsigned char *a) {
    if (r->mode == KB_GUARD_END) return a >= r->data && a < r->guard + r->page;
    return a >= r->guard && a < r->data + r->size;
}

int kb_guard_describe(const void *addr, char *out, size_t len) {
    const unsigned char *a = addr;
    for (int i = 0; i < GUARD_SLOTS; i++) {
        const guard_region *r = &regions[i];
        if (!atomic_load(&r->used) || !hit(r, a)) continue;
        if (!out || len == 0) return 1;
        out_buf o = {out, len};
        if (r->mode == KB_GUARD_END) {
            const unsigned char *end = r->data + r->size;
            put(&o, "read past the end of ");
            put(&o, r->name);
            put(&o, ": byte ");
            put_u(&o, (unsigned long long)(a - r->data));
            put(&o, " of a ");
            put_u(&o, (unsigned long long)r->size);
            put(&o, "-byte buffer (");
            if (a < end) {
                put(&o, "an access starting inside it");
            } else if (r->allowance) { /* counted as the bytes past the end the access reaches */
                put_u(&o, (unsigned long long)(a - end + 1));
                put(&o, " byte(s) past its end read");
            } else {
                put_u(&o, (unsigned long long)(a - end));
                put(&o, " byte(s) beyond its end");
            }
            if (r->allowance) {
                put(&o, ", ");
                put_u(&o, (unsigned long long)r->allowance);
                put(&o, " declared readable; the guard page starts ");
                put_u(&o, (unsigned long long)(r->guard - end));
                put(&o, " past its end)");
            } else {
                put(&o, ", into the guard page after it)");
            }
        } else {
            put(&o, "read before the start of ");
            put(&o, r->name);
            put(&o, ": ");
            put_u(&o, (unsigned long long)(r->data - a));
            put(&o, " byte(s) before a ");
            put_u(&o, (unsigned long long)r->size);
            put(&o, "-byte buffer (into the guard page before it)");
        }
        *o.p = '\0';
        return 1;
    }
    return 0;
}
#else
void *kb_guard_alloc(size_t size, size_t align, int mode, size_t allowance, const char *name) {
    (void)size, (void)align, (void)mode, (void)allowance, (void)name;
    return NULL;
}
void kb_guard_name(const void *data, const char *name) { (void)data, (void)name; }
void kb_guard_free(void *data) { (void)data; }
int kb_guard_describe(const void *addr, char *out, size_t len) {
    (void)addr, (void)out, (void)len;
    return 0;
}
#endif
