/* kb_conv2d_direct_f16_scalar_f32acc.c — direct NHWC/HWIO convolution.
 *
 * Accumulation order per output element, matching im2col + GEMM:
 *   acc = +0.0f; for ky, for kx, for ci in the group: acc += x * w
 *   (taps that fall into padding add +0 * w, as the im2col zero row does)
 *   acc += bias; clamp; round to FP16. */
#include "../../core/kb_internal.h"

static kb_status run(const kb_conv_impl *self, const kb_conv_desc *d, size_t oh, size_t ow,
                     const kb_f16 *input, const kb_f16 *filter, const kb_f16 *bias,
                     kb_f16 *output, const kb_selector *sel, kb_error *err) {
    (void)self; (void)sel; (void)err;
    size_t cg = d->c_in / d->groups, og = d->c_out / d->groups;
    size_t kh = d->kh, kw = d->kw; /* read once: the stores to the output cannot change them */
    KB_ASSUME(kh > 0 && kw > 0 && cg > 0 && og > 0); /* a valid descriptor (kb_conv.c) */
    for (size_t n = 0; n < d->n; n++) {
        const kb_f16 *img = input + n * d->h * d->w * d->c_in;
        for (size_t oy = 0; oy < oh; oy++) {
            for (size_t ox = 0; ox < ow; ox++) {
                kb_f16 *out = output + ((n * oh + oy) * ow + ox) * d->c_out;
                for (size_t co = 0; co < d->c_out; co++) {
                    size_t g = co / og;
                    float acc = 0.0f;
                    for (size_t ky = 0; ky < kh; ky++) {
                        size_t iy_p = oy * d->stride_h + ky * d->dil_h;
                        bool yin = iy_p >= d->pad_top && iy_p - d->pad_top < d->h;
                        for (size_t kx = 0; kx < kw; kx++) {
                            size_t ix_p = ox * d->stride_w + kx * d->dil_w;
                            bool xin = ix_p >= d->pad_left && ix_p - d->pad_left < d->w;
                            const kb_f16 *wrow = filter + ((ky * kw + kx) * cg) * d->c_out + co;
                            if (yin && xin) {
                                const kb_f16 *x = img + ((iy_p - d->pad_top) * d->w + (ix_p - d->pad_left)) * d->c_in + g * cg;
                                for (size_t ci = 0; ci < cg; ci++)
                                    acc = acc + kb_h2f(x[ci]) * kb_h2f(wrow[ci * d->c_out]);
                            } else {
                                for (size_t ci = 0; ci < cg; ci++)
                                    acc = acc + 0.0f * kb_h2f(wrow[ci * d->c_out]);
                            }
                        }
                    }
                    if (bias) acc = acc + kb_h2f(bias[co]);
                    out[co] = kb_store_f16(acc, d->clamp_min, d->clamp_max);
                }
            }
        }
    }
    return KB_OK;
}

const kb_conv_impl kb_conv2d_direct_f16_scalar_f32acc = {
    .name = "conv2d_direct_scalar_f32acc",
    .backend = KB_BACKEND_SCALAR,
    .kernel = "conv2d_direct_f16_nhwc_hwio_scalar_f32acc",
    .isa = KB_ISA_SCALAR,
    .accum = KB_ACCUM_FP32,
    .threaded = 0,
    .run = run,
};
