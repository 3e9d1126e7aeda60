/* kb_dispatch.c — the dispatch table: which realizations exist, which the
 * CPU and the selector allow, and which one runs a call. */
#include "kb_internal.h"
#include "kb_plugin.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

const char *kb_backend_name(int backend) {
    switch (backend) {
    case KB_BACKEND_SCALAR: return "scalar";
    case KB_BACKEND_NEON: return "neon";
    case KB_BACKEND_SME: return "sme";
    case KB_BACKEND_SVE: return "sve";
    case KB_BACKEND_PLUGIN: return "plugin";
    default: return "unknown";
    }
}

int kb_backend_native_layout(int backend) {
    switch (backend) {
    case KB_BACKEND_SCALAR: return KB_LAYOUT_SCALAR_F16P16X1B;
#if defined(KB_HAVE_NEON)
    case KB_BACKEND_NEON: return KB_LAYOUT_NEON;
#endif
#if defined(KB_HAVE_SME)
    case KB_BACKEND_SME: return KB_LAYOUT_SME_X16P2VLX2B;
#endif
#if defined(KB_HAVE_SVE)
    case KB_BACKEND_SVE: return KB_LAYOUT_SVE_X16P4VLX2B;
#endif
    default: return 0;
    }
}

/* The SME backend's layouts depend on the streaming vector length, the SVE
 * backend's on the SVE vector length (each as the CPU runs now). */
uint32_t kb_backend_vector_bits(int backend) {
    if (backend == KB_BACKEND_SME) return kb_isa_vector_bits(KB_ISA_SME);
    if (backend == KB_BACKEND_SVE) return kb_isa_vector_bits(KB_ISA_SVE2P1);
    return 0;
}

static int isa_from_env(void) {
    const char *v = getenv("KBENCH_ISA_CAP");
    if (!v || !v[0]) return KB_ISA_NO_CAP;
    for (int c = KB_ISA_SCALAR; c < KB_ISA_COUNT; c++)
        if (!strcmp(v, kb_isa_name(c))) return c;
    return KB_ISA_NO_CAP; /* unknown values are reported by the Python side */
}

/* KBENCH_ISA_CAP is read once per process, on first use: a production
 * call with the default selector (sel == NULL) must not look at the
 * environment. Concurrent first uses compute the same value. */
static int isa_cap_from_env_once(void) {
    static _Atomic int cached = -1;
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        v = isa_from_env();
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v;
}

void kb_selector_default(kb_selector *sel) {
    memset(sel, 0, sizeof *sel);
    sel->isa_cap = isa_cap_from_env_once();
    sel->threads = 1;
}

static bool impl_allowed(int backend, int isa, const kb_selector *sel,
                         const kb_cpu_info *cpu) {
    if (backend == KB_BACKEND_PLUGIN && !sel->plugins) return false;
    if (sel->disabled_backends & (1u << backend)) return false;
    if (!kb_isa_within(isa, sel->isa_cap)) return false;
    return kb_cpu_has_isa(cpu, isa);
}

/* Lowest ISA level any kernel of the backend needs. */
static int backend_min_isa(int backend) {
    switch (backend) {
    case KB_BACKEND_SCALAR: return KB_ISA_SCALAR;
    case KB_BACKEND_NEON: return KB_ISA_NEON_FP16;
    case KB_BACKEND_SME: return KB_ISA_SME;
    case KB_BACKEND_SVE: return KB_ISA_SVE2P1;
    default: return -1; /* no class: never allowed */
    }
}

bool kb_backend_usable(int backend, const kb_selector *sel, const kb_cpu_info *cpu) {
    if (backend < 0 || backend >= KB_BACKEND_COUNT) return false;
    return impl_allowed(backend, backend_min_isa(backend), sel, cpu);
}

/* The whole table, in priority order (best first): ours, then the
 * realizations of loaded plugins (kb_plugin.c), which therefore never run
 * as a default. */
#define KB_TABLE_MAX 320
typedef struct table {
    const kb_gemm_impl *gemm[KB_TABLE_MAX];
    size_t n_gemm;
    const kb_conv_impl *conv[KB_TABLE_MAX];
    size_t n_conv;
} table;

static void table_add(table *t, const kb_gemm_impl *const *g, size_t ng,
                      const kb_conv_impl *const *c, size_t nc) {
    for (size_t i = 0; i < ng && t->n_gemm < KB_TABLE_MAX; i++) t->gemm[t->n_gemm++] = g[i];
    for (size_t i = 0; i < nc && t->n_conv < KB_TABLE_MAX; i++) t->conv[t->n_conv++] = c[i];
}

static void table_build(table *t) {
    /* Backends append in priority order (best first): SME, SVE, NEON, scalar. */
    size_t ng, nc;
    const kb_gemm_impl *const *g;
    const kb_conv_impl *const *c;
    t->n_gemm = t->n_conv = 0;
#if defined(KB_HAVE_SME)
    g = kb_sme_gemm_impls(&ng);
    c = kb_sme_conv_impls(&nc);
    table_add(t, g, ng, c, nc);
#endif
#if defined(KB_HAVE_SVE)
    g = kb_sve_gemm_impls(&ng);
    table_add(t, g, ng, NULL, 0);
#endif
#if defined(KB_HAVE_NEON)
    g = kb_neon_gemm_impls(&ng);
    c = kb_neon_conv_impls(&nc);
    table_add(t, g, ng, c, nc);
#endif
    g = kb_scalar_gemm_impls(&ng);
    c = kb_scalar_conv_impls(&nc);
    table_add(t, g, ng, c, nc);
    g = kb_plugin_gemm_impls(&ng);
    c = kb_plugin_conv_impls(&nc);
    table_add(t, g, ng, c, nc);
}

void kb_fill_gemm_realization(const kb_gemm_impl *impl, int threads, kb_realization *r) {
    if (!r) return;
    memset(r, 0, sizeof *r);
    strncpy(r->name, impl->name, sizeof r->name - 1);
    strncpy(r->backend, kb_backend_name(impl->backend), sizeof r->backend - 1);
    strncpy(r->kernel, impl->kernel, sizeof r->kernel - 1);
    r->op = KB_OP_GEMM;
    r->isa = impl->isa;
    r->accum = impl->accum;
    r->k_per_rounding = impl->k_per_rounding ? impl->k_per_rounding : 1;
    r->bforms = impl->bforms;
    r->max_m = impl->max_m;
    r->error_model = impl->error_model;
    r->nan_clamp = impl->nan_clamp;
    r->block_m = impl->block_m;
    r->block_n = impl->block_n;
    r->block_k = impl->block_k;
    r->vector_bits = kb_backend_vector_bits(impl->backend);
    r->threads = (impl->threaded && threads > 0) ? threads : 1;
    if (impl->describe) impl->describe(r);
}

void kb_fill_conv_realization(const kb_conv_impl *impl, int threads, kb_realization *r) {
    if (!r) return;
    memset(r, 0, sizeof *r);
    strncpy(r->name, impl->name, sizeof r->name - 1);
    strncpy(r->backend, kb_backend_name(impl->backend), sizeof r->backend - 1);
    strncpy(r->kernel, impl->kernel, sizeof r->kernel - 1);
    r->op = KB_OP_CONV2D;
    r->max_groups = impl->max_groups;
    r->conv_class = impl->conv_class;
    r->error_model = impl->error_model;
    r->nan_clamp = impl->nan_clamp;
    r->isa = impl->isa;
    r->accum = impl->accum;
    r->k_per_rounding = impl->k_per_rounding ? impl->k_per_rounding : 1;
    r->vector_bits = kb_backend_vector_bits(impl->backend);
    r->threads = (impl->threaded && threads > 0) ? threads : 1;
    if (impl->describe) impl->describe(r);
}

static void fill_steps(void (*steps)(uint32_t[3]), kb_realization *r) {
    uint32_t s[3] = {0, 0, 0};
    if (steps) steps(s);
    r->m_step = s[0];
    r->n_step = s[1];
    r->kr = s[2];
}

size_t kb_list_realizations(const kb_selector *sel, kb_realization *out, size_t cap) {
    kb_selector def;
    if (!sel) { kb_selector_default(&def); sel = &def; }
    kb_cpu_info cpu;
    kb_cpu_detect(&cpu);
    table t;
    table_build(&t);
    size_t count = 0;
    for (size_t i = 0; i < t.n_gemm; i++) {
        const kb_gemm_impl *g = t.gemm[i];
        if (!impl_allowed(g->backend, g->isa, sel, &cpu)) continue;
        if (out && count < cap) {
            kb_fill_gemm_realization(g, sel->threads, &out[count]);
            fill_steps(g->steps, &out[count]);
        }
        count++;
    }
    for (size_t i = 0; i < t.n_conv; i++) {
        const kb_conv_impl *c = t.conv[i];
        if (!impl_allowed(c->backend, c->isa, sel, &cpu)) continue;
        if (out && count < cap) {
            kb_fill_conv_realization(c, sel->threads, &out[count]);
            fill_steps(c->steps ? c->steps : c->gemm ? c->gemm->steps : NULL, &out[count]);
        }
        count++;
    }
    return count;
}

static bool name_known(const table *t, const char *name) {
    for (size_t i = 0; i < t->n_gemm; i++) if (!strcmp(t->gemm[i]->name, name)) return true;
    for (size_t i = 0; i < t->n_conv; i++) if (!strcmp(t->conv[i]->name, name)) return true;
    return false;
}

static bool gemm_fits(const kb_gemm_impl *g, const kb_selector *sel, const kb_cpu_info *cpu,
                      int bform, int native_layout, size_t M) {
    if (!impl_allowed(g->backend, g->isa, sel, cpu)) return false;
    if (!(g->bforms & (uint32_t)bform)) return false;
    if (bform == KB_BFORM_NATIVE && g->native_layout != native_layout) return false;
    return !(g->max_m && M > g->max_m);
}

kb_status kb_select_gemm(const kb_selector *sel, int bform, int native_layout,
                         size_t M, size_t N, size_t K, const kb_gemm_impl **out, kb_error *err) {
    kb_cpu_info cpu;
    kb_cpu_detect(&cpu);
    table t;
    table_build(&t);
    if (!sel->force && sel->table) {
        /* a tuned choice for this shape class, when it can take this call */
        const char *want = kb_table_gemm_choice(sel->table, M, N, K);
        for (size_t i = 0; want && i < t.n_gemm; i++) {
            if (!strcmp(t.gemm[i]->name, want) && gemm_fits(t.gemm[i], sel, &cpu, bform, native_layout, M)) {
                *out = t.gemm[i];
                return KB_OK;
            }
        }
    }
    if (sel->force && !name_known(&t, sel->force))
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "selector.force", "no realization is named '%s'", sel->force);
    for (size_t i = 0; i < t.n_gemm; i++) {
        const kb_gemm_impl *g = t.gemm[i];
        if (sel->force && strcmp(g->name, sel->force)) continue;
        if (!impl_allowed(g->backend, g->isa, sel, &cpu)) continue;
        if (!(g->bforms & (uint32_t)bform)) continue;
        if (bform == KB_BFORM_NATIVE && g->native_layout != native_layout) continue;
        if (g->max_m && M > g->max_m) continue; /* shape specialization (e.g. GEMV) */
        *out = g;
        return KB_OK;
    }
    if (sel->force) {
        for (size_t i = 0; i < t.n_gemm; i++) {
            const kb_gemm_impl *g = t.gemm[i];
            if (strcmp(g->name, sel->force)) continue;
            if (!impl_allowed(g->backend, g->isa, sel, &cpu))
                return kb_fail(err, KB_ERR_UNSUPPORTED, "selector.force",
                               "realization '%s' needs backend %s at an ISA level this CPU or the selector does not allow",
                               sel->force, kb_backend_name(g->backend));
            if (g->max_m && M > g->max_m)
                return kb_fail(err, KB_ERR_UNSUPPORTED, "selector.force",
                               "realization '%s' takes M <= %u, the call has M = %zu", sel->force, g->max_m, M);
            return kb_fail(err, KB_ERR_UNSUPPORTED, "selector.force",
                           "realization '%s' does not take B in this form (packed %s)", sel->force,
                           bform == KB_BFORM_PLAIN ? "no" : bform == KB_BFORM_PORTABLE ? "in the portable layout"
                                                                                    : "in another backend's layout");
        }
        return kb_fail(err, KB_ERR_UNSUPPORTED, "selector.force",
                       "realization '%s' is a convolution realization, not a GEMM one", sel->force);
    }
    return kb_fail(err, KB_ERR_UNSUPPORTED, "selector", "no enabled GEMM realization can run this call");
}

kb_status kb_select_conv(const kb_selector *sel, const kb_conv_desc *d, const kb_conv_impl **out,
                         kb_error *err) {
    kb_cpu_info cpu;
    kb_cpu_detect(&cpu);
    table t;
    table_build(&t);
    if (sel->force && !name_known(&t, sel->force))
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "selector.force", "no realization is named '%s'", sel->force);
    const char *want = (!sel->force && sel->table) ? kb_table_conv_choice(sel->table, d) : NULL;
    for (int pass = want ? 0 : 1; pass < 2; pass++)
    for (size_t i = 0; i < t.n_conv; i++) {
        const kb_conv_impl *c = t.conv[i];
        if (sel->force && strcmp(c->name, sel->force)) continue;
        if (pass == 0 && strcmp(c->name, want)) continue;
        if (!impl_allowed(c->backend, c->isa, sel, &cpu)) continue;
        if (c->max_groups && d->groups > c->max_groups) continue;
        if (c->conv_class == KB_CONV_CLASS_3X3_S1 &&
            (d->kh != 3 || d->kw != 3 || d->stride_h != 1 || d->stride_w != 1 || d->dil_h != 1 || d->dil_w != 1))
            continue;
        *out = c;
        return KB_OK;
    }
    if (sel->force) {
        /* say which condition refused it */
        for (size_t i = 0; i < t.n_conv; i++) {
            const kb_conv_impl *c = t.conv[i];
            if (strcmp(c->name, sel->force)) continue;
            if (!impl_allowed(c->backend, c->isa, sel, &cpu))
                return kb_fail(err, KB_ERR_UNSUPPORTED, "selector.force",
                               "realization '%s' needs backend %s at an ISA level this CPU or the selector does not allow",
                               sel->force, kb_backend_name(c->backend));
            if (c->max_groups && d->groups > c->max_groups)
                return kb_fail(err, KB_ERR_UNSUPPORTED, "selector.force",
                               "realization '%s' takes groups <= %u, the call has groups = %zu",
                               sel->force, c->max_groups, d->groups);
            return kb_fail(err, KB_ERR_UNSUPPORTED, "selector.force",
                           "realization '%s' takes only 3x3 kernels with stride 1 and dilation 1; the call has a %zux%zu kernel, stride %zux%zu, dilation %zux%zu",
                           sel->force, d->kh, d->kw, d->stride_h, d->stride_w, d->dil_h, d->dil_w);
        }
        return kb_fail(err, KB_ERR_UNSUPPORTED, "selector.force",
                       "realization '%s' is a GEMM realization, not a convolution one", sel->force);
    }
    return kb_fail(err, KB_ERR_UNSUPPORTED, "selector", "no enabled convolution realization");
}

int kb_backend_compiled(int backend) {
    table t;
    table_build(&t);
    for (size_t i = 0; i < t.n_gemm; i++) if (t.gemm[i]->backend == backend) return 1;
    for (size_t i = 0; i < t.n_conv; i++) if (t.conv[i]->backend == backend) return 1;
    return 0;
}
