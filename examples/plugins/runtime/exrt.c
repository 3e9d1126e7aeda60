/* exrt.c — example plugin: a whole-call FP16 GEMM that behaves like a
 * runtime's (ONNX Runtime's MLAS: KleidiAI's SME2 kernels where the CPU has
 * SME2, an SVE2.1 kernel on a CPU with SVE2.1 and no SME, NEON otherwise).
 * Our own code; see docs/runtime.md for what it declares and why.
 *
 *   - One realization, exrt.gemm, picks its path at run time from the CPU
 *     (getauxval: SME2, then SVE2.1, then NEON FP16), in every call and in
 *     every pack_b, like a runtime's dispatcher. Its declared ISA is the lowest
 *     it needs (NEON FP16); built for a machine that is not aarch64 it has one
 *     portable C path and declares none.
 *   - Every path computes the same declared model: FP32 accumulation starting
 *     from the bias, at most one rounding per product, clamp in FP32 with NaN
 *     passing through (KB_PLUGIN_NAN_PROPAGATE: the SME2 kernel's FMAX/FMIN,
 *     compare and select elsewhere), one rounding to FP16.
 *   - Its own packed B (pack_b) takes no bias (KB_PLUGIN_PACK_NO_BIAS): a call
 *     with its packed B and a bias is refused (KB_ERR_CONTRACT), as MLAS
 *     refuses it. The packed B is a header (exrt.h) and the layout of the path
 *     that packed it, which for SME2 and SVE2.1 depends on the vector length;
 *     a B packed by another path, at another vector length, for another N or
 *     K, or cut short is refused with a message.
 *   - The NEON path reads up to 32 bytes past the end of plain B and of the
 *     bias on purpose (exrt_neon.c), declared in overread[].
 *   - Scratch (packed operands of a plain-B call) is the calling thread's,
 *     kept between calls up to 8 MiB; a larger buffer is released when the
 *     call returns (KB_PLUGIN_SCRATCH_CAPPED, scratch_cap = 8 MiB).
 *   - expect_symbols names each path's functions by ISA class.
 *
 * Planted defects, each a compile-time switch built as a library of its own
 * (examples/plugins/Makefile), for the checks that must find them:
 *   EXRT_STALE_VL      the header's vector length is not checked (the SME2 and
 *                      SVE2.1 paths): a B packed at another vector length is
 *                      accepted when it is large enough, and the result is
 *                      wrong (MLAS's SME path stores no vector length)
 *   EXRT_OVERREAD_33   the NEON path reads 33 bytes past plain B (exrt_neon.c)
 *   EXRT_FALLBACK      on a CPU with SME2 every call and pack silently runs the
 *                      NEON path (right results, the wrong code)
 *   EXRT_KEEP_SCRATCH  scratch larger than the cap is kept after the call
 *   EXRT_LEAK          each call leaks a 4096-byte record
 */
#include "exrt.h"

#include "../common/exfp16.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

#define EXPORT __attribute__((visibility("default")))

#define EXRT_SCRATCH_CAP ((size_t)8 << 20)
/* a buffer is kept only up to the cap less room for this thread's bookkeeping
 * (its exrt_scratch record) and the allocator's headers, so what the thread
 * holds after a call stays within the declared cap */
#define EXRT_SCRATCH_KEEP (EXRT_SCRATCH_CAP - 4096u)
#define EXRT_LEAK_BYTES 4096u

/* ---- the dispatcher -------------------------------------------------------------- */

#if defined(__aarch64__)
#define EXRT_HWCAP_FPHP (1ul << 9)
#define EXRT_HWCAP_ASIMDHP (1ul << 10)
#define EXRT_HWCAP2_SVE2P1 (1ul << 36)
#define EXRT_HWCAP2_SME2 (1ul << 37)

/* The path this CPU runs: SME2, else SVE2.1, else NEON FP16 (kbench checks the
 * declared NEON FP16 before it calls anything). */
static const exrt_path_ops *exrt_dispatch(void) {
    unsigned long hw2 = getauxval(AT_HWCAP2);
    if (hw2 & EXRT_HWCAP2_SME2) {
#ifdef EXRT_FALLBACK
        return &exrt_neon_ops; /* the planted defect: SME2 declined without a word */
#else
        return &exrt_sme2_ops;
#endif
    }
    if (hw2 & EXRT_HWCAP2_SVE2P1) return &exrt_sve2p1_ops;
    return &exrt_neon_ops;
}
#define EXRT_ISA KB_ISA_NEON_FP16
#else
/* ---- the portable path (a machine that is not aarch64) ----------------------------
 * B (plain, or its packed rows of roundup(N, 16) values) widened to FP32 in
 * the calling thread's scratch, then per element the FP32 chain from the bias
 * in increasing k, clamp (NaN passes), one rounding: the model of the other
 * paths. Its packed B is the NEON path's layout. */
static size_t exrt_portable_vl_bytes(void) { return 0; }

static size_t exrt_portable_scratch_bytes(const exrt_gemm *g) { return g->k * g->n * sizeof(float); }

static void exrt_portable_gemm(const exrt_gemm *g) {
    const kb_f16 *b = g->packed ? (const kb_f16 *)(const void *)g->packed : g->b;
    size_t ldb = g->packed ? exrt_roundup(g->n, EXRT_NEON_COLS) : g->ldb;
    float *bw = (float *)(void *)g->scratch;
    for (size_t kk = 0; kk < g->k; kk++)
        for (size_t j = 0; j < g->n; j++) bw[kk * g->n + j] = ex_h2f(b[kk * ldb + j]);
    for (size_t i = 0; i < g->m; i++)
        for (size_t j = 0; j < g->n; j++) {
            float acc = g->bias ? ex_h2f(g->bias[j]) : 0.0f;
            for (size_t kk = 0; kk < g->k; kk++) acc += ex_h2f(g->a[i * g->lda + kk]) * bw[kk * g->n + j];
            g->c[i * g->ldc + j] = ex_store(acc, g->clamp_min, g->clamp_max);
        }
}

static const exrt_path_ops exrt_portable_ops = {
    .path = EXRT_PATH_PORTABLE,
    .name = "portable",
    .vl_bytes = exrt_portable_vl_bytes,
    .payload_bytes = exrt_rows_payload_bytes,
    .pack = exrt_rows_pack,
    .scratch_bytes = exrt_portable_scratch_bytes,
    .gemm = exrt_portable_gemm,
};

static const exrt_path_ops *exrt_dispatch(void) { return &exrt_portable_ops; }
#define EXRT_ISA KB_ISA_SCALAR
#endif

size_t exrt_rows_payload_bytes(size_t n, size_t k) { return k * exrt_roundup(n, EXRT_NEON_COLS) * sizeof(kb_f16); }

void exrt_rows_pack(size_t n, size_t k, const kb_f16 *b, size_t ldb, unsigned char *dst) {
    size_t np = exrt_roundup(n, EXRT_NEON_COLS);
    kb_f16 *out = (kb_f16 *)(void *)dst;
    for (size_t kk = 0; kk < k; kk++) {
        memcpy(out + kk * np, b + kk * ldb, n * sizeof(kb_f16));
        memset(out + kk * np + n, 0, (np - n) * sizeof(kb_f16));
    }
}

static const char *const exrt_path_names[] = {"portable", "neon", "sve2p1", "sme2"};

/* ---- per-thread scratch ------------------------------------------------------------ */

typedef struct exrt_scratch {
    unsigned char *data;
    size_t bytes;
    const char *last_path; /* for exrt_last_path() */
#ifdef EXRT_LEAK
    void *record; /* the planted defect: the previous call's record is never freed */
#endif
} exrt_scratch;

static pthread_key_t exrt_key;
static pthread_once_t exrt_key_once = PTHREAD_ONCE_INIT;

static void exrt_scratch_free(void *p) {
    exrt_scratch *s = p;
    free(s->data);
    free(s);
}

static void exrt_make_key(void) { (void)pthread_key_create(&exrt_key, exrt_scratch_free); }

/* This thread's scratch record (freed with its buffer when the thread exits). */
static exrt_scratch *exrt_thread(void) {
    pthread_once(&exrt_key_once, exrt_make_key);
    exrt_scratch *s = pthread_getspecific(exrt_key);
    if (!s && (s = calloc(1, sizeof *s)) && pthread_setspecific(exrt_key, s) != 0) {
        free(s);
        s = NULL;
    }
    return s;
}

/* At least `bytes` of this thread's scratch, 64-byte aligned; NULL when out of memory. */
static unsigned char *exrt_scratch_get(exrt_scratch *s, size_t bytes) {
    if (bytes <= s->bytes) return s->data;
    free(s->data);
    s->bytes = 0;
    s->data = aligned_alloc(64, (bytes + 63u) & ~(size_t)63u);
    if (s->data) s->bytes = bytes;
    return s->data;
}

/* After a call: a buffer over the cap is released (EXRT_KEEP_SCRATCH: kept). */
static void exrt_scratch_trim(exrt_scratch *s) {
#ifndef EXRT_KEEP_SCRATCH
    if (s->bytes > EXRT_SCRATCH_KEEP) {
        free(s->data);
        s->data = NULL;
        s->bytes = 0;
    }
#else
    (void)s;
#endif
}

EXPORT const char *exrt_last_path(void) {
    exrt_scratch *s = exrt_thread();
    return s && s->last_path ? s->last_path : "";
}

EXPORT size_t exrt_retained_bytes(void) {
    exrt_scratch *s = exrt_thread();
    return s ? s->bytes : 0;
}

/* ---- the packed B ---------------------------------------------------------------------- */

static size_t packed_b_size(void *ctx, size_t n, size_t k) {
    (void)ctx;
    return EXRT_HEADER_BYTES + exrt_dispatch()->payload_bytes(n, k);
}

static kb_status pack_b(void *ctx, size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias, void *dst,
                        size_t dst_size) {
    (void)ctx;
    const exrt_path_ops *p = exrt_dispatch();
    size_t payload = p->payload_bytes(n, k);
    if (bias || !b || !dst || n == 0 || k == 0 || ldb < n || dst_size < EXRT_HEADER_BYTES + payload)
        return KB_ERR_INVALID_ARGUMENT; /* bias: this packer takes none (KB_PLUGIN_PACK_NO_BIAS) */
    exrt_header h;
    memset(&h, 0, sizeof h);
    h.magic = EXRT_MAGIC;
    h.version = EXRT_VERSION;
    h.path = (uint16_t)p->path;
    h.vl_bytes = (uint32_t)p->vl_bytes();
    h.n = n;
    h.k = k;
    h.payload_bytes = payload;
    memcpy(dst, &h, sizeof h);
    p->pack(n, k, b, ldb, (unsigned char *)dst + EXRT_HEADER_BYTES);
    return KB_OK;
}

static kb_status refuse(const kb_plugin_gemm_args *a, kb_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static kb_status refuse(const kb_plugin_gemm_args *a, kb_status st, const char *fmt, ...) {
    if (a->message && a->message_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(a->message, a->message_len, fmt, ap);
        va_end(ap);
    }
    return st;
}

#ifndef EXRT_STALE_VL
/* "SVL" for SME2's streaming vector length, "SVE VL" for SVE2.1's. */
static const char *exrt_vl_name(const exrt_path_ops *p) { return p->path == EXRT_PATH_SME2 ? "SVL" : "SVE VL"; }
#endif

/* The checks of a call with its packed B, before any byte of the payload is
 * read; KB_OK with *payload set, or the refusal. */
static kb_status exrt_check_packed(const kb_plugin_gemm_args *a, const exrt_path_ops *p,
                                   const unsigned char **payload) {
    exrt_header h;
    if (a->b_packed_size < sizeof h)
        return refuse(a, KB_ERR_CONTRACT, "B.size: %zu bytes, shorter than exrt's %u-byte header", a->b_packed_size,
                      EXRT_HEADER_BYTES);
    memcpy(&h, a->b_packed, sizeof h);
    if (h.magic != EXRT_MAGIC || h.version != EXRT_VERSION)
        return refuse(a, KB_ERR_CONTRACT, "B: not packed by exrt's pack_b (no exrt header)");
    if (h.path != p->path)
        return refuse(a, KB_ERR_CONTRACT, "B: packed by the %s path, this call runs the %s path",
                      h.path < 4 ? exrt_path_names[h.path] : "unknown", p->name);
#ifndef EXRT_STALE_VL
    size_t vl = p->vl_bytes();
    if (h.vl_bytes != vl)
        return refuse(a, KB_ERR_CONTRACT, "B.vl: packed at %s %u bits, this call runs at %s %zu bits (pack B again)",
                      exrt_vl_name(p), h.vl_bytes * 8u, exrt_vl_name(p), vl * 8);
#endif
    if (h.n != a->n) return refuse(a, KB_ERR_CONTRACT, "B.n: packed for N = %llu, the call has N = %zu",
                                   (unsigned long long)h.n, a->n);
    if (h.k != a->k) return refuse(a, KB_ERR_CONTRACT, "B.k: packed for K = %llu, the call has K = %zu",
                                   (unsigned long long)h.k, a->k);
    size_t need = p->payload_bytes(a->n, a->k);
#ifndef EXRT_STALE_VL
    if (h.payload_bytes != need || a->b_packed_size - sizeof h < need)
#else
    /* the planted defect: only that the bytes this call reads are there */
    if (a->b_packed_size - sizeof h < need)
#endif
        return refuse(a, KB_ERR_CONTRACT, "B.size: %zu payload bytes, this call needs %zu (truncated packed B)",
                      a->b_packed_size - sizeof h, need);
    if (a->bias)
        return refuse(a, KB_ERR_CONTRACT,
                      "bias: exrt's packed B takes no bias and a call with it takes none (pass B plain to add one)");
    *payload = (const unsigned char *)a->b_packed + sizeof h;
    return KB_OK;
}

/* ---- GEMM ------------------------------------------------------------------------------ */

static kb_status gemm(void *ctx, const kb_plugin_gemm_args *a) {
    (void)ctx;
    const exrt_path_ops *p = exrt_dispatch();
    exrt_gemm g = {
        .m = a->m, .n = a->n, .k = a->k, .a = a->a, .lda = a->lda, .b = a->b, .ldb = a->ldb,
        .bias = a->bias, .c = a->c, .ldc = a->ldc, .clamp_min = a->clamp_min, .clamp_max = a->clamp_max,
    };
    if (a->b_packed) {
        kb_status st = exrt_check_packed(a, p, &g.packed);
        if (st != KB_OK) return st;
        g.b = NULL;
    } else if (!a->b || a->ldb < a->n) {
        return refuse(a, KB_ERR_INVALID_ARGUMENT, "B: NULL, or ldb %zu < N %zu", a->ldb, a->n);
    }
    if ((a->m && !a->a) || !a->c || a->lda < a->k || a->ldc < a->n)
        return refuse(a, KB_ERR_INVALID_ARGUMENT, "A or C: NULL, or lda %zu < K %zu, or ldc %zu < N %zu", a->lda,
                      a->k, a->ldc, a->n);
    exrt_scratch *s = exrt_thread();
    if (!s) return refuse(a, KB_ERR_OUT_OF_MEMORY, "scratch: cannot allocate this thread's record");
#ifdef EXRT_LEAK
    s->record = malloc(EXRT_LEAK_BYTES); /* the planted defect: the previous record is lost */
    if (s->record) memcpy(s->record, &g, sizeof g);
#endif
    if (a->m == 0 || a->n == 0) return KB_OK;
    if (a->k == 0) { /* no products: the bias, clamped */
        for (size_t i = 0; i < a->m; i++)
            for (size_t j = 0; j < a->n; j++)
                a->c[i * a->ldc + j] = ex_store(a->bias ? ex_h2f(a->bias[j]) : 0.0f, a->clamp_min, a->clamp_max);
        s->last_path = p->name;
        return KB_OK;
    }
    size_t bytes = p->scratch_bytes(&g);
    if (bytes && !(g.scratch = exrt_scratch_get(s, bytes)))
        return refuse(a, KB_ERR_OUT_OF_MEMORY, "scratch: cannot allocate %zu bytes", bytes);
    p->gemm(&g);
    s->last_path = p->name;
    exrt_scratch_trim(s);
    return KB_OK;
}

/* ---- the table ------------------------------------------------------------------------------ */

#if defined(EXRT_STALE_VL)
#define EXRT_NAME "exrt_stalevl"
#define EXRT_WHAT "planted defect: accepts a B packed at another vector length"
#elif defined(EXRT_OVERREAD_33)
#define EXRT_NAME "exrt_overread33"
#define EXRT_WHAT "planted defect: its NEON path reads 33 bytes past B, 32 declared"
#elif defined(EXRT_FALLBACK)
#define EXRT_NAME "exrt_fallback"
#define EXRT_WHAT "planted defect: on SME2 it silently runs its NEON path"
#elif defined(EXRT_KEEP_SCRATCH)
#define EXRT_NAME "exrt_keepscratch"
#define EXRT_WHAT "planted defect: keeps scratch over its declared 8 MiB cap"
#elif defined(EXRT_LEAK)
#define EXRT_NAME "exrt_leak"
#define EXRT_WHAT "planted defect: leaks 4096 bytes per call"
#else
#define EXRT_NAME "exrt"
#define EXRT_WHAT "a runtime's FP16 GEMM path: SME2, SVE2.1 or NEON picked at run time"
#endif

/* the functions each path does its work in, by ISA class in the dispatcher's
 * order (the SME2 path's work is in kbench's SME2 kernel and packers compiled
 * in: kb_..._sme2_mopa_run_matmul, kb_*_sme_*); the portable path
 * where none of the classes applies */
static const char *const exrt_expect[] = {
    "sme2:exrt_sme2_*", "sme2:kb_*sme*", "sve2p1:exrt_sve2p1_*", "neon:exrt_neon_*", "exrt_portable_*", NULL,
};

static const kb_plugin_realization realizations[] = {
    {
        .name = "gemm",
        .kernel = "exrt: SME2 MOPA (kbench's micro-kernel), SVE2.1 FDOT or NEON FMA, picked from the CPU",
        .op = KB_OP_GEMM,
        .form = KB_PLUGIN_WHOLE_CALL,
        .isa = EXRT_ISA,
        .accum = KB_ACCUM_FP32,
        .k_per_rounding = 1,
        .bias = KB_PLUGIN_BIAS_FIRST,
        .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE,
        .thread_safe = 1,
        .gemm = gemm,
        .packed_b_size = packed_b_size,
        .pack_b = pack_b,
        .nan_clamp = KB_PLUGIN_NAN_PROPAGATE,
        .flags = KB_PLUGIN_PACK_NO_BIAS | KB_PLUGIN_SCRATCH_CAPPED,
        .overread = {[KB_PLUGIN_OPERAND_B] = 32, [KB_PLUGIN_OPERAND_BIAS] = 32},
        .scratch_cap = EXRT_SCRATCH_CAP,
        .expect_symbols = exrt_expect,
    },
};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
    .name = EXRT_NAME,
    .version = "1.0.0",
    .description = EXRT_WHAT,
    .count = sizeof realizations / sizeof realizations[0],
    .realizations = realizations,
};

EXPORT const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= 3 ? &table : NULL;
}
