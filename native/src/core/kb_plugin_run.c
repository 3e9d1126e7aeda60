/* kb_plugin_run.c — running plugin realizations (kbench_plugin.h).
 *
 * Whole-call form: the plugin gets the whole problem. When it declares itself
 * thread safe and the selector asks for threads, a GEMM is split into row
 * bands (a convolution into images), one plugin call per band, on up to
 * `threads` threads; every band is an ordinary call with A and C offset.
 * A non-OK status is the plugin refusing the call: kbench turns it into the
 * same status with a message naming the realization and the plugin's reason.
 *
 * Micro-kernel form: kbench does what a runtime does around a KleidiAI
 * micro-kernel. GEMM: pack B with the RHS packer (bias inside; zeros when the
 * call has none) unless the call brings B packed for this realization, pack
 * all of A with the LHS packer (or read it in place for a plain-LHS kernel),
 * then run the kernel once per m_step band of rows of C over all of N (over
 * ranges of whole n_step blocks when a thread-safe plugin gets more threads
 * than there are bands) at the offsets the kernel's own query functions
 * give; with selector.one_call, once over the whole problem. Convolution: build the pointer table of an indirect GEMM (a zero row
 * for padding taps), pack it and the filters, and run the kernel the same
 * way, per m_step band of output pixels. A B packed by kbench for this form is a kbench header (owner,
 * vector length at pack time, N, K, block width, sizes, FNV-1a checksums)
 * followed by the packer's bytes; each call checks the header (O(1), as for
 * our own packed B: the payload checksum is written, not hashed per call)
 * before the kernel sees a byte. Scratch comes from kb_scratch (released by
 * the entry points). */
#include "kb_heaptag.h"
#include "kb_plugin.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KB_PLUGIN_HEADER_BYTES sizeof(kb_packed_header)

/* In a checking run every call into the plugin goes through the calling-
 * convention trampoline (kb_cc.c); the arguments as integers, in order. */
#define U(v) ((uint64_t)(uintptr_t)(v))
#define FN(f) ((void *)(uintptr_t)(f))

static size_t align64(size_t v) { return (v + 63u) & ~(size_t)63u; }

static uint32_t current_vector_bits(int isa) { return kb_isa_vector_bits(isa); }

void kb_plugin_describe(kb_realization *r) { r->vector_bits = current_vector_bits(r->isa); }

/* A plugin's non-OK status as a kbench error. */
static kb_status refused(kb_error *err, const char *name, kb_status st, const char *msg) {
    if (st < KB_ERR_INVALID_ARGUMENT || st > KB_ERR_INTERNAL)
        return kb_fail(err, KB_ERR_INTERNAL, "plugin", "%s returned %d, which is not a kb_status",
                       name, (int)st);
    return kb_fail(err, st, "plugin", "%s refused the call (%s): %s", name, kb_status_name(st),
                   msg && msg[0] ? msg : "it gave no reason");
}

/* ---- whole-call GEMM ----------------------------------------------------------- */

typedef struct band_job {
    const kb_plugin_gemm_impl *g;
    const kb_gemm_call *c;
    size_t rows; /* per band */
    atomic_int status;
    atomic_flag taken;
    char message[KB_MESSAGE_LEN];
} band_job;

static kb_status gemm_band(const kb_plugin_gemm_impl *g, const kb_gemm_call *c, size_t m0, size_t rows,
                           char *message, size_t message_len) {
    kb_plugin_gemm_args a;
    memset(&a, 0, sizeof a);
    a.m = rows;
    a.n = c->N;
    a.k = c->K;
    a.a = c->A + m0 * c->lda;
    a.lda = c->lda;
    if (c->bform == KB_BFORM_PLAIN) {
        a.b = c->B;
        a.ldb = c->ldb;
    } else {
        a.b_packed = c->bpayload;
        a.b_packed_size = c->b_size;
    }
    a.bias = c->bias;
    a.c = c->C + m0 * c->ldc;
    a.ldc = c->ldc;
    a.clamp_min = c->clamp_min;
    a.clamp_max = c->clamp_max;
    a.message = message;
    a.message_len = message_len;
    message[0] = '\0';
    if (kb_cc_checking()) {
        uint64_t x[] = {U(g->decl->ctx), U(&a)};
        return (kb_status)(int32_t)kb_cc_run("its gemm", FN(g->decl->gemm), 2, x, 0, NULL);
    }
    return g->decl->gemm(g->decl->ctx, &a);
}

static void band_task(void *ctx, size_t task) {
    band_job *j = ctx;
    size_t m0 = task * j->rows, rows = j->c->M - m0 < j->rows ? j->c->M - m0 : j->rows;
    char msg[KB_MESSAGE_LEN];
    kb_status st = gemm_band(j->g, j->c, m0, rows, msg, sizeof msg);
    if (st != KB_OK && !atomic_flag_test_and_set(&j->taken)) {
        memcpy(j->message, msg, sizeof msg);
        j->message[sizeof j->message - 1] = '\0';
        atomic_store(&j->status, (int)st);
    }
}

static kb_status whole_gemm(const kb_plugin_gemm_impl *g, const kb_gemm_call *c, kb_error *err) {
    int threads = g->base.threaded ? c->threads : 1;
    if (threads <= 1 || c->M < 2) {
        char msg[KB_MESSAGE_LEN];
        kb_status st = gemm_band(g, c, 0, c->M, msg, sizeof msg);
        msg[sizeof msg - 1] = '\0';
        return st == KB_OK ? KB_OK : refused(err, g->name, st, msg);
    }
    band_job j;
    memset(&j, 0, sizeof j);
    j.g = g;
    j.c = c;
    j.rows = kb_ceil_div(c->M, (size_t)threads);
    atomic_init(&j.status, KB_OK);
    atomic_flag_clear(&j.taken);
    kb_parallel_for(kb_ceil_div(c->M, j.rows), threads, band_task, &j);
    kb_status st = (kb_status)atomic_load(&j.status);
    return st == KB_OK ? KB_OK : refused(err, g->name, st, j.message);
}

/* ---- the header of B packed by kbench for a micro-kernel realization ---------- */

static void seal(kb_packed_header *h, uint16_t owner, uint32_t vbits, size_t n, size_t k, uint32_t nr,
                 size_t payload) {
    memset(h, 0, sizeof *h);
    h->magic = KB_PACK_MAGIC;
    h->version = KB_PACK_VERSION;
    h->header_size = (uint16_t)sizeof *h;
    h->layout = KB_LAYOUT_PLUGIN;
    h->backend = owner;
    h->vector_bits = vbits;
    h->n = n;
    h->k = k;
    h->flags = KB_PACK_FLAG_BIAS;
    h->block_n = nr;
    h->payload_size = payload;
    h->payload_checksum = kb_payload_checksum((const unsigned char *)h + sizeof *h, payload);
    h->header_checksum = kb_fnv1a64(h, sizeof *h);
}

/* not inlined: the instruction counter files it under the call's validate phase */
__attribute__((noinline)) static kb_status check_header(const kb_plugin_gemm_impl *g, const kb_gemm_call *c, size_t payload_want,
                              uint32_t nr, kb_error *err) {
    const char *who = g->name;
    if (c->b_size < sizeof(kb_packed_header))
        return kb_fail(err, KB_ERR_CONTRACT, "B.size", "%zu bytes cannot hold the %zu-byte header (truncated buffer; %s)",
                       c->b_size, sizeof(kb_packed_header), who);
    kb_packed_header h;
    memcpy(&h, c->bpayload, sizeof h);
    if (h.magic != KB_PACK_MAGIC)
        return kb_fail(err, KB_ERR_CONTRACT, "B.magic", "0x%08x: not a buffer kbench packed for %s", h.magic, who);
    if (h.version == 1)
        return kb_fail(err, KB_ERR_CONTRACT, "B.version",
                       "header version 1, sealed with the FNV-1a payload checksum this library no longer reads: "
                       "repack B with this library (%s)", who);
    if (h.version != KB_PACK_VERSION || h.header_size != sizeof h)
        return kb_fail(err, KB_ERR_CONTRACT, "B.version", "header version %u size %u, expected %u and %zu", h.version,
                       h.header_size, KB_PACK_VERSION, sizeof h);
    uint64_t want = h.header_checksum;
    h.header_checksum = 0;
    if (kb_fnv1a64(&h, sizeof h) != want)
        return kb_fail(err, KB_ERR_CONTRACT, "B.header_checksum", "header checksum mismatch (corrupted header)");
    if (h.layout != KB_LAYOUT_PLUGIN)
        return kb_fail(err, KB_ERR_CONTRACT, "B.layout", "layout %u is not a plugin realization's packed B (%s)", h.layout,
                       who);
    if (h.backend != g->id)
        return kb_fail(err, KB_ERR_CONTRACT, "B.backend",
                       "packed by another plugin realization (owner %u), the call runs %s (owner %u)", h.backend, who,
                       g->id);
    if (h.n != c->N)
        return kb_fail(err, KB_ERR_CONTRACT, "B.n", "buffer packed for N = %llu, call has N = %zu",
                       (unsigned long long)h.n, c->N);
    if (h.k != c->K)
        return kb_fail(err, KB_ERR_CONTRACT, "B.k", "buffer packed for K = %llu, call has K = %zu",
                       (unsigned long long)h.k, c->K);
    uint32_t vb = current_vector_bits(g->decl->isa);
    if (h.vector_bits != vb)
        return kb_fail(err, KB_ERR_CONTRACT, "B.vector_bits", "packed for a %u-bit vector length, the CPU runs at %u bits",
                       h.vector_bits, vb);
    if (h.block_n != nr)
        return kb_fail(err, KB_ERR_CONTRACT, "B.block_n", "%u columns per block, %s has nr = %u", h.block_n, who, nr);
    if (h.flags != KB_PACK_FLAG_BIAS)
        return kb_fail(err, KB_ERR_CONTRACT, "B.flags", "flags 0x%x, expected the bias flag only", h.flags);
    if (h.payload_size != payload_want)
        return kb_fail(err, KB_ERR_CONTRACT, "B.payload_size", "%llu bytes, the RHS packer makes %zu for this call",
                       (unsigned long long)h.payload_size, payload_want);
    if (c->b_size - sizeof h < payload_want)
        return kb_fail(err, KB_ERR_CONTRACT, "B.size", "%zu bytes, header and payload need %zu (truncated buffer)",
                       c->b_size, payload_want + sizeof h);
    if (c->bias)
        return kb_fail(err, KB_ERR_CONTRACT, "bias", "bias must be NULL: the packed B carries its bias inside");
    return KB_OK; /* O(1): the payload checksum is for verification, never per call */
}

/* ---- micro-kernel GEMM ---------------------------------------------------------- */

/* The micro-kernel's packers as kbench calls them (through the trampoline in a
 * checking run). */
static void rhs_pack(const kb_plugin_matmul_ukernel *u, size_t n, size_t k, size_t ldb, const kb_f16 *b,
                     const kb_f16 *bias, void *dst) {
    size_t nr = u->get_nr(), kr = u->get_kr(), sr = u->get_sr();
    if (kb_cc_checking()) {
        uint64_t x[] = {1, n, k, nr, kr, sr, ldb * sizeof(kb_f16), U(b), U(bias), 0, U(dst), 0, 0};
        kb_cc_run("its rhs_pack", FN(u->rhs_pack), 13, x, 0, NULL);
        return;
    }
    u->rhs_pack(1, n, k, nr, kr, sr, ldb * sizeof(kb_f16), b, bias, NULL, dst, 0, NULL);
}

static void lhs_pack(const kb_plugin_matmul_ukernel *u, size_t m, size_t k, const kb_f16 *a, size_t lda, void *dst) {
    size_t mr = u->get_mr(), kr = u->get_kr(), sr = u->get_sr();
    if (kb_cc_checking()) {
        uint64_t x[] = {m, k, mr, kr, sr, 0, U(a), lda * sizeof(kb_f16), U(dst)};
        kb_cc_run("its lhs_pack", FN(u->lhs_pack), 9, x, 0, NULL);
        return;
    }
    u->lhs_pack(m, k, mr, kr, sr, 0, a, lda * sizeof(kb_f16), dst);
}

/* How a micro-kernel loop splits N: one range (all of N) per m_step band, or,
 * when a thread-safe plugin gets more threads than there are bands, enough
 * ranges of whole n_step blocks to give every thread work. Returns the
 * number of ranges; *range_cols is the columns of each (the last may be
 * short). */
static size_t n_ranges(size_t bands, size_t N, size_t n_step, int threads, size_t *range_cols) {
    size_t nblocks_n = kb_ceil_div(N, n_step), nranges = 1;
    if (threads > 1 && bands < (size_t)threads) {
        nranges = kb_ceil_div((size_t)threads, bands);
        if (nranges > nblocks_n) nranges = nblocks_n;
    }
    size_t range_blocks = kb_ceil_div(nblocks_n, nranges);
    *range_cols = range_blocks * n_step;
    return kb_ceil_div(nblocks_n, range_blocks);
}

typedef struct block_job {
    const kb_plugin_matmul_ukernel *u;
    const kb_gemm_call *c;
    const unsigned char *lhs; /* packed LHS, or A itself for a plain-LHS kernel */
    const unsigned char *rhs; /* packed RHS */
    size_t m_step, n_step;
    size_t nranges, range_cols; /* N split into ranges of whole n_step blocks */
} block_job;

/* One task: an m_step band of rows over one range of columns (all of N
 * unless the bands are fewer than the threads), in one call of the kernel,
 * as kbench's own SME driver calls its micro-kernel. */
static void block_task(void *ctx, size_t task) {
    const block_job *j = ctx;
    const kb_gemm_call *c = j->c;
    size_t m0 = task / j->nranges * j->m_step, n0 = task % j->nranges * j->range_cols;
    size_t m = c->M - m0 < j->m_step ? c->M - m0 : j->m_step;
    size_t n = c->N - n0 < j->range_cols ? c->N - n0 : j->range_cols;
    size_t dst_stride = c->ldc * sizeof(kb_f16);
    unsigned char *dst = (unsigned char *)c->C + j->u->get_dst_offset(m0, n0, dst_stride);
    const unsigned char *rhs = j->rhs + j->u->get_rhs_packed_offset(n0, c->K);
    float clamps[] = {c->clamp_min, c->clamp_max};
    if (j->u->run_matmul) {
        const unsigned char *lhs = j->lhs + j->u->get_lhs_packed_offset(m0, c->K);
        if (kb_cc_checking()) {
            uint64_t x[] = {m, n, c->K, U(lhs), U(rhs), U(dst), dst_stride, sizeof(kb_f16)};
            kb_cc_run("its run_matmul", FN(j->u->run_matmul), 8, x, 2, clamps);
            return;
        }
        j->u->run_matmul(m, n, c->K, lhs, rhs, dst, dst_stride, sizeof(kb_f16), c->clamp_min, c->clamp_max);
    } else {
        size_t lhs_stride = c->lda * sizeof(kb_f16);
        const unsigned char *lhs = j->lhs + j->u->get_lhs_offset(m0, lhs_stride);
        if (kb_cc_checking()) {
            uint64_t x[] = {m, n, c->K, U(lhs), lhs_stride, U(rhs), U(dst), dst_stride, sizeof(kb_f16)};
            kb_cc_run("its run_matmul", FN(j->u->run_matmul_lhs), 9, x, 2, clamps);
            return;
        }
        j->u->run_matmul_lhs(m, n, c->K, lhs, lhs_stride, rhs, dst, dst_stride, sizeof(kb_f16), c->clamp_min,
                             c->clamp_max);
    }
}

/* selector.one_call: the kernel once over the whole problem (all M rows, all
 * N columns, from offset 0), single threaded, as a single-threaded caller and
 * KleidiAI's own benchmark call a micro-kernel: its wrapper and its dispatch
 * to edge variants run once. Returns the number of tasks (1). */
static size_t whole_problem(block_job *j) {
    j->m_step = j->c->M;
    j->nranges = 1;
    j->range_cols = j->c->N;
    return 1;
}

static kb_status ukernel_gemm(const kb_plugin_gemm_impl *g, const kb_gemm_call *c, kb_error *err) {
    const kb_plugin_matmul_ukernel *u = g->decl->matmul;
    size_t m_step = u->get_m_step(), n_step = u->get_n_step();
    size_t nr = u->get_nr(), kr = u->get_kr(), sr = u->get_sr();
    if (!m_step || !n_step || !nr || !kr || !sr)
        return kb_fail(err, KB_ERR_INTERNAL, "plugin", "%s: a query returned 0 (m_step %zu, n_step %zu, "
                       "nr %zu, kr %zu, sr %zu)", g->name, m_step, n_step, nr, kr, sr);
    size_t rhs_bytes = u->rhs_get_packed_size(c->N, c->K);
    size_t mr = 0, lhs_bytes = 0;
    if (u->run_matmul) {
        mr = u->get_mr();
        lhs_bytes = u->lhs_get_packed_size(c->M, c->K, mr, kr, sr);
    }
    const unsigned char *rhs;
    size_t need_rhs = 0, need_bias = 0;
    if (c->bform == KB_BFORM_NATIVE) {
        kb_status st = check_header(g, c, rhs_bytes, (uint32_t)nr, err);
        if (st != KB_OK) return st;
        rhs = (const unsigned char *)c->bpayload + sizeof(kb_packed_header);
    } else {
        need_rhs = align64(rhs_bytes);
        need_bias = c->bias ? 0 : align64(c->N * sizeof(kb_f16));
        rhs = NULL;
    }
    size_t total;
    if (!kb_add_ok(need_rhs, need_bias, &total) || !kb_add_ok(total, align64(lhs_bytes), &total))
        return kb_fail(err, KB_ERR_OVERFLOW, "M", "packed operands of %zu x %zu x %zu overflow size_t", c->M, c->N, c->K);
    /* one block: [packed RHS][zero bias][packed LHS]; in a guard mode (checking
     * runs) each piece is a guarded buffer of its own, so that a kernel reading
     * past any of them faults there */
    unsigned char *rp = NULL, *zb = NULL, *lp = NULL;
    bool have;
    if (kb_guard_on() != KB_GUARD_OFF) {
        const uint32_t *over = g->decl->overread;
        if (need_rhs) rp = kb_scratch_piece(rhs_bytes, over[KB_PLUGIN_OPERAND_B_PACKED], "the kbench-packed RHS");
        if (need_bias)
            zb = kb_scratch_piece(c->N * sizeof(kb_f16), over[KB_PLUGIN_OPERAND_BIAS],
                                  "the zero bias kbench passes rhs_pack");
        if (u->run_matmul)
            lp = kb_scratch_piece(lhs_bytes, over[KB_PLUGIN_OPERAND_LHS_PACKED], "the kbench-packed LHS");
        have = (rp || !need_rhs) && (zb || !need_bias) && (lp || !u->run_matmul);
    } else {
        unsigned char *mem = kb_scratch_get(total);
        have = mem != NULL;
        if (have) {
            rp = mem;
            zb = mem + need_rhs;
            lp = mem + need_rhs + need_bias;
        }
    }
    if (!have) return kb_fail(err, KB_ERR_OUT_OF_MEMORY, "scratch", "cannot allocate %zu bytes for packed operands", total);
    if (c->bform != KB_BFORM_NATIVE) {
        const kb_f16 *bias = c->bias;
        if (!bias) {
            memset(zb, 0, c->N * sizeof(kb_f16));
            bias = (const kb_f16 *)zb;
        }
        rhs_pack(u, c->N, c->K, c->ldb, c->B, bias, rp);
        rhs = rp;
    }
    int threads = g->base.threaded ? c->threads : 1;
    size_t bands = kb_ceil_div(c->M, m_step), range_cols;
    size_t nranges = n_ranges(bands, c->N, n_step, threads, &range_cols);
    block_job j = {u, c, (const unsigned char *)c->A, rhs, m_step, n_step, nranges, range_cols};
    if (u->run_matmul) {
        lhs_pack(u, c->M, c->K, c->A, c->lda, lp);
        j.lhs = lp;
    }
    size_t tasks = c->one_call ? whole_problem(&j) : bands * nranges;
    kb_parallel_for(tasks, threads, block_task, &j);
    return KB_OK;
}

kb_status kb_plugin_gemm_run(const kb_gemm_call *c, kb_error *err) {
    const kb_plugin_gemm_impl *g = (const kb_plugin_gemm_impl *)c->impl;
    if (!g) return kb_fail(err, KB_ERR_INTERNAL, "plugin", "plugin GEMM run without its realization");
    if (g->decl->form == KB_PLUGIN_WHOLE_CALL) return whole_gemm(g, c, err);
    return ukernel_gemm(g, c, err);
}

/* ---- packing -------------------------------------------------------------- */

kb_status kb_plugin_packed_size(const kb_plugin_gemm_impl *g, size_t n, size_t k, size_t *size, kb_error *err) {
    const kb_plugin_realization *r = g->decl;
    size_t s;
    if (r->form == KB_PLUGIN_WHOLE_CALL) {
        s = r->packed_b_size(r->ctx, n, k);
        if (s == 0)
            return kb_fail(err, KB_ERR_UNSUPPORTED, "plugin", "%s: packed_b_size(%zu, %zu) is 0",
                           g->name, n, k);
    } else {
        if (!kb_add_ok(r->matmul->rhs_get_packed_size(n, k), sizeof(kb_packed_header), &s))
            return kb_fail(err, KB_ERR_OVERFLOW, "N", "packed size overflows size_t");
    }
    *size = s;
    return KB_OK;
}

kb_status kb_plugin_pack(const kb_plugin_gemm_impl *g, size_t n, size_t k, const kb_f16 *b, size_t ldb,
                         const kb_f16 *bias, void *dst, size_t dst_size, kb_error *err) {
    const kb_plugin_realization *r = g->decl;
    if (r->form == KB_PLUGIN_WHOLE_CALL) {
        kb_status st;
        if (kb_cc_checking()) {
            uint64_t x[] = {U(r->ctx), n, k, U(b), ldb, U(bias), U(dst), dst_size};
            st = (kb_status)(int32_t)kb_cc_run("its pack_b", FN(r->pack_b), 8, x, 0, NULL);
        } else {
            st = r->pack_b(r->ctx, n, k, b, ldb, bias, dst, dst_size);
        }
        if (st == KB_OK) st = kb_cc_take(g->name, err);
        return st == KB_OK ? KB_OK : err->code ? st : refused(err, g->name, st, "its pack_b failed");
    }
    const kb_plugin_matmul_ukernel *u = r->matmul;
    size_t payload = u->rhs_get_packed_size(n, k);
    kb_f16 *zeros = NULL;
    if (!bias) {
        zeros = kb_heap_calloc(KB_HEAP_TAG_KBENCH, n, sizeof(kb_f16)); /* kbench's, not the packer's */
        if (!zeros) return kb_fail(err, KB_ERR_OUT_OF_MEMORY, "bias", "cannot allocate %zu zero bias values", n);
        bias = zeros;
    }
    unsigned char *out = dst;
    rhs_pack(u, n, k, ldb, b, bias, out + sizeof(kb_packed_header));
    free(zeros);
    kb_status st = kb_cc_take(g->name, err);
    if (st != KB_OK) return st;
    seal((kb_packed_header *)out, g->id, current_vector_bits(r->isa), n, k, (uint32_t)u->get_nr(), payload);
    return KB_OK;
}

kb_status kb_plugin_lhs_packed_size(const kb_plugin_gemm_impl *g, size_t m, size_t k, size_t *size,
                                    kb_error *err) {
    const kb_plugin_realization *r = g->decl;
    if (r->form != KB_PLUGIN_MICRO_KERNEL || !r->matmul->run_matmul)
        return kb_fail(err, KB_ERR_UNSUPPORTED, "realization", "%s has no LHS packer (%s)", g->name,
                       r->form == KB_PLUGIN_WHOLE_CALL ? "the whole-call form" : "it reads the LHS in place");
    const kb_plugin_matmul_ukernel *u = r->matmul;
    size_t s = u->lhs_get_packed_size(m, k, u->get_mr(), u->get_kr(), u->get_sr());
    if (s == 0) return kb_fail(err, KB_ERR_UNSUPPORTED, "plugin", "%s: lhs_get_packed_size is 0", g->name);
    *size = s;
    return KB_OK;
}

kb_status kb_plugin_pack_lhs(const kb_plugin_gemm_impl *g, size_t m, size_t k, const kb_f16 *a,
                             size_t lda, void *dst, kb_error *err) {
    lhs_pack(g->decl->matmul, m, k, a, lda, dst);
    return kb_cc_take(g->name, err);
}

/* ---- convolution ---------------------------------------------------------- */

static kb_status whole_conv_one(const kb_plugin_conv_impl *p, const kb_conv_desc *d, size_t oh, size_t ow,
                                const kb_f16 *input, const kb_f16 *filter, const kb_f16 *bias, kb_f16 *output,
                                char *msg, size_t msg_len) {
    kb_plugin_conv_args a;
    memset(&a, 0, sizeof a);
    a.desc = d;
    a.out_h = oh;
    a.out_w = ow;
    a.input = input;
    a.filter = filter;
    a.bias = bias;
    a.output = output;
    a.message = msg;
    a.message_len = msg_len;
    msg[0] = '\0';
    if (kb_cc_checking()) {
        uint64_t x[] = {U(p->decl->ctx), U(&a)};
        return (kb_status)(int32_t)kb_cc_run("its conv2d", FN(p->decl->conv2d), 2, x, 0, NULL);
    }
    return p->decl->conv2d(p->decl->ctx, &a);
}

typedef struct image_job {
    const kb_plugin_conv_impl *p;
    kb_conv_desc one; /* the descriptor with n = 1 */
    size_t oh, ow;
    const kb_f16 *input, *filter, *bias;
    kb_f16 *output;
    atomic_int status;
    atomic_flag taken;
    char message[KB_MESSAGE_LEN];
} image_job;

static void image_task(void *ctx, size_t img) {
    image_job *j = ctx;
    const kb_conv_desc *d = &j->one;
    char msg[KB_MESSAGE_LEN];
    kb_status st = whole_conv_one(j->p, d, j->oh, j->ow, j->input + img * d->h * d->w * d->c_in, j->filter, j->bias,
                                  j->output + img * j->oh * j->ow * d->c_out, msg, sizeof msg);
    if (st != KB_OK && !atomic_flag_test_and_set(&j->taken)) {
        memcpy(j->message, msg, sizeof msg);
        j->message[sizeof j->message - 1] = '\0';
        atomic_store(&j->status, (int)st);
    }
}

typedef struct iblock_job {
    const kb_plugin_imatmul_ukernel *u;
    const unsigned char *lhs, *rhs;
    unsigned char *dst;
    size_t M, N, kcc, kcl, m_step, nranges, range_cols, dst_stride;
    float lo, hi;
} iblock_job;

/* One task: an m_step band of output pixels over one range of channels (all
 * of N unless the bands are fewer than the threads), in one call of the
 * kernel, as the GEMM loop above calls run_matmul. */
static void iblock_task(void *ctx, size_t task) {
    const iblock_job *j = ctx;
    size_t m0 = task / j->nranges * j->m_step, n0 = task % j->nranges * j->range_cols;
    size_t m = j->M - m0 < j->m_step ? j->M - m0 : j->m_step;
    size_t n = j->N - n0 < j->range_cols ? j->N - n0 : j->range_cols;
    const unsigned char *lhs = j->lhs + j->u->get_lhs_packed_offset(m0, j->kcc, j->kcl);
    const unsigned char *rhs = j->rhs + j->u->get_rhs_packed_offset(n0, j->kcc, j->kcl);
    unsigned char *dst = j->dst + j->u->get_dst_offset(m0, n0, j->dst_stride);
    if (kb_cc_checking()) {
        uint64_t x[] = {m, n, j->kcc, j->kcl, U(lhs), U(rhs), U(dst), j->dst_stride};
        float clamps[] = {j->lo, j->hi};
        kb_cc_run("its run_imatmul", FN(j->u->run_imatmul), 8, x, 2, clamps);
        return;
    }
    j->u->run_imatmul(m, n, j->kcc, j->kcl, lhs, rhs, dst, j->dst_stride, j->lo, j->hi);
}

static kb_status ukernel_conv(const kb_plugin_conv_impl *p, const kb_conv_desc *d, size_t oh, size_t ow,
                              const kb_f16 *input, const kb_f16 *filter, const kb_f16 *bias, kb_f16 *output,
                              int threads, kb_error *err) {
    const kb_plugin_imatmul_ukernel *u = p->decl->imatmul;
    size_t M = d->n * oh * ow, N = d->c_out, kcc = d->kh * d->kw, kcl = d->c_in;
    size_t lm = u->lhs_get_m_step(), m_step = u->get_m_step(), n_step = u->get_n_step();
    if (!lm || !m_step || !n_step)
        return kb_fail(err, KB_ERR_INTERNAL, "plugin", "%s: a step query returned 0", p->name);
    size_t mblocks = kb_ceil_div(M, lm), nptrs, ptr_bytes;
    if (!kb_mul_ok(mblocks * lm, kcc, &nptrs) || !kb_mul_ok(nptrs, sizeof(void *), &ptr_bytes))
        return kb_fail(err, KB_ERR_OVERFLOW, "desc", "the pointer table overflows size_t");
    size_t lhs_bytes = u->lhs_get_packed_size(M, kcc, kcl), rhs_bytes = u->rhs_get_packed_size(N, kcc, kcl);
    size_t pad_bytes = align64(kcl * sizeof(kb_f16)), zero_bias = bias ? 0 : align64(N * sizeof(kb_f16));
    size_t total = align64(ptr_bytes);
    if (!kb_add_ok(total, pad_bytes + zero_bias, &total) || !kb_add_ok(total, align64(lhs_bytes), &total) ||
        !kb_add_ok(total, align64(rhs_bytes), &total))
        return kb_fail(err, KB_ERR_OVERFLOW, "desc", "the indirect GEMM's buffers overflow size_t");
    const void **ptrs;
    unsigned char *pad, *zb, *lhs, *rhs;
    if (kb_guard_on() != KB_GUARD_OFF) { /* checking runs: each piece guarded on its own */
        const uint32_t *over = p->decl->overread;
        ptrs = kb_scratch_piece(ptr_bytes, over[KB_PLUGIN_OPERAND_INDIRECTION], "the indirection table");
        pad = kb_scratch_piece(kcl * sizeof(kb_f16), over[KB_PLUGIN_OPERAND_INDIRECTION],
                               "the padding row (c_in zeros)");
        zb = bias ? NULL
                  : kb_scratch_piece(N * sizeof(kb_f16), over[KB_PLUGIN_OPERAND_BIAS],
                                     "the zero bias kbench passes rhs_pack");
        lhs = kb_scratch_piece(lhs_bytes, over[KB_PLUGIN_OPERAND_LHS_PACKED], "the kbench-packed LHS");
        rhs = kb_scratch_piece(rhs_bytes, over[KB_PLUGIN_OPERAND_B_PACKED], "the kbench-packed RHS");
        if (!ptrs || !pad || (!bias && !zb) || !lhs || !rhs)
            return kb_fail(err, KB_ERR_OUT_OF_MEMORY, "scratch", "cannot map guarded buffers for the indirect GEMM");
    } else {
        unsigned char *mem = kb_scratch_get_outer(total);
        if (!mem)
            return kb_fail(err, KB_ERR_OUT_OF_MEMORY, "scratch", "cannot allocate %zu bytes for the indirect GEMM",
                           total);
        ptrs = (const void **)mem;
        pad = mem + align64(ptr_bytes);
        zb = pad + pad_bytes;
        lhs = zb + zero_bias;
        rhs = lhs + align64(lhs_bytes);
    }
    memset(pad, 0, kcl * sizeof(kb_f16));
    if (!bias) {
        memset(zb, 0, N * sizeof(kb_f16));
        bias = (const kb_f16 *)zb;
    }
    /* the pointer table: per block of lm output pixels, per filter tap, lm rows */
    for (size_t b = 0; b < mblocks; b++)
        for (size_t tap = 0; tap < kcc; tap++) {
            size_t ky = tap / d->kw, kx = tap % d->kw;
            for (size_t r = 0; r < lm; r++) {
                size_t pix = b * lm + r;
                const void *ptr = pad;
                if (pix < M) {
                    size_t img = pix / (oh * ow), oy = pix / ow % oh, ox = pix % ow;
                    size_t iy = oy * d->stride_h + ky * d->dil_h, ix = ox * d->stride_w + kx * d->dil_w;
                    if (iy >= d->pad_top && ix >= d->pad_left && iy - d->pad_top < d->h && ix - d->pad_left < d->w)
                        ptr = input + ((img * d->h + (iy - d->pad_top)) * d->w + (ix - d->pad_left)) * d->c_in;
                }
                ptrs[(b * kcc + tap) * lm + r] = ptr;
            }
        }
    if (kb_cc_checking()) {
        uint64_t lx[] = {M, kcc, kcl, U(ptrs), 0, U(pad), U(lhs)};
        kb_cc_run("its lhs_pack", FN(u->lhs_pack), 7, lx, 0, NULL);
        uint64_t rx[] = {N, kcc, kcl, N * sizeof(kb_f16), U(filter), U(bias), U(rhs)};
        kb_cc_run("its rhs_pack", FN(u->rhs_pack), 7, rx, 0, NULL);
    } else {
        u->lhs_pack(M, kcc, kcl, (const void *const *)ptrs, 0, pad, lhs);
        u->rhs_pack(N, kcc, kcl, N * sizeof(kb_f16), filter, bias, rhs);
    }
    size_t bands = kb_ceil_div(M, m_step), range_cols;
    size_t nranges = n_ranges(bands, N, n_step, threads, &range_cols);
    iblock_job j = {u, lhs, rhs, (unsigned char *)output, M, N, kcc, kcl, m_step, nranges, range_cols,
                    N * sizeof(kb_f16), d->clamp_min, d->clamp_max};
    kb_parallel_for(bands * nranges, threads, iblock_task, &j);
    return KB_OK;
}

kb_status kb_plugin_conv_run(const kb_conv_impl *self, const kb_conv_desc *d, size_t oh, size_t ow,
                             const kb_f16 *input, const kb_f16 *filter, const kb_f16 *bias, kb_f16 *output,
                             const kb_selector *sel, kb_error *err) {
    const kb_plugin_conv_impl *p = (const kb_plugin_conv_impl *)self;
    int threads = (self->threaded && sel->threads > 1) ? sel->threads : 1;
    if (p->decl->form == KB_PLUGIN_MICRO_KERNEL)
        return ukernel_conv(p, d, oh, ow, input, filter, bias, output, threads, err);
    if (threads <= 1 || d->n < 2) {
        char msg[KB_MESSAGE_LEN];
        kb_status st = whole_conv_one(p, d, oh, ow, input, filter, bias, output, msg, sizeof msg);
        msg[sizeof msg - 1] = '\0';
        return st == KB_OK ? KB_OK : refused(err, p->name, st, msg);
    }
    image_job j;
    memset(&j, 0, sizeof j);
    j.p = p;
    j.one = *d;
    j.one.n = 1;
    j.oh = oh;
    j.ow = ow;
    j.input = input;
    j.filter = filter;
    j.bias = bias;
    j.output = output;
    atomic_init(&j.status, KB_OK);
    atomic_flag_clear(&j.taken);
    kb_parallel_for(d->n, threads, image_task, &j);
    kb_status st = (kb_status)atomic_load(&j.status);
    return st == KB_OK ? KB_OK : refused(err, p->name, st, j.message);
}
