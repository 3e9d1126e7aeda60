/* exrt_probe.c — a direct probe of the runtime-like example plugin, without
 * kbench: loads the library, calls its table the way kbench would, and prints
 * what the plugin did, one "key: value" line each (suites/test_runtime_example.py
 * reads them):
 *
 *   plugin          the table's name and version
 *   path            the path its gemm ran (exrt_last_path, the plugin's word)
 *   packed_path     the path and vector length its pack_b wrote in the header
 *   exact           how many calls of small-integer problems (plain B with and
 *                   without bias and clamp, its packed B, leading-dimension
 *                   pads, row and column tails) gave the exact result, bit for bit
 *   bias_with_packed  the status and message of a call with its packed B and a bias
 *   other_vl_up, other_vl_down   a B packed at twice (half) the running vector
 *                   length (PR_SME_SET_VL on the SME2 path, PR_SVE_SET_VL on
 *                   the SVE2.1 path) and used at the running one: "refused: ..."
 *                   or "accepted: W of T outputs wrong"; "n/a" on a path whose
 *                   layout does not depend on it
 *   retained_small, retained_1024, retained_2048   scratch the calling thread
 *                   keeps after an M = 1 call of N = K = 64, 1024 and 2048
 *                   (exrt_retained_bytes) -- with --scratch
 *   heap_growth_per_call   glibc's in-use heap (mallinfo2) grown over 32
 *                   identical calls, divided by 32 -- with --scratch
 *
 * Build and run (aarch64 under QEMU; make -C examples/plugins ARCH=aarch64 probe):
 *   qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu max,sme=off,sve-default-vector-length=32 \
 *       build/aarch64/exrt_probe build/aarch64/libexrt.so --scratch
 * Exits 1 if a call that must succeed fails or a result is not exact. */
#define _GNU_SOURCE
#include "../exrt.h"

#include "../../common/exfp16.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#ifndef PR_SVE_SET_VL
#define PR_SVE_SET_VL 50
#define PR_SVE_GET_VL 51
#endif
#ifndef PR_SME_SET_VL
#define PR_SME_SET_VL 63
#define PR_SME_GET_VL 64
#endif

static const kb_plugin_realization *real;
static const char *(*last_path)(void);
static size_t (*retained)(void);
static int failures;

typedef struct problem {
    size_t m, n, k, lda, ldb, ldc;
    int bias, clamp;
    kb_f16 *a, *b, *bias_v, *c;
    int64_t *exact; /* m x n, before the clamp */
} problem;

static kb_f16 small(unsigned *seed) {
    *seed = *seed * 1103515245u + 12345u;
    return ex_f2h((float)((int)((*seed >> 16) % 7u) - 3));
}

static problem make(size_t m, size_t n, size_t k, size_t pad, int bias, int clamp, unsigned seed) {
    problem p = {m, n, k, k + pad, n + pad, n + pad, bias, clamp, NULL, NULL, NULL, NULL, NULL};
    p.a = calloc(m * p.lda + 1, sizeof(kb_f16));
    p.b = calloc(k * p.ldb + 1, sizeof(kb_f16));
    p.bias_v = calloc(n + 1, sizeof(kb_f16));
    p.c = calloc(m * p.ldc + 1, sizeof(kb_f16));
    p.exact = calloc(m * n + 1, sizeof(int64_t));
    for (size_t i = 0; i < m * p.lda; i++) p.a[i] = small(&seed);
    for (size_t i = 0; i < k * p.ldb; i++) p.b[i] = small(&seed);
    for (size_t j = 0; j < n; j++) p.bias_v[j] = small(&seed);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            int64_t s = bias ? (int64_t)ex_h2f(p.bias_v[j]) : 0;
            for (size_t kk = 0; kk < k; kk++)
                s += (int64_t)ex_h2f(p.a[i * p.lda + kk]) * (int64_t)ex_h2f(p.b[kk * p.ldb + j]);
            p.exact[i * n + j] = s;
        }
    return p;
}

static void drop(problem *p) {
    free(p->a), free(p->b), free(p->bias_v), free(p->c), free(p->exact);
}

/* outputs that differ from the exact result (clamped to [-6, 6] when asked) */
static size_t wrong(const problem *p) {
    size_t bad = 0;
    for (size_t i = 0; i < p->m; i++)
        for (size_t j = 0; j < p->n; j++) {
            float want = (float)p->exact[i * p->n + j];
            if (p->clamp) want = want < -6.0f ? -6.0f : want > 6.0f ? 6.0f : want;
            bad += p->c[i * p->ldc + j] != ex_f2h(want);
        }
    return bad;
}

static kb_status call(problem *p, const void *packed, size_t packed_size, const kb_f16 *bias, char *msg,
                      size_t msg_len) {
    kb_plugin_gemm_args a = {
        .m = p->m, .n = p->n, .k = p->k, .a = p->a, .lda = p->lda,
        .b = packed ? NULL : p->b, .ldb = packed ? 0 : p->ldb, .b_packed = packed, .b_packed_size = packed_size,
        .bias = bias, .c = p->c, .ldc = p->ldc,
        .clamp_min = p->clamp ? -6.0f : -__builtin_inff(), .clamp_max = p->clamp ? 6.0f : __builtin_inff(),
        .message = msg, .message_len = msg_len,
    };
    msg[0] = '\0';
    return real->gemm(real->ctx, &a);
}

static unsigned char *pack(const problem *p, size_t *size) {
    *size = real->packed_b_size(real->ctx, p->n, p->k);
    unsigned char *buf = malloc(*size);
    if (real->pack_b(real->ctx, p->n, p->k, p->b, p->ldb, NULL, buf, *size) != KB_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void exact_calls(void) {
    static const size_t shapes[][4] = {{1, 17, 33, 0}, {7, 8, 15, 0}, {17, 31, 9, 3}, {33, 65, 17, 0},
                                       {5, 40, 21, 1}, {64, 64, 64, 0}, {3, 1, 1, 2}, {9, 130, 3, 0}};
    int calls = 0, good = 0;
    char msg[256];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int variant = 0; variant < 3; variant++) { /* plain with bias, plain clamped, packed */
            problem p = make(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], variant == 0, variant == 1,
                             (unsigned)(s * 3 + variant + 1));
            size_t size = 0;
            unsigned char *packed = variant == 2 ? pack(&p, &size) : NULL;
            kb_status st = call(&p, packed, size, p.bias ? p.bias_v : NULL, msg, sizeof msg);
            calls++;
            if (st == KB_OK && wrong(&p) == 0) {
                good++;
            } else {
                printf("inexact: m%zu n%zu k%zu variant %d: status %d %s, %zu wrong\n", p.m, p.n, p.k, variant, st,
                       msg, st == KB_OK ? wrong(&p) : 0);
                failures++;
            }
            free(packed);
            drop(&p);
        }
    printf("exact: %d of %d calls\n", good, calls);
    printf("path: %s\n", last_path());
}

static void header_line(void) {
    problem p = make(5, 40, 21, 0, 0, 0, 99);
    size_t size;
    unsigned char *packed = pack(&p, &size);
    if (!packed) {
        printf("packed_path: pack_b failed\n");
        failures++;
    } else {
        exrt_header h;
        memcpy(&h, packed, sizeof h);
        static const char *names[] = {"portable", "neon", "sve2p1", "sme2"};
        printf("packed_path: %s vl_bits %u\n", h.path < 4 ? names[h.path] : "?", h.vl_bytes * 8u);
        char msg[256];
        kb_status st = call(&p, packed, size, p.bias_v, msg, sizeof msg);
        printf("bias_with_packed: status %d: %s\n", st, msg);
    }
    free(packed);
    drop(&p);
}

/* the vector length the running path's layout depends on, and how to change it */
static int vl_control(int *set, int *get) {
    const char *path = last_path();
    if (!strcmp(path, "sme2")) *set = PR_SME_SET_VL, *get = PR_SME_GET_VL;
    else if (!strcmp(path, "sve2p1")) *set = PR_SVE_SET_VL, *get = PR_SVE_GET_VL;
    else return 0;
    return 1;
}

/* B packed at vl_pack bytes, called at vl_call bytes */
static void other_vl(const char *key, int set, int get, unsigned long vl_pack, unsigned long vl_call) {
    unsigned long home = (unsigned long)prctl(get, 0, 0, 0, 0) & 0xffffu;
    problem p = make(5, 40, 21, 0, 0, 0, 7);
    if (((unsigned long)prctl(set, vl_pack, 0, 0, 0) & 0xffffu) != vl_pack) {
        printf("%s: n/a (cannot set the vector length to %lu bits)\n", key, vl_pack * 8);
        prctl(set, home, 0, 0, 0);
        drop(&p);
        return;
    }
    size_t size;
    unsigned char *packed = pack(&p, &size);
    prctl(set, vl_call, 0, 0, 0);
    char msg[256];
    kb_status st = packed ? call(&p, packed, size, NULL, msg, sizeof msg) : KB_ERR_INTERNAL;
    if (!packed) printf("%s: pack_b failed\n", key);
    else if (st != KB_OK) printf("%s: refused (status %d): %s\n", key, st, msg);
    else printf("%s: accepted: %zu of %zu outputs wrong (packed at %lu bits, called at %lu)\n", key, wrong(&p),
                p.m * p.n, vl_pack * 8, vl_call * 8);
    prctl(set, home, 0, 0, 0);
    free(packed);
    drop(&p);
}

static void vector_lengths(void) {
    int set, get;
    if (!vl_control(&set, &get)) {
        printf("other_vl_up: n/a (the %s path's layout does not depend on a vector length)\n", last_path());
        printf("other_vl_down: n/a (the %s path's layout does not depend on a vector length)\n", last_path());
        return;
    }
    unsigned long vl = (unsigned long)prctl(get, 0, 0, 0, 0) & 0xffffu;
    printf("vl_bits: %lu\n", vl * 8);
    other_vl("other_vl_up", set, get, vl * 2, vl);     /* packed at twice the length */
    if (vl > 16) other_vl("other_vl_down", set, get, vl / 2, vl); /* at half */
    else other_vl("other_vl_down", set, get, vl, vl * 2);        /* used at twice */
}

static void scratch(void) {
    static const size_t sizes[] = {64, 1024, 2048};
    static const char *keys[] = {"retained_small", "retained_1024", "retained_2048"};
    char msg[256];
    for (int i = 0; i < 3; i++) {
        problem p = make(1, sizes[i], sizes[i], 0, 1, 0, 5);
        kb_status st = call(&p, NULL, 0, p.bias_v, msg, sizeof msg);
        if (st != KB_OK || wrong(&p)) failures++;
        printf("%s: %zu\n", keys[i], retained());
        drop(&p);
    }
    problem p = make(4, 40, 21, 0, 1, 0, 3);
    call(&p, NULL, 0, p.bias_v, msg, sizeof msg); /* scratch of this size in place */
    size_t before = mallinfo2().uordblks;
    for (int i = 0; i < 32; i++) call(&p, NULL, 0, p.bias_v, msg, sizeof msg);
    size_t after = mallinfo2().uordblks;
    printf("heap_growth_per_call: %zu\n", after > before ? (after - before) / 32 : 0);
    drop(&p);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: exrt_probe LIBRARY [--scratch]\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "exrt_probe: %s\n", dlerror());
        return 2;
    }
    kb_plugin_entry_fn entry = (kb_plugin_entry_fn)dlsym(lib, KB_PLUGIN_ENTRY_SYMBOL);
    last_path = (const char *(*)(void))dlsym(lib, "exrt_last_path");
    retained = (size_t(*)(void))dlsym(lib, "exrt_retained_bytes");
    const kb_plugin *t = entry ? entry(KB_PLUGIN_ABI_VERSION) : NULL;
    if (!t || !last_path || !retained || t->count < 1) {
        fprintf(stderr, "exrt_probe: %s is not the exrt example\n", argv[1]);
        return 2;
    }
    real = &t->realizations[0];
    printf("plugin: %s %s\n", t->name, t->version);
    exact_calls();
    header_line();
    vector_lengths();
    if (argc > 2 && !strcmp(argv[2], "--scratch")) scratch();
    return failures ? 1 : 0;
}
