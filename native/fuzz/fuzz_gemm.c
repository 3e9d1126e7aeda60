/* fuzz_gemm.c — kb_gemm_batch on fuzzer-chosen shapes, leading dimensions,
 * clamps (NaN, inverted, infinite), bias, batch, B plain or packed (portable
 * or the scalar native layout, sometimes with bytes flipped or the size cut
 * short) and selectors. Every buffer is allocated at exactly the extent the
 * header documents, so a read or write past it is an ASan report; a failed
 * call must name its field and leave every C untouched. */
#include "kb_fuzz.h"

#define MAX_DIM 48
#define MAX_BATCH 3

typedef struct owned {
    kb_f16 *a, *b, *bias, *c, *c_before;
    unsigned char *packed;
} owned;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kb_cursor cur = {data, size};
    size_t M = kb_take_range(&cur, 1, MAX_DIM), N = kb_take_range(&cur, 1, MAX_DIM),
           K = kb_take_range(&cur, 1, MAX_DIM);
    size_t batch = kb_take_range(&cur, 1, MAX_BATCH);
    uint8_t mode = kb_take_u8(&cur); /* B: 0 plain, 1 portable, 2 native; bits: damage */
    kb_selector sel;
    kb_take_selector(&cur, &sel, KB_OP_GEMM);
    kb_gemm_problem probs[MAX_BATCH];
    owned own[MAX_BATCH];
    memset(probs, 0, sizeof probs);
    memset(own, 0, sizeof own);
    for (size_t i = 0; i < batch; i++) {
        kb_gemm_problem *p = &probs[i];
        size_t lda = K + kb_take_u8(&cur) % 4, ldb = N + kb_take_u8(&cur) % 4,
               ldc = N + kb_take_u8(&cur) % 4;
        if (kb_take_u8(&cur) == 0xff) lda = K - 1; /* a lie the library must refuse */
        own[i].a = kb_take_f16s(&cur, (M - 1) * lda + K);
        own[i].b = kb_take_f16s(&cur, (K - 1) * ldb + N);
        own[i].c = kb_take_f16s(&cur, (M - 1) * ldc + N);
        size_t c_bytes = ((M - 1) * ldc + N) * sizeof(kb_f16);
        own[i].c_before = malloc(c_bytes);
        memcpy(own[i].c_before, own[i].c, c_bytes);
        if (kb_take_u8(&cur) & 1) own[i].bias = kb_take_f16s(&cur, N);
        p->A = own[i].a;
        p->lda = lda;
        p->C = own[i].c;
        p->ldc = ldc;
        p->bias = own[i].bias;
        uint8_t clamp = kb_take_u8(&cur);
        p->clamp_min = (clamp & 1) ? kb_take_f32(&cur) : -INFINITY;
        p->clamp_max = (clamp & 2) ? kb_take_f32(&cur) : INFINITY;
        int form = (mode & 3) % 3;
        if (form == 0) {
            p->B = own[i].b;
            p->ldb = ldb;
        } else {
            kb_error err;
            size_t need = 0;
            kb_status st = form == 1 ? kb_pack_b_size(N, K, &need, &err)
                                     : kb_pack_b_native_size(KB_BACKEND_SCALAR, N, K, &sel, &need, &err);
            kb_check_error(st, &err);
            if (st != KB_OK) need = 64;
            own[i].packed = malloc(need);
            memset(own[i].packed, 0, need);
            st = form == 1 ? kb_pack_b(N, K, own[i].b, ldb, own[i].packed, need, &err)
                           : kb_pack_b_native(KB_BACKEND_SCALAR, N, K, own[i].b, ldb, own[i].bias,
                                              own[i].packed, need, &sel, &err);
            kb_check_error(st, &err);
            size_t b_size = need;
            if (mode & 4) own[i].packed[kb_take_u16(&cur) % need] ^= (uint8_t)(1u << (kb_take_u8(&cur) % 8));
            if (mode & 8) b_size = kb_take_u16(&cur) % (need + 1);
            p->B = own[i].packed;
            p->b_size = b_size;
            p->b_is_packed = 1;
            p->b_is_backend_native_packed = form == 2;
            if (form == 2 && !(mode & 16)) p->bias = NULL;
        }
    }
    if (mode & 32) probs[batch - 1].C = NULL;
    kb_realization ran;
    kb_error err;
    size_t callM = (mode & 64) ? 0 : M;
    kb_status st = kb_gemm_batch(callM, N, K, probs, batch, &sel, &ran, &err);
    kb_check_error(st, &err);
    if (st == KB_OK && (!ran.name[0] || ran.op != KB_OP_GEMM)) {
        fprintf(stderr, "kb_fuzz: a GEMM succeeded without naming a GEMM realization\n");
        abort();
    }
    for (size_t i = 0; i < batch; i++) {
        size_t ldc = probs[i].ldc;
        kb_check_untouched(st, own[i].c, own[i].c_before, ((M - 1) * ldc + N) * sizeof(kb_f16), "C");
        free(own[i].a);
        free(own[i].b);
        free(own[i].c);
        free(own[i].c_before);
        free(own[i].bias);
        free(own[i].packed);
    }
    return 0;
}
