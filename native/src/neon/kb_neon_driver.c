/* kb_neon_driver.c — runs a NEON micro-kernel over a whole GEMM (any form
 * of B) or an indirect-GEMM convolution. Output tiles are independent, so
 * they are split over threads without changing a bit of the result.
 * The GEMM loop is either unblocked (tile after tile) or cache-blocked
 * (kb_neon_blocking: output blocks, K blocks with partial sums carried in
 * the accumulator format); both compute every output by the same chain.
 * Scratch (tail panels, partial sums, row-pointer tables, the zero row)
 * comes from the calling thread's kb_scratch, taken before the threads
 * start. */
#if defined(__aarch64__)
#include "kb_neon.h"

#include <string.h>

/* In a checking run (kb_cc_checking when a call is planned) a plan holds a
 * stand-in that calls the micro-kernel through kb_cc.c's trampoline, so that
 * production calls pay nothing per tile; a worker runs one request at a
 * time, so one kernel per process is enough. */
static void (*run_target)(const kb_neon_tile *t);

static void run_checked(const kb_neon_tile *t) {
    uint64_t x[] = {(uint64_t)(uintptr_t)t};
    kb_cc_run("the NEON micro-kernel", (void *)(uintptr_t)run_target, 1, x, 0, NULL);
}

static void (*checked_run(void (*run)(const kb_neon_tile *t)))(const kb_neon_tile *t) {
    if (!kb_cc_checking()) return run;
    run_target = run;
    return run_checked;
}

typedef struct gemm_plan {
    const kb_neon_ukernel *uk;
    void (*run)(const kb_neon_tile *t); /* uk->run, or its checked stand-in (kb_cc.c) */
    const kb_gemm_call *c;
    size_t mr, m_tiles, n_tiles;
    /* per 16-column panel j: B panel, its row stride, bias (16 values or NULL) */
    const kb_f16 *(*panel)(const struct gemm_plan *p, size_t j, size_t *stride, const kb_f16 **bias);
    const kb_f16 *tail_panel;   /* plain B: the last, partial panel, zero padded */
    const kb_f16 *tail_bias;    /* separate bias: the last 16 values, zero padded */
    /* blocked loop: block sizes (mb a multiple of mr, nb of 16, kb <= K) */
    size_t mb, nb, kb, m_blocks, n_blocks, k_blocks;
    unsigned char *partial;     /* per thread slot: mb x nb partial sums (K blocked) */
    size_t partial_bytes;       /* per slot */
    size_t acc_tile_bytes;      /* one tile's partial sums: mr x 16 values */
} gemm_plan;

static const kb_f16 *panel_plain(const gemm_plan *p, size_t j, size_t *stride, const kb_f16 **bias) {
    const kb_gemm_call *c = p->c;
    size_t j0 = j * KB_NEON_NR;
    bool tail = j0 + KB_NEON_NR > c->N;
    *bias = c->bias ? (tail ? p->tail_bias : c->bias + j0) : NULL;
    if (tail) {
        *stride = KB_NEON_NR;
        return p->tail_panel;
    }
    *stride = c->ldb;
    return c->B + j0;
}

static const kb_f16 *panel_portable(const gemm_plan *p, size_t j, size_t *stride, const kb_f16 **bias) {
    const kb_gemm_call *c = p->c;
    size_t j0 = j * KB_NEON_NR;
    *bias = c->bias ? (j0 + KB_NEON_NR > c->N ? p->tail_bias : c->bias + j0) : NULL;
    *stride = KB_NEON_NR;
    return (const kb_f16 *)c->bpayload + j * c->K * KB_NEON_NR;
}

static const kb_f16 *panel_native(const gemm_plan *p, size_t j, size_t *stride, const kb_f16 **bias) {
    const kb_gemm_call *c = p->c;
    const kb_f16 *block = (const kb_f16 *)c->bpayload + j * (KB_NEON_NR + c->K * KB_NEON_NR);
    *bias = block; /* the block's bias row */
    *stride = KB_NEON_NR;
    return block + KB_NEON_NR;
}

static void gemm_tile(const gemm_plan *p, size_t mi, size_t j, size_t k0, size_t klen, void *acc,
                      unsigned acc_mode) {
    const kb_gemm_call *c = p->c;
    size_t m0 = mi * p->mr, j0 = j * KB_NEON_NR;
    const kb_f16 *rows[8];
    size_t m = c->M - m0 < p->mr ? c->M - m0 : p->mr;
    for (size_t r = 0; r < m; r++) rows[r] = c->A + (m0 + r) * c->lda + k0;
    kb_neon_tile t;
    t.m = m;
    t.n = c->N - j0 < KB_NEON_NR ? c->N - j0 : KB_NEON_NR;
    t.taps = 1;
    t.tap_len = klen;
    t.a = rows;
    t.b = p->panel(p, j, &t.b_stride, &t.bias) + k0 * t.b_stride;
    t.c = c->C + m0 * c->ldc + j0;
    t.ldc = c->ldc;
    t.clamp_min = c->clamp_min;
    t.clamp_max = c->clamp_max;
    t.acc = acc;
    t.acc_mode = acc_mode;
    p->run(&t);
}

/* Unblocked: one task per output tile, all of K in one pass. */
static void gemm_task(void *ctx, size_t task) {
    const gemm_plan *p = ctx;
    gemm_tile(p, task / p->n_tiles, task % p->n_tiles, 0, p->c->K, NULL, 0);
}

/* Blocked: one task per output block (m blocks fastest, so consecutive
 * tasks share the B columns); inside it, K blocks in order, and per K
 * block the block's tiles, n tiles outer and m tiles inner (the B panel
 * of a tile column stays in L1 while the m tiles pass over it). */
static void gemm_block_task(void *ctx, size_t task, int slot) {
    const gemm_plan *p = ctx;
    const kb_gemm_call *c = p->c;
    size_t ib = task % p->m_blocks, jb = task / p->m_blocks;
    size_t mi0 = ib * (p->mb / p->mr), j0 = jb * (p->nb / KB_NEON_NR);
    size_t mi1 = kb_ceil_div(c->M < (ib + 1) * p->mb ? c->M : (ib + 1) * p->mb, p->mr);
    size_t j1 = kb_ceil_div(c->N < (jb + 1) * p->nb ? c->N : (jb + 1) * p->nb, KB_NEON_NR);
    size_t m_tiles = p->mb / p->mr;
    unsigned char *part = p->partial ? p->partial + (size_t)slot * p->partial_bytes : NULL;
    for (size_t kbi = 0; kbi < p->k_blocks; kbi++) {
        size_t k0 = kbi * p->kb, klen = c->K - k0 < p->kb ? c->K - k0 : p->kb;
        unsigned mode = (kbi > 0 ? KB_NEON_ACC_LOAD : 0u) | (kbi + 1 < p->k_blocks ? KB_NEON_ACC_STORE : 0u);
        for (size_t j = j0; j < j1; j++)
            for (size_t mi = mi0; mi < mi1; mi++) {
                void *acc = part ? part + ((j - j0) * m_tiles + (mi - mi0)) * p->acc_tile_bytes : NULL;
                gemm_tile(p, mi, j, k0, klen, acc, mode);
            }
    }
}

static size_t round_up(size_t v, size_t m) { return kb_ceil_div(v, m) * m; }

kb_status kb_neon_gemm(const kb_neon_ukernel *uk, const kb_neon_blocking *blk, const kb_gemm_call *c,
                       kb_error *err) {
    gemm_plan p;
    memset(&p, 0, sizeof p);
    p.uk = uk;
    p.run = checked_run(uk->run);
    p.c = c;
    p.mr = uk->get_mr();
    p.m_tiles = kb_ceil_div(c->M, p.mr);
    p.n_tiles = kb_ceil_div(c->N, KB_NEON_NR);
    bool blocked = blk && (blk->mb || blk->nb || blk->kb);
    size_t tasks = p.m_tiles * p.n_tiles, slots = 0;
    if (blocked) {
        /* a dimension not blocked (0), or smaller than its block, is one block */
        p.mb = blk->mb && blk->mb < c->M ? round_up(blk->mb, p.mr) : round_up(c->M, p.mr);
        p.nb = blk->nb && blk->nb < c->N ? round_up(blk->nb, KB_NEON_NR) : round_up(c->N, KB_NEON_NR);
        p.kb = blk->kb && blk->kb < c->K ? blk->kb : c->K;
        p.m_blocks = kb_ceil_div(c->M, p.mb);
        p.n_blocks = kb_ceil_div(c->N, p.nb);
        p.k_blocks = kb_ceil_div(c->K, p.kb);
        tasks = p.m_blocks * p.n_blocks;
        if (p.k_blocks > 1) {
            p.acc_tile_bytes = p.mr * KB_NEON_NR * uk->get_acc_bytes();
            if (!kb_mul_ok(p.mb / p.mr * (p.nb / KB_NEON_NR), p.acc_tile_bytes, &p.partial_bytes))
                return kb_fail(err, KB_ERR_OVERFLOW, "scratch", "partial-sum block size overflows size_t");
            p.partial_bytes = (p.partial_bytes + 63) & ~(size_t)63;
            slots = (size_t)kb_parallel_threads(tasks, c->threads);
        }
    }
    size_t tail_cols = c->N % KB_NEON_NR;
    bool need_tail_panel = c->bform == KB_BFORM_PLAIN && tail_cols;
    bool need_tail_bias = c->bform != KB_BFORM_NATIVE && c->bias && tail_cols;
    size_t panel_bytes = need_tail_panel ? c->K * KB_NEON_NR * sizeof(kb_f16) : 0;
    size_t bias_bytes = need_tail_bias ? KB_NEON_NR * sizeof(kb_f16) : 0;
    /* scratch: [partial sums per slot] [tail panel] [tail bias]; 64-byte aligned parts */
    size_t partial_total, bytes;
    if (!kb_mul_ok(slots, p.partial_bytes, &partial_total) || !kb_add_ok(partial_total, panel_bytes, &bytes) ||
        !kb_add_ok(bytes, bias_bytes, &bytes))
        return kb_fail(err, KB_ERR_OVERFLOW, "scratch", "GEMM scratch size overflows size_t");
    if (bytes) {
        unsigned char *s = kb_scratch_get(bytes);
        if (!s) return kb_fail(err, KB_ERR_OUT_OF_MEMORY, "scratch", "cannot allocate %zu bytes", bytes);
        size_t j0 = c->N - tail_cols;
        if (partial_total) p.partial = s;
        if (need_tail_panel) {
            kb_f16 *tp = (kb_f16 *)(s + partial_total);
            kb_neon_pack_narrow(tail_cols, c->K, c->B + j0, c->ldb, j0, tp);
            p.tail_panel = tp;
        }
        if (need_tail_bias) {
            kb_f16 *tb = (kb_f16 *)(s + partial_total + panel_bytes);
            memset(tb, 0, KB_NEON_NR * sizeof(kb_f16));
            memcpy(tb, c->bias + j0, tail_cols * sizeof(kb_f16));
            p.tail_bias = tb;
        }
    }
    p.panel = c->bform == KB_BFORM_PLAIN ? panel_plain : c->bform == KB_BFORM_PORTABLE ? panel_portable : panel_native;
    if (blocked)
        kb_parallel_for_slots(tasks, c->threads, gemm_block_task, &p);
    else
        kb_parallel_for(tasks, c->threads, gemm_task, &p);
    return KB_OK;
}

/* ---- indirect GEMM convolution ------------------------------------------ */

typedef struct conv_plan {
    const kb_neon_ukernel *uk;
    void (*run)(const kb_neon_tile *t); /* uk->run, or its checked stand-in (kb_cc.c) */
    const kb_conv_desc *d;
    size_t oh, ow, rows, taps, cg, og, mr, m_tiles, n_tiles;
    const kb_f16 *const *table;  /* [n][g][row][tap] pointers into the input */
    const kb_f16 *filter, *bias;
    const kb_f16 *tail_panels;   /* per group: the last partial panel, zero padded */
    const kb_f16 *tail_bias;     /* per group: the last 16 bias values, zero padded */
    kb_f16 *output;
} conv_plan;

static void conv_task(void *ctx, size_t task) {
    const conv_plan *p = ctx;
    const kb_conv_desc *d = p->d;
    size_t per_image = d->groups * p->m_tiles * p->n_tiles;
    size_t img = task / per_image, rest = task % per_image;
    size_t g = rest / (p->m_tiles * p->n_tiles);
    rest %= p->m_tiles * p->n_tiles;
    size_t mi = rest / p->n_tiles, j = rest % p->n_tiles;
    size_t m0 = mi * p->mr, j0 = j * KB_NEON_NR;
    size_t kdim = p->taps * p->cg;
    kb_neon_tile t;
    t.m = p->rows - m0 < p->mr ? p->rows - m0 : p->mr;
    t.n = p->og - j0 < KB_NEON_NR ? p->og - j0 : KB_NEON_NR;
    t.taps = p->taps;
    t.tap_len = p->cg;
    t.a = p->table + ((img * d->groups + g) * p->rows + m0) * p->taps;
    bool tail = j0 + KB_NEON_NR > p->og;
    if (tail) {
        t.b = p->tail_panels + g * kdim * KB_NEON_NR;
        t.b_stride = KB_NEON_NR;
    } else {
        t.b = p->filter + g * p->og + j0;
        t.b_stride = d->c_out;
    }
    t.bias = p->bias ? (tail ? p->tail_bias + g * KB_NEON_NR : p->bias + g * p->og + j0) : NULL;
    t.c = p->output + (img * p->rows + m0) * d->c_out + g * p->og + j0;
    t.ldc = d->c_out;
    t.clamp_min = d->clamp_min;
    t.clamp_max = d->clamp_max;
    t.acc = NULL;
    t.acc_mode = 0;
    p->run(&t);
}

/* The row-pointer table [n][g][row][tap] into the input (the zero row
 * where a tap falls into the padding). */
static KB_NOINLINE void build_table(const kb_conv_desc *d, size_t oh, size_t ow, size_t cg,
                                    const kb_f16 *input, const kb_f16 *zero,
                                    const kb_f16 **table) {
    size_t taps = d->kh * d->kw, rows = oh * ow;
    for (size_t img = 0; img < d->n; img++) {
        const kb_f16 *x = input + img * d->h * d->w * d->c_in;
        for (size_t g = 0; g < d->groups; g++) {
            const kb_f16 **row = table + ((img * d->groups + g) * rows) * taps;
            for (size_t oy = 0; oy < oh; oy++) {
                for (size_t ox = 0; ox < ow; ox++) {
                    for (size_t ky = 0; ky < d->kh; ky++) {
                        size_t iy = oy * d->stride_h + ky * d->dil_h;
                        bool yin = iy >= d->pad_top && iy - d->pad_top < d->h;
                        for (size_t kx = 0; kx < d->kw; kx++) {
                            size_t ix = ox * d->stride_w + kx * d->dil_w;
                            bool xin = ix >= d->pad_left && ix - d->pad_left < d->w;
                            *row++ = (yin && xin)
                                ? x + ((iy - d->pad_top) * d->w + (ix - d->pad_left)) * d->c_in + g * cg
                                : zero;
                        }
                    }
                }
            }
        }
    }
}

kb_status kb_neon_conv_indirect(const kb_neon_ukernel *uk, const kb_conv_desc *d, size_t oh,
                                size_t ow, const kb_f16 *input, const kb_f16 *filter,
                                const kb_f16 *bias, kb_f16 *output, int threads,
                                kb_error *err) {
    conv_plan p;
    memset(&p, 0, sizeof p);
    p.uk = uk;
    p.run = checked_run(uk->run);
    p.d = d;
    p.oh = oh;
    p.ow = ow;
    p.rows = oh * ow;
    p.taps = d->kh * d->kw;
    p.cg = d->c_in / d->groups;
    p.og = d->c_out / d->groups;
    p.mr = uk->get_mr();
    p.m_tiles = kb_ceil_div(p.rows, p.mr);
    p.n_tiles = kb_ceil_div(p.og, KB_NEON_NR);
    p.filter = filter;
    p.bias = bias;
    p.output = output;
    size_t kdim = p.taps * p.cg;
    size_t tail_cols = p.og % KB_NEON_NR;
    /* scratch: pointer table, zero row, tail panels and tail bias per group */
    size_t entries, table_bytes, zero_bytes = p.cg * sizeof(kb_f16);
    if (!kb_mul_ok(d->n * d->groups, p.rows, &entries) || !kb_mul_ok(entries, p.taps, &entries) ||
        !kb_mul_ok(entries, sizeof(const kb_f16 *), &table_bytes))
        return kb_fail(err, KB_ERR_OVERFLOW, "desc", "indirection table size overflows size_t");
    size_t panels_bytes = tail_cols ? d->groups * kdim * KB_NEON_NR * sizeof(kb_f16) : 0;
    size_t tbias_bytes = (tail_cols && bias) ? d->groups * KB_NEON_NR * sizeof(kb_f16) : 0;
    size_t zero_off = (table_bytes + 15) & ~(size_t)15;
    size_t panels_off = (zero_off + zero_bytes + 15) & ~(size_t)15;
    size_t tbias_off = panels_off + panels_bytes;
    size_t total = tbias_off + tbias_bytes;
    unsigned char *s = kb_scratch_get_outer(total);
    if (!s) return kb_fail(err, KB_ERR_OUT_OF_MEMORY, "scratch", "cannot allocate %zu bytes", total);
    const kb_f16 **table = (const kb_f16 **)s;
    kb_f16 *zero = (kb_f16 *)(s + zero_off);
    memset(zero, 0, zero_bytes);
    build_table(d, oh, ow, p.cg, input, zero, table);
    if (panels_bytes) {
        kb_f16 *panels = (kb_f16 *)(s + panels_off);
        for (size_t g = 0; g < d->groups; g++)
            kb_neon_pack_narrow(tail_cols, kdim, filter + g * p.og + (p.og - tail_cols), d->c_out,
                                g * p.og + (p.og - tail_cols), panels + g * kdim * KB_NEON_NR);
        p.tail_panels = panels;
    }
    if (tbias_bytes) {
        kb_f16 *tb = (kb_f16 *)(s + tbias_off);
        memset(tb, 0, tbias_bytes);
        for (size_t g = 0; g < d->groups; g++)
            memcpy(tb + g * KB_NEON_NR, bias + g * p.og + (p.og - tail_cols), tail_cols * sizeof(kb_f16));
        p.tail_bias = tb;
    }
    p.table = table;
    kb_parallel_for(d->n * d->groups * p.m_tiles * p.n_tiles, threads, conv_task, &p);
    return KB_OK;
}
#endif
