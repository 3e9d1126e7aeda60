/* entryhang.c — fault injection: a plugin whose entry point never returns.
 * Loading it must end after the load's time bound with one refusal line
 * naming the file. */
#include "kbench_plugin.h"

__attribute__((visibility("default"))) const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    for (volatile unsigned long spin = 0;; spin++) {
    }
}
