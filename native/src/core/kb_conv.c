/* kb_conv.c — the convolution entry point: validates the descriptor and
 * the pointers, picks a realization, runs it, reports it. */
#include "kb_internal.h"

#include <math.h>
#include <string.h>

static kb_status positive(size_t v, const char *field, kb_error *err) {
    if (v == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, field, "must be positive, got 0");
    return KB_OK;
}

static bool bytes_ok(size_t a, size_t b, size_t c, size_t d) {
    size_t s;
    return kb_mul_ok(a, b, &s) && kb_mul_ok(s, c, &s) && kb_mul_ok(s, d, &s) &&
           kb_mul_ok(s, sizeof(kb_f16), &s);
}

kb_status kb_conv2d_output_shape(const kb_conv_desc *d, size_t *out_h, size_t *out_w,
                                 kb_error *err) {
    kb_clear_error(err);
    if (!d) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "desc", "is NULL");
    kb_status st;
#define POS(f) if ((st = positive(d->f, "desc." #f, err)) != KB_OK) return st
    POS(n); POS(h); POS(w); POS(c_in); POS(c_out); POS(kh); POS(kw);
    POS(stride_h); POS(stride_w); POS(dil_h); POS(dil_w); POS(groups);
#undef POS
    if (d->c_in % d->groups)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "desc.groups", "%zu does not divide c_in = %zu", d->groups, d->c_in);
    if (d->c_out % d->groups)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "desc.groups", "%zu does not divide c_out = %zu", d->groups, d->c_out);
    size_t ekh, ekw, ph, pw;
    if (!kb_mul_ok(d->dil_h, d->kh - 1, &ekh) || !kb_add_ok(ekh, 1, &ekh))
        return kb_fail(err, KB_ERR_OVERFLOW, "desc.dil_h", "dilated kernel height overflows");
    if (!kb_mul_ok(d->dil_w, d->kw - 1, &ekw) || !kb_add_ok(ekw, 1, &ekw))
        return kb_fail(err, KB_ERR_OVERFLOW, "desc.dil_w", "dilated kernel width overflows");
    if (!kb_add_ok(d->h, d->pad_top, &ph) || !kb_add_ok(ph, d->pad_bottom, &ph))
        return kb_fail(err, KB_ERR_OVERFLOW, "desc.pad_top", "padded height overflows");
    if (!kb_add_ok(d->w, d->pad_left, &pw) || !kb_add_ok(pw, d->pad_right, &pw))
        return kb_fail(err, KB_ERR_OVERFLOW, "desc.pad_left", "padded width overflows");
    if (ekh > ph)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "desc.kh", "dilated kernel height %zu exceeds padded input height %zu", ekh, ph);
    if (ekw > pw)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "desc.kw", "dilated kernel width %zu exceeds padded input width %zu", ekw, pw);
    size_t oh = (ph - ekh) / d->stride_h + 1, ow = (pw - ekw) / d->stride_w + 1;
    if (!bytes_ok(d->n, d->h, d->w, d->c_in))
        return kb_fail(err, KB_ERR_OVERFLOW, "desc.n", "input byte count overflows size_t");
    if (!bytes_ok(d->kh, d->kw, d->c_in / d->groups, d->c_out))
        return kb_fail(err, KB_ERR_OVERFLOW, "desc.kh", "filter byte count overflows size_t");
    if (!bytes_ok(d->n, oh, ow, d->c_out))
        return kb_fail(err, KB_ERR_OVERFLOW, "desc.n", "output byte count overflows size_t");
    if (out_h) *out_h = oh;
    if (out_w) *out_w = ow;
    return KB_OK;
}

kb_status kb_conv2d(const kb_conv_desc *d, const kb_f16 *input, const kb_f16 *filter,
                    const kb_f16 *bias, kb_f16 *output, const kb_selector *sel,
                    kb_realization *ran, kb_error *err) {
    kb_clear_error(err);
    if (ran) memset(ran, 0, sizeof *ran);
    size_t oh, ow;
    kb_status st = kb_conv2d_output_shape(d, &oh, &ow, err);
    if (st != KB_OK) return st;
    if (!input) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "input", "is NULL");
    if (!filter) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "filter", "is NULL");
    if (!output) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "output", "is NULL");
    if (!kb_aligned(input, sizeof(kb_f16))) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "input", "is not aligned to 2 bytes");
    if (!kb_aligned(filter, sizeof(kb_f16))) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "filter", "is not aligned to 2 bytes");
    if (!kb_aligned(bias, sizeof(kb_f16))) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "bias", "is not aligned to 2 bytes");
    if (!kb_aligned(output, sizeof(kb_f16))) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "output", "is not aligned to 2 bytes");
    if (isnan(d->clamp_min)) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "desc.clamp_min", "is NaN");
    if (isnan(d->clamp_max)) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "desc.clamp_max", "is NaN");
    if (d->clamp_min > d->clamp_max)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "desc.clamp_min", "%g is greater than clamp_max %g", d->clamp_min, d->clamp_max);
    kb_selector def;
    if (!sel) { kb_selector_default(&def); sel = &def; }
    if (sel->isa_cap < KB_ISA_SCALAR || sel->isa_cap > KB_ISA_NO_CAP)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "selector.isa_cap", "%d is not an ISA class or KB_ISA_NO_CAP", sel->isa_cap);
    const kb_conv_impl *impl;
    if ((st = kb_select_conv(sel, d, &impl, err)) != KB_OK) return st;
    st = impl->run(impl, d, oh, ow, input, filter, bias, output, sel, err);
    if (st == KB_OK) st = kb_cc_take(impl->name, err); /* a checking run's ABI check */
    kb_scratch_release();
    if (st != KB_OK) return st;
    kb_fill_conv_realization(impl, sel->threads, ran);
    return KB_OK;
}
