/* kb_rhs_pack_kxn_f16p16x1b_f16_f16_scalar.c — the scalar backend's native
 * RHS packer: panels of 16 columns, the panel's 16 bias values first, then
 * K rows of 16 values; columns past N (and a NULL bias) are zero. */
#include "../../core/kb_internal.h"

uint64_t kb_scalar_pack_native(size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                               void *dst, int sme2) {
    (void)sme2;
    return kb_pack_panels(n, k, b, ldb, bias, 1, KB_SCALAR_NATIVE_BLOCK_N, (kb_f16 *)dst);
}
