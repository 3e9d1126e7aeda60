/* A plugin that needs a symbol nothing provides: the dynamic loader refuses
 * it ("undefined symbol: exbroken_helper_that_is_not_linked"). */
#include "kbench_plugin.h"

extern const kb_plugin *exbroken_helper_that_is_not_linked(void);

__attribute__((visibility("default"))) const kb_plugin *kb_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return exbroken_helper_that_is_not_linked();
}
