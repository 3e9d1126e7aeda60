/* entrysegv.c — fault injection: a plugin whose entry point dereferences a
 * null pointer. Loading it must be one refusal line naming the file, never
 * the end of `kbench info` or `kbench run`. */
#include "kbench_plugin.h"

#include <stddef.h>

__attribute__((visibility("default"))) const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    volatile const kb_plugin *const *nowhere = NULL;
    (void)host_abi_version;
    return (const kb_plugin *)*nowhere;
}
