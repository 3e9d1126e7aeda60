/* fuzz_conv.c — kb_conv2d (and kb_conv2d_output_shape) on fuzzer-chosen
 * descriptors: every size, stride, pad, dilation and group count, small
 * enough to run quickly, sometimes zero or inconsistent; clamps; bias;
 * forced realizations (direct, im2col + GEMM, Winograd). Input, filter,
 * bias and output are allocated at exactly the documented extents; a failed
 * call must name its field and leave the output untouched. */
#include "kb_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kb_cursor cur = {data, size};
    kb_conv_desc d;
    memset(&d, 0, sizeof d);
    uint8_t zero = kb_take_u8(&cur); /* which field, if any, is set to 0 */
    d.n = kb_take_range(&cur, 1, 2);
    d.h = kb_take_range(&cur, 1, 12);
    d.w = kb_take_range(&cur, 1, 12);
    d.groups = kb_take_range(&cur, 1, 4);
    d.c_in = d.groups * kb_take_range(&cur, 1, 4);
    d.c_out = d.groups * kb_take_range(&cur, 1, 4);
    if (kb_take_u8(&cur) == 0xff) d.c_in += 1; /* groups no longer divides c_in */
    d.kh = kb_take_range(&cur, 1, 5);
    d.kw = kb_take_range(&cur, 1, 5);
    d.stride_h = kb_take_range(&cur, 1, 3);
    d.stride_w = kb_take_range(&cur, 1, 3);
    d.pad_top = kb_take_range(&cur, 0, 3);
    d.pad_bottom = kb_take_range(&cur, 0, 3);
    d.pad_left = kb_take_range(&cur, 0, 3);
    d.pad_right = kb_take_range(&cur, 0, 3);
    d.dil_h = kb_take_range(&cur, 1, 3);
    d.dil_w = kb_take_range(&cur, 1, 3);
    uint8_t clamp = kb_take_u8(&cur);
    d.clamp_min = (clamp & 1) ? kb_take_f32(&cur) : -INFINITY;
    d.clamp_max = (clamp & 2) ? kb_take_f32(&cur) : INFINITY;
    size_t *fields[] = {&d.n, &d.h, &d.w, &d.c_in, &d.c_out, &d.kh, &d.kw, &d.stride_h,
                        &d.stride_w, &d.dil_h, &d.dil_w, &d.groups};
    if (zero < sizeof fields / sizeof fields[0]) *fields[zero] = 0;
    if (zero == 200) d.pad_left = SIZE_MAX; /* padded width overflows */
    kb_selector sel;
    kb_take_selector(&cur, &sel, KB_OP_CONV2D);

    size_t oh = 0, ow = 0;
    kb_error err;
    kb_status shape = kb_conv2d_output_shape(&d, &oh, &ow, &err);
    kb_check_error(shape, &err);
    /* extents for a valid descriptor; a refused one gets small buffers */
    size_t cg = d.groups ? d.c_in / d.groups : 0;
    size_t n_in = shape == KB_OK ? d.n * d.h * d.w * d.c_in : 1;
    size_t n_flt = shape == KB_OK ? d.kh * d.kw * cg * d.c_out : 1;
    size_t n_out = shape == KB_OK ? d.n * oh * ow * d.c_out : 1;
    kb_f16 *in = kb_take_f16s(&cur, n_in), *flt = kb_take_f16s(&cur, n_flt);
    kb_f16 *bias = (kb_take_u8(&cur) & 1) ? kb_take_f16s(&cur, shape == KB_OK ? d.c_out : 1) : NULL;
    kb_f16 *out = kb_take_f16s(&cur, n_out);
    kb_f16 *before = malloc(n_out * sizeof *before);
    memcpy(before, out, n_out * sizeof *before);
    kb_realization ran;
    kb_status st = kb_conv2d(&d, in, flt, bias, out, &sel, &ran, &err);
    kb_check_error(st, &err);
    if (shape != KB_OK && st == KB_OK) {
        fprintf(stderr, "kb_fuzz: a descriptor refused by kb_conv2d_output_shape ran\n");
        abort();
    }
    if (st == KB_OK && ran.op != KB_OP_CONV2D) {
        fprintf(stderr, "kb_fuzz: a convolution succeeded without naming a convolution realization\n");
        abort();
    }
    kb_check_untouched(st, out, before, n_out * sizeof *out, "the output");
    free(in);
    free(flt);
    free(bias);
    free(out);
    free(before);
    return 0;
}
