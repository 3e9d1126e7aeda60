/* kb_im2col.c — im2col + GEMM convolution for any backend with a plain-B
 * GEMM: the patch matrix of one image and one group is built in scratch,
 * then the realization's own GEMM (self->gemm) multiplies it by the filter. */
#include "kb_internal.h"

#include <string.h>

/* Rows of the patch matrix for one image and one group: row r = (oy, ox),
 * column k = (ky * kw + kx) * cg + ci, zero where the tap is padding. */
static KB_NOINLINE void im2col_group(const kb_conv_desc *d, size_t oh, size_t ow, const kb_f16 *img,
                         size_t g, kb_f16 *cols) {
    size_t cg = d->c_in / d->groups;
    size_t kdim = d->kh * d->kw * cg;
    for (size_t oy = 0; oy < oh; oy++) {
        for (size_t ox = 0; ox < ow; ox++) {
            kb_f16 *row = cols + (oy * ow + ox) * kdim;
            for (size_t ky = 0; ky < d->kh; ky++) {
                /* iy = oy*sh + ky*dh - pad_top, computed without wrapping */
                size_t iy_p = oy * d->stride_h + ky * d->dil_h;
                bool yin = iy_p >= d->pad_top && iy_p - d->pad_top < d->h;
                for (size_t kx = 0; kx < d->kw; kx++) {
                    size_t ix_p = ox * d->stride_w + kx * d->dil_w;
                    bool xin = ix_p >= d->pad_left && ix_p - d->pad_left < d->w;
                    kb_f16 *dst = row + (ky * d->kw + kx) * cg;
                    if (yin && xin) {
                        const kb_f16 *src = img + ((iy_p - d->pad_top) * d->w + (ix_p - d->pad_left)) * d->c_in + g * cg;
                        memcpy(dst, src, cg * sizeof(kb_f16));
                    } else {
                        memset(dst, 0, cg * sizeof(kb_f16));
                    }
                }
            }
        }
    }
}

kb_status kb_conv_im2col_gemm_run(const kb_conv_impl *self, const kb_conv_desc *d, size_t oh,
                                  size_t ow, const kb_f16 *input, const kb_f16 *filter,
                                  const kb_f16 *bias, kb_f16 *output, const kb_selector *sel,
                                  kb_error *err) {
    if (!self->gemm)
        return kb_fail(err, KB_ERR_INTERNAL, "realization", "%s names no GEMM", self->name);
    size_t cg = d->c_in / d->groups, og = d->c_out / d->groups;
    size_t kdim = d->kh * d->kw * cg, rows = oh * ow;
    size_t bytes;
    if (!kb_mul_ok(rows, kdim, &bytes) || !kb_mul_ok(bytes, sizeof(kb_f16), &bytes))
        return kb_fail(err, KB_ERR_OVERFLOW, "desc", "im2col buffer size overflows size_t");
    kb_f16 *cols = (kb_f16 *)kb_scratch_get_outer(bytes);
    if (!cols) return kb_fail(err, KB_ERR_OUT_OF_MEMORY, "scratch", "cannot allocate %zu bytes for im2col", bytes);
    for (size_t n = 0; n < d->n; n++) {
        const kb_f16 *img = input + n * d->h * d->w * d->c_in;
        kb_f16 *out = output + n * rows * d->c_out;
        for (size_t g = 0; g < d->groups; g++) {
            im2col_group(d, oh, ow, img, g, cols);
            kb_gemm_call c;
            memset(&c, 0, sizeof c);
            c.M = rows; c.N = og; c.K = kdim;
            c.A = cols; c.lda = kdim;
            c.bform = KB_BFORM_PLAIN;
            c.B = filter + g * og; c.ldb = d->c_out;
            c.bias = bias ? bias + g * og : NULL;
            c.C = out + g * og; c.ldc = d->c_out;
            c.clamp_min = d->clamp_min; c.clamp_max = d->clamp_max;
            c.threads = sel->threads > 0 ? sel->threads : 1;
            kb_status st = self->gemm->run(&c, err);
            if (st != KB_OK) return st;
        }
    }
    return KB_OK;
}
