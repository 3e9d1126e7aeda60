/* fuzz_pack.c — kb_pack_b / kb_pack_b_native and their size queries on
 * fuzzer-chosen N, K, ldb, backends (valid or not), destination sizes (too
 * small, exact, larger) and bias; a buffer packed without error must then
 * describe itself (kb_describe_packed) with the N and K it was packed for,
 * and be accepted by a GEMM of that shape. B and the destination are
 * allocated at exactly their extents. */
#include "kb_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kb_cursor cur = {data, size};
    size_t N = kb_take_range(&cur, 0, 80), K = kb_take_range(&cur, 0, 80);
    size_t ldb = N + kb_take_u8(&cur) % 5;
    uint8_t mode = kb_take_u8(&cur);
    int native = mode & 1;
    int backend = (mode & 2) ? (int)(kb_take_u8(&cur) % 6) - 1 : KB_BACKEND_SCALAR;
    if (mode & 4) ldb = N ? N - 1 : 0; /* too small: refused */
    kb_selector sel;
    kb_take_selector(&cur, &sel, KB_OP_GEMM);
    size_t nb = (K && N) ? (K - 1) * ldb + N : 1;
    kb_f16 *b = kb_take_f16s(&cur, nb);
    kb_f16 *bias = (mode & 8) ? kb_take_f16s(&cur, N ? N : 1) : NULL;
    kb_error err;
    size_t need = 0;
    kb_status st = native ? kb_pack_b_native_size(backend, N, K, &sel, &need, &err)
                          : kb_pack_b_size(N, K, &need, &err);
    kb_check_error(st, &err);
    size_t dst_size = st == KB_OK ? need : 256;
    if (mode & 16) dst_size = kb_take_u16(&cur) % (dst_size + 1);
    else if (mode & 32) dst_size += kb_take_u8(&cur);
    unsigned char *dst = malloc(dst_size ? dst_size : 1);
    memset(dst, 0xa5, dst_size);
    st = native ? kb_pack_b_native(backend, N, K, b, ldb, bias, dst, dst_size, &sel, &err)
                : kb_pack_b(N, K, b, ldb, dst, dst_size, &err);
    kb_check_error(st, &err);
    if (st == KB_OK) {
        kb_packed_header h;
        kb_status ds = kb_describe_packed(dst, dst_size, &h, &err);
        kb_check_error(ds, &err);
        if (ds != KB_OK || h.n != N || h.k != K || (h.layout != KB_LAYOUT_PORTABLE) != native) {
            fprintf(stderr, "kb_fuzz: a freshly packed buffer does not describe itself (%d)\n", ds);
            abort();
        }
        size_t M = 1 + kb_take_u8(&cur) % 3;
        kb_f16 *a = kb_take_f16s(&cur, M * K), *c = kb_take_f16s(&cur, M * N);
        kb_gemm_problem p;
        memset(&p, 0, sizeof p);
        p.A = a; p.lda = K; p.B = dst; p.b_size = dst_size; p.C = c; p.ldc = N;
        p.clamp_min = -INFINITY; p.clamp_max = INFINITY;
        p.b_is_packed = 1; p.b_is_backend_native_packed = native;
        kb_selector plain;
        kb_selector_default(&plain);
        kb_status gs = kb_gemm_batch(M, N, K, &p, 1, &plain, NULL, &err);
        kb_check_error(gs, &err);
        if (gs != KB_OK) {
            fprintf(stderr, "kb_fuzz: a GEMM refused a buffer packed for it: %s\n", err.message);
            abort();
        }
        free(a);
        free(c);
    }
    free(b);
    free(bias);
    free(dst);
    return 0;
}
