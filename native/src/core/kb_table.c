/* kb_table.c — tuned dispatch tables: load (with the machine and library
 * checks), match a call's shape class, free. */
#include "kb_internal.h"
#include "kb_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RULES 4096

typedef struct rule {
    int op;                 /* kb_op */
    double lo[3], hi[3];    /* GEMM: M, N, K ranges (inclusive) */
    long conv[6];           /* conv: kh, kw, stride_h, stride_w, dilation_h, dilation_w (-1 = any) */
    int depthwise;          /* conv: -1 any, 0 no, 1 yes */
    int grouped;            /* conv: groups > 1 and not depthwise; -1 any, 0 no, 1 yes */
    char name[KB_NAME_LEN];
} rule;

struct kb_dispatch_table {
    size_t n;
    rule rules[];
};

/* KB_CPU_* bit i is named FEATURES[i] (as kbench.native.api.CPU_FEATURES names it) */
static const char *FEATURES[] = {"fp16", "fhm", "sve", "sme", "sme2", "sve2", "sve2p1"};

static kb_status bad(kb_error *err, kb_json *root, const char *field, const char *msg) {
    kb_json_free(root);
    return kb_fail(err, KB_ERR_INVALID_ARGUMENT, field, "%s", msg);
}

/* The member `key` of an object, NULL if absent; *dup is set when the key
 * appears more than once (JSON readers disagree on which one counts: the
 * Python side would take the last, a first-match lookup the first). */
static const kb_json *member(const kb_json *o, const char *key, bool *dup) {
    const kb_json *found = NULL;
    if (!o || o->type != KB_JSON_OBJECT) return NULL;
    for (const kb_json *c = o->child; c; c = c->next) {
        if (!c->key || strcmp(c->key, key)) continue;
        if (found) *dup = true;
        else found = c;
    }
    return found;
}

/* Copies at most 40 bytes of a string from the table for a message (the
 * error code path makes the whole message valid UTF-8). */
static const char *quoted(const char *s, char *buf, size_t len) {
    snprintf(buf, len, "%.40s%s", s ? s : "?", s && strlen(s) > 40 ? "..." : "");
    return buf;
}

typedef struct loader {
    kb_json *root;
    kb_error *err;
    kb_status st;
} loader;

/* Looks up a member; a duplicate key fails the load, naming the path. */
static const kb_json *get(loader *ld, const kb_json *o, const char *path, const char *key) {
    bool dup = false;
    const kb_json *v = member(o, key, &dup);
    if (dup && ld->st == KB_OK)
        ld->st = kb_fail(ld->err, KB_ERR_INVALID_ARGUMENT, path, "the key \"%s\" appears more than once", key);
    return v;
}

/* A number member in [lo, hi] (dflt when absent); any other value fails
 * the load, naming "<path>.<key>". Range checks keep every conversion
 * defined (a 1e300 stride would otherwise be cast to long). */
static double number(loader *ld, const kb_json *o, const char *path, const char *key,
                     double dflt, double lo, double hi, bool integer) {
    const kb_json *v = get(ld, o, path, key);
    if (!v || ld->st != KB_OK) return dflt;
    char field[2 * KB_FIELD_LEN];
    snprintf(field, sizeof field, "%s.%s", path, key);
    if (v->type != KB_JSON_NUMBER) {
        ld->st = kb_fail(ld->err, KB_ERR_INVALID_ARGUMENT, field, "must be a number");
        return dflt;
    }
    double x = v->number;
    if (!(x >= lo && x <= hi) || (integer && x != floor(x))) {
        ld->st = kb_fail(ld->err, KB_ERR_INVALID_ARGUMENT, field, "%g is not %s in [%.0f, %.0f]", x,
                         integer ? "an integer" : "a number", lo, hi);
        return dflt;
    }
    return x;
}

#define SIZE_LIMIT 18446744073709551615.0 /* largest size_t value, as a double */
#define CONV_LIMIT 2147483647.0          /* kernel sizes and strides the rules can name */

kb_status kb_load_dispatch_table(const char *json, size_t len, kb_dispatch_table **out,
                                 kb_error *err) {
    kb_clear_error(err);
    if (!json) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "table", "is NULL");
    if (!out) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "out", "is NULL");
    char perr[128], q1[48], q2[48];
    kb_json *root = kb_json_parse(json, len, perr, sizeof perr);
    if (!root) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "table", "not valid JSON: %s", perr);
    if (root->type != KB_JSON_OBJECT) return bad(err, root, "table", "must be a JSON object");
    loader ld = {root, err, KB_OK};
#define CHECK() do { if (ld.st != KB_OK) { kb_json_free(root); return ld.st; } } while (0)
    const kb_json *format = get(&ld, root, "table", "kbench_dispatch_table");
    CHECK();
    if (!format || format->type != KB_JSON_NUMBER || format->number != 1)
        return bad(err, root, "table.kbench_dispatch_table", "missing, or not format version 1");
    const kb_json *ver = get(&ld, root, "table", "library_version");
    CHECK();
    if (!ver || ver->type != KB_JSON_STRING) return bad(err, root, "table.library_version", "missing");
    if (strcmp(ver->string, kb_version())) {
        kb_status st = kb_fail(err, KB_ERR_INVALID_ARGUMENT, "table.library_version",
                               "tuned with library %s, this is %s: tune again",
                               quoted(ver->string, q1, sizeof q1), kb_version());
        kb_json_free(root);
        return st;
    }
    const kb_json *fp = get(&ld, root, "table", "fingerprint");
    CHECK();
    if (!fp || fp->type != KB_JSON_OBJECT) return bad(err, root, "table.fingerprint", "missing");
    kb_cpu_info cpu;
    kb_cpu_detect(&cpu);
    const kb_json *arch = get(&ld, fp, "table.fingerprint", "arch");
    CHECK();
    if (!arch || arch->type != KB_JSON_STRING || strcmp(arch->string, cpu.arch)) {
        kb_status st = kb_fail(err, KB_ERR_INVALID_ARGUMENT, "table.fingerprint.arch",
                               "tuned on %s, this machine is %s",
                               quoted(arch && arch->string ? arch->string : "?", q2, sizeof q2), cpu.arch);
        kb_json_free(root);
        return st;
    }
    const kb_json *feats = get(&ld, fp, "table.fingerprint", "cpu_features");
    CHECK();
    if (!feats || feats->type != KB_JSON_ARRAY) return bad(err, root, "table.fingerprint.cpu_features", "missing");
    uint32_t mask = 0;
    for (const kb_json *f = feats->child; f; f = f->next)
        for (unsigned i = 0; i < sizeof FEATURES / sizeof FEATURES[0]; i++)
            if (f->type == KB_JSON_STRING && !strcmp(f->string, FEATURES[i])) mask |= 1u << i;
    if (mask != cpu.features) {
        kb_status st = kb_fail(err, KB_ERR_INVALID_ARGUMENT, "table.fingerprint.cpu_features",
                               "tuned on a CPU with features 0x%x, this one has 0x%x: tune on this machine",
                               mask, cpu.features);
        kb_json_free(root);
        return st;
    }
    double svl = number(&ld, fp, "table.fingerprint", "sme_vector_bits", -1, 0, 65536, true);
    CHECK();
    if (svl < 0) return bad(err, root, "table.fingerprint.sme_vector_bits", "missing");
    if (svl != (double)cpu.sme_vector_bits) {
        kb_status st = kb_fail(err, KB_ERR_INVALID_ARGUMENT, "table.fingerprint.sme_vector_bits",
                               "tuned at an SVL of %.0f bits, this CPU runs at %u", svl, cpu.sme_vector_bits);
        kb_json_free(root);
        return st;
    }
    const kb_json *rules = get(&ld, root, "table", "rules");
    CHECK();
    if (!rules || rules->type != KB_JSON_ARRAY) return bad(err, root, "table.rules", "missing");
    size_t n = 0;
    for (const kb_json *r = rules->child; r; r = r->next) n++;
    if (n > MAX_RULES) return bad(err, root, "table.rules", "more than 4096 rules");
    kb_dispatch_table *t = calloc(1, sizeof *t + n * sizeof(rule));
    if (!t) {
        kb_json_free(root);
        return kb_fail(err, KB_ERR_OUT_OF_MEMORY, "table", "cannot allocate %zu rules", n);
    }
#undef CHECK
#define CHECK() do { if (ld.st != KB_OK) { free(t); kb_json_free(root); return ld.st; } } while (0)
    for (const kb_json *r = rules->child; r; r = r->next) {
        rule *ru = &t->rules[t->n];
        char path[KB_FIELD_LEN], cpath[KB_FIELD_LEN];
        snprintf(path, sizeof path, "table.rules[%zu]", t->n);
        snprintf(cpath, sizeof cpath, "table.rules[%zu].class", t->n);
        if (r->type != KB_JSON_OBJECT) {
            ld.st = kb_fail(err, KB_ERR_INVALID_ARGUMENT, path, "must be an object with op, class and realization");
            CHECK();
        }
        const kb_json *op = get(&ld, r, path, "op"), *name = get(&ld, r, path, "realization");
        const kb_json *cls = get(&ld, r, path, "class");
        CHECK();
        if (!op || op->type != KB_JSON_STRING || !name || name->type != KB_JSON_STRING ||
            !cls || cls->type != KB_JSON_OBJECT) {
            ld.st = kb_fail(err, KB_ERR_INVALID_ARGUMENT, path, "every rule needs op, class and realization");
            CHECK();
        }
        if (strlen(name->string) >= KB_NAME_LEN) {
            ld.st = kb_fail(err, KB_ERR_INVALID_ARGUMENT, path, "realization name longer than %d bytes", KB_NAME_LEN - 1);
            CHECK();
        }
        if (!strcmp(op->string, "gemm")) ru->op = KB_OP_GEMM;
        else if (!strcmp(op->string, "conv2d")) ru->op = KB_OP_CONV2D;
        else {
            ld.st = kb_fail(err, KB_ERR_INVALID_ARGUMENT, path, "op must be gemm or conv2d, not %s",
                            quoted(op->string, q1, sizeof q1));
            CHECK();
        }
        static const char *lo[3] = {"m_min", "n_min", "k_min"}, *hi[3] = {"m_max", "n_max", "k_max"};
        for (int i = 0; i < 3; i++) {
            ru->lo[i] = number(&ld, cls, cpath, lo[i], 0, 0, SIZE_LIMIT, false);
            ru->hi[i] = number(&ld, cls, cpath, hi[i], INFINITY, 0, INFINITY, false);
        }
        static const char *cv[6] = {"kh", "kw", "stride_h", "stride_w", "dilation_h", "dilation_w"};
        for (int i = 0; i < 6; i++) ru->conv[i] = (long)number(&ld, cls, cpath, cv[i], -1, 1, CONV_LIMIT, true);
        static const char *flags[2] = {"depthwise", "grouped"};
        int *flag_out[2] = {&ru->depthwise, &ru->grouped};
        for (int i = 0; i < 2; i++) {
            const kb_json *fl = get(&ld, cls, cpath, flags[i]);
            CHECK();
            if (fl && fl->type != KB_JSON_BOOL) {
                char field[2 * KB_FIELD_LEN];
                snprintf(field, sizeof field, "%s.%s", cpath, flags[i]);
                ld.st = kb_fail(err, KB_ERR_INVALID_ARGUMENT, field, "must be true or false");
                CHECK();
            }
            *flag_out[i] = fl ? (int)fl->number : -1;
        }
        strcpy(ru->name, name->string);
        t->n++;
    }
#undef CHECK
    kb_json_free(root);
    *out = t;
    return KB_OK;
}

void kb_free_dispatch_table(kb_dispatch_table *t) { free(t); }

size_t kb_dispatch_table_rules(const kb_dispatch_table *t) { return t ? t->n : 0; }

const char *kb_table_gemm_choice(const kb_dispatch_table *t, size_t M, size_t N, size_t K) {
    double v[3] = {(double)M, (double)N, (double)K};
    for (size_t i = 0; i < t->n; i++) {
        const rule *r = &t->rules[i];
        if (r->op != KB_OP_GEMM) continue;
        bool ok = true;
        for (int j = 0; j < 3; j++) ok = ok && v[j] >= r->lo[j] && v[j] <= r->hi[j];
        if (ok) return r->name;
    }
    return NULL;
}

const char *kb_table_conv_choice(const kb_dispatch_table *t, const kb_conv_desc *d) {
    long v[6] = {(long)d->kh, (long)d->kw, (long)d->stride_h, (long)d->stride_w,
                 (long)d->dil_h, (long)d->dil_w};
    int dw = d->groups > 1 && d->groups == d->c_in && d->groups == d->c_out;
    int grouped = d->groups > 1 && !dw;
    for (size_t i = 0; i < t->n; i++) {
        const rule *r = &t->rules[i];
        if (r->op != KB_OP_CONV2D) continue;
        bool ok = (r->depthwise < 0 || r->depthwise == dw) && (r->grouped < 0 || r->grouped == grouped);
        for (int j = 0; j < 6; j++) ok = ok && (r->conv[j] < 0 || r->conv[j] == v[j]);
        if (ok) return r->name;
    }
    return NULL;
}
