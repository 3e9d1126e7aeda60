/* Declarations kbench must refuse (plugin ABI 3), one per build: -DBAD=N picks
 * which (libbaddecl<N>.so); kbench names the realization and the field. */
#include "kbench_plugin.h"

#include <stddef.h>

static kb_status gemm(void *ctx, const kb_plugin_gemm_args *a) {
    (void)ctx, (void)a;
    return KB_ERR_UNSUPPORTED;
}
__attribute__((unused)) static size_t size(void *ctx, size_t n, size_t k) {
    (void)ctx;
    return n * k * 2;
}
__attribute__((unused)) static kb_status pack(void *ctx, size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias, void *dst,
                      size_t dst_size) {
    (void)ctx, (void)n, (void)k, (void)b, (void)ldb, (void)bias, (void)dst, (void)dst_size;
    return KB_ERR_UNSUPPORTED;
}

__attribute__((unused)) static const char *const no_patterns[] = {NULL};
__attribute__((unused)) static const char *const spaced[] = {"kai matmul", NULL};
__attribute__((unused)) static const char *const unknown_isa[] = {"sme3:kai_*", NULL};

#define BASE                                                                                             \
    .name = "gemm_bad", .op = KB_OP_GEMM, .form = KB_PLUGIN_WHOLE_CALL, .isa = KB_ISA_SCALAR,              \
    .accum = KB_ACCUM_FP32, .gemm = gemm

static const kb_plugin_realization realizations[] = {
#if BAD == 1
    {BASE, .bforms = KB_BFORM_PLAIN, .flags = 0x100},
#elif BAD == 2
    {BASE, .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE, .packed_b_size = size, .pack_b = pack,
     .flags = KB_PLUGIN_PACK_PADDING_UNSPECIFIED},
#elif BAD == 3
    {BASE, .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE, .packed_b_size = size, .pack_b = pack,
     .flags = KB_PLUGIN_PACK_BIAS_AT_CALL},
#elif BAD == 4
    {BASE, .bforms = KB_BFORM_PLAIN, .flags = KB_PLUGIN_PACK_NO_BIAS},
#elif BAD == 5
    {BASE, .bforms = KB_BFORM_PLAIN, .overread = {[KB_PLUGIN_OPERAND_B] = KB_PLUGIN_OVERREAD_MAX + 1}},
#elif BAD == 6
    {BASE, .bforms = KB_BFORM_PLAIN, .overread = {[7] = 4}},
#elif BAD == 7
    {BASE, .bforms = KB_BFORM_PLAIN, .scratch_cap = 1 << 20},
#elif BAD == 8
    {BASE, .bforms = KB_BFORM_PLAIN, .expect_symbols = no_patterns},
#elif BAD == 9
    {BASE, .bforms = KB_BFORM_PLAIN, .expect_symbols = spaced},
#elif BAD == 10
    {BASE, .bforms = KB_BFORM_PLAIN, .expect_symbols = unknown_isa},
#endif
};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
    .name = "baddecl",
    .version = "0.1",
    .count = 1,
    .realizations = realizations,
};

__attribute__((visibility("default"))) const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &table;
}
