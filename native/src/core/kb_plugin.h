/* kb_plugin.h — plugin realizations inside the library (not public).
 *
 * kb_plugin.c loads plugins (kbench_plugin.h), checks them and keeps the
 * registry: one kb_plugin_gemm_impl / kb_plugin_conv_impl per declared
 * realization, each an ordinary kb_gemm_impl / kb_conv_impl (its first
 * member) that dispatch lists after every realization of ours.
 * kb_plugin_run.c drives them: the whole-call form directly, the
 * micro-kernel form through kbench's own loops, packing calls and scratch. */
#ifndef KB_PLUGIN_INTERNAL_H
#define KB_PLUGIN_INTERNAL_H

#include "kb_internal.h"
#include "kbench_plugin.h"

typedef struct kb_plugin_gemm_impl {
    kb_gemm_impl base;                  /* first: a kb_gemm_impl * points here  */
    const kb_plugin_realization *decl;  /* the plugin's declaration             */
    uint16_t id;                        /* owner id in kbench-made packed B     */
    char name[KB_NAME_LEN];             /* "<plugin>.<realization>"             */
} kb_plugin_gemm_impl;

typedef struct kb_plugin_conv_impl {
    kb_conv_impl base;
    const kb_plugin_realization *decl;
    char name[KB_NAME_LEN];
} kb_plugin_conv_impl;

/* ---- registry (kb_plugin.c) ------------------------------------------------ */

/* Every realization of every loaded plugin, in load order. */
const kb_gemm_impl *const *kb_plugin_gemm_impls(size_t *count);
const kb_conv_impl *const *kb_plugin_conv_impls(size_t *count);
/* The plugin GEMM realization named `name` (the one the selector forces, or
 * its dispatch table's choice for the call's shape) when it takes its own
 * packed B and sel lets plugins take part, else NULL. */
const kb_plugin_gemm_impl *kb_plugin_own_packed_b(const kb_selector *sel, const char *name);

/* ---- drivers (kb_plugin_run.c) ------------------------------------------ */

kb_status kb_plugin_gemm_run(const kb_gemm_call *c, kb_error *err);
kb_status kb_plugin_conv_run(const kb_conv_impl *self, const kb_conv_desc *d, size_t out_h,
                             size_t out_w, const kb_f16 *input, const kb_f16 *filter,
                             const kb_f16 *bias, kb_f16 *output, const kb_selector *sel,
                             kb_error *err);
/* Fills what is known only at run time (the SVL of an SME realization). */
void kb_plugin_describe(kb_realization *r);
/* Bytes of B packed by g (whole call: its packer's size; micro-kernel: the
 * kbench header plus the RHS packer's size). */
kb_status kb_plugin_packed_size(const kb_plugin_gemm_impl *g, size_t n, size_t k, size_t *size,
                                kb_error *err);
kb_status kb_plugin_pack(const kb_plugin_gemm_impl *g, size_t n, size_t k, const kb_f16 *b,
                         size_t ldb, const kb_f16 *bias, void *dst, size_t dst_size,
                         kb_error *err);
/* The LHS packer of a micro-kernel realization that packs its LHS. */
kb_status kb_plugin_lhs_packed_size(const kb_plugin_gemm_impl *g, size_t m, size_t k, size_t *size,
                                    kb_error *err);
kb_status kb_plugin_pack_lhs(const kb_plugin_gemm_impl *g, size_t m, size_t k, const kb_f16 *a,
                             size_t lda, void *dst, kb_error *err);

#endif /* KB_PLUGIN_INTERNAL_H */
