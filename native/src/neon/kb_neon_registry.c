/* kb_neon_registry.c — the NEON FP16 backend's rows of the dispatch table. */
#include "../core/kb_internal.h"

#if defined(__aarch64__)
#include <string.h>

const kb_gemm_impl *const *kb_neon_gemm_impls(size_t *count) {
    *count = 0;
    return NULL;
}

const kb_conv_impl *const *kb_neon_conv_impls(size_t *count) {
    *count = 0;
    return NULL;
}

void kb_neon_pack_native(size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                        void *dst) {
    (void)n; (void)k; (void)b; (void)ldb; (void)bias; (void)dst;
}
#endif
