/* A plugin declaring a packed layout kbench does not implement (an RHS layout
 * without the bias suffix). kbench refuses it, naming the realization and
 * the field. */
#include "kbench_plugin.h"

static kb_status gemm(void *ctx, const kb_plugin_gemm_args *a) {
    (void)ctx, (void)a;
    return KB_ERR_UNSUPPORTED;
}

static size_t size(void *ctx, size_t n, size_t k) {
    (void)ctx;
    return n * k * 2 + 64;
}

static kb_status pack(void *ctx, size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias, void *dst,
                      size_t dst_size) {
    (void)ctx, (void)n, (void)k, (void)b, (void)ldb, (void)bias, (void)dst, (void)dst_size;
    return KB_ERR_UNSUPPORTED;
}

static const kb_plugin_realization realizations[] = {{
    .name = "gemm", .op = KB_OP_GEMM, .form = KB_PLUGIN_WHOLE_CALL, .isa = KB_ISA_SCALAR, .accum = KB_ACCUM_FP32,
    .bforms = KB_BFORM_PLAIN | KB_BFORM_NATIVE, .gemm = gemm, .packed_b_size = size, .pack_b = pack,
    .rhs_layout = "x16p8x2",
}};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION, .struct_size = sizeof(kb_plugin), .name = "badlayout",
    .version = "1", .count = 1, .realizations = realizations,
};

__attribute__((visibility("default"))) const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &table;
}
