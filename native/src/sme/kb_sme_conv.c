/* kb_sme_conv.c — 2-D convolution by indirect GEMM on the SME MOPA kernels.
 *
 * The GEMM view: M = n * out_h * out_w output pixels, N = c_out, K = one
 * chunk per filter tap (kh * kw chunks) of c_in input channels, each chunk
 * padded to a whole k pair. Row m of the LHS is never materialised as an
 * im2col row: for each block of m_step (= mr, which depends on the SVL) rows
 * a pointer table gives, per tap, the address of the c_in channels of the
 * input pixel under that tap, or a row of zeros where the tap falls into
 * the padding (and for rows past M). The packer reads through the table
 * into the x16p2vlx2 layout, a chunk of k pairs at a time, and the MOPA
 * kernel does the rest (kb_sme_mopa_execute). Filters and bias are packed
 * together into x16p2vlx2b with the same per-tap padding.
 *
 * NHWC input, HWIO filters, stride, padding, dilation, bias, clamp; groups 1
 * only (the dispatch table declares max_groups = 1, so grouped convolutions
 * go to another backend and the realization that ran says so). */
#include "kb_sme.h"

#if defined(__aarch64__)
#include <string.h>

typedef struct conv_lhs {
    const kb_conv_desc *d;
    size_t oh, ow, M, mr;
    const kb_f16 *input;
    const kb_f16 *zero; /* c_in zeros, rounded up to a k pair */
} conv_lhs;

/* The pointer table of one block of mr rows: for each tap (ky, kx), mr row
 * pointers (the blocked-by-m_step layout of the indirect LHS). */
static void build_table(const conv_lhs *s, size_t m0, const void **table) {
    const kb_conv_desc *d = s->d;
    size_t taps = d->kh * d->kw, plane = s->oh * s->ow;
    for (size_t r = 0; r < s->mr; r++) {
        size_t m = m0 + r;
        if (m >= s->M) {
            for (size_t t = 0; t < taps; t++) table[t * s->mr + r] = s->zero;
            continue;
        }
        size_t img = m / plane, rem = m % plane, oy = rem / s->ow, ox = rem % s->ow;
        const kb_f16 *base = s->input + img * d->h * d->w * d->c_in;
        for (size_t ky = 0; ky < d->kh; ky++) {
            /* iy = oy * stride + ky * dilation - pad_top, without wrapping */
            size_t iy_p = oy * d->stride_h + ky * d->dil_h;
            bool yin = iy_p >= d->pad_top && iy_p - d->pad_top < d->h;
            for (size_t kx = 0; kx < d->kw; kx++) {
                size_t ix_p = ox * d->stride_w + kx * d->dil_w;
                bool xin = ix_p >= d->pad_left && ix_p - d->pad_left < d->w;
                const void *p = s->zero;
                if (yin && xin)
                    p = base + ((iy_p - d->pad_top) * d->w + (ix_p - d->pad_left)) * d->c_in;
                table[(ky * d->kw + kx) * s->mr + r] = p;
            }
        }
    }
}

static void conv_pack_lhs(const void *ctx, void *extra, size_t m0, size_t rows, size_t p0,
                          size_t pc, kb_f16 *dst) {
    const conv_lhs *s = (const conv_lhs *)ctx;
    const void **table = (const void **)extra;
    (void)rows; /* rows past M point at the zero row */
    build_table(s, m0, table);
    kb_sme_lhs_imatmul_pack_block((const void *const *)table, 0, s->zero, s->d->kh * s->d->kw,
                                  s->d->c_in, s->mr, p0, pc, dst);
}

kb_status kb_sme_conv_igemm_run(const kb_sme_imatmul_ukernel *uk, const kb_conv_desc *d,
                                size_t oh, size_t ow, const kb_f16 *input,
                                const kb_f16 *filter, const kb_f16 *bias, kb_f16 *output,
                                const kb_selector *sel, kb_error *err) {
    if (d->groups != 1)
        return kb_fail(err, KB_ERR_UNSUPPORTED, "desc.groups",
                       "%zu: the SME indirect GEMM takes groups = 1 only", d->groups);
    size_t taps = d->kh * d->kw, clp = kb_sme_roundup(d->c_in, KB_SME_KR), kpad, M;
    if (!kb_mul_ok(taps, clp, &kpad) || !kb_mul_ok(d->n, oh * ow, &M))
        return kb_fail(err, KB_ERR_OVERFLOW, "desc", "indirect GEMM size overflows size_t");

    conv_lhs src = {d, oh, ow, M, 0, input, NULL};
    kb_sme_mopa_plan p;
    memset(&p, 0, sizeof p);
    p.core = kb_sme_checked_mopa(uk->core);
    p.M = M;
    p.N = d->c_out;
    p.kpairs = kpad / KB_SME_KR;
    p.C = output;
    p.ldc = d->c_out;
    p.clamp_min = d->clamp_min;
    p.clamp_max = d->clamp_max;
    p.pack = conv_pack_lhs;
    p.pack_ctx = &src;
    p.threads = sel->threads;
    size_t mr = kb_sme_block(), task_bytes, rhs_bytes, zero_bytes, total;
    if (!kb_mul_ok(taps * sizeof(void *), mr, &p.extra_bytes) || !kb_sme_mopa_prepare(&p, &task_bytes) ||
        !kb_layout_payload_size(KB_LAYOUT_SME_X16P2VLX2B, d->c_out, kpad, (uint32_t)(p.svlb * 8), &rhs_bytes) ||
        rhs_bytes > SIZE_MAX - 64)
        return kb_fail(err, KB_ERR_OVERFLOW, "desc", "indirect GEMM scratch size overflows size_t");
    rhs_bytes = KB_SME_ALIGN(rhs_bytes);
    zero_bytes = KB_SME_ALIGN(clp * sizeof(kb_f16));
    if (!kb_add_ok(rhs_bytes, zero_bytes, &total) || !kb_add_ok(total, task_bytes, &total))
        return kb_fail(err, KB_ERR_OVERFLOW, "desc", "indirect GEMM scratch size overflows size_t");
    src.mr = p.mr;
    unsigned char *mem = (unsigned char *)kb_scratch_get(total);
    if (!mem) return kb_fail(err, KB_ERR_OUT_OF_MEMORY, "scratch", "cannot allocate %zu bytes", total);

    kb_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme_run(d->c_out, taps, d->c_in, p.mr, filter,
                                                       d->c_out * sizeof(kb_f16), bias, mem);
    kb_f16 *zero = (kb_f16 *)(mem + rhs_bytes);
    memset(zero, 0, clp * sizeof(kb_f16));
    src.zero = zero;
    p.rhs = mem;
    bool ok = kb_sme_mopa_execute(&p, mem + rhs_bytes + zero_bytes);
    kb_scratch_release();
    if (!ok)
        return kb_fail(err, KB_ERR_INTERNAL, "selector",
                       "a thread ran at another streaming vector length than the call");
    return KB_OK;
}

#endif /* __aarch64__ */
