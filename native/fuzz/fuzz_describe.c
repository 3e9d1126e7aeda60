/* fuzz_describe.c — kb_describe_packed on arbitrary bytes (the first byte
 * picks how the rest is used), and the same bytes handed to kb_gemm_batch as
 * a packed B (portable or native, with the shape the header claims or
 * another): the header checks must refuse every buffer that is not sound
 * without reading past `size` bytes, and a buffer describe refuses must be
 * refused by the GEMM too: always with verify_payload, and without it
 * unless only the payload checksum was wrong (calls check the header). */
#include "kb_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    /* the buffer under test, at exactly its size */
    unsigned char *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    kb_packed_header h;
    kb_error err;
    kb_status ds = kb_describe_packed(size ? buf : NULL, size, &h, &err);
    kb_check_error(ds, &err);
    int payload_only = ds != KB_OK && strcmp(err.field, "B.payload_checksum") == 0;
    if (ds == KB_OK && (h.n == 0 || h.k == 0 || h.header_size != sizeof h || size < sizeof h + h.payload_size)) {
        fprintf(stderr, "kb_fuzz: kb_describe_packed accepted an unsound header\n");
        abort();
    }
    size_t N = 1 + mode % 32, K = 1 + (mode >> 3) % 32;
    if (ds == KB_OK && (mode & 1) && h.n <= 64 && h.k <= 64) {
        N = (size_t)h.n;
        K = (size_t)h.k;
    }
    size_t M = 1 + (mode >> 6);
    kb_f16 *a = calloc(M * K, sizeof *a), *c = calloc(M * N, sizeof *c), *before = calloc(M * N, sizeof *c);
    kb_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.A = a; p.lda = K; p.B = size ? buf : NULL; p.b_size = size; p.C = c; p.ldc = N;
    p.clamp_min = -INFINITY; p.clamp_max = INFINITY;
    p.b_is_packed = 1;
    p.b_is_backend_native_packed = ds == KB_OK ? h.layout != KB_LAYOUT_PORTABLE : (mode >> 1) & 1;
    kb_selector sel;
    kb_selector_default(&sel);
    sel.verify_payload = (mode >> 2) & 1;
    kb_status gs = kb_gemm_batch(M, N, K, &p, 1, &sel, NULL, &err);
    kb_check_error(gs, &err);
    kb_check_untouched(gs, c, before, M * N * sizeof *c, "C");
    if (ds != KB_OK && gs == KB_OK && (sel.verify_payload || !payload_only)) {
        fprintf(stderr, "kb_fuzz: a GEMM accepted a buffer kb_describe_packed refused (%s)\n", err.field);
        abort();
    }
    free(a);
    free(c);
    free(before);
    free(buf);
    return 0;
}
