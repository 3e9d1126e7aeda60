/* kb_sve_gemm.c — the SVE2.1 backend's GEMM driver: B prepared in the
 * x16p4vlx2b layout, then the micro-kernel's core over the whole problem.
 *
 * The kernels take every row and every column of C in one call (their loops
 * over rows, blocks and K are in their own code), so a single-threaded call
 * is one core call over the whole problem, as a caller of the micro-kernel's
 * run_matmul makes it. With threads, the GEMM's rows are split into bands of
 * whole five-row steps and the GEMV's columns into whole blocks, one core
 * call per thread; every output is computed by the same chain of FDOTs
 * whatever the split, so the result does not depend on the thread count.
 * Plain and portable B are packed into the call's scratch first (the
 * packer's kb_sve_rhs_pack_view); a natively packed B is read in place. */
#include "kb_sve.h"

#if defined(__aarch64__)
#include <string.h>

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* ---- calling-convention checks of our own micro-kernels ------------------
 * In a checking run (kb_cc_checking) the core is called through kb_cc.c's
 * trampoline; otherwise directly. A worker runs one request at a time: one
 * kernel per stand-in is enough. */
static kb_sve_core_fn core_target;

static void core_checked(const kb_sve_matmul_args *a) {
    uint64_t x[] = {(uint64_t)(uintptr_t)a};
    kb_cc_run("the SVE2.1 micro-kernel", (void *)(uintptr_t)core_target, 1, x, 0, NULL);
}

static kb_sve_core_fn checked(kb_sve_core_fn core) {
    if (!kb_cc_checking()) return core;
    core_target = core;
    return core_checked;
}

typedef struct plan {
    kb_sve_core_fn core;
    const kb_gemm_call *c;
    const unsigned char *rhs;
    size_t vlb;            /* the vector length the B was packed at (bytes)  */
    size_t rows;           /* rows per task (GEMM), 0: the GEMV's column split */
    size_t cols;           /* columns per task (GEMV)                          */
    size_t block_bytes;
    atomic_int failed;
} plan;

static void task(void *ctx, size_t t) {
    plan *p = (plan *)ctx;
    if (kb_sve_vl_bytes() != p->vlb) { /* this thread runs at another vector length */
        atomic_store(&p->failed, 1);
        return;
    }
    const kb_gemm_call *c = p->c;
    kb_sve_matmul_args a = {
        .a = c->A, .lda = c->lda * sizeof(kb_f16), .rhs = p->rhs, .m = c->M, .n = c->N, .k = c->K,
        .dst = c->C, .ldc = c->ldc * sizeof(kb_f16), .clamp_min = c->clamp_min,
        .clamp_max = c->clamp_max,
    };
    if (p->rows) { /* rows [r0, r1) */
        size_t r0 = t * p->rows;
        a.a = c->A + r0 * c->lda;
        a.dst = c->C + r0 * c->ldc;
        a.m = min_sz(p->rows, c->M - r0);
    } else { /* whole blocks of columns [n0, n1), each row */
        size_t n0 = t * p->cols, nr = p->vlb;
        a.rhs = p->rhs + n0 / nr * p->block_bytes;
        a.n = min_sz(p->cols, c->N - n0);
        for (size_t m = 0; m < c->M; m++) {
            a.a = c->A + m * c->lda;
            a.dst = c->C + m * c->ldc + n0;
            a.m = 1;
            p->core(&a);
        }
        return;
    }
    p->core(&a);
}

kb_status kb_sve_gemm_run(const kb_sve_matmul_ukernel *uk, const kb_gemm_call *c, kb_error *err) {
    plan p;
    memset(&p, 0, sizeof p);
    p.core = checked(uk->core);
    p.c = c;
    p.vlb = kb_sve_vl_bytes();
    size_t nr = p.vlb; /* 4 VL32 columns a block */
    atomic_init(&p.failed, 0);
    p.block_bytes = kb_sve_rhs_block_bytes(nr, c->K);
    unsigned char *mem = NULL;
    if (c->bform == KB_BFORM_NATIVE) {
        p.rhs = (const unsigned char *)c->bpayload;
    } else {
        size_t bytes;
        if (!kb_layout_payload_size(KB_LAYOUT_SVE_X16P4VLX2B, c->N, c->K, (uint32_t)(p.vlb * 8), &bytes))
            return kb_fail(err, KB_ERR_OVERFLOW, "scratch", "SVE2.1 GEMM scratch size overflows size_t");
        mem = (unsigned char *)kb_scratch_get(bytes);
        if (!mem) return kb_fail(err, KB_ERR_OUT_OF_MEMORY, "scratch", "cannot allocate %zu bytes", bytes);
        kb_bview v;
        kb_bview_from_call(c, &v); /* plain or portable; the bias separate (or none) */
        kb_sve_rhs_pack_view(&v, c->N, c->K, nr, mem);
        p.rhs = mem;
    }
    size_t threads = (size_t)(c->threads > 0 ? c->threads : 1), tasks;
    if (uk->get_m_step() > 1) { /* GEMM: bands of whole row steps */
        size_t steps = kb_ceil_div(c->M, uk->get_m_step());
        size_t per = kb_ceil_div(steps, min_sz(threads, steps));
        p.rows = per * uk->get_m_step();
        tasks = kb_ceil_div(c->M, p.rows);
    } else { /* GEMV: whole blocks of columns */
        size_t blocks = kb_ceil_div(c->N, nr);
        size_t per = kb_ceil_div(blocks, min_sz(threads, blocks));
        p.cols = per * nr;
        tasks = kb_ceil_div(c->N, p.cols);
    }
    if (tasks == 1)
        task(&p, 0);
    else
        kb_parallel_for(tasks, (int)tasks, task, &p);
    kb_scratch_release();
    if (atomic_load(&p.failed))
        return kb_fail(err, KB_ERR_INTERNAL, "selector",
                       "a thread ran at another SVE vector length than the call");
    return KB_OK;
}

#endif /* __aarch64__ */
