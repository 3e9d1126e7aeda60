/* A plugin whose table is incomplete: a whole-call GEMM without its gemm
 * function. kbench names the realization and the field. */
#include "kbench_plugin.h"

static const kb_plugin_realization realizations[] = {
    {.name = "gemm_missing", .op = KB_OP_GEMM, .form = KB_PLUGIN_WHOLE_CALL, .isa = KB_ISA_SCALAR,
     .accum = KB_ACCUM_FP32, .bforms = KB_BFORM_PLAIN},
};

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(kb_plugin),
    .name = "badtable",
    .version = "0.1",
    .count = 1,
    .realizations = realizations,
};

__attribute__((visibility("default"))) const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &table;
}
