/* kb_table.c — tuned dispatch tables: load (with the machine and library
 * checks), match a call's shape class, free. */
#include "kb_internal.h"
#include "kb_json.h"

#include <math.h>
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

static const char *FEATURES[] = {"fp16", "fhm", "sve", "sme", "sme2"};

static kb_status bad(kb_error *err, kb_json *root, const char *field, const char *msg) {
    kb_json_free(root);
    return kb_fail(err, KB_ERR_INVALID_ARGUMENT, field, "%s", msg);
}

static double num(const kb_json *o, const char *key, double dflt) {
    const kb_json *v = kb_json_get(o, key);
    return (v && v->type == KB_JSON_NUMBER) ? v->number : dflt;
}

kb_status kb_load_dispatch_table(const char *json, size_t len, kb_dispatch_table **out,
                                 kb_error *err) {
    kb_clear_error(err);
    if (!json) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "table", "is NULL");
    if (!out) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "out", "is NULL");
    char perr[128];
    kb_json *root = kb_json_parse(json, len, perr, sizeof perr);
    if (!root) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "table", "not valid JSON: %s", perr);
    if (root->type != KB_JSON_OBJECT) return bad(err, root, "table", "must be a JSON object");
    if (num(root, "kbench_dispatch_table", 0) != 1)
        return bad(err, root, "table.kbench_dispatch_table", "missing, or not format version 1");
    const kb_json *ver = kb_json_get(root, "library_version");
    if (!ver || ver->type != KB_JSON_STRING) return bad(err, root, "table.library_version", "missing");
    if (strcmp(ver->string, kb_version())) {
        kb_status st = kb_fail(err, KB_ERR_INVALID_ARGUMENT, "table.library_version",
                               "tuned with library %s, this is %s: tune again", ver->string, kb_version());
        kb_json_free(root);
        return st;
    }
    const kb_json *fp = kb_json_get(root, "fingerprint");
    if (!fp || fp->type != KB_JSON_OBJECT) return bad(err, root, "table.fingerprint", "missing");
    kb_cpu_info cpu;
    kb_cpu_detect(&cpu);
    const kb_json *arch = kb_json_get(fp, "arch");
    if (!arch || arch->type != KB_JSON_STRING || strcmp(arch->string, cpu.arch)) {
        kb_status st = kb_fail(err, KB_ERR_INVALID_ARGUMENT, "table.fingerprint.arch",
                               "tuned on %s, this machine is %s", arch && arch->string ? arch->string : "?", cpu.arch);
        kb_json_free(root);
        return st;
    }
    const kb_json *feats = kb_json_get(fp, "cpu_features");
    if (!feats || feats->type != KB_JSON_ARRAY) return bad(err, root, "table.fingerprint.cpu_features", "missing");
    uint32_t mask = 0;
    for (const kb_json *f = feats->child; f; f = f->next)
        for (unsigned i = 0; i < 5; i++)
            if (f->type == KB_JSON_STRING && !strcmp(f->string, FEATURES[i])) mask |= 1u << i;
    if (mask != cpu.features) {
        kb_status st = kb_fail(err, KB_ERR_INVALID_ARGUMENT, "table.fingerprint.cpu_features",
                               "tuned on a CPU with features 0x%x, this one has 0x%x: tune on this machine",
                               mask, cpu.features);
        kb_json_free(root);
        return st;
    }
    double svl = num(fp, "sme_vector_bits", -1);
    if (svl != (double)cpu.sme_vector_bits) {
        kb_status st = kb_fail(err, KB_ERR_INVALID_ARGUMENT, "table.fingerprint.sme_vector_bits",
                               "tuned at an SVL of %.0f bits, this CPU runs at %u", svl, cpu.sme_vector_bits);
        kb_json_free(root);
        return st;
    }
    const kb_json *rules = kb_json_get(root, "rules");
    if (!rules || rules->type != KB_JSON_ARRAY) return bad(err, root, "table.rules", "missing");
    size_t n = 0;
    for (const kb_json *r = rules->child; r; r = r->next) n++;
    if (n > MAX_RULES) return bad(err, root, "table.rules", "more than 4096 rules");
    kb_dispatch_table *t = calloc(1, sizeof *t + n * sizeof(rule));
    if (!t) {
        kb_json_free(root);
        return kb_fail(err, KB_ERR_OUT_OF_MEMORY, "table", "cannot allocate %zu rules", n);
    }
    for (const kb_json *r = rules->child; r; r = r->next) {
        rule *ru = &t->rules[t->n];
        const kb_json *op = kb_json_get(r, "op"), *name = kb_json_get(r, "realization");
        const kb_json *cls = kb_json_get(r, "class");
        if (!op || op->type != KB_JSON_STRING || !name || name->type != KB_JSON_STRING ||
            !cls || cls->type != KB_JSON_OBJECT || strlen(name->string) >= KB_NAME_LEN) {
            free(t);
            return bad(err, root, "table.rules", "every rule needs op, class and realization");
        }
        if (!strcmp(op->string, "gemm")) ru->op = KB_OP_GEMM;
        else if (!strcmp(op->string, "conv2d")) ru->op = KB_OP_CONV2D;
        else { free(t); return bad(err, root, "table.rules.op", "must be gemm or conv2d"); }
        static const char *lo[3] = {"m_min", "n_min", "k_min"}, *hi[3] = {"m_max", "n_max", "k_max"};
        for (int i = 0; i < 3; i++) {
            ru->lo[i] = num(cls, lo[i], 0);
            ru->hi[i] = num(cls, hi[i], INFINITY);
        }
        static const char *cv[6] = {"kh", "kw", "stride_h", "stride_w", "dilation_h", "dilation_w"};
        for (int i = 0; i < 6; i++) ru->conv[i] = (long)num(cls, cv[i], -1);
        const kb_json *dw = kb_json_get(cls, "depthwise");
        ru->depthwise = dw && dw->type == KB_JSON_BOOL ? (int)dw->number : -1;
        const kb_json *gr = kb_json_get(cls, "grouped");
        ru->grouped = gr && gr->type == KB_JSON_BOOL ? (int)gr->number : -1;
        strcpy(ru->name, name->string);
        t->n++;
    }
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
