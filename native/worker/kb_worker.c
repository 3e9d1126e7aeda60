/* kb_worker.c — the kbench library as an executable speaking the worker
 * protocol (kb_wire.h) over stdin/stdout. Built statically for another
 * architecture it runs under QEMU user mode or on a remote board.
 *
 * A well-framed but malformed request gets a protocol-error reply and the
 * worker goes on. A frame it cannot resynchronise after (bad magic,
 * oversized or truncated) gets a protocol-error reply and the worker exits
 * with status 3. A stalled half-sent frame times out after 30 s. */
#define _GNU_SOURCE
#include "kb_heap.h"
#include "kb_wire.h"
#include "kbench.h"

#include <errno.h>
#include <link.h>
#if !defined(KB_NO_DLOPEN)
#include <dlfcn.h>
#endif
#include <ucontext.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/prctl.h>
#ifndef PR_SME_SET_VL
#define PR_SME_SET_VL 63
#define PR_SME_GET_VL 64
#endif
#ifndef PR_SVE_SET_VL
#define PR_SVE_SET_VL 50
#define PR_SVE_GET_VL 51
#endif
#endif

#define MID_FRAME_TIMEOUT_MS 30000
#define MAX_BATCH (1u << 16)
#define MAX_BUFFERS (1u << 20)
#define MAX_REPS 1000000u
#define MAX_FORCE 256u

/* ---- I/O --------------------------------------------------------------- */

static int out_fd = 1; /* replies go here (the fuzz harness points it elsewhere) */

#ifndef KB_WORKER_FUZZ
/* Reads n bytes. Returns n, 0 on EOF before the first byte, -1 on EOF or
 * error part-way, -2 on a stall longer than the timeout (if mid_frame). */
static long read_full(int fd, void *buf, size_t n, int mid_frame) {
    unsigned char *p = buf;
    size_t got = 0;
    while (got < n) {
        if (mid_frame || got > 0) {
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            int pr = poll(&pfd, 1, MID_FRAME_TIMEOUT_MS);
            if (pr == 0) return -2;
            if (pr < 0 && errno != EINTR) return -1;
        }
        ssize_t r = read(fd, p + got, n - got);
        if (r == 0) return got == 0 && !mid_frame ? 0 : -1;
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        got += (size_t)r;
    }
    return (long)n;
}

#endif

static int write_full(int fd, const void *buf, size_t n) {
    const unsigned char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int protocol_error(const char *fmt, ...);

static int send_frame(uint32_t type, const kb_writer *w) {
    if (w && w->len > KB_WIRE_MAX_PAYLOAD && type != KB_WIRE_PROTOCOL_ERROR)
        return protocol_error("reply of %zu bytes exceeds the frame limit", w->len);
    kb_writer h = {0};
    kb_wr_u32(&h, KB_WIRE_MAGIC);
    kb_wr_u32(&h, type);
    kb_wr_u64(&h, w ? w->len : 0);
    int rc = h.oom ? -1 : write_full(out_fd, h.buf, h.len);
    free(h.buf);
    if (rc == 0 && w && w->len) rc = write_full(out_fd, w->buf, w->len);
    return rc;
}

static int protocol_error(const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kb_writer w = {0};
    kb_wr_str(&w, msg);
    int rc = send_frame(KB_WIRE_PROTOCOL_ERROR, &w);
    free(w.buf);
    return rc;
}

/* ---- request pieces ----------------------------------------------------- */

/* A buffer's reserved word (protocol 3): bits 0..1 a guard mode for an
 * input (KB_GUARD_END: it ends flush against an inaccessible page;
 * KB_GUARD_START: it starts right after one), bits 8..15 log2 of the
 * alignment its data needs, (protocol 4) bits 16..31 the bytes past its end
 * the realization declares it may read (KB_GUARD_END: the guard page then
 * starts that far past the end). The call then runs with the library's scratch
 * guarded the same way (kb_guard_set_mode) and every kernel and packer call
 * checked for the calling convention (kb_cc_set_checking). A read into a guard page is
 * reported on stderr ("kbench-guard: ...", naming the buffer) and the
 * worker exits with KB_EXIT_GUARD. */
#define KB_EXIT_GUARD 86

typedef struct buffer {
    unsigned char *data;
    size_t size;
    uint32_t flags; /* bit 0: return its bytes after the call */
    int guard;      /* KB_GUARD_*: data is a guarded mapping (kb_guard_alloc) */
} buffer;

typedef struct buffers {
    buffer *b;
    uint32_t n;
    int guard; /* the guard mode of the request's inputs */
} buffers;

static void free_buffers(buffers *bs) {
    for (uint32_t i = 0; i < bs->n; i++) {
        if (bs->b[i].guard)
            kb_guard_free(bs->b[i].data);
        else
            free(bs->b[i].data);
    }
    free(bs->b);
    bs->b = NULL;
    bs->n = 0;
    kb_guard_set_mode(KB_GUARD_OFF);
    kb_cc_set_checking(0);
}

/* Names the guarded buffer that holds p (for the report of a read past it). */
static void label_buffer(const buffers *bs, const void *p, const char *fmt, unsigned index) {
    if (!p || !bs->guard) return;
    for (uint32_t i = 0; i < bs->n; i++) {
        const buffer *b = &bs->b[i];
        if (b->guard && (const unsigned char *)p >= b->data && (const unsigned char *)p <= b->data + b->size) {
            char name[48];
            snprintf(name, sizeof name, fmt, index);
            kb_guard_name(b->data, name);
            return;
        }
    }
}

/* Reads the buffer table; false (with *why set) on a malformed table. */
static bool read_buffers(kb_reader *r, buffers *bs, const char **why) {
    bs->n = kb_rd_u32(r, "buffer count");
    bs->b = NULL;
    if (r->bad) return false;
    if (bs->n > MAX_BUFFERS || (size_t)bs->n * 16 > r->left) {
        *why = "buffer count exceeds the payload";
        bs->n = 0;
        return false;
    }
    bs->b = calloc(bs->n ? bs->n : 1, sizeof(buffer));
    if (!bs->b) { *why = "out of memory"; bs->n = 0; return false; }
    for (uint32_t i = 0; i < bs->n; i++) {
        uint64_t size = kb_rd_u64(r, "buffer size");
        uint32_t flags = kb_rd_u32(r, "buffer flags");
        uint32_t layout = kb_rd_u32(r, "buffer guard");
        if (r->bad) return false;
        int guard = (int)(layout & 3u);
        size_t align = (size_t)1 << ((layout >> 8) & 15u);
        if (guard > KB_GUARD_START) { *why = "buffer guard mode"; return false; }
        if (size > r->left) { *why = "buffer size exceeds the payload"; return false; }
        const unsigned char *src = kb_rd_bytes(r, (size_t)size, "buffer bytes");
        size_t padded = ((size_t)size + 7) & ~(size_t)7;
        kb_rd_bytes(r, padded - (size_t)size, "buffer padding");
        if (r->bad) return false;
        if (guard && !(flags & 1u)) { /* an input: guarded (outputs have kbench's guard bytes) */
            bs->b[i].data = kb_guard_alloc((size_t)size, align, guard, (size_t)(layout >> 16), "an input");
            if (!bs->b[i].data) { *why = "cannot map a guarded buffer"; return false; }
            bs->b[i].guard = guard;
            bs->guard = guard;
        } else {
            size_t alloc = ((size_t)size + 63) & ~(size_t)63;
            bs->b[i].data = aligned_alloc(64, alloc ? alloc : 64);
            if (!bs->b[i].data) { *why = "out of memory"; return false; }
        }
        memcpy(bs->b[i].data, src, (size_t)size);
        bs->b[i].size = (size_t)size;
        bs->b[i].flags = flags;
    }
    return true;
}

/* A pointer is a buffer index (-1 = NULL) and a byte offset inside it;
 * *avail (if given) receives the bytes from the pointer to its buffer's end. */
static void *read_ptr_avail(kb_reader *r, const buffers *bs, const char *what, bool *ok,
                            size_t *avail) {
    int32_t idx = kb_rd_i32(r, what);
    uint64_t off = kb_rd_u64(r, what);
    if (avail) *avail = 0;
    if (r->bad) return NULL;
    if (idx == -1) return NULL;
    if (idx < 0 || (uint32_t)idx >= bs->n || off > bs->b[idx].size) {
        *ok = false;
        return NULL;
    }
    if (avail) *avail = bs->b[idx].size - (size_t)off;
    return bs->b[idx].data + off;
}

/* ---- extents: a well-formed request whose dimensions exceed the buffers
 * sent with it is refused before the library touches them ------------------ */

static void worker_fail(kb_error *err, const char *field, const char *fmt, ...) {
    va_list ap;
    err->code = KB_ERR_INVALID_ARGUMENT;
    snprintf(err->field, sizeof err->field, "%s", field);
    int used = snprintf(err->message, sizeof err->message, "%s: ", field);
    va_start(ap, fmt);
    vsnprintf(err->message + used, sizeof err->message - (size_t)used, fmt, ap);
    va_end(ap);
}

/* Bytes of rows x ld FP16 elements whose last row holds cols of them, the
 * leading dimension taken as at least cols (a smaller one is the library's
 * error); false when a dimension is 0 or the count overflows (the library
 * refuses those calls before reading anything). */
static bool span_bytes(uint64_t rows, uint64_t cols, uint64_t ld, uint64_t *out) {
    if (!rows || !cols) return false;
    if (ld < cols) ld = cols;
    if (rows - 1 > UINT64_MAX / ld) return false;
    uint64_t s = (rows - 1) * ld;
    if (s > UINT64_MAX - cols) return false;
    s += cols;
    if (s > UINT64_MAX / 2) return false;
    *out = s * 2;
    return true;
}

/* Checks that a non-NULL pointer has need bytes behind it (need_known false:
 * nothing to check). Returns false with err filled otherwise. */
static bool extent_ok(const void *p, size_t avail, bool need_known, uint64_t need,
                      const char *field, kb_error *err) {
    if (!p || !need_known || need <= avail) return true;
    worker_fail(err, field, "the call reads %llu bytes, the buffer sent holds %zu after the pointer",
                (unsigned long long)need, avail);
    return false;
}

static bool product_bytes(const uint64_t *dims, int count, uint64_t *out) {
    uint64_t s = 2;
    for (int i = 0; i < count; i++) {
        if (!dims[i] || s > UINT64_MAX / dims[i]) return false;
        s *= dims[i];
    }
    *out = s;
    return true;
}

static kb_dispatch_table *current_table; /* the worker session's loaded table */
static int plugins_loaded;               /* plugins loaded into this worker (LOAD_PLUGIN) */

static void read_selector(kb_reader *r, kb_selector *sel, char *force) {
    kb_selector_default(sel);
    sel->disabled_backends = kb_rd_u32(r, "selector.disabled");
    int32_t cap = kb_rd_i32(r, "selector.isa_cap");
    if (cap >= 0 && cap <= KB_ISA_NO_CAP)
        sel->isa_cap = kb_isa_meet(cap, sel->isa_cap); /* within both this cap and KBENCH_ISA_CAP */
    else if (cap != -1)
        sel->isa_cap = cap; /* out of range: the library rejects it, naming the field */
    sel->threads = kb_rd_i32(r, "selector.threads");
    sel->verify_payload = (int)kb_rd_u32(r, "selector.verify_payload");
    sel->one_call = (int)kb_rd_u32(r, "selector.one_call");
    uint32_t flen = kb_rd_u32(r, "selector.force length");
    if (flen > MAX_FORCE) { r->bad = true; r->what = "selector.force length"; return; }
    const unsigned char *f = kb_rd_bytes(r, flen, "selector.force");
    if (f && flen) {
        memcpy(force, f, flen);
        force[flen] = '\0';
        sel->force = force;
    } else {
        sel->force = NULL;
    }
    sel->table = kb_rd_u32(r, "selector.use_table") ? current_table : NULL;
    sel->plugins = plugins_loaded > 0; /* a worker loads plugins only when asked to use them */
}

static int handle_load_table(kb_reader *r) {
    size_t len = r->left;
    const unsigned char *text = kb_rd_bytes(r, len, "table");
    kb_error err;
    kb_dispatch_table *t = NULL;
    kb_status st = kb_load_dispatch_table((const char *)text, len, &t, &err);
    if (st == KB_OK) {
        kb_free_dispatch_table(current_table);
        current_table = t;
    }
    kb_writer w = {0};
    kb_wr_i32(&w, st);
    kb_wr_str(&w, st ? err.field : "");
    kb_wr_str(&w, st ? err.message : "");
    kb_wr_u32(&w, (uint32_t)kb_dispatch_table_rules(st == KB_OK ? t : NULL));
    int rc = send_frame(KB_MSG_LOAD_TABLE | KB_WIRE_REPLY, &w);
    free(w.buf);
    return rc;
}

static void write_realization(kb_writer *w, const kb_realization *re) {
    kb_wr_str(w, re->name);
    kb_wr_str(w, re->backend);
    kb_wr_str(w, re->kernel);
    kb_wr_i32(w, re->op);
    kb_wr_i32(w, re->isa);
    kb_wr_i32(w, re->accum);
    kb_wr_u32(w, re->k_per_rounding);
    kb_wr_u32(w, re->bforms);
    kb_wr_u32(w, re->max_m);
    kb_wr_u32(w, re->max_groups);
    kb_wr_u32(w, re->conv_class);
    kb_wr_u32(w, re->error_model);
    kb_wr_u32(w, re->block_m); /* protocol 2 */
    kb_wr_u32(w, re->block_n);
    kb_wr_u32(w, re->block_k);
    kb_wr_u32(w, re->vector_bits);
    kb_wr_i32(w, re->threads);
    kb_wr_u32(w, re->nan_clamp); /* protocol 3 */
}


/* status, error, realization, times, returned buffers */
static void write_times(kb_writer *w, const double *times, uint32_t ntimes, uint32_t reps) {
    kb_wr_u32(w, ntimes);
    kb_wr_u32(w, reps);
    for (uint32_t i = 0; i < ntimes; i++) {
        uint64_t u;
        memcpy(&u, &times[i], 8);
        kb_wr_u64(w, u);
    }
}

static int reply_call(uint32_t type, kb_status st, const kb_error *err, const kb_realization *ran,
                      const double *times, uint32_t ntimes, uint32_t reps, const buffers *bs) {
    kb_writer w = {0};
    kb_wr_i32(&w, st);
    kb_wr_str(&w, st ? err->field : "");
    kb_wr_str(&w, st ? err->message : "");
    write_realization(&w, ran);
    write_times(&w, times, ntimes, reps);
    uint32_t nret = 0;
    for (uint32_t i = 0; i < bs->n; i++) nret += bs->b[i].flags & 1u;
    kb_wr_u32(&w, nret);
    for (uint32_t i = 0; i < bs->n; i++) {
        if (!(bs->b[i].flags & 1u)) continue;
        kb_wr_u32(&w, i);
        kb_wr_u32(&w, 0);
        kb_wr_u64(&w, bs->b[i].size);
        kb_wr_bytes(&w, bs->b[i].data, bs->b[i].size);
        kb_wr_zeros(&w, (8 - bs->b[i].size % 8) % 8); /* pad the bytes to a multiple of 8 */
    }
    kb_heap_write(&w); /* protocol 5: the call's heap figures (kb_heap.h) */
    int rc = w.oom ? protocol_error("out of memory building the reply") : send_frame(type | KB_WIRE_REPLY, &w);
    free(w.buf);
    return rc;
}

/* Every call must leave streaming mode and ZA off (kb_check_sme_state): a
 * call that did not fails with that error, whatever it returned. */
static kb_status with_state_check(kb_status st, kb_error *err) {
    kb_error state;
    if (kb_check_sme_state(&state) != KB_OK) {
        *err = state;
        return (kb_status)state.code;
    }
    return st;
}

/* ---- handlers ----------------------------------------------------------- */

/* FENCE: the worker calls this function and replies u32 KB_WIRE_PROTOCOL. A
 * client that reads the worker's execution log under QEMU (kbench.targets.
 * whatran) sends it after a request: the log of everything the request ran
 * lies before this function's entry. Not inlined, and called only here. */
__attribute__((noinline)) uint32_t kb_worker_fence(void);
__attribute__((noinline)) uint32_t kb_worker_fence(void) {
    __asm__ volatile("" ::: "memory");
    return KB_WIRE_PROTOCOL;
}

static int handle_fence(void) {
    kb_writer w = {0};
    kb_wr_u32(&w, kb_worker_fence());
    int rc = send_frame(KB_MSG_FENCE | KB_WIRE_REPLY, &w);
    free(w.buf);
    return rc;
}

static int handle_hello(void) {
    kb_writer w = {0};
    kb_cpu_info cpu;
    kb_cpu_detect(&cpu);
    kb_wr_u32(&w, KB_WIRE_PROTOCOL);
    kb_wr_str(&w, kb_version());
    kb_wr_str(&w, cpu.arch);
    kb_wr_u32(&w, cpu.features);
    kb_wr_u32(&w, cpu.sme_vector_bits);
    kb_wr_i32(&w, cpu.isa);
    uint32_t compiled = 0;
    for (int b = 0; b < KB_BACKEND_COUNT; b++)
        if (kb_backend_compiled(b)) compiled |= 1u << b;
    kb_wr_u32(&w, compiled);
    const char *cap = getenv("KBENCH_ISA_CAP");
    kb_wr_str(&w, cap ? cap : "");
    kb_selector all;
    kb_selector_default(&all);
    all.plugins = plugins_loaded > 0;
    size_t n = kb_list_realizations(&all, NULL, 0);
    kb_realization *rs = calloc(n ? n : 1, sizeof *rs);
    if (!rs) return protocol_error("out of memory");
    kb_list_realizations(&all, rs, n);
    kb_wr_u32(&w, (uint32_t)n);
    for (size_t i = 0; i < n; i++) write_realization(&w, &rs[i]);
    kb_wr_u64(&w, kb_cc_checked_calls()); /* protocol 3: calls checked for the ABI so far */
    /* trailing, read only where present (a worker of an older build sends
     * none): each realization's micro-kernel steps, in the order above */
    kb_wr_u32(&w, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        kb_wr_u32(&w, rs[i].m_step);
        kb_wr_u32(&w, rs[i].n_step);
        kb_wr_u32(&w, rs[i].kr);
    }
    kb_wr_u32(&w, cpu.sve_vector_bits); /* trailing too: the SVE vector length */
    free(rs);
    int rc = send_frame(KB_MSG_HELLO | KB_WIRE_REPLY, &w);
    free(w.buf);
    return rc;
}

/* Timing block: u32 warmup, u32 rounds (0 = just run), u64 min_round_ns,
 * u32 max_reps, u32 cold. */
static bool read_timing(kb_reader *r, kb_timing *t) {
    t->warmup = kb_rd_u32(r, "timing.warmup");
    t->rounds = kb_rd_u32(r, "timing.rounds");
    t->min_round_ns = kb_rd_u64(r, "timing.min_round_ns");
    t->max_reps = kb_rd_u32(r, "timing.max_reps");
    t->cold = (int)kb_rd_u32(r, "timing.cold");
#ifdef KB_WORKER_FUZZ
    /* the fuzz harness decodes timing blocks but keeps every run short */
    if (t->warmup > 1) t->warmup = 1;
    if (t->rounds > 2) t->rounds = 2;
    t->max_reps = 1;
    t->min_round_ns = 0;
    t->cold = 0;
#endif
    return !r->bad && t->warmup <= MAX_REPS && t->rounds <= MAX_REPS && t->max_reps <= MAX_REPS;
}

static int handle_gemm(kb_reader *r) {
    uint64_t M = kb_rd_u64(r, "M"), N = kb_rd_u64(r, "N"), K = kb_rd_u64(r, "K");
    uint32_t batch = kb_rd_u32(r, "batch");
    kb_selector sel;
    char force[MAX_FORCE + 1];
    read_selector(r, &sel, force);
    if (r->bad) return protocol_error("malformed GEMM request: truncated at %s", r->what);
    if (batch > MAX_BATCH) return protocol_error("GEMM batch of %u exceeds %u", batch, MAX_BATCH);
    buffers bs = {0};
    const char *why = "truncated";
    if (!read_buffers(r, &bs, &why)) {
        free_buffers(&bs);
        return protocol_error("malformed GEMM request: %s%s%s", why, r->bad ? " at " : "",
                              r->bad ? r->what : "");
    }
    kb_gemm_problem *ps = calloc(batch ? batch : 1, sizeof *ps);
    if (!ps) { free_buffers(&bs); return protocol_error("out of memory"); }
    bool ok = true, fits = true;
    kb_error err;
    memset(&err, 0, sizeof err);
    for (uint32_t i = 0; i < batch; i++) {
        kb_gemm_problem *p = &ps[i];
        size_t a_avail, b_avail, c_avail, bias_avail;
        p->A = read_ptr_avail(r, &bs, "A", &ok, &a_avail);
        p->lda = (size_t)kb_rd_u64(r, "lda");
        p->B = read_ptr_avail(r, &bs, "B", &ok, &b_avail);
        p->ldb = (size_t)kb_rd_u64(r, "ldb");
        p->b_size = (size_t)kb_rd_u64(r, "b_size");
        p->C = read_ptr_avail(r, &bs, "C", &ok, &c_avail);
        p->ldc = (size_t)kb_rd_u64(r, "ldc");
        p->bias = read_ptr_avail(r, &bs, "bias", &ok, &bias_avail);
        p->clamp_min = kb_rd_f32(r, "clamp_min");
        p->clamp_max = kb_rd_f32(r, "clamp_max");
        p->b_is_packed = (int)kb_rd_u32(r, "b_is_packed");
        p->b_is_backend_native_packed = (int)kb_rd_u32(r, "b_is_backend_native_packed");
        label_buffer(&bs, p->A, "A[%u]", i);
        label_buffer(&bs, p->B, p->b_is_packed ? "packed B[%u]" : "B[%u]", i);
        label_buffer(&bs, p->bias, "bias[%u]", i);
        if (r->bad || !ok || !fits) continue;
        char f[KB_FIELD_LEN];
        uint64_t need = 0;
        bool known;
        known = span_bytes(M, K, p->lda, &need);
        snprintf(f, sizeof f, "problems[%u].A", i);
        fits = extent_ok(p->A, a_avail, known, need, f, &err);
        if (p->b_is_packed) {
            known = true;
            need = p->b_size;
        } else {
            known = span_bytes(K, N, p->ldb, &need);
        }
        snprintf(f, sizeof f, "problems[%u].%s", i, p->b_is_packed ? "b_size" : "B");
        fits = fits && extent_ok(p->B, b_avail, known, need, f, &err);
        known = span_bytes(M, N, p->ldc, &need);
        snprintf(f, sizeof f, "problems[%u].C", i);
        fits = fits && extent_ok(p->C, c_avail, known, need, f, &err);
        known = N > 0 && N <= UINT64_MAX / 2;
        snprintf(f, sizeof f, "problems[%u].bias", i);
        fits = fits && extent_ok(p->bias, bias_avail, known, N * 2, f, &err);
    }
    kb_timing tm;
    bool timing_ok = read_timing(r, &tm);
    int rc;
    if (r->bad || !ok || !timing_ok) {
        rc = protocol_error("malformed GEMM request: %s%s", r->bad ? "truncated at " : "",
                            r->bad ? r->what : !ok ? "pointer outside its buffer" : "repetition count too large");
    } else if (!fits) {
        kb_realization none;
        memset(&none, 0, sizeof none);
        rc = reply_call(KB_MSG_GEMM, KB_ERR_INVALID_ARGUMENT, &err, &none, NULL, 0, 0, &bs);
    } else {
        kb_realization ran;
        memset(&ran, 0, sizeof ran);
        kb_status st;
        double *times = NULL;
        uint32_t reps = 0;
        kb_guard_set_mode(bs.guard);
        kb_cc_set_checking(bs.guard != KB_GUARD_OFF); /* a checking run: the ABI too */
        kb_heap_begin(sel.force, tm.rounds != 0, bs.guard != KB_GUARD_OFF);
        if (tm.rounds) {
            times = malloc(sizeof(double) * tm.rounds);
            st = times ? kb_time_gemm((size_t)M, (size_t)N, (size_t)K, batch ? ps : NULL, batch, &sel, &tm, times, &reps, &ran, &err)
                       : KB_ERR_OUT_OF_MEMORY;
        } else {
            st = kb_gemm_batch((size_t)M, (size_t)N, (size_t)K, batch ? ps : NULL, batch, &sel, &ran, &err);
        }
        kb_heap_end();
        st = with_state_check(st, &err);
        rc = reply_call(KB_MSG_GEMM, st, &err, &ran, times, (st == KB_OK && times) ? tm.rounds : 0, reps, &bs);
        free(times);
    }
    free(ps);
    free_buffers(&bs);
    return rc;
}

static int handle_conv(kb_reader *r) {
    kb_conv_desc d;
    memset(&d, 0, sizeof d);
    size_t *fields[] = {&d.n, &d.h, &d.w, &d.c_in, &d.c_out, &d.kh, &d.kw, &d.stride_h, &d.stride_w,
                        &d.pad_top, &d.pad_bottom, &d.pad_left, &d.pad_right, &d.dil_h, &d.dil_w, &d.groups};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) *fields[i] = (size_t)kb_rd_u64(r, "conv desc");
    d.clamp_min = kb_rd_f32(r, "clamp_min");
    d.clamp_max = kb_rd_f32(r, "clamp_max");
    kb_selector sel;
    char force[MAX_FORCE + 1];
    read_selector(r, &sel, force);
    if (r->bad) return protocol_error("malformed CONV request: truncated at %s", r->what);
    buffers bs = {0};
    const char *why = "truncated";
    if (!read_buffers(r, &bs, &why)) {
        free_buffers(&bs);
        return protocol_error("malformed CONV request: %s", why);
    }
    bool ok = true;
    size_t in_avail, flt_avail, bias_avail, out_avail;
    const kb_f16 *in = read_ptr_avail(r, &bs, "input", &ok, &in_avail);
    const kb_f16 *flt = read_ptr_avail(r, &bs, "filter", &ok, &flt_avail);
    const kb_f16 *bias = read_ptr_avail(r, &bs, "bias", &ok, &bias_avail);
    kb_f16 *out = read_ptr_avail(r, &bs, "output", &ok, &out_avail);
    kb_timing tm;
    bool timing_ok = read_timing(r, &tm);
    kb_error err;
    memset(&err, 0, sizeof err);
    bool fits = true;
    size_t oh = 0, ow = 0;
    kb_error shape_err;
    if (!r->bad && ok && kb_conv2d_output_shape(&d, &oh, &ow, &shape_err) == KB_OK) {
        /* a descriptor the library refuses is its error; this one it would run */
        uint64_t dims[4][4] = {{d.n, d.h, d.w, d.c_in}, {d.kh, d.kw, d.c_in / d.groups, d.c_out},
                               {d.c_out, 1, 1, 1}, {d.n, oh, ow, d.c_out}};
        const void *ptrs[4] = {in, flt, bias, out};
        size_t avail[4] = {in_avail, flt_avail, bias_avail, out_avail};
        static const char *names[4] = {"input", "filter", "bias", "output"};
        for (int i = 0; i < 4 && fits; i++) {
            uint64_t need = 0;
            bool known = product_bytes(dims[i], 4, &need);
            fits = extent_ok(ptrs[i], avail[i], known, need, names[i], &err);
        }
    }
    int rc;
    if (r->bad || !ok || !timing_ok) {
        rc = protocol_error("malformed CONV request: %s%s", r->bad ? "truncated at " : "",
                            r->bad ? r->what : !ok ? "pointer outside its buffer" : "repetition count too large");
    } else if (!fits) {
        kb_realization none;
        memset(&none, 0, sizeof none);
        rc = reply_call(KB_MSG_CONV, KB_ERR_INVALID_ARGUMENT, &err, &none, NULL, 0, 0, &bs);
    } else {
        kb_realization ran;
        memset(&ran, 0, sizeof ran);
        kb_status st;
        double *times = NULL;
        uint32_t reps = 0;
        label_buffer(&bs, in, "the input%.0u", 0);
        label_buffer(&bs, flt, "the filter%.0u", 0);
        label_buffer(&bs, bias, "the bias%.0u", 0);
        kb_guard_set_mode(bs.guard);
        kb_cc_set_checking(bs.guard != KB_GUARD_OFF); /* a checking run: the ABI too */
        kb_heap_begin(sel.force, tm.rounds != 0, bs.guard != KB_GUARD_OFF);
        if (tm.rounds) {
            times = malloc(sizeof(double) * tm.rounds);
            st = times ? kb_time_conv(&d, in, flt, bias, out, &sel, &tm, times, &reps, &ran, &err) : KB_ERR_OUT_OF_MEMORY;
        } else {
            st = kb_conv2d(&d, in, flt, bias, out, &sel, &ran, &err);
        }
        kb_heap_end();
        st = with_state_check(st, &err);
        rc = reply_call(KB_MSG_CONV, st, &err, &ran, times, (st == KB_OK && times) ? tm.rounds : 0, reps, &bs);
        free(times);
    }
    free_buffers(&bs);
    return rc;
}

/* PACK modes (low byte): 0 portable, 1 the backend's native layout, 2 a
 * plugin realization's own packer (selector.force names it), 3 the LHS
 * packer of a plugin realization (N is M, K is K, B is A, ldb is lda). Bit
 * 16 set: bits 8..15 are the byte the destination is filled with before
 * packing (default 0xA5), so that a packer run twice over two patterns
 * shows any byte it leaves unwritten. */
#define PACK_MODE_MASK 0xffu
#define PACK_FILL_GIVEN (1u << 16)

static int handle_pack(kb_reader *r) {
    uint32_t raw_mode = kb_rd_u32(r, "mode");
    uint32_t mode = raw_mode & PACK_MODE_MASK;
    int fill = (raw_mode & PACK_FILL_GIVEN) ? (int)((raw_mode >> 8) & 0xffu) : 0xA5;
    int32_t backend = kb_rd_i32(r, "backend");
    uint64_t N = kb_rd_u64(r, "N"), K = kb_rd_u64(r, "K"), ldb = kb_rd_u64(r, "ldb");
    kb_selector sel;
    char force[MAX_FORCE + 1];
    read_selector(r, &sel, force);
    if (r->bad) return protocol_error("malformed PACK request: truncated at %s", r->what);
    buffers bs = {0};
    const char *why = "truncated";
    if (!read_buffers(r, &bs, &why)) {
        free_buffers(&bs);
        return protocol_error("malformed PACK request: %s", why);
    }
    bool ok = true;
    size_t b_avail, bias_avail;
    const kb_f16 *B = read_ptr_avail(r, &bs, "B", &ok, &b_avail);
    const kb_f16 *bias = read_ptr_avail(r, &bs, "bias", &ok, &bias_avail);
    uint64_t dst_size = kb_rd_u64(r, "dst_size");
    kb_timing tm;
    bool timing_ok = read_timing(r, &tm);
    if (r->bad || !ok || !timing_ok) {
        free_buffers(&bs);
        return protocol_error("malformed PACK request: %s%s", r->bad ? "truncated at " : "",
                              r->bad ? r->what : "pointer outside its buffer");
    }
    kb_error err;
    kb_status st = KB_OK;
    uint64_t need = 0;
    bool known = mode == 3 ? span_bytes(N, K, ldb, &need) : span_bytes(K, N, ldb, &need);
    if (mode > 3) {
        free_buffers(&bs);
        return protocol_error("malformed PACK request: mode %u", mode);
    }
    if (!extent_ok(B, b_avail, known, need, mode == 3 ? "A" : "B", &err) ||
        ((mode == 1 || mode == 2) && !extent_ok(bias, bias_avail, N > 0 && N <= UINT64_MAX / 2, N * 2, "bias", &err)))
        st = KB_ERR_INVALID_ARGUMENT;
    size_t size = (size_t)dst_size;
    if ((mode == 2 || mode == 3) && !sel.force) {
        free_buffers(&bs);
        return protocol_error("malformed PACK request: mode %u names no plugin realization", mode);
    }
    if (st == KB_OK && dst_size == 0) {
        st = mode == 0 ? kb_pack_b_size((size_t)N, (size_t)K, &size, &err)
           : mode == 2 ? kb_pack_b_plugin_size(sel.force, (size_t)N, (size_t)K, &size, &err)
           : mode == 3 ? kb_pack_lhs_plugin_size(sel.force, (size_t)N, (size_t)K, &size, &err)
                       : kb_pack_b_native_size(backend, (size_t)N, (size_t)K, &sel, &size, &err);
    }
    unsigned char *dst = NULL;
    if (st == KB_OK) {
        /* the reply carries the packed bytes after status, two strings, the
         * times and the size: all of it must fit in one frame */
        uint64_t overhead = 4 + 4 + KB_FIELD_LEN + 4 + KB_MESSAGE_LEN + 8 + 8 * (uint64_t)tm.rounds + 8;
#ifdef KB_WORKER_FUZZ
        /* the fuzz harness keeps replies small: a destination of up to 1 GiB is
         * legal, but would only measure the machine's memory */
        if (size > ((size_t)1 << 22)) {
            free_buffers(&bs);
            return protocol_error("fuzzing: packed size %zu above 4 MiB", size);
        }
#endif
        if (size > KB_WIRE_MAX_PAYLOAD - overhead) {
            free_buffers(&bs);
            return protocol_error("packed size %zu and its reply exceed the frame limit of %llu bytes", size,
                                  (unsigned long long)KB_WIRE_MAX_PAYLOAD);
        }
        dst = calloc(size ? size : 1, 1);
        if (!dst) { free_buffers(&bs); return protocol_error("out of memory"); }
        memset(dst, fill, size); /* a packer must write every byte, padding included */
        label_buffer(&bs, B, mode == 3 ? "A%.0u" : "B%.0u", 0);
        label_buffer(&bs, bias, "bias%.0u", 0);
        kb_guard_set_mode(bs.guard);
        /* a plugin's packer is checked for the calling convention whenever it packs
         * outside a timed request (its bytes then feed a checking run or a check) */
        kb_cc_set_checking(bs.guard != KB_GUARD_OFF || (mode >= 2 && tm.rounds == 0));
        /* what a plugin's packer keeps is its realization's (the reply does not say it) */
        kb_heap_begin(mode >= 2 ? sel.force : "", 0, bs.guard != KB_GUARD_OFF);
        st = mode == 0 ? kb_pack_b((size_t)N, (size_t)K, B, (size_t)ldb, dst, size, &err)
           : mode == 2 ? kb_pack_b_plugin(sel.force, (size_t)N, (size_t)K, B, (size_t)ldb, bias, dst, size, &err)
           : mode == 3 ? kb_pack_lhs_plugin(sel.force, (size_t)N, (size_t)K, B, (size_t)ldb, dst, size, &err)
                       : kb_pack_b_native(backend, (size_t)N, (size_t)K, B, (size_t)ldb, bias, dst, size, &sel, &err);
        kb_heap_end();
        kb_heap_forget();
    }
    double *times = NULL;
    uint32_t reps = 0;
    if (st == KB_OK && tm.rounds && mode == 3) {
        worker_fail(&err, "timing", "the LHS packer of a plugin is checked, not timed");
        st = KB_ERR_UNSUPPORTED;
    } else if (st == KB_OK && tm.rounds) {
        times = malloc(sizeof(double) * tm.rounds);
        kb_heap_begin(NULL, 1, 0); /* timed: not counted */
        if (!times)
            st = KB_ERR_OUT_OF_MEMORY;
        else if (mode == 2)
            st = kb_time_pack_b_plugin(sel.force, (size_t)N, (size_t)K, B, (size_t)ldb, bias, dst, size, &tm, times,
                                       &reps, &err);
        else
            st = kb_time_pack_b(mode == 0 ? -1 : backend, (size_t)N, (size_t)K, B, (size_t)ldb, bias, dst, size,
                                &sel, &tm, times, &reps, &err);
        kb_heap_end();
        kb_heap_forget();
    }
    st = with_state_check(st, &err);
    kb_writer w = {0};
    kb_wr_i32(&w, st);
    kb_wr_str(&w, st ? err.field : "");
    kb_wr_str(&w, st ? err.message : "");
    write_times(&w, times, (st == KB_OK && times) ? tm.rounds : 0, reps);
    free(times);
    kb_wr_u64(&w, st == KB_OK ? size : 0);
    if (st == KB_OK) kb_wr_bytes(&w, dst, size);
    int rc = w.oom ? protocol_error("out of memory building the reply") : send_frame(KB_MSG_PACK | KB_WIRE_REPLY, &w);
    free(w.buf);
    free(dst);
    free_buffers(&bs);
    return rc;
}

/* SET_SVL (sve = 0) and SET_SVE_VL (sve = 1): u32 bits. Reply: i32 status,
 * str message, u32 the vector length now (bits). The kernel rounds a length
 * it does not offer down to one it does; the reply says which it chose. */
static int handle_set_vl(kb_reader *r, int sve) {
    uint32_t bits = kb_rd_u32(r, "bits");
    uint32_t type = sve ? KB_MSG_SET_SVE_VL : KB_MSG_SET_SVL;
    if (r->bad) return protocol_error(sve ? "malformed SET_SVE_VL request" : "malformed SET_SVL request");
    kb_writer w = {0};
    int32_t st = KB_ERR_UNSUPPORTED;
    uint32_t now = 0;
    const char *msg = sve ? "selector: this CPU has no SVE vector length"
                          : "selector: this CPU has no SME streaming vector length";
#if defined(__aarch64__) && defined(__linux__)
    kb_cpu_info cpu;
    kb_cpu_detect(&cpu);
    if (cpu.features & (sve ? KB_CPU_SVE : KB_CPU_SME)) {
        int rv = prctl(sve ? PR_SVE_SET_VL : PR_SME_SET_VL, (unsigned long)(bits / 8), 0, 0, 0);
        kb_cpu_detect(&cpu);
        now = sve ? cpu.sve_vector_bits : cpu.sme_vector_bits;
        if (rv < 0) {
            st = KB_ERR_INVALID_ARGUMENT;
            msg = sve ? "bits: the kernel refused this SVE vector length"
                      : "bits: the kernel refused this streaming vector length";
        } else {
            st = KB_OK;
            msg = "";
        }
    }
#else
    (void)bits;
#endif
    kb_wr_i32(&w, st);
    kb_wr_str(&w, msg);
    kb_wr_u32(&w, now);
    int rc = send_frame(type | KB_WIRE_REPLY, &w);
    free(w.buf);
    return rc;
}

#ifndef KB_WORKER_FUZZ /* the fuzzer never loads libraries it names */
/* LOAD_PLUGIN: payload = the library's path. Reply: i32 status, str field,
 * str message; on success the plugin (str name, version, path, description,
 * u32 abi_version, u32 count) and per declared realization str name, i32 op,
 * i32 form, i32 isa, u32 thread_safe, u32 bias_first, u32 usable, str note,
 * and (protocol 3) u32 nan_clamp, str rhs_layout, str lhs_layout, u32 mr, nr, kr,
 * and (protocol 4) u32 flags, u32 overread[8], u64 scratch_cap, str expect_symbols. */
static int handle_load_plugin(kb_reader *r) {
    char path[KB_PLUGIN_PATH_LEN];
    size_t len = r->left;
    if (len == 0 || len >= sizeof path) return protocol_error("malformed LOAD_PLUGIN request: path of %zu bytes", len);
    memcpy(path, kb_rd_bytes(r, len, "path"), len);
    path[len] = '\0';
    kb_error err;
    kb_plugin_info info;
    kb_status st = kb_plugin_load(path, &info, &err);
    kb_writer w = {0};
    kb_wr_i32(&w, st);
    kb_wr_str(&w, st ? err.field : "");
    kb_wr_str(&w, st ? err.message : "");
    if (st == KB_OK) {
        plugins_loaded = 1;
        kb_wr_str(&w, info.name);
        kb_wr_str(&w, info.version);
        kb_wr_str(&w, info.path);
        kb_wr_str(&w, info.description);
        kb_wr_u32(&w, info.abi_version);
        kb_wr_u32(&w, info.realizations);
        size_t index = 0;
        for (size_t i = 0; i < kb_plugin_count(); i++) {
            kb_plugin_info other;
            if (kb_plugin_get(i, &other, &err) == KB_OK && !strcmp(other.path, info.path)) index = i;
        }
        for (uint32_t i = 0; i < info.realizations; i++) {
            kb_plugin_realization_info ri;
            memset(&ri, 0, sizeof ri);
            kb_plugin_realization_get(index, i, &ri, &err);
            kb_wr_str(&w, ri.name);
            kb_wr_i32(&w, ri.op);
            kb_wr_i32(&w, ri.form);
            kb_wr_i32(&w, ri.isa);
            kb_wr_u32(&w, (uint32_t)ri.thread_safe);
            kb_wr_u32(&w, (uint32_t)ri.bias_first);
            kb_wr_u32(&w, (uint32_t)ri.usable);
            kb_wr_str(&w, ri.note);
            kb_wr_u32(&w, (uint32_t)ri.nan_clamp);
            kb_wr_str(&w, ri.rhs_layout);
            kb_wr_str(&w, ri.lhs_layout);
            kb_wr_u32(&w, ri.mr);
            kb_wr_u32(&w, ri.nr);
            kb_wr_u32(&w, ri.kr);
            kb_wr_u32(&w, ri.flags); /* protocol 4 */
            for (int o = 0; o < 8; o++) kb_wr_u32(&w, ri.overread[o]);
            kb_wr_u64(&w, ri.scratch_cap);
            kb_wr_str(&w, ri.expect_symbols);
        }
    }
    int rc = w.oom ? protocol_error("out of memory building the reply") : send_frame(KB_MSG_LOAD_PLUGIN | KB_WIRE_REPLY, &w);
    free(w.buf);
    return rc;
}
#endif

/* CODE_MAP: where the code of this process lies, for the instruction
 * counter (kbench.targets.counting), which must find kbench's functions
 * and a plugin's in a process whose objects the dynamic loader placed.
 * Reply: u32 objects, each str path ("" for the worker itself), u64 load
 * bias, u32 segments, each u64 start, u64 end (executable PT_LOAD ranges);
 * then u32 plugins, each str name, u32 realizations, each str name, u32
 * entries, each str phase, str field, u64 address (kb_plugin_code_entries). */
typedef struct code_map_walk {
    kb_writer *w;
    uint32_t objects;
} code_map_walk;

static int code_map_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    code_map_walk *walk = data;
    uint32_t segments = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X)) segments++;
    if (!segments) return 0;
    kb_wr_str(walk->w, info->dlpi_name ? info->dlpi_name : "");
    kb_wr_u64(walk->w, (uint64_t)info->dlpi_addr);
    kb_wr_u32(walk->w, segments);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        kb_wr_u64(walk->w, (uint64_t)(info->dlpi_addr + ph->p_vaddr));
        kb_wr_u64(walk->w, (uint64_t)(info->dlpi_addr + ph->p_vaddr + ph->p_memsz));
    }
    walk->objects++;
    return 0;
}

static int handle_code_map(void) {
    kb_writer objects = {0}, w = {0};
    code_map_walk walk = {&objects, 0};
    dl_iterate_phdr(code_map_object, &walk);
    kb_wr_u32(&w, walk.objects);
    kb_wr_bytes(&w, objects.buf, objects.len);
    free(objects.buf);
    size_t count = kb_plugin_count();
    kb_wr_u32(&w, (uint32_t)count);
    for (size_t p = 0; p < count; p++) {
        kb_error err;
        kb_plugin_info info;
        memset(&info, 0, sizeof info);
        kb_plugin_get(p, &info, &err);
        kb_wr_str(&w, info.name);
        kb_wr_u32(&w, info.realizations);
        for (uint32_t i = 0; i < info.realizations; i++) {
            kb_plugin_realization_info ri;
            memset(&ri, 0, sizeof ri);
            kb_plugin_realization_get(p, i, &ri, &err);
            kb_plugin_code_entry entries[KB_PLUGIN_MAX_CODE_ENTRIES];
            size_t n = 0;
            if (kb_plugin_code_entries(p, i, entries, KB_PLUGIN_MAX_CODE_ENTRIES, &n, &err) != KB_OK) n = 0;
            if (n > KB_PLUGIN_MAX_CODE_ENTRIES) n = KB_PLUGIN_MAX_CODE_ENTRIES;
            kb_wr_str(&w, ri.name);
            kb_wr_u32(&w, (uint32_t)n);
            for (size_t e = 0; e < n; e++) {
                kb_wr_str(&w, entries[e].phase);
                kb_wr_str(&w, entries[e].field);
                kb_wr_u64(&w, entries[e].address);
            }
        }
    }
    int rc = (w.oom || objects.oom) ? protocol_error("out of memory building the reply")
                                    : send_frame(KB_MSG_CODE_MAP | KB_WIRE_REPLY, &w);
    free(w.buf);
    return rc;
}

#define FRAME_SHUTDOWN 1000

/* Answers one frame whose header has been read: 0, FRAME_SHUTDOWN after a
 * shutdown request, another value when the reply could not be written. */
static int handle_frame(uint32_t type, const unsigned char *payload, size_t len) {
    kb_reader r = {payload, len, false, NULL};
    switch (type) {
    case KB_MSG_HELLO: return handle_hello();
    case KB_MSG_GEMM: return handle_gemm(&r);
    case KB_MSG_CONV: return handle_conv(&r);
    case KB_MSG_PACK: return handle_pack(&r);
    case KB_MSG_SET_SVL: return handle_set_vl(&r, 0);
    case KB_MSG_SET_SVE_VL: return handle_set_vl(&r, 1);
    case KB_MSG_LOAD_TABLE: return handle_load_table(&r);
    case KB_MSG_CODE_MAP: return handle_code_map();
    case KB_MSG_FENCE: return handle_fence();
#ifndef KB_WORKER_FUZZ /* the fuzzer never loads libraries it names */
    case KB_MSG_LOAD_PLUGIN: return handle_load_plugin(&r);
#endif
    case KB_MSG_SHUTDOWN:
        send_frame(KB_MSG_SHUTDOWN | KB_WIRE_REPLY, NULL);
        return FRAME_SHUTDOWN;
    default: return protocol_error("unknown message type %u", type);
    }
}

#ifdef KB_WORKER_FUZZ
/* The frame decoder over a byte string instead of stdin (native/fuzz):
 * frames are decoded and answered as main() does, replies go to fd, the
 * session's dispatch table is dropped at the end. Returns 0 at the end of
 * the input or after a shutdown, 3 where main() would exit with 3. */
int kb_worker_decode_frames(const unsigned char *data, size_t n, int fd) {
    out_fd = fd;
    int status = 0;
    while (n > 0) {
        if (n < 16) { protocol_error("truncated frame header"); status = 3; break; }
        kb_reader hr = {data, 16, false, NULL};
        uint32_t magic = kb_rd_u32(&hr, "magic"), type = kb_rd_u32(&hr, "type");
        uint64_t len = kb_rd_u64(&hr, "length");
        data += 16;
        n -= 16;
        if (magic != KB_WIRE_MAGIC) { protocol_error("bad frame magic 0x%08x", magic); status = 3; break; }
        if (len > KB_WIRE_MAX_PAYLOAD || len > n) { protocol_error("truncated or oversized frame"); status = 3; break; }
        /* a copy of exactly the payload, so that any read past it is caught */
        unsigned char *payload = malloc(len ? (size_t)len : 1);
        if (!payload) { status = 3; break; }
        memcpy(payload, data, (size_t)len);
        int rc = handle_frame(type, payload, (size_t)len);
        free(payload);
        data += len;
        n -= (size_t)len;
        if (rc != 0) break;
    }
    kb_free_dispatch_table(current_table);
    current_table = NULL;
    return status;
}
#else
/* A fault inside a guard page (kb_guard_alloc): one line naming the buffer on
 * stderr, then exit with KB_EXIT_GUARD. Any other fault keeps its default
 * action (the worker dies with the signal, as before). */
/* The faulting instruction's address, or 0 where the context is not known. */
static uintptr_t fault_pc(void *uctx) {
    const ucontext_t *uc = uctx;
    if (!uc) return 0;
#if defined(__aarch64__) && defined(__linux__)
    return (uintptr_t)uc->uc_mcontext.pc;
#elif defined(__x86_64__) && defined(__linux__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#else
    return 0;
#endif
}

/* " in <call>" (the kernel or packer call the checking trampoline is in) and
 * " at <object>+0x<offset>" (where the faulting instruction lies, for the
 * Python side to name its function from the object's symbols). */
static void where(char *msg, size_t len, void *uctx) {
    size_t used = strlen(msg);
    const char *call = kb_cc_current_call();
    if (call && used < len) used += (size_t)snprintf(msg + used, len - used, " in %s", call);
    uintptr_t pc = fault_pc(uctx);
    if (!pc || used >= len) return;
#if !defined(KB_NO_DLOPEN)
    Dl_info dl;
    if (dladdr((void *)pc, &dl) && dl.dli_fname && dl.dli_fbase) {
        snprintf(msg + used, len - used, " at %s+0x%llx", dl.dli_fname,
                 (unsigned long long)(pc - (uintptr_t)dl.dli_fbase));
        return;
    }
#endif
    snprintf(msg + used, len - used, " at 0x%llx", (unsigned long long)pc);
}

static void on_fault(int sig, siginfo_t *info, void *uctx) {
    char msg[1024];
    if (info && kb_guard_describe(info->si_addr, msg, sizeof msg)) {
        static const char head[] = "kbench-guard: ";
        where(msg, sizeof msg, uctx);
        if (write(2, head, sizeof head - 1) < 0 || write(2, msg, strlen(msg)) < 0 || write(2, "\n", 1) < 0) {
            /* stderr gone: the exit status still says it */
        }
        _exit(KB_EXIT_GUARD);
    }
    signal(sig, SIG_DFL); /* returns to the faulting instruction, which faults again */
}

static void catch_guard_faults(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    catch_guard_faults();
    for (;;) {
        unsigned char hdr[16];
        long got = read_full(0, hdr, sizeof hdr, 0);
        if (got == 0) return 0; /* the client closed the pipe between frames */
        if (got < 0) {
            protocol_error(got == -2 ? "timed out inside a frame header" : "truncated frame header");
            return 3;
        }
        kb_reader hr = {hdr, sizeof hdr, false, NULL};
        uint32_t magic = kb_rd_u32(&hr, "magic"), type = kb_rd_u32(&hr, "type");
        uint64_t len = kb_rd_u64(&hr, "length");
        if (magic != KB_WIRE_MAGIC) {
            protocol_error("bad frame magic 0x%08x (expected 0x%08x)", magic, KB_WIRE_MAGIC);
            return 3;
        }
        if (len > KB_WIRE_MAX_PAYLOAD) {
            protocol_error("frame payload of %llu bytes exceeds the limit of %llu",
                           (unsigned long long)len, (unsigned long long)KB_WIRE_MAX_PAYLOAD);
            return 3;
        }
        unsigned char *payload = malloc(len ? (size_t)len : 1);
        if (!payload) {
            protocol_error("out of memory for a %llu-byte frame", (unsigned long long)len);
            return 3;
        }
        if (len && read_full(0, payload, (size_t)len, 1) != (long)len) {
            protocol_error("truncated or stalled frame payload");
            free(payload);
            return 3;
        }
        int rc = handle_frame(type, payload, (size_t)len);
        free(payload);
        if (rc == FRAME_SHUTDOWN) return 0;
        if (rc != 0) return 4; /* stdout is gone */
    }
}
#endif /* KB_WORKER_FUZZ */
