/* fuzz_table.c — kb_load_dispatch_table on arbitrary bytes: the JSON parser
 * (strings, escapes, numbers, nesting) and the table checks. A table that
 * loads is then followed by a GEMM and a convolution whose shapes come from
 * the input; a refusal must name a field with a message that is valid
 * UTF-8 (the Python side decodes it). */
#include "kb_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* the text at exactly its length, not NUL-terminated */
    char *text = malloc(size ? size : 1);
    memcpy(text, data, size);
    kb_dispatch_table *t = NULL;
    kb_error err;
    kb_status st = kb_load_dispatch_table(text, size, &t, &err);
    kb_check_error(st, &err);
    if (st == KB_OK) {
        if (!t) abort();
        kb_selector sel;
        kb_selector_default(&sel);
        sel.table = t;
        size_t M = 1 + size % 7, N = 1 + size % 5, K = 1 + size % 3;
        kb_f16 a[64] = {0}, b[64] = {0}, c[64] = {0};
        kb_gemm_problem p;
        memset(&p, 0, sizeof p);
        p.A = a; p.lda = K; p.B = b; p.ldb = N; p.C = c; p.ldc = N;
        p.clamp_min = -INFINITY; p.clamp_max = INFINITY;
        kb_realization ran;
        st = kb_gemm_batch(M, N, K, &p, 1, &sel, &ran, &err);
        kb_check_error(st, &err);
        kb_conv_desc d = {.n = 1, .h = 4, .w = 4, .c_in = 2, .c_out = 2, .kh = 1 + size % 3,
                          .kw = 1 + size % 3, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1,
                          .groups = 1 + size % 2, .clamp_min = -INFINITY, .clamp_max = INFINITY};
        kb_f16 x[64] = {0}, w[64] = {0}, out[64] = {0};
        st = kb_conv2d(&d, x, w, NULL, out, &sel, &ran, &err);
        kb_check_error(st, &err);
        if (kb_dispatch_table_rules(t) > 4096) abort();
    } else if (t) {
        abort(); /* a refused table hands nothing back */
    }
    kb_free_dispatch_table(t);
    free(text);
    return 0;
}
