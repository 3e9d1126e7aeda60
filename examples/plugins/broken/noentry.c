/* A shared library that is not a kbench plugin: no kb_plugin_entry. kbench
 * reports "missing symbol kb_plugin_entry". */
__attribute__((visibility("default"))) int kb_plugin_version = 1;
