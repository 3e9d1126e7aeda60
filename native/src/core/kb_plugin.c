/* kb_plugin.c — loading plugins (kbench_plugin.h) and the registry of their
 * realizations.
 *
 * Loading checks, in order, before any code of the plugin beyond its entry
 * function runs: the file (an ELF shared library for this architecture), the
 * dynamic load itself (undefined symbols are reported by the loader), the
 * entry symbol, the ABI version the table was built against, every declared
 * field of every realization (operator, form, ISA, accumulation, B forms, the
 * function pointers its form needs), and the ISA each realization needs
 * against this CPU. A realization whose ISA the CPU lacks is kept but never
 * listed (its note says why); a plugin none of whose realizations can run is
 * refused. Every failure names the file and the reason in one message.
 *
 * The registry only grows (a plugin is never unloaded, so pointers into its
 * table stay valid); loads are serialised by a mutex and readers see counts
 * published after the entries they cover. */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700
#include "kb_plugin.h"

#include <ctype.h>
#include <limits.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(KB_NO_DLOPEN)
#include <dlfcn.h>
#include <pthread.h>
#endif

#define KB_PLUGIN_MAX 16
#define KB_PLUGIN_MAX_REALIZATIONS 64 /* per plugin */
#define KB_PLUGIN_MAX_IMPLS 256       /* over all plugins, per operator */
#define KB_PLUGIN_REALIZATION_NAME_MAX 47
#define KB_PLUGIN_NAME_MAX 31

typedef struct loaded_plugin {
    void *handle;
    const kb_plugin *table;
    kb_plugin_info info;
    kb_plugin_realization_info real[KB_PLUGIN_MAX_REALIZATIONS];
    /* the table's realizations in this ABI's structure: a version-1 table's
     * entries are shorter, and are copied here with the fields it lacks zero */
    kb_plugin_realization decl[KB_PLUGIN_MAX_REALIZATIONS];
} loaded_plugin;

/* kb_plugin_realization as ABI version 1 laid it out: the prefix of version
 * 2's, which appended nan_clamp, rhs_layout and lhs_layout. */
typedef struct kb_plugin_realization_v1 {
    const char *name;
    const char *kernel;
    int op, form, isa, accum;
    uint32_t k_per_rounding;
    int bias;
    uint32_t bforms, max_m, max_groups, conv_class;
    int thread_safe;
    void *ctx;
    kb_status (*gemm)(void *ctx, const kb_plugin_gemm_args *args);
    kb_status (*conv2d)(void *ctx, const kb_plugin_conv_args *args);
    size_t (*packed_b_size)(void *ctx, size_t n, size_t k);
    kb_status (*pack_b)(void *ctx, size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias, void *dst,
                        size_t dst_size);
    const kb_plugin_matmul_ukernel *matmul;
    const kb_plugin_imatmul_ukernel *imatmul;
} kb_plugin_realization_v1;

/* ... and as ABI version 2 laid it out: version 3 appended flags, overread,
 * scratch_cap and expect_symbols. */
typedef struct kb_plugin_realization_v2 {
    kb_plugin_realization_v1 v1;
    int nan_clamp;
    const char *rhs_layout;
    const char *lhs_layout;
} kb_plugin_realization_v2;

_Static_assert(offsetof(kb_plugin_realization, nan_clamp) >= sizeof(kb_plugin_realization_v1),
               "ABI 2 appends to ABI 1's realization");
_Static_assert(offsetof(kb_plugin_realization, nan_clamp) == offsetof(kb_plugin_realization_v2, nan_clamp) &&
                   offsetof(kb_plugin_realization, lhs_layout) == offsetof(kb_plugin_realization_v2, lhs_layout),
               "ABI 2's realization is a prefix of ABI 3's");
_Static_assert(sizeof(((kb_plugin_realization_info *)0)->overread) == KB_PLUGIN_OPERANDS * sizeof(uint32_t),
               "kb_plugin_realization_info holds every operand's allowance");
_Static_assert(offsetof(kb_plugin_realization, flags) >= sizeof(kb_plugin_realization_v2),
               "ABI 3 appends to ABI 2's realization");

/* The table's realizations read with the structure of its ABI version (an
 * older table's array has a shorter stride; the fields it lacks stay zero). */
static void read_decls(const kb_plugin *t, kb_plugin_realization *out) {
    const unsigned char *base = (const unsigned char *)(const void *)t->realizations;
    size_t stride = t->abi_version >= 3   ? sizeof(kb_plugin_realization)
                    : t->abi_version == 2 ? sizeof(kb_plugin_realization_v2)
                                          : sizeof(kb_plugin_realization_v1);
    for (uint32_t i = 0; i < t->count; i++) {
        memset(&out[i], 0, sizeof out[i]);
        memcpy(&out[i], base + (size_t)i * stride, stride);
    }
}

static loaded_plugin plugins[KB_PLUGIN_MAX];
static atomic_size_t plugin_count;
static kb_plugin_gemm_impl gemm_store[KB_PLUGIN_MAX_IMPLS];
static const kb_gemm_impl *gemm_list[KB_PLUGIN_MAX_IMPLS];
static atomic_size_t gemm_count;
static kb_plugin_conv_impl conv_store[KB_PLUGIN_MAX_IMPLS];
static const kb_conv_impl *conv_list[KB_PLUGIN_MAX_IMPLS];
static atomic_size_t conv_count;

const kb_gemm_impl *const *kb_plugin_gemm_impls(size_t *count) {
    *count = atomic_load_explicit(&gemm_count, memory_order_acquire);
    return gemm_list;
}

const kb_conv_impl *const *kb_plugin_conv_impls(size_t *count) {
    *count = atomic_load_explicit(&conv_count, memory_order_acquire);
    return conv_list;
}

size_t kb_plugin_count(void) { return atomic_load_explicit(&plugin_count, memory_order_acquire); }

kb_status kb_plugin_get(size_t index, kb_plugin_info *info, kb_error *err) {
    kb_clear_error(err);
    if (!info) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "info", "is NULL");
    if (index >= kb_plugin_count())
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "index", "%zu: %zu plugin(s) are loaded", index,
                       kb_plugin_count());
    *info = plugins[index].info;
    return KB_OK;
}

kb_status kb_plugin_realization_get(size_t plugin, size_t index, kb_plugin_realization_info *out,
                                    kb_error *err) {
    kb_clear_error(err);
    if (!out) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "out", "is NULL");
    if (plugin >= kb_plugin_count())
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "plugin", "%zu: %zu plugin(s) are loaded", plugin,
                       kb_plugin_count());
    if (index >= plugins[plugin].info.realizations)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "index", "%zu: plugin %s has %u realization(s)", index,
                       plugins[plugin].info.name, plugins[plugin].info.realizations);
    *out = plugins[plugin].real[index];
    return KB_OK;
}

static void code_entry(kb_plugin_code_entry *out, size_t cap, size_t *n, const char *phase,
                       const char *field, void (*fn)(void)) {
    if (!fn) return;
    if (*n < cap) {
        out[*n].phase = phase;
        out[*n].field = field;
        out[*n].address = (uint64_t)(uintptr_t)fn;
    }
    (*n)++;
}

/* function pointers of different types, as addresses */
#define KB_CODE(phase, field, fn) code_entry(out, cap, &n, phase, field, (void (*)(void))(fn))

kb_status kb_plugin_code_entries(size_t plugin, size_t index, kb_plugin_code_entry *out,
                                 size_t cap, size_t *count, kb_error *err) {
    kb_clear_error(err);
    if (!count) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "count", "is NULL");
    if (!out && cap) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "out", "is NULL");
    if (plugin >= kb_plugin_count())
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "plugin", "%zu: %zu plugin(s) are loaded", plugin,
                       kb_plugin_count());
    if (index >= plugins[plugin].info.realizations)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "index", "%zu: plugin %s has %u realization(s)", index,
                       plugins[plugin].info.name, plugins[plugin].info.realizations);
    const kb_plugin_realization *r = &plugins[plugin].decl[index];
    size_t n = 0;
    KB_CODE("kernel", "gemm", r->gemm);
    KB_CODE("kernel", "conv2d", r->conv2d);
    KB_CODE("pack_rhs", "pack_b", r->pack_b);
    if (r->matmul) {
        KB_CODE("kernel", "matmul.run_matmul", r->matmul->run_matmul);
        KB_CODE("kernel", "matmul.run_matmul_lhs", r->matmul->run_matmul_lhs);
        KB_CODE("pack_lhs", "matmul.lhs_pack", r->matmul->lhs_pack);
        KB_CODE("pack_rhs", "matmul.rhs_pack", r->matmul->rhs_pack);
    }
    if (r->imatmul) {
        KB_CODE("kernel", "imatmul.run_imatmul", r->imatmul->run_imatmul);
        KB_CODE("pack_lhs", "imatmul.lhs_pack", r->imatmul->lhs_pack);
        KB_CODE("pack_rhs", "imatmul.rhs_pack", r->imatmul->rhs_pack);
    }
    *count = n;
    return KB_OK;
}
#undef KB_CODE

static const kb_plugin_gemm_impl *find_gemm(const char *name) {
    size_t n;
    kb_plugin_gemm_impls(&n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(gemm_store[i].name, name)) return &gemm_store[i];
    return NULL;
}

const kb_plugin_gemm_impl *kb_plugin_own_packed_b(const kb_selector *sel, const char *name) {
    if (!sel || !sel->plugins || !name) return NULL;
    const kb_plugin_gemm_impl *g = find_gemm(name);
    return (g && (g->decl->bforms & KB_BFORM_NATIVE)) ? g : NULL;
}

/* ---- what the messages say ---------------------------------------------- */

static const char *isa_name(int isa) {
    switch (isa) {
    case KB_ISA_SCALAR: return "scalar";
    case KB_ISA_NEON_FP16: return "neon (FEAT_FP16)";
    case KB_ISA_NEON_FHM: return "fhm (FEAT_FP16 + FEAT_FHM)";
    case KB_ISA_SME: return "sme";
    case KB_ISA_SME2: return "sme2";
    case KB_ISA_SVE2: return "sve2 (FEAT_SVE2, no SME)";
    case KB_ISA_SVE2P1: return "sve2p1 (FEAT_SVE2p1, no SME)";
    default: return "an unknown ISA";
    }
}

/* The file name for messages: the last path component. */
static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static kb_status refuse(kb_error *err, kb_status code, const char *path, const char *fmt, ...) {
    char reason[KB_MESSAGE_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return kb_fail(err, code, "plugin", "%s: %s", base_name(path), reason);
}

/* ---- checks ---------------------------------------------------------------- */

#if !defined(KB_NO_DLOPEN)

#if defined(__linux__)
/* Reads the ELF header: a 64-bit little-endian shared library for the
 * machine this code runs on, or a message saying what the file is. */
static uint64_t le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* A file cut short (a copy that stopped, a full disk) still starts with a
 * valid header, and the dynamic loader maps its segments past the end of the
 * file: touching them is SIGBUS. Every program header and every loaded or
 * dynamic segment must lie inside the file. */
static kb_status check_extent(const char *path, const unsigned char *h, size_t got, kb_error *err) {
    if (got < 64) return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "truncated: %zu bytes, shorter than an ELF header", got);
    FILE *f = fopen(path, "rb");
    if (!f) return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "cannot open %s", path);
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "cannot read %s", path);
    }
    long end = ftell(f);
    uint64_t size = end < 0 ? 0 : (uint64_t)end;
    uint64_t phoff = le(h + 32, 8), phentsize = le(h + 54, 2), phnum = le(h + 56, 2);
    kb_status st = KB_OK;
    if (phentsize < 56 || phnum == 0 || phnum > 4096 || phoff > size || phnum * phentsize > size - phoff) {
        st = refuse(err, KB_ERR_INVALID_ARGUMENT, path, "truncated or malformed: its program headers do not fit in its %llu bytes",
                    (unsigned long long)size);
    }
    for (uint64_t i = 0; st == KB_OK && i < phnum; i++) {
        unsigned char ph[56];
        if (fseek(f, (long)(phoff + i * phentsize), SEEK_SET) != 0 || fread(ph, 1, sizeof ph, f) != sizeof ph) {
            st = refuse(err, KB_ERR_INVALID_ARGUMENT, path, "truncated: program header %llu cannot be read", (unsigned long long)i);
            break;
        }
        uint64_t type = le(ph, 4), off = le(ph + 8, 8), filesz = le(ph + 32, 8);
        if ((type == 1 || type == 2) && (off > size || filesz > size - off))
            st = refuse(err, KB_ERR_INVALID_ARGUMENT, path,
                        "truncated: a segment reaches byte %llu, the file has %llu (a copy cut short?)",
                        (unsigned long long)(off + filesz), (unsigned long long)size);
    }
    fclose(f);
    return st;
}

static kb_status check_elf(const char *path, kb_error *err) {
    unsigned char h[64];
    FILE *f = fopen(path, "rb");
    if (!f) return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "cannot open %s", path);
    size_t got = fread(h, 1, sizeof h, f);
    fclose(f);
    if (got < 20 || memcmp(h, "\177ELF", 4) != 0)
        return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "not an ELF shared library (%s)", path);
    unsigned type = (unsigned)h[16] | ((unsigned)h[17] << 8);
    unsigned machine = (unsigned)h[18] | ((unsigned)h[19] << 8);
    const char *built = machine == 62 ? "x86_64" : machine == 183 ? "aarch64" : machine == 3 ? "x86 (32-bit)"
                      : machine == 40 ? "arm (32-bit)" : machine == 243 ? "riscv" : NULL;
#if defined(__x86_64__)
    const unsigned want = 62;
#elif defined(__aarch64__)
    const unsigned want = 183;
#else
    const unsigned want = machine;
#endif
    if (machine != want || h[4] != 2 || h[5] != 1) {
        kb_cpu_info cpu;
        kb_cpu_detect(&cpu);
        if (built)
            return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "built for %s, this process runs on %s (wrong architecture)",
                          built, cpu.arch);
        return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "built for ELF machine %u, this process runs on %s (wrong architecture)",
                      machine, cpu.arch);
    }
    if (type != 3)
        return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "an ELF file of type %u, not a shared library (link it with -shared)",
                      type);
    return check_extent(path, h, got, err);
}
#else
static kb_status check_elf(const char *path, kb_error *err) {
    (void)path;
    (void)err;
    return KB_OK;
}
#endif

static bool name_ok(const char *s, size_t max) {
    if (!s || !s[0] || strlen(s) > max) return false;
    for (const char *p = s; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_')) return false;
    return true;
}

static bool text_ok(const char *s, size_t max) {
    if (!s || strlen(s) > max) return false;
    for (const char *p = s; *p; p++)
        if (!isprint((unsigned char)*p)) return false;
    return true;
}

/* Is the first len characters of s the name of a kbench ISA class (an
 * expect_symbols prefix, "sme2:kai_*")? */
static bool isa_class_ok(const char *s, size_t len) {
    static const char *const names[] = {"scalar", "neon", "fhm", "sme", "sme2", "sve2", "sve2p1"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && !strncmp(s, names[i], len)) return true;
    return false;
}

/* Checks one declaration; *why names the field. */
static bool decl_ok(const kb_plugin_realization *r, char *why, size_t whylen) {
#define BAD(...) do { snprintf(why, whylen, __VA_ARGS__); return false; } while (0)
    if (!name_ok(r->name, KB_PLUGIN_REALIZATION_NAME_MAX))
        BAD("name must be 1..%d characters of [a-z0-9_]", KB_PLUGIN_REALIZATION_NAME_MAX);
    if (r->kernel && !text_ok(r->kernel, KB_NAME_LEN - 1))
        BAD("kernel must be printable text of at most %d characters", KB_NAME_LEN - 1);
    if (r->op != KB_OP_GEMM && r->op != KB_OP_CONV2D) BAD("op %d is not KB_OP_GEMM or KB_OP_CONV2D", r->op);
    if (r->form != KB_PLUGIN_WHOLE_CALL && r->form != KB_PLUGIN_MICRO_KERNEL)
        BAD("form %d is not KB_PLUGIN_WHOLE_CALL or KB_PLUGIN_MICRO_KERNEL", r->form);
    if (r->isa < KB_ISA_SCALAR || r->isa >= KB_ISA_COUNT) BAD("isa %d is not a kb_isa class", r->isa);
    if (r->accum != KB_ACCUM_FP32 && r->accum != KB_ACCUM_FP16) BAD("accum %d is not KB_ACCUM_FP32 or KB_ACCUM_FP16", r->accum);
    if (r->bias != KB_PLUGIN_BIAS_LAST && r->bias != KB_PLUGIN_BIAS_FIRST)
        BAD("bias %d is not KB_PLUGIN_BIAS_LAST or KB_PLUGIN_BIAS_FIRST", r->bias);
    if (r->thread_safe != 0 && r->thread_safe != 1) BAD("thread_safe must be 0 or 1, got %d", r->thread_safe);
    if (r->k_per_rounding > 1024) BAD("k_per_rounding %u is implausible", r->k_per_rounding);
    if (r->nan_clamp < KB_PLUGIN_NAN_PROPAGATE || r->nan_clamp > KB_PLUGIN_NAN_TO_MAX)
        BAD("nan_clamp %d is not a KB_PLUGIN_NAN_*", r->nan_clamp);
    if (r->rhs_layout) {
        if (!kb_layout_name_ok(r->rhs_layout, true))
            BAD("rhs_layout: %s is not a layout kbench implements (x16p<NR>x<KR>b, e.g. x16p2vlx2b, x16p16x1b)",
                text_ok(r->rhs_layout, 40) ? r->rhs_layout : "?");
        if (r->op != KB_OP_GEMM || (r->form == KB_PLUGIN_WHOLE_CALL && !(r->bforms & KB_BFORM_NATIVE)))
            BAD("rhs_layout: only a GEMM that packs B (KB_BFORM_NATIVE, or the micro-kernel form) declares one");
    }
    if (r->lhs_layout) {
        if (!kb_layout_name_ok(r->lhs_layout, false))
            BAD("lhs_layout: %s is not a layout kbench implements (x16p<MR>x<KR>, e.g. x16p2vlx2)",
                text_ok(r->lhs_layout, 40) ? r->lhs_layout : "?");
        if (r->op != KB_OP_GEMM || r->form != KB_PLUGIN_MICRO_KERNEL || !r->matmul || !r->matmul->run_matmul)
            BAD("lhs_layout: only a micro-kernel GEMM with a packed LHS (run_matmul) declares one");
    }
    if (r->flags & ~KB_PLUGIN_FLAGS_KNOWN)
        BAD("flags 0x%x: unknown bits 0x%x (KB_PLUGIN_PACK_*, KB_PLUGIN_SCRATCH_CAPPED)", r->flags,
            r->flags & ~KB_PLUGIN_FLAGS_KNOWN);
    bool packs_b = r->op == KB_OP_GEMM && (r->form == KB_PLUGIN_MICRO_KERNEL || (r->bforms & KB_BFORM_NATIVE));
    if ((r->flags & (KB_PLUGIN_PACK_NO_BIAS | KB_PLUGIN_PACK_BIAS_AT_CALL | KB_PLUGIN_PACK_PADDING_UNSPECIFIED)) &&
        !packs_b)
        BAD("flags: KB_PLUGIN_PACK_* declare what a packer of B does; this realization packs no B");
    if ((r->flags & (KB_PLUGIN_PACK_NO_BIAS | KB_PLUGIN_PACK_BIAS_AT_CALL)) && r->form != KB_PLUGIN_WHOLE_CALL)
        BAD("flags: KB_PLUGIN_PACK_NO_BIAS and _BIAS_AT_CALL are for the whole-call form (a micro-kernel's "
            "rhs_pack puts the bias into its packed B)");
    if ((r->flags & KB_PLUGIN_PACK_BIAS_AT_CALL) && !(r->flags & KB_PLUGIN_PACK_NO_BIAS))
        BAD("flags: KB_PLUGIN_PACK_BIAS_AT_CALL without KB_PLUGIN_PACK_NO_BIAS (a packer that takes the bias "
            "leaves none for the call)");
    if ((r->flags & KB_PLUGIN_PACK_PADDING_UNSPECIFIED) && !r->rhs_layout)
        BAD("flags: KB_PLUGIN_PACK_PADDING_UNSPECIFIED needs rhs_layout (the layout says which bytes are padding)");
    if (!(r->flags & KB_PLUGIN_SCRATCH_CAPPED) && r->scratch_cap)
        BAD("scratch_cap %llu is set without KB_PLUGIN_SCRATCH_CAPPED in flags", (unsigned long long)r->scratch_cap);
    for (int o = 0; o < KB_PLUGIN_OPERANDS; o++) {
        if (r->overread[o] > KB_PLUGIN_OVERREAD_MAX)
            BAD("overread[%d] = %u bytes: at most %u are taken", o, r->overread[o], KB_PLUGIN_OVERREAD_MAX);
        if (r->overread[o] && o > KB_PLUGIN_OPERAND_INDIRECTION)
            BAD("overread[%d]: no operand has that index (KB_PLUGIN_OPERAND_*)", o);
    }
    if (r->expect_symbols) {
        size_t total = 0;
        int n = 0;
        for (; r->expect_symbols[n]; n++) {
            const char *pat = r->expect_symbols[n];
            if (n >= KB_PLUGIN_EXPECT_MAX) BAD("expect_symbols: more than %d patterns (or no NULL at its end)",
                                               KB_PLUGIN_EXPECT_MAX);
            if (!pat[0] || !text_ok(pat, KB_PLUGIN_EXPECT_LEN - 1) || strchr(pat, ' '))
                BAD("expect_symbols[%d] must be a non-empty printable glob pattern without spaces", n);
            const char *colon = strchr(pat, ':');
            if (colon && !isa_class_ok(pat, (size_t)(colon - pat)))
                BAD("expect_symbols[%d] (%s): '%.*s' is not an ISA class (scalar, neon, fhm, sme, sme2, sve2, sve2p1)",
                    n, pat, (int)(colon - pat), pat);
            if (colon && !colon[1]) BAD("expect_symbols[%d] (%s): no pattern after the ISA class", n, pat);
            total += strlen(pat) + 1;
        }
        if (n == 0) BAD("expect_symbols: an empty list (NULL means none declared)");
        if (total > KB_PLUGIN_EXPECT_LEN - 1)
            BAD("expect_symbols: %zu characters in all, at most %d are taken", total, KB_PLUGIN_EXPECT_LEN - 1);
    }
    if (r->op == KB_OP_GEMM) {
        if (!r->bforms || (r->bforms & ~(KB_BFORM_PLAIN | KB_BFORM_NATIVE)))
            BAD("bforms 0x%x: a plugin takes KB_BFORM_PLAIN and/or KB_BFORM_NATIVE", r->bforms);
        if (r->form == KB_PLUGIN_WHOLE_CALL) {
            if (!r->gemm) BAD("gemm is NULL (the whole-call form of a GEMM needs it)");
            if ((r->bforms & KB_BFORM_NATIVE) && (!r->packed_b_size || !r->pack_b))
                BAD("KB_BFORM_NATIVE needs packed_b_size and pack_b");
        } else {
            const kb_plugin_matmul_ukernel *u = r->matmul;
            if (!u) BAD("matmul is NULL (the micro-kernel form of a GEMM needs it)");
#define NEED(f) if (!u->f) BAD("matmul->" #f " is NULL")
            NEED(get_m_step); NEED(get_n_step); NEED(get_nr); NEED(get_kr); NEED(get_sr);
            NEED(get_rhs_packed_offset); NEED(get_dst_offset);
            NEED(rhs_get_packed_size); NEED(rhs_pack);
            if (!!u->run_matmul == !!u->run_matmul_lhs)
                BAD("matmul: exactly one of run_matmul (packed LHS) and run_matmul_lhs (plain LHS) must be set");
            if (u->run_matmul) {
                NEED(get_mr); NEED(get_lhs_packed_offset); NEED(lhs_get_packed_size); NEED(lhs_pack);
            } else {
                NEED(get_lhs_offset);
            }
#undef NEED
        }
    } else {
        if (r->bforms) BAD("bforms must be 0 for a convolution");
        if (r->conv_class != KB_CONV_CLASS_ANY && r->conv_class != KB_CONV_CLASS_3X3_S1)
            BAD("conv_class %u is not a KB_CONV_CLASS_*", r->conv_class);
        if (r->form == KB_PLUGIN_WHOLE_CALL) {
            if (!r->conv2d) BAD("conv2d is NULL (the whole-call form of a convolution needs it)");
        } else {
            const kb_plugin_imatmul_ukernel *u = r->imatmul;
            if (!u) BAD("imatmul is NULL (the micro-kernel form of a convolution needs it)");
            if (r->max_groups != 1) BAD("max_groups must be 1: an indirect GEMM computes one group");
#define NEED(f) if (!u->f) BAD("imatmul->" #f " is NULL")
            NEED(get_m_step); NEED(get_n_step); NEED(get_lhs_packed_offset); NEED(get_rhs_packed_offset);
            NEED(get_dst_offset); NEED(run_imatmul); NEED(lhs_get_m_step); NEED(lhs_get_packed_size);
            NEED(lhs_pack); NEED(rhs_get_packed_size); NEED(rhs_pack);
#undef NEED
        }
    }
    return true;
#undef BAD
}

static const char *const RESERVED[] = {"scalar", "neon", "sme", "plugin", "ort", "kbench"};

/* Checks the table; its realizations are read into `decls` (this ABI's
 * structure, whatever version the table has). */
static kb_status check_table(const char *path, const kb_plugin *t, kb_plugin_realization *decls, kb_error *err) {
    if (t->abi_version == 0)
        return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "abi_version is 0 (set it to KB_PLUGIN_ABI_VERSION)");
    if (t->abi_version > KB_PLUGIN_ABI_VERSION)
        return refuse(err, KB_ERR_UNSUPPORTED, path,
                      "built for plugin ABI %u, this kbench reads ABI %u (the plugin is newer: update kbench "
                      "or rebuild the plugin against this kbench_plugin.h)",
                      t->abi_version, KB_PLUGIN_ABI_VERSION);
    if (t->struct_size < sizeof(kb_plugin))
        return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "struct_size %u is smaller than the ABI %u table (%zu bytes)",
                      t->struct_size, t->abi_version, sizeof(kb_plugin));
    if (!name_ok(t->name, KB_PLUGIN_NAME_MAX))
        return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "name must be 1..%d characters of [a-z0-9_]", KB_PLUGIN_NAME_MAX);
    for (size_t i = 0; i < sizeof RESERVED / sizeof RESERVED[0]; i++)
        if (!strcmp(t->name, RESERVED[i]))
            return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "name '%s' is reserved by kbench", t->name);
    if (!t->version || !t->version[0] || !text_ok(t->version, KB_PLUGIN_VERSION_LEN - 1))
        return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "version must be printable text of 1..%d characters",
                      KB_PLUGIN_VERSION_LEN - 1);
    if (t->description && !text_ok(t->description, KB_PLUGIN_NOTE_LEN - 1))
        return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "description must be printable text of at most %d characters",
                      KB_PLUGIN_NOTE_LEN - 1);
    if (t->count == 0 || !t->realizations)
        return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "declares no realization (count %u)", t->count);
    if (t->count > KB_PLUGIN_MAX_REALIZATIONS)
        return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "declares %u realizations, at most %d are taken", t->count,
                      KB_PLUGIN_MAX_REALIZATIONS);
    read_decls(t, decls);
    for (uint32_t i = 0; i < t->count; i++) {
        char why[160];
        if (!decl_ok(&decls[i], why, sizeof why))
            return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "realizations[%u] (%s): %s", i,
                          text_ok(decls[i].name, 47) ? decls[i].name : "?", why);
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(decls[i].name, decls[j].name))
                return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "realizations[%u]: name '%s' appears twice", i,
                              decls[i].name);
    }
    return KB_OK;
}

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

/* Registers a checked table; called under load_lock. */
static kb_status add(const char *path, void *handle, const kb_plugin *t, const kb_plugin_realization *decls,
                     const kb_cpu_info *cpu, kb_plugin_info *out, kb_error *err) {
    size_t np = kb_plugin_count();
    if (np >= KB_PLUGIN_MAX)
        return refuse(err, KB_ERR_UNSUPPORTED, path, "%d plugins are loaded already, the most kbench takes", KB_PLUGIN_MAX);
    for (size_t i = 0; i < np; i++)
        if (!strcmp(plugins[i].info.name, t->name))
            return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "a plugin named '%s' is loaded already (from %s)", t->name,
                          plugins[i].info.path);
    size_t ng = atomic_load(&gemm_count), nc = atomic_load(&conv_count), want_g = 0, want_c = 0;
    for (uint32_t i = 0; i < t->count; i++) {
        if (decls[i].op == KB_OP_GEMM) want_g++;
        else want_c++;
    }
    if (ng + want_g > KB_PLUGIN_MAX_IMPLS || nc + want_c > KB_PLUGIN_MAX_IMPLS)
        return refuse(err, KB_ERR_UNSUPPORTED, path, "too many plugin realizations in this process (at most %d per operator)",
                      KB_PLUGIN_MAX_IMPLS);
    loaded_plugin *lp = &plugins[np];
    memset(lp, 0, sizeof *lp);
    kb_plugin_info *info = &lp->info;
    snprintf(info->name, sizeof info->name, "%s", t->name);
    snprintf(info->version, sizeof info->version, "%s", t->version);
    snprintf(info->path, sizeof info->path, "%s", path);
    snprintf(info->description, sizeof info->description, "%s", t->description ? t->description : "");
    info->abi_version = t->abi_version;
    info->realizations = t->count;
    memcpy(lp->decl, decls, t->count * sizeof decls[0]);
    const char *missing = NULL;
    for (uint32_t i = 0; i < t->count; i++) {
        const kb_plugin_realization *r = &lp->decl[i];
        kb_plugin_realization_info *ri = &lp->real[i];
        snprintf(ri->name, sizeof ri->name, "%s.%s", t->name, r->name);
        ri->op = r->op;
        ri->form = r->form;
        ri->isa = r->isa;
        ri->thread_safe = r->thread_safe;
        ri->bias_first = r->bias == KB_PLUGIN_BIAS_FIRST;
        ri->nan_clamp = r->nan_clamp;
        snprintf(ri->rhs_layout, sizeof ri->rhs_layout, "%s", r->rhs_layout ? r->rhs_layout : "");
        snprintf(ri->lhs_layout, sizeof ri->lhs_layout, "%s", r->lhs_layout ? r->lhs_layout : "");
        ri->flags = r->flags;
        memcpy(ri->overread, r->overread, sizeof ri->overread);
        ri->scratch_cap = r->scratch_cap;
        for (int e = 0; r->expect_symbols && r->expect_symbols[e]; e++) {
            size_t used = strlen(ri->expect_symbols);
            snprintf(ri->expect_symbols + used, sizeof ri->expect_symbols - used, "%s%s", e ? " " : "",
                     r->expect_symbols[e]);
        }
        ri->usable = kb_cpu_has_isa(cpu, r->isa);
        if (ri->usable && r->op == KB_OP_GEMM && r->form == KB_PLUGIN_MICRO_KERNEL) {
            ri->nr = (uint32_t)r->matmul->get_nr();
            ri->kr = (uint32_t)r->matmul->get_kr();
            ri->mr = r->matmul->run_matmul ? (uint32_t)r->matmul->get_mr() : 0;
        }
        if (ri->usable) {
            info->usable++;
        } else {
            snprintf(ri->note, sizeof ri->note, "needs %s, which this CPU (%s, highest %s) lacks", isa_name(r->isa),
                     cpu->arch, isa_name(cpu->isa));
            missing = isa_name(r->isa);
        }
    }
    if (info->usable == 0)
        return kb_fail(err, KB_ERR_UNSUPPORTED, "plugin",
                       "%s (%s %s): every realization needs an ISA this CPU lacks (e.g. %s; the CPU is %s, "
                       "highest %s)", base_name(path), t->name, t->version, missing, cpu->arch, isa_name(cpu->isa));
    for (uint32_t i = 0; i < t->count; i++) {
        const kb_plugin_realization *r = &lp->decl[i];
        if (r->op == KB_OP_GEMM) {
            kb_plugin_gemm_impl *g = &gemm_store[ng];
            memset(g, 0, sizeof *g);
            snprintf(g->name, sizeof g->name, "%s", lp->real[i].name);
            g->decl = r;
            g->id = (uint16_t)ng;
            g->base.name = g->name;
            g->base.backend = KB_BACKEND_PLUGIN;
            g->base.kernel = r->kernel ? r->kernel : r->name;
            g->base.isa = r->isa;
            g->base.accum = r->accum;
            g->base.k_per_rounding = r->k_per_rounding;
            g->base.bforms = r->bforms;
            g->base.native_layout = KB_LAYOUT_PLUGIN;
            g->base.max_m = r->max_m;
            g->base.threaded = r->thread_safe;
            g->base.run = kb_plugin_gemm_run;
            g->base.describe = kb_plugin_describe;
            g->base.nan_clamp = (uint32_t)r->nan_clamp;
            gemm_list[ng++] = &g->base;
        } else {
            kb_plugin_conv_impl *c = &conv_store[nc];
            memset(c, 0, sizeof *c);
            snprintf(c->name, sizeof c->name, "%s", lp->real[i].name);
            c->decl = r;
            c->base.name = c->name;
            c->base.backend = KB_BACKEND_PLUGIN;
            c->base.kernel = r->kernel ? r->kernel : r->name;
            c->base.isa = r->isa;
            c->base.accum = r->accum;
            c->base.k_per_rounding = r->k_per_rounding;
            c->base.threaded = r->thread_safe;
            c->base.run = kb_plugin_conv_run;
            c->base.max_groups = r->max_groups;
            c->base.conv_class = r->conv_class;
            c->base.error_model = KB_ERROR_MODEL_GEMM;
            c->base.describe = kb_plugin_describe;
            c->base.nan_clamp = (uint32_t)r->nan_clamp;
            conv_list[nc++] = &c->base;
        }
    }
    lp->handle = handle;
    lp->table = t;
    atomic_store_explicit(&gemm_count, ng, memory_order_release);
    atomic_store_explicit(&conv_count, nc, memory_order_release);
    atomic_store_explicit(&plugin_count, np + 1, memory_order_release);
    if (out) *out = *info;
    return KB_OK;
}

static kb_status load_locked(const char *path, kb_plugin_info *out, kb_error *err) {
    char real[PATH_MAX];
    if (!realpath(path, real)) return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "no such file: %s", path);
    if (strlen(real) >= KB_PLUGIN_PATH_LEN)
        return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "the path is longer than %d characters", KB_PLUGIN_PATH_LEN - 1);
    size_t np = kb_plugin_count();
    for (size_t i = 0; i < np; i++)
        if (!strcmp(plugins[i].info.path, real)) {
            if (out) *out = plugins[i].info;
            return KB_OK;
        }
    kb_status st = check_elf(real, err);
    if (st != KB_OK) return st;
    dlerror();
    void *h = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "the loader refused it (missing symbol or library?): %s",
                      why ? why : "unknown reason");
    }
    dlerror();
    void *sym = dlsym(h, KB_PLUGIN_ENTRY_SYMBOL);
    if (!sym) {
        dlclose(h);
        return refuse(err, KB_ERR_INVALID_ARGUMENT, path,
                      "missing symbol %s: not a kbench plugin (or the symbol is not exported)", KB_PLUGIN_ENTRY_SYMBOL);
    }
    kb_plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    const kb_plugin *t = entry(KB_PLUGIN_ABI_VERSION);
    if (!t) {
        dlclose(h);
        return refuse(err, KB_ERR_INVALID_ARGUMENT, path, "%s returned NULL (no table for ABI %u)", KB_PLUGIN_ENTRY_SYMBOL,
                      KB_PLUGIN_ABI_VERSION);
    }
    static kb_plugin_realization decls[KB_PLUGIN_MAX_REALIZATIONS]; /* under load_lock */
    if ((st = check_table(path, t, decls, err)) == KB_OK) {
        kb_cpu_info cpu;
        kb_cpu_detect(&cpu);
        st = add(real, h, t, decls, &cpu, out, err);
    }
    if (st != KB_OK) dlclose(h);
    return st;
}

kb_status kb_plugin_load(const char *path, kb_plugin_info *info, kb_error *err) {
    kb_clear_error(err);
    if (!path || !path[0]) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "plugin", "the path is empty");
    pthread_mutex_lock(&load_lock);
    kb_status st = load_locked(path, info, err);
    pthread_mutex_unlock(&load_lock);
    return st;
}

#else /* KB_NO_DLOPEN */

kb_status kb_plugin_load(const char *path, kb_plugin_info *info, kb_error *err) {
    (void)info;
    (void)conv_store; /* never filled in this build */
    kb_clear_error(err);
    return refuse(err, KB_ERR_UNSUPPORTED, path ? path : "?",
                  "this build of kbench cannot load shared libraries (the static worker); "
                  "qemu targets with plugins use the dynamically linked worker");
}

#endif /* KB_NO_DLOPEN */

/* ---- packing entry points --------------------------------------------------- */

static kb_status packer(const char *realization, const kb_plugin_gemm_impl **out, kb_error *err) {
    if (!realization) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "realization", "is NULL");
    const kb_plugin_gemm_impl *g = find_gemm(realization);
    if (!g) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "realization", "no loaded plugin GEMM realization is named '%s'",
                           realization);
    if (!(g->decl->bforms & KB_BFORM_NATIVE))
        return kb_fail(err, KB_ERR_UNSUPPORTED, "realization", "%s takes plain B only: it has no packer", realization);
    kb_cpu_info cpu;
    kb_cpu_detect(&cpu);
    if (!kb_cpu_has_isa(&cpu, g->decl->isa))
        return kb_fail(err, KB_ERR_UNSUPPORTED, "realization", "%s needs %s, which this CPU lacks", realization,
                       isa_name(g->decl->isa));
    *out = g;
    return KB_OK;
}

static kb_status lhs_packer(const char *realization, const kb_plugin_gemm_impl **out, kb_error *err) {
    if (!realization) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "realization", "is NULL");
    const kb_plugin_gemm_impl *g = find_gemm(realization);
    if (!g) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "realization", "no loaded plugin GEMM realization is named '%s'",
                           realization);
    kb_cpu_info cpu;
    kb_cpu_detect(&cpu);
    if (!kb_cpu_has_isa(&cpu, g->decl->isa))
        return kb_fail(err, KB_ERR_UNSUPPORTED, "realization", "%s needs %s, which this CPU lacks", realization,
                       isa_name(g->decl->isa));
    *out = g;
    return KB_OK;
}

kb_status kb_pack_lhs_plugin_size(const char *realization, size_t M, size_t K, size_t *size, kb_error *err) {
    kb_clear_error(err);
    const kb_plugin_gemm_impl *g = NULL;
    kb_status st = lhs_packer(realization, &g, err);
    if (st != KB_OK) return st;
    if (M == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "M", "must be positive, got 0");
    if (K == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "K", "must be positive, got 0");
    if (!size) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "size", "is NULL");
    return kb_plugin_lhs_packed_size(g, M, K, size, err);
}

kb_status kb_pack_lhs_plugin(const char *realization, size_t M, size_t K, const kb_f16 *A, size_t lda, void *dst,
                             size_t dst_size, kb_error *err) {
    kb_clear_error(err);
    const kb_plugin_gemm_impl *g = NULL;
    size_t need = 0;
    kb_status st = kb_pack_lhs_plugin_size(realization, M, K, &need, err);
    if (st != KB_OK) return st;
    if ((st = lhs_packer(realization, &g, err)) != KB_OK) return st;
    if (!A) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "A", "is NULL");
    if (!dst) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "dst", "is NULL");
    if (lda < K) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "lda", "%zu is smaller than K = %zu", lda, K);
    size_t span;
    if (!kb_mul_ok(M - 1, lda, &span) || !kb_add_ok(span, K, &span) || !kb_mul_ok(span, sizeof(kb_f16), &span))
        return kb_fail(err, KB_ERR_OVERFLOW, "lda", "M * lda bytes overflow size_t");
    if (dst_size < need)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "dst_size", "%zu bytes is less than the %zu needed", dst_size, need);
    return kb_plugin_pack_lhs(g, M, K, A, lda, dst, err);
}

kb_status kb_pack_b_plugin_size(const char *realization, size_t N, size_t K, size_t *size, kb_error *err) {
    kb_clear_error(err);
    const kb_plugin_gemm_impl *g = NULL;
    kb_status st = packer(realization, &g, err);
    if (st != KB_OK) return st;
    if (N == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "N", "must be positive, got 0");
    if (K == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "K", "must be positive, got 0");
    if (!size) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "size", "is NULL");
    return kb_plugin_packed_size(g, N, K, size, err);
}

kb_status kb_pack_b_plugin(const char *realization, size_t N, size_t K, const kb_f16 *B, size_t ldb,
                           const kb_f16 *bias, void *dst, size_t dst_size, kb_error *err) {
    kb_clear_error(err);
    const kb_plugin_gemm_impl *g = NULL;
    kb_status st = packer(realization, &g, err);
    if (st != KB_OK) return st;
    if (N == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "N", "must be positive, got 0");
    if (K == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "K", "must be positive, got 0");
    if (!B) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "B", "is NULL");
    if (!dst) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "dst", "is NULL");
    if (ldb < N) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "ldb", "%zu is smaller than N = %zu", ldb, N);
    size_t span;
    if (!kb_mul_ok(K - 1, ldb, &span) || !kb_add_ok(span, N, &span) || !kb_mul_ok(span, sizeof(kb_f16), &span))
        return kb_fail(err, KB_ERR_OVERFLOW, "ldb", "K * ldb bytes overflow size_t");
    size_t need = 0;
    if ((st = kb_plugin_packed_size(g, N, K, &need, err)) != KB_OK) return st;
    if (dst_size < need)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "dst_size", "%zu bytes is less than the %zu needed", dst_size, need);
    return kb_plugin_pack(g, N, K, B, ldb, bias, dst, dst_size, err);
}
