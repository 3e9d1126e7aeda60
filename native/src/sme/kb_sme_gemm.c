/* kb_sme_gemm.c — the SME backend's GEMM drivers: the MOPA block loop
 * (shared with the convolution), the GEMV loop, and the preparation of B.
 *
 * Drivers run outside streaming mode; each micro-kernel call enters and
 * leaves it. All memory a call needs comes from one thread-local scratch
 * buffer taken once per call (kb_scratch_get), laid out as
 *     [packed B, unless B came natively packed] [per-thread areas]
 * and each per-thread area as [LHS chunk] [FP32 partial sums] [extra]. By
 * default the LHS chunk is at most KB_SME_LHS_CHUNK_BYTES and the partial
 * sums at most KB_SME_ACC_BYTES (one block if that is larger), whatever M
 * and K are; a blocked realization takes block_m x block_k FP16 values for
 * the LHS (its packed A block) and block_m x block_n FP32 partial sums. */
#include "kb_sme.h"

#if defined(__aarch64__)
#include <string.h>

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

static bool align_ok(size_t v, size_t *out) {
    if (v > SIZE_MAX - 63u) return false;
    *out = KB_SME_ALIGN(v);
    return true;
}

/* ---- the MOPA block loop -------------------------------------------------- */

bool kb_sme_mopa_prepare(kb_sme_mopa_plan *p, size_t *bytes) {
    p->svlb = kb_sme_svl_bytes();
    p->mr = p->svlb / 2;
    size_t mr = p->mr, pair_bytes = mr * 2 * sizeof(kb_f16); /* one k pair of mr rows */
    if (!kb_mul_ok(p->kpairs, mr * 4, &p->rhs_stride) || !kb_add_ok(p->rhs_stride, mr * 2, &p->rhs_stride))
        return false;
    p->nblocks = kb_ceil_div(p->N, mr);
    size_t mblocks = kb_ceil_div(p->M, mr);

    /* k pairs per chunk: the LHS chunk of mr rows stays within its budget */
    p->kc = p->block_k ? p->block_k / KB_SME_KR : KB_SME_LHS_CHUNK_BYTES / pair_bytes;
    if (!p->block_k && p->group_bytes == SIZE_MAX) p->kc = p->kpairs; /* one call: all of K */
    if (p->kc == 0) p->kc = 1;
    if (p->kc > p->kpairs) p->kc = p->kpairs;
    p->nchunks = kb_ceil_div(p->kpairs, p->kc);

    /* mr-row blocks per unit; with one chunk of K a single-threaded GEMM packs
     * up to group_bytes of them and runs its micro-kernel once over them */
    int threads = p->threads > 0 ? p->threads : 1;
    /* blocks of 64-byte multiples (a core may read a whole four-vector group
     * past an odd pair count), but for run_matmul over one chunk: its blocks
     * follow each other as it reads them */
    bool packed_run = p->run && p->nchunks == 1;
    if (!kb_mul_ok(p->kc, pair_bytes, &p->lhs_block_bytes) ||
        (!packed_run && !align_ok(p->lhs_block_bytes, &p->lhs_block_bytes)))
        return false;
    p->mgroup = p->block_m ? p->block_m / mr : 1;
    if (!p->block_m && packed_run && threads == 1 && p->group_bytes)
        p->mgroup = p->group_bytes / p->lhs_block_bytes;
    if (p->mgroup == 0) p->mgroup = 1;
    if (p->mgroup > mblocks) p->mgroup = mblocks;
    size_t mgroups = kb_ceil_div(mblocks, p->mgroup);

    /* column blocks per unit */
    if (p->block_n) {
        p->range_blocks = p->block_n / mr;
        if (p->range_blocks == 0) p->range_blocks = 1;
    } else {
        if (p->nchunks > 1) {
            size_t block_acc = mr * mr * sizeof(float);
            p->range_blocks = KB_SME_ACC_BYTES / block_acc;
            if (p->range_blocks == 0) p->range_blocks = 1;
        } else {
            p->range_blocks = p->nblocks;
        }
        if ((size_t)threads > mgroups) {
            /* too few block rows to go round: split the columns too */
            size_t want = kb_ceil_div((size_t)threads, mgroups);
            size_t split = kb_ceil_div(p->nblocks, min_sz(want, p->nblocks));
            if (split < p->range_blocks) p->range_blocks = split;
        }
    }
    if (p->range_blocks > p->nblocks) p->range_blocks = p->nblocks;
    p->nranges = kb_ceil_div(p->nblocks, p->range_blocks);
    if (!kb_mul_ok(mgroups, p->nranges, &p->units)) return false;
    p->tasks = min_sz((size_t)threads, p->units);

    if (!kb_mul_ok(p->lhs_block_bytes, p->mgroup, &p->lhs_bytes) || !align_ok(p->lhs_bytes, &p->lhs_bytes))
        return false;
    p->acc_bytes = 0;
    if (p->nchunks > 1 && (!kb_mul_ok(mr * sizeof(float), p->range_blocks * mr, &p->acc_bytes) ||
                           !kb_mul_ok(p->acc_bytes, p->mgroup * mr, &p->acc_bytes)))
        return false;
    if (!align_ok(p->acc_bytes, &p->acc_bytes)) return false;
    size_t extra;
    if (!align_ok(p->extra_bytes, &extra)) return false;
    p->task_bytes = p->lhs_bytes;
    if (!kb_add_ok(p->task_bytes, p->acc_bytes, &p->task_bytes) ||
        !kb_add_ok(p->task_bytes, extra, &p->task_bytes))
        return false;
    atomic_init(&p->failed, 0);
    return kb_mul_ok(p->task_bytes, p->tasks, bytes);
}

/* One unit's rows through the micro-kernel's run_matmul (in a checking run
 * through the calling-convention trampoline, the same call). */
static void run_unit(const kb_sme_mopa_plan *p, size_t rows, size_t cols, const unsigned char *lhs,
                     const unsigned char *rhs, kb_f16 *dst) {
    if (kb_cc_checking()) {
        uint64_t x[] = {rows, cols, p->K, (uint64_t)(uintptr_t)lhs, (uint64_t)(uintptr_t)rhs,
                        (uint64_t)(uintptr_t)dst, p->ldc * sizeof(kb_f16), sizeof(kb_f16)};
        float clamps[] = {p->clamp_min, p->clamp_max};
        kb_cc_run("the SME MOPA micro-kernel's run_matmul", (void *)(uintptr_t)p->run, 8, x, 2, clamps);
        return;
    }
    p->run(rows, cols, p->K, lhs, rhs, dst, p->ldc * sizeof(kb_f16), sizeof(kb_f16), p->clamp_min,
           p->clamp_max);
}

/* The units of a task whose K is one chunk, with run_matmul: a unit's rows
 * packed, then one call of the public entry over them. */
static void run_task(const kb_sme_mopa_plan *p, size_t t) {
    unsigned char *lhs = p->task_mem + t * p->task_bytes;
    void *extra = lhs + p->lhs_bytes + p->acc_bytes;
    size_t mr = p->mr, packed_m0 = SIZE_MAX;
    for (size_t u = t; u < p->units; u += p->tasks) {
        size_t m0 = u / p->nranges * p->mgroup * mr, b0 = u % p->nranges * p->range_blocks;
        size_t rows = min_sz(p->mgroup * mr, p->M - m0);
        size_t n0 = b0 * mr, cols = min_sz(p->N, (b0 + p->range_blocks) * mr) - n0;
        if (packed_m0 != m0) { /* the unit's A blocks (a column range after it reuses them) */
            for (size_t r = 0; r < rows; r += mr)
                p->pack(p->pack_ctx, extra, m0 + r, min_sz(mr, rows - r), 0, p->kpairs,
                        (kb_f16 *)(lhs + r / mr * p->lhs_block_bytes));
            packed_m0 = m0;
        }
        run_unit(p, rows, cols, lhs, p->rhs + b0 * p->rhs_stride, p->C + m0 * p->ldc + n0);
    }
}

static void mopa_task(void *ctx, size_t t) {
    kb_sme_mopa_plan *p = (kb_sme_mopa_plan *)ctx;
    if (kb_sme_svl_bytes() != p->svlb) { /* the packing was for another SVL */
        atomic_store(&p->failed, 1);
        return;
    }
    if (p->run && p->nchunks == 1) {
        run_task(p, t);
        return;
    }
    unsigned char *mem = p->task_mem + t * p->task_bytes;
    unsigned char *lhs = mem;
    float *acc = (float *)(mem + p->lhs_bytes);
    void *extra = mem + p->lhs_bytes + p->acc_bytes;
    size_t mr = p->mr, packed_m0 = SIZE_MAX;
    size_t acc_row = p->range_blocks * mr; /* floats per partial-sum row */
    for (size_t u = t; u < p->units; u += p->tasks) {
        size_t m0 = u / p->nranges * p->mgroup * mr, b0 = u % p->nranges * p->range_blocks;
        size_t nrb = kb_ceil_div(min_sz(p->mgroup * mr, p->M - m0), mr);
        size_t n0 = b0 * mr, cols = min_sz(p->N, (b0 + p->range_blocks) * mr) - n0;
        for (size_t c = 0; c < p->nchunks; c++) {
            size_t p0 = c * p->kc, pc = min_sz(p->kc, p->kpairs - p0);
            if (p->nchunks > 1 || packed_m0 != m0) { /* the A block of this unit and chunk */
                for (size_t rb = 0; rb < nrb; rb++) {
                    size_t r0 = m0 + rb * mr;
                    p->pack(p->pack_ctx, extra, r0, min_sz(mr, p->M - r0), p0, pc,
                            (kb_f16 *)(lhs + rb * p->lhs_block_bytes));
                }
                packed_m0 = m0;
            }
            for (size_t rb = 0; rb < nrb; rb++) {
                size_t r0 = m0 + rb * mr;
                kb_sme_mopa_args a = {
                    .lhs = lhs + rb * p->lhs_block_bytes, .lhs_block_stride = pc * mr * 2 * sizeof(kb_f16),
                    .rhs = p->rhs + b0 * p->rhs_stride, .rhs_block_stride = p->rhs_stride,
                    .rhs_k_offset = mr * sizeof(kb_f16) + p0 * mr * 2 * sizeof(kb_f16),
                    .m = min_sz(mr, p->M - r0), .n = cols, .kpairs = pc,
                    .dst = p->C + r0 * p->ldc + n0, .dst_stride = p->ldc * sizeof(kb_f16),
                    .acc = p->acc_bytes ? acc + rb * mr * acc_row : acc, /* unused in one pass */
                    .acc_stride = acc_row * sizeof(float),
                    .flags = (c > 0 ? KB_SME_ACC_LOAD : 0u) | (c + 1 < p->nchunks ? KB_SME_ACC_STORE : 0u) |
                             kb_sme_clamp_flags(p->clamp_max),
                    .clamp_min = p->clamp_min, .clamp_max = p->clamp_max,
                };
                p->core(&a);
            }
        }
    }
}

void kb_sme_describe_default_blocks(kb_realization *r) {
    size_t mr = r->vector_bits / 16; /* the SVL detected for this CPU (no RDSVL here) */
    if (mr == 0) return;
    size_t kc = KB_SME_LHS_CHUNK_BYTES / (mr * 2 * sizeof(kb_f16));
    size_t range = KB_SME_ACC_BYTES / (mr * mr * sizeof(float));
    r->block_k = (uint32_t)((kc ? kc : 1) * KB_SME_KR);
    r->block_n = (uint32_t)((range ? range : 1) * mr);
}

bool kb_sme_mopa_execute(kb_sme_mopa_plan *p, unsigned char *task_mem) {
    p->task_mem = task_mem;
    kb_parallel_for(p->tasks, (int)p->tasks, mopa_task, p);
    return atomic_load(&p->failed) == 0;
}

/* ---- B in the x16p2vlx2b layout ------------------------------------------ */

/* Bytes of B repacked for this call (0 when it came natively packed). */
static bool rhs_bytes(const kb_gemm_call *c, size_t svlb, size_t *bytes) {
    if (c->bform == KB_BFORM_NATIVE) {
        *bytes = 0;
        return true;
    }
    return kb_layout_payload_size(KB_LAYOUT_SME_X16P2VLX2B, c->N, c->K, (uint32_t)(svlb * 8), bytes) &&
           align_ok(*bytes, bytes);
}

static const unsigned char *prepare_rhs(const kb_gemm_call *c, size_t nr, unsigned char *dst) {
    if (c->bform == KB_BFORM_NATIVE) return (const unsigned char *)c->bpayload;
    kb_bview v;
    kb_bview_from_call(c, &v); /* plain or portable; bias separate (or none) */
    kb_sme_rhs_pack_view(&v, c->N, 1, c->K, nr, dst);
    return dst;
}

/* ---- MOPA GEMM -------------------------------------------------------------- */

typedef struct gemm_lhs {
    const kb_gemm_call *c;
    size_t mr;
} gemm_lhs;

static void gemm_pack_lhs(const void *ctx, void *extra, size_t m0, size_t rows, size_t p0,
                          size_t pc, kb_f16 *dst) {
    const gemm_lhs *g = (const gemm_lhs *)ctx;
    const kb_gemm_call *c = g->c;
    (void)extra;
    kb_sme_lhs_pack_block(c->A + m0 * c->lda, c->lda, rows, c->K, g->mr, p0, pc, dst);
}

kb_status kb_sme_gemm_mopa_run(const kb_sme_matmul_ukernel *uk, const kb_sme_blocking *blk,
                               const kb_gemm_call *c, kb_error *err) {
    kb_sme_mopa_plan p;
    memset(&p, 0, sizeof p);
    if (blk) {
        p.block_m = blk->mb;
        p.block_n = blk->nb;
        p.block_k = blk->kb;
    }
    /* a checking run calls the kernel through its calling-convention stand-in */
    p.core = kb_sme_checked_mopa(uk->core);
    p.run = uk->run_matmul;
    p.K = c->K;
    p.M = c->M;
    p.N = c->N;
    p.kpairs = kb_ceil_div(c->K, KB_SME_KR);
    p.C = c->C;
    p.ldc = c->ldc;
    p.clamp_min = c->clamp_min;
    p.clamp_max = c->clamp_max;
    gemm_lhs src = {c, 0};
    p.pack = gemm_pack_lhs;
    p.pack_ctx = &src;
    p.threads = c->threads;
    p.group_bytes = c->one_call ? SIZE_MAX : KB_SME_LHS_GROUP_BYTES;
    size_t task_bytes, b_bytes, total;
    if (!kb_sme_mopa_prepare(&p, &task_bytes) || !rhs_bytes(c, p.svlb, &b_bytes) ||
        !kb_add_ok(b_bytes, task_bytes, &total))
        return kb_fail(err, KB_ERR_OVERFLOW, "scratch", "SME GEMM scratch size overflows size_t");
    src.mr = p.mr;
    unsigned char *mem = (unsigned char *)kb_scratch_get(total);
    if (!mem) return kb_fail(err, KB_ERR_OUT_OF_MEMORY, "scratch", "cannot allocate %zu bytes", total);
    p.rhs = prepare_rhs(c, p.mr, mem);
    bool ok = kb_sme_mopa_execute(&p, mem + b_bytes);
    kb_scratch_release();
    if (!ok)
        return kb_fail(err, KB_ERR_INTERNAL, "selector",
                       "a thread ran at another streaming vector length than the call");
    return KB_OK;
}

/* ---- calling-convention checks of our own micro-kernels ----------------------
 * In a checking run (kb_cc_checking when a call is planned) the plan holds a
 * stand-in that calls the kernel through kb_cc.c's trampoline; otherwise the
 * kernel itself, so that production calls pay nothing per tile. A worker
 * runs one request at a time: one kernel per stand-in is enough. */

static kb_sme_mopa_core_fn mopa_target;
static kb_sme_gemv_core_fn gemv_target;

static void mopa_checked(const kb_sme_mopa_args *a) {
    uint64_t x[] = {(uint64_t)(uintptr_t)a};
    kb_cc_run("the SME MOPA micro-kernel", (void *)(uintptr_t)mopa_target, 1, x, 0, NULL);
}

static void gemv_checked(const kb_sme_gemv_args *a) {
    uint64_t x[] = {(uint64_t)(uintptr_t)a};
    kb_cc_run("the SME GEMV micro-kernel", (void *)(uintptr_t)gemv_target, 1, x, 0, NULL);
}

kb_sme_mopa_core_fn kb_sme_checked_mopa(kb_sme_mopa_core_fn core) {
    if (!kb_cc_checking()) return core;
    mopa_target = core;
    return mopa_checked;
}

static kb_sme_gemv_core_fn checked_gemv(kb_sme_gemv_core_fn core) {
    if (!kb_cc_checking()) return core;
    gemv_target = core;
    return gemv_checked;
}

/* ---- GEMV ------------------------------------------------------------------- */

typedef struct gemv_plan {
    const kb_sme_gemv_ukernel *uk;
    kb_sme_gemv_core_fn core; /* uk->core, or its checked stand-in in a checking run */
    const kb_gemm_call *c;
    const unsigned char *rhs;
    size_t svlb, nr, rhs_stride, nblocks, per_task;
    atomic_int failed;
} gemv_plan;

static void gemv_task(void *ctx, size_t t) {
    gemv_plan *g = (gemv_plan *)ctx;
    if (kb_sme_svl_bytes() != g->svlb) {
        atomic_store(&g->failed, 1);
        return;
    }
    const kb_gemm_call *c = g->c;
    size_t b0 = t * g->per_task, b1 = min_sz(g->nblocks, b0 + g->per_task);
    if (b0 >= b1) return;
    size_t n0 = b0 * g->nr, cols = min_sz(c->N, b1 * g->nr) - n0;
    for (size_t m = 0; m < c->M; m++) {
        kb_sme_gemv_args a = {
            .a = c->A + m * c->lda, .k = c->K,
            .rhs = g->rhs + b0 * g->rhs_stride, .rhs_block_stride = g->rhs_stride,
            .n = cols, .dst = c->C + m * c->ldc + n0,
            .flags = kb_sme_clamp_flags(c->clamp_max),
            .clamp_min = c->clamp_min, .clamp_max = c->clamp_max,
        };
        g->core(&a);
    }
}

kb_status kb_sme_gemm_gemv_run(const kb_sme_gemv_ukernel *uk, const kb_gemm_call *c,
                               kb_error *err) {
    gemv_plan g;
    memset(&g, 0, sizeof g);
    g.uk = uk;
    g.core = checked_gemv(uk->core);
    g.c = c;
    g.svlb = kb_sme_svl_bytes();
    g.nr = uk->get_nr();
    atomic_init(&g.failed, 0);
    size_t b_bytes;
    if (!rhs_bytes(c, g.svlb, &b_bytes) || !kb_mul_ok(kb_ceil_div(c->K, KB_SME_KR), g.nr * 4, &g.rhs_stride) ||
        !kb_add_ok(g.rhs_stride, g.nr * 2, &g.rhs_stride))
        return kb_fail(err, KB_ERR_OVERFLOW, "scratch", "SME GEMV scratch size overflows size_t");
    unsigned char *mem = NULL;
    if (b_bytes) {
        mem = (unsigned char *)kb_scratch_get(b_bytes);
        if (!mem) return kb_fail(err, KB_ERR_OUT_OF_MEMORY, "scratch", "cannot allocate %zu bytes", b_bytes);
    }
    g.rhs = prepare_rhs(c, g.nr, mem);
    g.nblocks = kb_ceil_div(c->N, g.nr);
    size_t tasks = min_sz((size_t)(c->threads > 0 ? c->threads : 1), g.nblocks);
    g.per_task = kb_ceil_div(g.nblocks, tasks);
    tasks = kb_ceil_div(g.nblocks, g.per_task);
    kb_parallel_for(tasks, (int)tasks, gemv_task, &g);
    kb_scratch_release();
    if (atomic_load(&g.failed))
        return kb_fail(err, KB_ERR_INTERNAL, "selector",
                       "a thread ran at another streaming vector length than the call");
    return KB_OK;
}

#endif /* __aarch64__ */
