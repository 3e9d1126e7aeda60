/* kb_timer.c — the native timer: warm-up, calibration of repetitions to a
 * minimum round time, rounds, optional cold caches; plus the test-only
 * slowdown knob used to prove the regression gate (KBENCH_TEST_SLOWDOWN).
 * The timer drives the entry points (kb_gemm_batch, kb_conv2d, kb_pack_b*);
 * they never call back into it. */
#define _POSIX_C_SOURCE 200809L
#include "kb_heaptag.h"
#include "kb_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KB_FLUSH_BYTES ((size_t)32 << 20)

uint64_t kb_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* KBENCH_TEST_SLOWDOWN="<realization>=<fraction>" (test-only): in timed
 * calls of that realization, spin after each call for fraction x the call's
 * own duration. Read once per timing request, here in the timer: a
 * production call never looks at the environment or the clock. */
typedef struct slowdown {
    char name[KB_NAME_LEN];
    double fraction;
} slowdown;

static void slowdown_read(slowdown *s) {
    s->name[0] = 0;
    s->fraction = 0;
    const char *v = getenv("KBENCH_TEST_SLOWDOWN");
    if (!v || !*v) return;
    const char *eq = strchr(v, '=');
    if (!eq || (size_t)(eq - v) >= sizeof s->name) return;
    memcpy(s->name, v, (size_t)(eq - v));
    s->name[eq - v] = 0;
    double f = strtod(eq + 1, NULL);
    s->fraction = f > 0 && f < 1e3 ? f : 0;
}

/* The fraction to apply to calls that ran `ran`, or 0. */
static double slowdown_for(const slowdown *s, const kb_realization *ran) {
    if (!(s->fraction > 0) || !ran) return 0;
    return strcmp(s->name, ran->name) ? 0 : s->fraction;
}

static void spin_ns(uint64_t ns) {
    uint64_t until = kb_now_ns() + ns;
    while (kb_now_ns() < until) {
    }
}

typedef kb_status (*call_fn)(void *ctx, kb_realization *ran, kb_error *err);

static void flush_caches(unsigned char *buf) {
    for (size_t i = 0; i < KB_FLUSH_BYTES; i += 64) buf[i] = (unsigned char)(buf[i] + 1);
}

static kb_status run_timed(call_fn fn, void *ctx, const kb_timing *t, double *round_ns,
                           uint32_t *reps_out, kb_realization *ran, kb_error *err) {
    if (!t) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "timing", "is NULL");
    if (t->rounds == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "timing.rounds", "must be positive, got 0");
    if (!round_ns) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "round_ns", "is NULL");
    kb_status st = fn(ctx, ran, err); /* first call: validates, and warms up */
    if (st != KB_OK) return st;
    for (uint32_t i = 0; i < t->warmup; i++)
        if ((st = fn(ctx, ran, err)) != KB_OK) return st;
    /* calls per round: calibrated to min_round_ns, or fixed at max_reps when
     * no minimum is set (so repeated single rounds stay comparable) */
    uint32_t reps = (!t->min_round_ns && t->max_reps) ? t->max_reps : 1;
    unsigned char *flush = NULL;
    if (t->cold) {
        flush = kb_heap_malloc(KB_HEAP_TAG_KBENCH, KB_FLUSH_BYTES);
        if (!flush) return kb_fail(err, KB_ERR_OUT_OF_MEMORY, "timing.cold", "cannot allocate the cache flush buffer");
        memset(flush, 0, KB_FLUSH_BYTES);
        reps = 1;
    } else if (t->min_round_ns) {
        uint64_t t0 = kb_now_ns();
        if ((st = fn(ctx, ran, err)) != KB_OK) return st;
        uint64_t one = kb_now_ns() - t0;
        uint32_t cap = t->max_reps ? t->max_reps : 1000000u;
        uint64_t want = one ? (t->min_round_ns + one - 1) / one : cap;
        reps = want < 1 ? 1 : want > cap ? cap : (uint32_t)want;
    }
    slowdown knob;
    slowdown_read(&knob);
    double slow = slowdown_for(&knob, ran);
    for (uint32_t r = 0; r < t->rounds; r++) {
        if (flush) flush_caches(flush);
        uint64_t t0 = kb_now_ns();
        for (uint32_t i = 0; i < reps; i++) {
            uint64_t c0 = slow > 0 ? kb_now_ns() : 0;
            if ((st = fn(ctx, ran, err)) != KB_OK) {
                free(flush);
                return st;
            }
            if (slow > 0) spin_ns((uint64_t)(slow * (double)(kb_now_ns() - c0)));
        }
        round_ns[r] = (double)(kb_now_ns() - t0) / (double)reps;
    }
    free(flush);
    if (reps_out) *reps_out = reps;
    return KB_OK;
}

typedef struct gemm_ctx {
    size_t M, N, K, batch;
    const kb_gemm_problem *problems;
    const kb_selector *sel;
} gemm_ctx;

static kb_status gemm_call(void *p, kb_realization *ran, kb_error *err) {
    gemm_ctx *c = p;
    return kb_gemm_batch(c->M, c->N, c->K, c->problems, c->batch, c->sel, ran, err);
}

kb_status kb_time_gemm(size_t M, size_t N, size_t K, const kb_gemm_problem *problems,
                       size_t batch, const kb_selector *sel, const kb_timing *t,
                       double *round_ns, uint32_t *reps_per_round, kb_realization *ran,
                       kb_error *err) {
    kb_clear_error(err);
    gemm_ctx c = {M, N, K, batch, problems, sel};
    return run_timed(gemm_call, &c, t, round_ns, reps_per_round, ran, err);
}

typedef struct conv_ctx {
    const kb_conv_desc *d;
    const kb_f16 *input, *filter, *bias;
    kb_f16 *output;
    const kb_selector *sel;
} conv_ctx;

static kb_status conv_call(void *p, kb_realization *ran, kb_error *err) {
    conv_ctx *c = p;
    return kb_conv2d(c->d, c->input, c->filter, c->bias, c->output, c->sel, ran, err);
}

kb_status kb_time_conv(const kb_conv_desc *d, const kb_f16 *input, const kb_f16 *filter,
                       const kb_f16 *bias, kb_f16 *output, const kb_selector *sel,
                       const kb_timing *t, double *round_ns, uint32_t *reps_per_round,
                       kb_realization *ran, kb_error *err) {
    kb_clear_error(err);
    conv_ctx c = {d, input, filter, bias, output, sel};
    return run_timed(conv_call, &c, t, round_ns, reps_per_round, ran, err);
}

typedef struct pack_ctx {
    int backend;
    size_t N, K, ldb, dst_size;
    const kb_f16 *B, *bias;
    void *dst;
    const kb_selector *sel;
} pack_ctx;

static kb_status pack_call(void *p, kb_realization *ran, kb_error *err) {
    (void)ran;
    pack_ctx *c = p;
    if (c->backend < 0) return kb_pack_b(c->N, c->K, c->B, c->ldb, c->dst, c->dst_size, err);
    return kb_pack_b_native(c->backend, c->N, c->K, c->B, c->ldb, c->bias, c->dst, c->dst_size, c->sel, err);
}

kb_status kb_time_pack_b(int backend, size_t N, size_t K, const kb_f16 *B, size_t ldb,
                         const kb_f16 *bias, void *dst, size_t dst_size,
                         const kb_selector *sel, const kb_timing *t, double *round_ns,
                         uint32_t *reps_per_round, kb_error *err) {
    kb_clear_error(err);
    pack_ctx c = {backend, N, K, ldb, dst_size, B, bias, dst, sel};
    return run_timed(pack_call, &c, t, round_ns, reps_per_round, NULL, err);
}

/* Packing B with a plugin realization's own packer (kb_pack_b_plugin). */
typedef struct plugin_pack_ctx {
    const char *realization;
    size_t N, K, ldb, dst_size;
    const kb_f16 *B, *bias;
    void *dst;
} plugin_pack_ctx;

static kb_status plugin_pack_call(void *p, kb_realization *ran, kb_error *err) {
    (void)ran;
    plugin_pack_ctx *c = p;
    return kb_pack_b_plugin(c->realization, c->N, c->K, c->B, c->ldb, c->bias, c->dst, c->dst_size, err);
}

kb_status kb_time_pack_b_plugin(const char *realization, size_t N, size_t K, const kb_f16 *B,
                                size_t ldb, const kb_f16 *bias, void *dst, size_t dst_size,
                                const kb_timing *t, double *round_ns, uint32_t *reps_per_round,
                                kb_error *err) {
    kb_clear_error(err);
    plugin_pack_ctx c = {realization, N, K, ldb, dst_size, B, bias, dst};
    return run_timed(plugin_pack_call, &c, t, round_ns, reps_per_round, NULL, err);
}
