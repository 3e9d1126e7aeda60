/* A plugin built against a newer plugin ABI than this kbench reads. kbench
 * refuses it, naming both versions. */
#include "kbench_plugin.h"

static const kb_plugin table = {
    .abi_version = KB_PLUGIN_ABI_VERSION + 1,
    .struct_size = sizeof(kb_plugin) + 16,
    .name = "newabi",
    .version = "9.9",
    .count = 0,
};

__attribute__((visibility("default"))) const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &table;
}
