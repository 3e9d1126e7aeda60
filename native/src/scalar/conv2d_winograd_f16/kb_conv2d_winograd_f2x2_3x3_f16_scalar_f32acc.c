/* kb_conv2d_winograd_f2x2_3x3_f16_scalar_f32acc.c — Winograd F(2x2, 3x3)
 * convolution for 3x3, stride 1, dilation 1 layers (any padding, groups).
 *
 * Per output tile of 2x2 and per output channel co of group g:
 *   U[co][ci] = G g G^T        (4x4, FP32; g = the 3x3 filter)
 *   V[ci]     = B^T d B        (4x4, FP32; d = the 4x4 input tile, zero padded)
 *   M         = sum over ci of U[co][ci] (.) V[ci], in ci order (FP32)
 *   Y         = A^T M A        (2x2), + bias, clamp, round to FP16
 * with G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1], B^T = [1 0 -1 0; 0 1 1 0;
 * 0 -1 1 0; 0 1 0 -1], A^T = [1 1 1 0; 0 1 -1 -1].
 *
 * Declared error model (not the GEMM class): with |.| taken elementwise,
 *   |Y - y| <= gamma(c_in/groups + 12, u32) * S_w,
 *   S_w = |A^T| (sum_ci (|G||g||G^T|) (.) (|B^T||d||B|)) |A| + |bias|,
 * the transforms adding up to 4 + 4 + 4 roundings to the channel sum. S_w can
 * exceed sum |x w| several times over: Winograd trades accuracy for fewer
 * multiplications. Non-finite inputs give a non-finite output (the
 * transforms mix infinities: inf - inf), not IEEE's sum. */
#include "../../core/kb_internal.h"

#include <string.h>

static void filter_transform(const float g[3][3], float u[4][4]) {
    float t[4][3]; /* G g */
    for (int j = 0; j < 3; j++) {
        t[0][j] = g[0][j];
        t[1][j] = 0.5f * (g[0][j] + g[1][j] + g[2][j]);
        t[2][j] = 0.5f * (g[0][j] - g[1][j] + g[2][j]);
        t[3][j] = g[2][j];
    }
    for (int i = 0; i < 4; i++) { /* (G g) G^T */
        u[i][0] = t[i][0];
        u[i][1] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
        u[i][2] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
        u[i][3] = t[i][2];
    }
}

static void input_transform(const float d[4][4], float v[4][4]) {
    float t[4][4]; /* B^T d */
    for (int j = 0; j < 4; j++) {
        t[0][j] = d[0][j] - d[2][j];
        t[1][j] = d[1][j] + d[2][j];
        t[2][j] = d[2][j] - d[1][j];
        t[3][j] = d[1][j] - d[3][j];
    }
    for (int i = 0; i < 4; i++) { /* (B^T d) B */
        v[i][0] = t[i][0] - t[i][2];
        v[i][1] = t[i][1] + t[i][2];
        v[i][2] = t[i][2] - t[i][1];
        v[i][3] = t[i][1] - t[i][3];
    }
}

static void output_transform(const float m[4][4], float y[2][2]) {
    float t[2][4]; /* A^T m */
    for (int j = 0; j < 4; j++) {
        t[0][j] = m[0][j] + m[1][j] + m[2][j];
        t[1][j] = m[1][j] - m[2][j] - m[3][j];
    }
    for (int i = 0; i < 2; i++) { /* (A^T m) A */
        y[i][0] = t[i][0] + t[i][1] + t[i][2];
        y[i][1] = t[i][1] - t[i][2] - t[i][3];
    }
}

static kb_status run(const kb_conv_impl *self, const kb_conv_desc *d, size_t oh, size_t ow,
                     const kb_f16 *input, const kb_f16 *filter, const kb_f16 *bias,
                     kb_f16 *output, const kb_selector *sel, kb_error *err) {
    (void)self; (void)sel;
    size_t cg = d->c_in / d->groups, og = d->c_out / d->groups;
    KB_ASSUME(cg > 0 && og > 0 && oh > 0 && ow > 0 && d->n > 0); /* a valid descriptor (kb_conv.c) */
    size_t ucount, ubytes, vbytes;
    if (!kb_mul_ok(d->c_out, cg, &ucount) || !kb_mul_ok(ucount, 16 * sizeof(float), &ubytes) ||
        !kb_mul_ok(cg, 16 * sizeof(float), &vbytes) || !kb_add_ok(ubytes, vbytes, &vbytes))
        return kb_fail(err, KB_ERR_OVERFLOW, "desc", "Winograd transform buffers overflow size_t");
    float *scratch = kb_scratch_get_outer(vbytes);
    if (!scratch) return kb_fail(err, KB_ERR_OUT_OF_MEMORY, "scratch", "cannot allocate %zu bytes", vbytes);
    float (*U)[4][4] = (float (*)[4][4])scratch;          /* [co][ci] */
    float (*V)[4][4] = (float (*)[4][4])(scratch + ucount * 16); /* [ci] of one tile */
    for (size_t co = 0; co < d->c_out; co++) {
        for (size_t ci = 0; ci < cg; ci++) {
            float g[3][3];
            for (int ky = 0; ky < 3; ky++)
                for (int kx = 0; kx < 3; kx++)
                    g[ky][kx] = kb_h2f(filter[(((size_t)ky * 3 + (size_t)kx) * cg + ci) * d->c_out + co]);
            filter_transform(g, U[co * cg + ci]);
        }
    }
    for (size_t n = 0; n < d->n; n++) {
        const kb_f16 *img = input + n * d->h * d->w * d->c_in;
        for (size_t ty = 0; ty < oh; ty += 2) {
            for (size_t tx = 0; tx < ow; tx += 2) {
                for (size_t g = 0; g < d->groups; g++) {
                    for (size_t ci = 0; ci < cg; ci++) {
                        float tile[4][4];
                        for (int i = 0; i < 4; i++) {
                            size_t iy = ty + (size_t)i; /* + pad_top offset below */
                            bool yin = iy >= d->pad_top && iy - d->pad_top < d->h;
                            for (int j = 0; j < 4; j++) {
                                size_t ix = tx + (size_t)j;
                                bool xin = ix >= d->pad_left && ix - d->pad_left < d->w;
                                tile[i][j] = (yin && xin)
                                    ? kb_h2f(img[((iy - d->pad_top) * d->w + (ix - d->pad_left)) * d->c_in + g * cg + ci])
                                    : 0.0f;
                            }
                        }
                        input_transform(tile, V[ci]);
                    }
                    for (size_t oc = 0; oc < og; oc++) {
                        size_t co = g * og + oc;
                        float m[4][4];
                        memset(m, 0, sizeof m);
                        for (size_t ci = 0; ci < cg; ci++) {
                            const float (*u)[4] = U[co * cg + ci];
                            for (int i = 0; i < 4; i++)
                                for (int j = 0; j < 4; j++) m[i][j] = m[i][j] + u[i][j] * V[ci][i][j];
                        }
                        float y[2][2];
                        output_transform(m, y);
                        float b = bias ? kb_h2f(bias[co]) : 0.0f;
                        for (int i = 0; i < 2; i++) {
                            if (ty + (size_t)i >= oh) continue;
                            for (int j = 0; j < 2; j++) {
                                if (tx + (size_t)j >= ow) continue;
                                float acc = bias ? y[i][j] + b : y[i][j];
                                output[((n * oh + ty + (size_t)i) * ow + tx + (size_t)j) * d->c_out + co] =
                                    kb_store_f16(acc, d->clamp_min, d->clamp_max);
                            }
                        }
                    }
                }
            }
        }
    }
    return KB_OK;
}

const kb_conv_impl kb_conv2d_winograd_f2x2_3x3_f16_scalar_f32acc = {
    .name = "conv2d_winograd_f2x2_3x3_scalar_f32acc",
    .backend = KB_BACKEND_SCALAR,
    .kernel = "conv2d_winograd_f2x2_3x3_f16_nhwc_hwio_scalar_f32acc",
    .isa = KB_ISA_SCALAR,
    .accum = KB_ACCUM_FP32,
    .k_per_rounding = 1,
    .threaded = 0,
    .run = run,
    .conv_class = KB_CONV_CLASS_3X3_S1,
    .error_model = KB_ERROR_MODEL_WINOGRAD_F2X2_3X3,
};
